package model

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// keyReference carries the model's reference sample (Meta.Reference): a
// bounded, seeded sample of its training rows, the model's source columns,
// that drift tests compare live traffic with (arrowforest/drift; the
// daemon's drift stage, docs/daemon.md). It is a section of its own, apart
// from the model proper: its key does not start with "forestd.", so the
// checksum and the model ID do not cover it (the same forest has the same
// ID with or without a sample, and older readers, which ignore such keys,
// still load the model) and no format version is needed for it. Its value
// guards itself instead: a strict JSON object
//
//	{"format":"forestd-reference/1","model_id":ID,"rows":N,
//	 "columns":[{"name":..,"values":B64} | {"name":..,"levels":[..],"codes":B64}],
//	 "crc32c":"%08x"}
//
// where values are N little-endian float32 (NaN: missing; the precision
// the forest reads its features in, frame.Frame) and codes N
// little-endian int32 indices into levels (−1: missing); model_id must be
// the model's own ID and crc32c the CRC-32C (Castagnoli) of the decoded
// content (referenceCRC), so a sample copied from another model or damaged
// is refused (ErrCorrupt). Every column is one of the model's source
// columns (forest.SourceColumns), each at most once.
const keyReference = "forestd-reference"

const (
	referenceFormat = "forestd-reference/1"
	// DefaultReferenceRows is the sample a trainer keeps by default.
	DefaultReferenceRows = 2000
	// maxReferenceRows bounds a decoded sample.
	maxReferenceRows = 1 << 20
	// maxReferenceBytes bounds a sample's data (4 bytes a value) that
	// SampleReference draws: a wide model keeps fewer rows (1 MiB is
	// 2,000 rows of 131 features), so that the sample stays a small part
	// of a model that travels in 1 MiB messages.
	maxReferenceBytes = 1 << 20
)

type referenceJSON struct {
	Format  string         `json:"format"`
	ModelID string         `json:"model_id"`
	Rows    int            `json:"rows"`
	Columns []referenceCol `json:"columns"`
	CRC     string         `json:"crc32c"`
}

type referenceCol struct {
	Name   string    `json:"name"`
	Values *string   `json:"values,omitempty"`
	Levels *[]string `json:"levels,omitempty"`
	Codes  *string   `json:"codes,omitempty"`
}

// SampleReference draws the reference sample of forest f from its training
// frame fr: up to rows rows (DefaultReferenceRows when 0; none when
// negative) chosen without replacement by a PCG stream seeded with seed,
// in their order in fr, of the source columns of f that fr holds (numeric
// as float64 with NaN for missing, categorical as strings with nulls). It
// returns nil when there is nothing to keep. Wide models keep fewer rows:
// at most 1 MiB of values, 4 bytes each (and at least 2 rows). The record
// is Go memory: no Release is needed. A nil f stands for a forest that
// reads every feature column of fr, as rf, sporf and morf without a
// mapping do: a caller whose training releases fr's columns
// (forest.TrainOptions.DropColumns) samples with nil before it trains.
func SampleReference(fr *frame.Frame, f *forest.Forest, rows int, seed uint64) arrow.Record {
	if rows == 0 {
		rows = DefaultReferenceRows
	}
	if rows < 0 || fr == nil || fr.NRows == 0 {
		return nil
	}
	names := fr.Names
	if f != nil {
		names, _ = f.SourceColumns()
	}
	var cols []int
	for _, name := range names {
		if j := slices.Index(fr.Names, name); j >= 0 {
			cols = append(cols, j)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	rows = min(rows, max(2, maxReferenceBytes/(4*len(cols))))
	idx := make([]int, fr.NRows)
	for i := range idx {
		idx[i] = i
	}
	if fr.NRows > rows {
		// a partial Fisher–Yates shuffle: the first rows entries are a
		// uniform sample without replacement
		rng := rand.New(rand.NewPCG(seed, 0x5eed4ef))
		for i := range rows {
			k := i + rng.IntN(fr.NRows-i)
			idx[i], idx[k] = idx[k], idx[i]
		}
		idx = idx[:rows]
		slices.Sort(idx)
	}
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	mem := memory.NewGoAllocator()
	for c, j := range cols {
		var levels []string
		if j < len(fr.Levels) {
			levels = fr.Levels[j]
		}
		if levels == nil {
			b := array.NewFloat64Builder(mem)
			for _, i := range idx {
				b.Append(float64(fr.Cols[j][i]))
			}
			fields[c], arrs[c] = arrow.Field{Name: fr.Names[j], Type: arrow.PrimitiveTypes.Float64}, b.NewArray()
			b.Release()
			continue
		}
		b := array.NewStringBuilder(mem)
		for _, i := range idx {
			v := fr.Cols[j][i]
			if k := int(v); !math.IsNaN(float64(v)) && k >= 0 && k < len(levels) {
				b.Append(levels[k])
			} else {
				b.AppendNull()
			}
		}
		fields[c], arrs[c] = arrow.Field{Name: fr.Names[j], Type: arrow.BinaryTypes.String, Nullable: true}, b.NewArray()
		b.Release()
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(len(idx)))
}

// encodeReference writes rec as keyReference's value for the model id.
// Columns must be float64 (stored as float32, as SampleReference's are
// exactly) or strings, named once each among the source columns of f.
func encodeReference(rec arrow.Record, f *forest.Forest, id string) (string, error) {
	if rec.NumCols() == 0 {
		return "", fmt.Errorf("the reference sample has no columns")
	}
	if rec.NumRows() > maxReferenceRows {
		return "", fmt.Errorf("the reference sample has %d rows, more than %d", rec.NumRows(), maxReferenceRows)
	}
	out := referenceJSON{Format: referenceFormat, ModelID: id, Rows: int(rec.NumRows())}
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for i, a := range rec.Columns() {
		name := rec.ColumnName(i)
		col := referenceCol{Name: name}
		switch a := a.(type) {
		case *array.Float64:
			b := make([]byte, 4*a.Len())
			for r := range a.Len() {
				v := float32(math.NaN())
				if a.IsValid(r) {
					v = float32(a.Value(r))
				}
				binary.LittleEndian.PutUint32(b[4*r:], math.Float32bits(v))
			}
			s := base64.StdEncoding.EncodeToString(b)
			col.Values = &s
			referenceCRC(crc, name, nil, b)
		case *array.String:
			var levels []string
			at := map[string]int32{}
			b := make([]byte, 4*a.Len())
			for r := range a.Len() {
				code := int32(-1)
				if a.IsValid(r) {
					v := a.Value(r)
					k, ok := at[v]
					if !ok {
						k = int32(len(levels))
						at[v] = k
						levels = append(levels, v)
					}
					code = k
				}
				binary.LittleEndian.PutUint32(b[4*r:], uint32(code))
			}
			s := base64.StdEncoding.EncodeToString(b)
			if levels == nil {
				levels = []string{}
			}
			col.Codes, col.Levels = &s, &levels
			referenceCRC(crc, name, levels, b)
		default:
			return "", fmt.Errorf("reference column %q: type %s (want float64 or string)", name, a.DataType())
		}
		out.Columns = append(out.Columns, col)
	}
	out.CRC = fmt.Sprintf("%08x", crc.Sum32())
	v, _, err := jsonString(out)
	if err != nil {
		return "", err
	}
	// the decoder's checks, so that nothing is written that cannot be read
	if _, err := decodeReference(v, f, id); err != nil {
		return "", err
	}
	return v, nil
}

// referenceCRC adds one column to the reference's checksum: its name, its
// levels (a categorical column) and its data bytes, each length-prefixed.
func referenceCRC(h interface{ Write([]byte) (int, error) }, name string, levels []string, data []byte) {
	put := func(b []byte) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put([]byte(name))
	if levels != nil {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(levels)))
		h.Write(n[:])
		for _, l := range levels {
			put([]byte(l))
		}
	}
	put(data)
}

// decodeReference reads keyReference's value strictly (see keyReference)
// for the model id of forest f.
func decodeReference(v string, f *forest.Forest, id string) (arrow.Record, error) {
	var in referenceJSON
	if err := decodeStrict(v, &in, "the reference sample"); err != nil {
		return nil, err
	}
	if in.Format != referenceFormat {
		return nil, fmt.Errorf("format %q, want %q", in.Format, referenceFormat)
	}
	if in.ModelID != id {
		return nil, fmt.Errorf("written for model %.12s, not this model (%.12s)", in.ModelID, id)
	}
	if in.Rows < 0 || in.Rows > maxReferenceRows {
		return nil, fmt.Errorf("rows %d outside 0..%d", in.Rows, maxReferenceRows)
	}
	if len(in.Columns) == 0 {
		return nil, fmt.Errorf("no columns")
	}
	source, _ := f.SourceColumns()
	n := in.Rows
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	fields := make([]arrow.Field, 0, len(in.Columns))
	arrs := make([]arrow.Array, 0, len(in.Columns))
	release := func() {
		for _, a := range arrs {
			a.Release()
		}
	}
	seen := map[string]bool{}
	mem := memory.NewGoAllocator()
	for _, c := range in.Columns {
		if !utf8.ValidString(c.Name) || !slices.Contains(source, c.Name) {
			release()
			return nil, fmt.Errorf("column %q is not a source column of the model", c.Name)
		}
		if seen[c.Name] {
			release()
			return nil, fmt.Errorf("column %q twice", c.Name)
		}
		seen[c.Name] = true
		data, err := referenceData(c, n)
		if err != nil {
			release()
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		if c.Values != nil {
			b := array.NewFloat64Builder(mem)
			b.Reserve(n)
			for r := range n {
				b.UnsafeAppend(float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*r:]))))
			}
			fields, arrs = append(fields, arrow.Field{Name: c.Name, Type: arrow.PrimitiveTypes.Float64}), append(arrs, b.NewArray())
			b.Release()
			referenceCRC(crc, c.Name, nil, data)
			continue
		}
		levels := *c.Levels
		b := array.NewStringBuilder(mem)
		for r := range n {
			if k := int32(binary.LittleEndian.Uint32(data[4*r:])); k >= 0 {
				b.Append(levels[k])
			} else {
				b.AppendNull()
			}
		}
		fields, arrs = append(fields, arrow.Field{Name: c.Name, Type: arrow.BinaryTypes.String, Nullable: true}), append(arrs, b.NewArray())
		b.Release()
		referenceCRC(crc, c.Name, levels, data)
	}
	if got := fmt.Sprintf("%08x", crc.Sum32()); got != in.CRC {
		release()
		return nil, fmt.Errorf("crc32c %s, content has %s", strconv.Quote(in.CRC), got)
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(n))
	release()
	return rec, nil
}

// referenceData checks one column's shape and returns its data bytes:
// either values (n float32) or levels and codes (n int32 in −1..levels−1,
// distinct valid UTF-8 levels).
func referenceData(c referenceCol, n int) ([]byte, error) {
	switch {
	case c.Values != nil && c.Levels == nil && c.Codes == nil:
		b, err := base64.StdEncoding.Strict().DecodeString(*c.Values)
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		if len(b) != 4*n {
			return nil, fmt.Errorf("values: %d bytes for %d rows", len(b), n)
		}
		return b, nil
	case c.Values == nil && c.Levels != nil && c.Codes != nil:
		levels := *c.Levels
		at := make(map[string]bool, len(levels))
		for _, l := range levels {
			if !utf8.ValidString(l) || at[l] {
				return nil, fmt.Errorf("level %q invalid or twice", l)
			}
			at[l] = true
		}
		b, err := base64.StdEncoding.Strict().DecodeString(*c.Codes)
		if err != nil {
			return nil, fmt.Errorf("codes: %w", err)
		}
		if len(b) != 4*n {
			return nil, fmt.Errorf("codes: %d bytes for %d rows", len(b), n)
		}
		for r := range n {
			if k := int32(binary.LittleEndian.Uint32(b[4*r:])); k < -1 || int(k) >= len(levels) {
				return nil, fmt.Errorf("code %d at row %d outside -1..%d", k, r, len(levels)-1)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("want values, or levels and codes")
}

// readReference finds keyReference in the stream's metadata (once at
// most) and decodes it; nil when the model has none.
func readReference(md arrow.Metadata, f *forest.Forest, id string) (arrow.Record, error) {
	var v string
	found := 0
	for i, k := range md.Keys() {
		if k == keyReference {
			v = md.Values()[i]
			found++
		}
	}
	switch found {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, corrupt("metadata key %s appears twice", keyReference)
	}
	rec, err := decodeReference(v, f, id)
	if err != nil {
		return nil, corrupt("%s: %v", keyReference, err)
	}
	return rec, nil
}

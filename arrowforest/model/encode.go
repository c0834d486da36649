package model

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/internal/atomicfile"
)

// Batch size defaults.
const (
	// defaultMaxBatchRows bounds the node rows of one record batch.
	defaultMaxBatchRows = 1 << 16
	// defaultMaxBatchBytes bounds one record-batch IPC message so that it
	// fits a broker message of 1 MiB with room for headers.
	defaultMaxBatchBytes = 960 << 10
)

// codec encodes and decodes models with explicit options, which only this
// package's tests set (small batches, a checked allocator). The zero value
// uses the defaults; the package-level functions use a zero codec.
type codec struct {
	// MaxBatchRows bounds the rows (nodes) per record batch; 0 means
	// defaultMaxBatchRows.
	MaxBatchRows int
	// MaxBatchBytes bounds the size of each record-batch IPC message
	// (framing, flatbuffer metadata and body), unless a single node row is
	// larger on its own; 0 means defaultMaxBatchBytes, a negative value
	// means no byte bound (batches still stay below 2 GiB).
	MaxBatchBytes int
	// Allocator is used for Arrow memory; nil means memory.DefaultAllocator.
	Allocator memory.Allocator
}

func (c codec) alloc() memory.Allocator {
	if c.Allocator == nil {
		return memory.DefaultAllocator
	}
	return c.Allocator
}

// EncodeBytes validates f (forest.Validate and the model version: the
// checks decoding applies) and encodes it as a model stream. The same
// forest and meta always give the same bytes. meta.ID is ignored: it
// returns the bytes and meta with ID set to the content hash. Nothing is
// encoded when f is invalid.
func EncodeBytes(f *forest.Forest, meta Meta) ([]byte, Meta, error) {
	return codec{}.EncodeBytes(f, meta)
}

// WriteFile is WriteFileContext without a context: f encoded to path,
// whole or not at all.
func WriteFile(path string, f *forest.Forest, meta Meta) (Meta, error) {
	return codec{}.WriteFile(path, f, meta)
}

// WriteFileContext encodes f to path through forestd's one file writer
// (internal/atomicfile, exported as files.WriteAtomic): a temporary file
// in path's directory, synced and renamed over path, never over a path
// that is not a regular file, removed when encoding fails or ctx ends
// first. It returns meta with ID set.
func WriteFileContext(ctx context.Context, path string, f *forest.Forest, meta Meta) (Meta, error) {
	return codec{}.WriteFileContext(ctx, path, f, meta)
}

// Encode validates f (forest.Validate and the model version: the checks
// Decode applies), writes it to w as a model
// stream and returns meta with ID set to the content hash. Nothing is
// written when f is invalid.
func (c codec) Encode(w io.Writer, f *forest.Forest, meta Meta) (Meta, error) {
	if err := f.Validate(); err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode: %w", err)
	}
	if err := checkVersion(meta.Version); err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode: %w", err)
	}
	if !utf8.ValidString(meta.CreatedBy) {
		return Meta{}, fmt.Errorf("model: cannot encode forest: created-by %q is not valid UTF-8", meta.CreatedBy)
	}
	return c.encodeCompact(w, f, meta)
}

// encodeFormat4 is Encode in the node table of formats 1–4 (one row per
// node, every tree.Tree field; stamped with the lowest of those versions
// that holds f): what older readers read, and the tests' source of such
// files.
func (c codec) encodeFormat4(w io.Writer, f *forest.Forest, meta Meta) (Meta, error) {
	if err := f.Validate(); err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode: %w", err)
	}
	if err := checkVersion(meta.Version); err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode: %w", err)
	}
	src := newForestRows(f)
	if err := src.check(); err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode forest: %w", err)
	}
	entries, err := encodeMeta(f, meta, src.rows())
	if err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode forest: %w", err)
	}
	d, err := src.digest(entries)
	if err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode forest: %w", err)
	}
	if meta.Reference != nil { // its own section, after the digest (reference.go)
		v, err := encodeReference(meta.Reference, f, d.id)
		if err != nil {
			return Meta{}, fmt.Errorf("model: cannot encode forest: %s: %w", keyReference, err)
		}
		entries = append(entries[:len(entries):len(entries)], metaEntry{keyReference, v})
	}
	meta.ID, err = c.writeRows(w, nodeColumns, d, entries, src.rows(), src.listLen, func(lo, hi int) (*table, int, error) {
		tab, err := src.table(lo, hi)
		return tab, 0, err
	})
	if err != nil {
		return Meta{}, fmt.Errorf("model: %w", err)
	}
	return meta, nil
}

// EncodeBytes encodes f into memory and returns meta with ID set.
func (c codec) EncodeBytes(f *forest.Forest, meta Meta) ([]byte, Meta, error) {
	var buf bytes.Buffer
	m, err := c.Encode(&buf, f, meta)
	if err != nil {
		return nil, Meta{}, err
	}
	return buf.Bytes(), m, nil
}

// WriteFile encodes f to path, whole or not at all: see WriteFileContext.
func (c codec) WriteFile(path string, f *forest.Forest, meta Meta) (Meta, error) {
	return c.WriteFileContext(context.Background(), path, f, meta)
}

// WriteFileContext encodes f to path through forestd's one file writer
// (internal/atomicfile, exported as files.WriteAtomic): a temporary file
// in path's directory, synced and renamed over path, never over a path
// that is not a regular file, removed when encoding fails or ctx ends
// first. It returns meta with ID set.
func (c codec) WriteFileContext(ctx context.Context, path string, f *forest.Forest, meta Meta) (Meta, error) {
	var m Meta
	err := atomicfile.Write(ctx, path, func(w *os.File) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var err error
		if m, err = c.Encode(bw, f, meta); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return Meta{}, fmt.Errorf("model: writing %w", err)
	}
	return m, nil
}

// schemaFor builds the node-table schema with the given metadata.
func schemaFor(spec []column, entries []metaEntry) *arrow.Schema {
	fields := make([]arrow.Field, len(spec))
	for i, c := range spec {
		fields[i] = arrow.Field{Name: c.name, Type: c.kind.arrowType()}
	}
	keys := make([]string, len(entries))
	vals := make([]string, len(entries))
	for i, e := range entries {
		keys[i], vals[i] = e.key, e.value
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

// write computes the digest of (entries, tab), adds forestd.model_id and
// forestd.checksum to the metadata and writes the stream. It does not
// validate anything, so tests can use it to craft files with valid
// checksums and invalid content. It returns the model ID.
func (c codec) write(w io.Writer, tab *table, entries []metaEntry) (string, error) {
	return c.writeDigested(w, tab, canonicalDigest(entries, tab), entries)
}

// writeDigested is write with the digest d of (entries, tab) computed
// before: entries may then hold sections outside the digest.
func (c codec) writeDigested(w io.Writer, tab *table, d digest, entries []metaEntry) (string, error) {
	listLen := func(ci int) func(r int) (int64, error) {
		tc := &tab.cols[ci]
		return func(r int) (int64, error) { return tc.off[r+1] - tc.off[r], nil }
	}
	return c.writeRows(w, tab.spec, d, entries, tab.rows, listLen,
		func(lo, _ int) (*table, int, error) { return tab, lo, nil })
}

// writeRows is write for a table of rows rows given in pieces: digest d
// of the whole table, listLen(ci)(r) the length of list column ci at row
// r (r increasing), and part(lo, hi) a table holding rows [lo, hi) from
// its row off on.
func (c codec) writeRows(w io.Writer, spec []column, d digest, entries []metaEntry, rows int,
	listLen func(ci int) func(r int) (int64, error), part func(lo, hi int) (tab *table, off int, err error)) (string, error) {
	all := make([]metaEntry, 0, len(entries)+2)
	// Put the ID next to the format keys, where a human looks first.
	for i, e := range entries {
		all = append(all, e)
		if i == 1 {
			all = append(all, metaEntry{keyModelID, d.id})
		}
	}
	if len(entries) < 2 {
		all = append(all, metaEntry{keyModelID, d.id})
	}
	all = append(all, metaEntry{keyChecksum, d.checksum})
	schema := schemaFor(spec, all)

	iw := ipc.NewWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(c.alloc()))
	batches, err := c.batches(spec, rows, listLen)
	if err != nil {
		return "", err
	}
	for _, b := range batches {
		tab, off, err := part(b[0], b[1])
		if err != nil {
			return "", err
		}
		rec := tab.record(schema, off, off+b[1]-b[0])
		err = iw.Write(rec)
		rec.Release()
		if err != nil {
			return "", err
		}
	}
	if err := iw.Close(); err != nil {
		return "", err
	}
	return d.id, nil
}

// Batch size estimate: an upper bound of the IPC message for a batch is
// batchOverhead + Σ rows rowBytes. Each Arrow buffer is padded to 8 bytes
// and the flatbuffer metadata grows with the number of columns.
const (
	batchOverheadBase   = 1024
	batchOverheadPerCol = 160
)

// batches cuts a table of rows rows (list column ci holding
// listLen(ci)(r) elements at row r) into row ranges bounded by
// MaxBatchRows and MaxBatchBytes.
func (c codec) batches(spec []column, rows int, listLen func(ci int) func(r int) (int64, error)) ([][2]int, error) {
	maxRows := c.MaxBatchRows
	if maxRows <= 0 {
		maxRows = defaultMaxBatchRows
	}
	maxBytes := int64(c.MaxBatchBytes)
	switch {
	case maxBytes == 0:
		maxBytes = defaultMaxBatchBytes
	case maxBytes < 0 || maxBytes > math.MaxInt32:
		maxBytes = math.MaxInt32 // keeps int32 list offsets valid
	}
	overhead := int64(batchOverheadBase + batchOverheadPerCol*len(spec))
	fixed := int64(0) // bytes every row costs
	var lists []int   // list columns
	var lens []func(r int) (int64, error)
	for ci, col := range spec {
		if col.kind.isList() {
			fixed += 4
			lists = append(lists, ci)
			lens = append(lens, listLen(ci))
		} else {
			fixed += int64(col.kind.width())
		}
	}
	var out [][2]int
	lo, size := 0, overhead
	for r := 0; r < rows; r++ {
		row := fixed
		for q, ci := range lists {
			l, err := lens[q](r)
			if err != nil {
				return nil, err
			}
			row += l * int64(spec[ci].kind.width())
		}
		if r > lo && (r-lo >= maxRows || size+row > maxBytes) {
			out = append(out, [2]int{lo, r})
			lo, size = r, overhead
		}
		size += row
	}
	if lo < rows {
		out = append(out, [2]int{lo, rows})
	}
	return out, nil
}

// record builds rows [lo, hi) as a record batch. Buffers point into the
// table's Go memory (no copy) except for packed booleans and rebased list
// offsets.
func (tab *table) record(schema *arrow.Schema, lo, hi int) arrow.Record {
	n := hi - lo
	cols := make([]arrow.Array, len(tab.spec))
	for ci, c := range tab.spec {
		tc := &tab.cols[ci]
		var data arrow.ArrayData
		if c.kind.isList() {
			e0, e1 := tc.off[lo], tc.off[hi]
			off := make([]int32, n+1)
			for i := range off {
				off[i] = int32(tc.off[lo+i] - e0)
			}
			child := valuesData(c.kind.elem(), tc.slice(c.kind, int(e0), int(e1)), int(e1-e0))
			data = array.NewData(c.kind.arrowType(), n,
				[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(off))},
				[]arrow.ArrayData{child}, 0, 0)
			child.Release()
		} else {
			data = valuesData(c.kind, tc.slice(c.kind, lo, hi), n)
		}
		cols[ci] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecord(schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// valuesData wraps n scalar values of kind k as Arrow array data.
func valuesData(k kind, v values, n int) arrow.ArrayData {
	var b []byte
	switch k.elem() {
	case kInt32:
		b = arrow.Int32Traits.CastToBytes(v.i32)
	case kFloat32:
		b = arrow.Float32Traits.CastToBytes(v.f32)
	case kFloat64:
		b = arrow.Float64Traits.CastToBytes(v.f64)
	default: // kBool
		b = make([]byte, bitutil.BytesForBits(int64(n)))
		for i, x := range v.b {
			if x {
				bitutil.SetBit(b, i)
			}
		}
	}
	return array.NewData(k.arrowType(), n, []*memory.Buffer{nil, memory.NewBufferBytes(b)}, nil, 0, 0)
}

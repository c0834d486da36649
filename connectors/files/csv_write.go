package files

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
)

// writeCSV writes a header row and every record, column-formatted first
// (one typed loop per column), then emitted row by row.
func writeCSV(w io.Writer, schema *arrow.Schema, recs []arrow.Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(fieldNames(schema)); err != nil {
		return err
	}
	p := schema.NumFields()
	row := make([]string, p)
	for _, r := range recs {
		n := int(r.NumRows())
		cells := make([][]string, p)
		for j := range cells {
			cells[j] = make([]string, n)
			if err := formatColumn(r.Column(j), cells[j]); err != nil {
				return fmt.Errorf("column %s: %w", schema.Field(j).Name, err)
			}
		}
		for i := 0; i < n; i++ {
			for j := range row {
				row[j] = cells[j][i]
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// formatFloat renders v so that it parses back to the same value and, for
// finite integral values, still reads back as a float (a ".0" is added).
func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func formatInts[T int8 | int16 | int32 | int64](out []string, vals []T, bm []byte, off int) {
	for i, v := range vals[:len(out)] {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = strconv.FormatInt(int64(v), 10)
		}
	}
}

func formatUints[T uint8 | uint16 | uint32 | uint64](out []string, vals []T, bm []byte, off int) {
	for i, v := range vals[:len(out)] {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = strconv.FormatUint(uint64(v), 10)
		}
	}
}

func formatFloats[T float32 | float64](out []string, vals []T, bits int, bm []byte, off int) {
	for i, v := range vals[:len(out)] {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = formatFloat(float64(v), bits)
		}
	}
}

// formatColumn fills out (len = a.Len()) with the CSV text of every cell;
// nulls stay empty.
func formatColumn(a arrow.Array, out []string) error {
	var bm []byte
	off := a.Data().Offset()
	if a.NullN() > 0 {
		bm = a.NullBitmapBytes()
	}
	valid := func(i int) bool { return bm == nil || bitutil.BitIsSet(bm, off+i) }
	switch c := a.(type) {
	case *array.Int8:
		formatInts(out, c.Int8Values(), bm, off)
	case *array.Int16:
		formatInts(out, c.Int16Values(), bm, off)
	case *array.Int32:
		formatInts(out, c.Int32Values(), bm, off)
	case *array.Int64:
		formatInts(out, c.Int64Values(), bm, off)
	case *array.Uint8:
		formatUints(out, c.Uint8Values(), bm, off)
	case *array.Uint16:
		formatUints(out, c.Uint16Values(), bm, off)
	case *array.Uint32:
		formatUints(out, c.Uint32Values(), bm, off)
	case *array.Uint64:
		formatUints(out, c.Uint64Values(), bm, off)
	case *array.Float32:
		formatFloats(out, c.Float32Values(), 32, bm, off)
	case *array.Float64:
		formatFloats(out, c.Float64Values(), 64, bm, off)
	case *array.Float16:
		for i, v := range c.Values()[:len(out)] {
			if valid(i) {
				out[i] = formatFloat(float64(v.Float32()), 32)
			}
		}
	case *array.Boolean:
		for i := range out {
			if valid(i) {
				out[i] = strconv.FormatBool(c.Value(i))
			}
		}
	case *array.String:
		for i := range out {
			if valid(i) {
				out[i] = c.Value(i)
			}
		}
	case *array.LargeString:
		for i := range out {
			if valid(i) {
				out[i] = c.Value(i)
			}
		}
	case *array.Dictionary:
		dict := make([]string, c.Dictionary().Len())
		if err := formatColumn(c.Dictionary(), dict); err != nil {
			return err
		}
		idx, err := dictIndices(c.Indices())
		if err != nil {
			return err
		}
		for i := range out {
			if valid(i) {
				k := idx[i]
				if k < 0 || k >= int64(len(dict)) {
					return fmt.Errorf("dictionary index %d out of range", k)
				}
				out[i] = dict[k]
			}
		}
	default:
		for i := range out {
			if a.IsValid(i) {
				out[i] = a.ValueStr(i)
			}
		}
	}
	return nil
}

// dictIndices widens dictionary indices to int64.
func dictIndices(a arrow.Array) ([]int64, error) {
	out := make([]int64, a.Len())
	switch ix := a.(type) {
	case *array.Int8:
		for i, v := range ix.Int8Values() {
			out[i] = int64(v)
		}
	case *array.Int16:
		for i, v := range ix.Int16Values() {
			out[i] = int64(v)
		}
	case *array.Int32:
		for i, v := range ix.Int32Values() {
			out[i] = int64(v)
		}
	case *array.Int64:
		copy(out, ix.Int64Values())
	case *array.Uint8:
		for i, v := range ix.Uint8Values() {
			out[i] = int64(v)
		}
	case *array.Uint16:
		for i, v := range ix.Uint16Values() {
			out[i] = int64(v)
		}
	case *array.Uint32:
		for i, v := range ix.Uint32Values() {
			out[i] = int64(v)
		}
	case *array.Uint64:
		for i, v := range ix.Uint64Values() {
			out[i] = int64(min(v, math.MaxInt64))
		}
	default:
		return nil, fmt.Errorf("unsupported dictionary index type %s", a.DataType())
	}
	return out, nil
}

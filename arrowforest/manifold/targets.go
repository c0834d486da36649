package manifold

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/colname"
)

// maxListSize bounds the length of a fixed-size list response column.
const maxListSize = 1 << 16

// Responses are the multivariate responses read from Arrow columns.
type Responses struct {
	// Targets names the Q coordinates: a numeric column gives one named
	// after it; a fixed-size list column "v" of length L gives L named
	// v_0 … v_{L-1}.
	Targets []string
	// Columns are the input column names, in order.
	Columns []string
	// Y is Rows×Q row-major.
	Y    []float64
	Rows int
	// Valid is false for a row with a null or NaN in any coordinate.
	Valid []bool
}

// ReadResponses reads the response columns named by columns from recs
// (which share schema): each a numeric column (integers, floats) or a
// fixed-size list of numbers. A missing, duplicate or non-numeric column,
// or an infinite value, is an error naming it; nulls and NaNs mark their
// row invalid.
func ReadResponses(schema *arrow.Schema, recs []arrow.Record, columns []string) (*Responses, error) {
	if schema == nil {
		return nil, errors.New("manifold: nil schema")
	}
	if len(columns) == 0 {
		return nil, errors.New("manifold: no response columns given")
	}
	seen := map[string]bool{}
	out := &Responses{Columns: columns}
	idx := make([]int, len(columns))
	width := make([]int, len(columns))
	for c, name := range columns {
		if seen[name] {
			return nil, fmt.Errorf("manifold: response column %s is given twice", name)
		}
		seen[name] = true
		ix := schema.FieldIndices(name)
		if len(ix) != 1 {
			if len(ix) == 0 {
				names := make([]string, schema.NumFields())
				for j := range names {
					names[j] = schema.Field(j).Name
				}
				return nil, fmt.Errorf("manifold: %s", colname.NotFound("response", name, names))
			}
			return nil, fmt.Errorf("manifold: response column name %s is ambiguous", name)
		}
		idx[c] = ix[0]
		dt := schema.Field(ix[0]).Type
		if fl, ok := dt.(*arrow.FixedSizeListType); ok {
			if !numeric(fl.Elem()) {
				return nil, fmt.Errorf("manifold: response column %s is %s; want numbers or a fixed-size list of numbers", name, dt)
			}
			if fl.Len() < 1 || fl.Len() > maxListSize {
				return nil, fmt.Errorf("manifold: response column %s has list size %d outside 1..%d", name, fl.Len(), maxListSize)
			}
			width[c] = int(fl.Len())
			for k := 0; k < width[c]; k++ {
				out.Targets = append(out.Targets, name+"_"+strconv.Itoa(k))
			}
			continue
		}
		if !numeric(dt) {
			return nil, fmt.Errorf("manifold: response column %s is %s; want numbers or a fixed-size list of numbers", name, dt)
		}
		width[c] = 1
		out.Targets = append(out.Targets, name)
	}
	names := map[string]bool{}
	for _, t := range out.Targets {
		if names[t] {
			return nil, fmt.Errorf("manifold: response coordinate name %s occurs twice (a list column's coordinates are named column_0, column_1, …)", t)
		}
		names[t] = true
	}
	q := len(out.Targets)
	for _, r := range recs {
		if r == nil || r.NumCols() != int64(schema.NumFields()) {
			return nil, errors.New("manifold: record does not match the schema")
		}
		out.Rows += int(r.NumRows())
	}
	out.Y = make([]float64, out.Rows*q)
	out.Valid = make([]bool, out.Rows)
	for i := range out.Valid {
		out.Valid[i] = true
	}
	base := 0
	for _, rec := range recs {
		n := int(rec.NumRows())
		off := 0
		for c, j := range idx {
			col := rec.Column(j)
			if !arrow.TypeEqual(col.DataType(), schema.Field(j).Type) {
				return nil, fmt.Errorf("manifold: response column %s changes type between batches", columns[c])
			}
			for i := 0; i < n; i++ {
				dst := out.Y[(base+i)*q+off : (base+i)*q+off+width[c]]
				ok, err := cell(col, i, dst)
				if err != nil {
					return nil, fmt.Errorf("manifold: response column %s row %d: %w", columns[c], base+i, err)
				}
				if !ok {
					out.Valid[base+i] = false
				}
			}
			off += width[c]
		}
		base += n
	}
	return out, nil
}

func numeric(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

// cell writes the value(s) of row i of col into dst; ok is false for a
// null or NaN.
func cell(col arrow.Array, i int, dst []float64) (ok bool, err error) {
	if col.IsNull(i) {
		return false, nil
	}
	if fl, isList := col.(*array.FixedSizeList); isList {
		s, e := fl.ValueOffsets(i)
		vals := fl.ListValues()
		if s < 0 || e > int64(vals.Len()) || e-s != int64(len(dst)) {
			return false, fmt.Errorf("list offsets [%d, %d) outside %d values", s, e, vals.Len())
		}
		ok = true
		for k := range dst {
			good, err := cell(vals, int(s)+k, dst[k:k+1])
			if err != nil {
				return false, err
			}
			ok = ok && good
		}
		return ok, nil
	}
	var v float64
	switch a := col.(type) {
	case *array.Float64:
		v = a.Value(i)
	case *array.Float32:
		v = float64(a.Value(i))
	case *array.Float16:
		v = float64(a.Value(i).Float32())
	case *array.Int8:
		v = float64(a.Value(i))
	case *array.Int16:
		v = float64(a.Value(i))
	case *array.Int32:
		v = float64(a.Value(i))
	case *array.Int64:
		v = float64(a.Value(i))
	case *array.Uint8:
		v = float64(a.Value(i))
	case *array.Uint16:
		v = float64(a.Value(i))
	case *array.Uint32:
		v = float64(a.Value(i))
	case *array.Uint64:
		v = float64(a.Value(i))
	default:
		return false, fmt.Errorf("unsupported type %s", col.DataType())
	}
	if math.IsInf(v, 0) {
		return false, fmt.Errorf("value is %v", v)
	}
	dst[0] = v
	return !math.IsNaN(v), nil
}

// KeepRows returns a copy of fr holding only the rows where keep is true
// (fr itself when keep is all true).
func KeepRows(fr *frame.Frame, keep []bool) (*frame.Frame, error) {
	if len(keep) != fr.NRows {
		return nil, fmt.Errorf("manifold: %d row flags for %d rows", len(keep), fr.NRows)
	}
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	if n == fr.NRows {
		return fr, nil
	}
	g := *fr
	g.Cols = make([][]float32, len(fr.Cols))
	for j, c := range fr.Cols {
		col := make([]float32, 0, n)
		for i, v := range c {
			if keep[i] {
				col = append(col, v)
			}
		}
		g.Cols[j] = col
	}
	g.NRows = n
	return &g, nil
}

// KeepValues returns the rows of y (rows×q row-major) where keep is true.
func KeepValues(y []float64, q int, keep []bool) []float64 {
	out := make([]float64, 0, len(y))
	for i, k := range keep {
		if k {
			out = append(out, y[i*q:i*q+q]...)
		}
	}
	return out
}

// ReadTraining reads a dRF training set from records: the responses named
// by labels (ReadResponses) and the features of fopts (fopts.Features, or
// every column but the labels and fopts.Exclude), without the rows whose
// response has a null or NaN, which it counts (skipped). The frame may
// have no rows.
func ReadTraining(schema *arrow.Schema, recs []arrow.Record, labels []string, fopts frame.Options) (*frame.Frame, *Responses, int, error) {
	resp, err := ReadResponses(schema, recs, labels)
	if err != nil {
		return nil, nil, 0, err
	}
	fopts.Exclude = append(slices.Clone(fopts.Exclude), labels...)
	fr, err := frame.FromRecords(schema, recs, fopts)
	if err != nil {
		return nil, nil, 0, err
	}
	if fr, err = KeepRows(fr, resp.Valid); err != nil {
		return nil, nil, 0, err
	}
	skipped := 0
	for _, ok := range resp.Valid {
		if !ok {
			skipped++
		}
	}
	resp.Y = KeepValues(resp.Y, len(resp.Targets), resp.Valid)
	resp.Rows -= skipped
	return fr, resp, skipped, nil
}

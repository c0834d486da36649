package files

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Parquet writing is column-wise: the Parquet schema is built from the
// Arrow schema (keeping the column order, which parquet.Group, a map, would
// sort), and each record's columns are turned into parquet.Values by one
// typed loop per column and handed to that column's writer. A row group is
// cut every RowGroupRows rows.

// orderedGroup is a Parquet group node whose fields keep the given order.
type orderedGroup []parquet.Field

type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string { return f.name }

// Value is only used to write Go structs by reflection, which this package
// never does.
func (f namedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return "orderedGroup" }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return reflect.TypeFor[map[string]any]() }

// codecByName returns a new codec for one writer: zstd and gzip keep their
// encoder in it (zstdCodec, gzipCodec), the others keep nothing.
func codecByName(name string) (compress.Codec, error) {
	switch strings.ToLower(name) {
	case "", "zstd":
		return &zstdCodec{}, nil
	case "snappy":
		return &parquet.Snappy, nil
	case "gzip":
		return &gzipCodec{}, nil
	case "lz4":
		return &parquet.Lz4Raw, nil
	case "none", "uncompressed":
		return &parquet.Uncompressed, nil
	}
	return nil, fmt.Errorf("unknown Parquet compression %q (want zstd, snappy, gzip, lz4 or none)", name)
}

// parquetNode maps an Arrow type to a Parquet leaf node.
func parquetNode(dt arrow.DataType) (parquet.Node, error) {
	switch dt.ID() {
	case arrow.BOOL:
		return parquet.Leaf(parquet.BooleanType), nil
	case arrow.INT8:
		return parquet.Int(8), nil
	case arrow.INT16:
		return parquet.Int(16), nil
	case arrow.INT32:
		return parquet.Int(32), nil
	case arrow.INT64:
		return parquet.Int(64), nil
	case arrow.UINT8:
		return parquet.Uint(8), nil
	case arrow.UINT16:
		return parquet.Uint(16), nil
	case arrow.UINT32:
		return parquet.Uint(32), nil
	case arrow.UINT64:
		return parquet.Uint(64), nil
	case arrow.FLOAT16, arrow.FLOAT32:
		return parquet.Leaf(parquet.FloatType), nil
	case arrow.FLOAT64:
		return parquet.Leaf(parquet.DoubleType), nil
	case arrow.STRING, arrow.LARGE_STRING:
		return parquet.String(), nil
	case arrow.BINARY, arrow.LARGE_BINARY:
		return parquet.Leaf(parquet.ByteArrayType), nil
	case arrow.DATE32:
		return parquet.Date(), nil
	case arrow.TIMESTAMP:
		// A zone-less Arrow timestamp is local time (not adjusted to UTC).
		ts := dt.(*arrow.TimestampType)
		utc := ts.TimeZone != ""
		switch ts.Unit {
		case arrow.Millisecond:
			return parquet.TimestampAdjusted(parquet.Millisecond, utc), nil
		case arrow.Microsecond:
			return parquet.TimestampAdjusted(parquet.Microsecond, utc), nil
		case arrow.Nanosecond:
			return parquet.TimestampAdjusted(parquet.Nanosecond, utc), nil
		}
	case arrow.DICTIONARY:
		dict := dt.(*arrow.DictionaryType)
		n, err := parquetNode(dict.ValueType)
		if err != nil {
			return nil, err
		}
		if dict.ValueType.ID() == arrow.STRING || dict.ValueType.ID() == arrow.LARGE_STRING {
			n = parquet.Encoded(n, &parquet.RLEDictionary)
		}
		return n, nil
	}
	return nil, fmt.Errorf("type %s cannot be written to Parquet", dt)
}

// parquetSchema returns the Parquet schema WriteFile uses for an Arrow
// schema: one top-level column per field, in order, OPTIONAL when the
// field is nullable.
func parquetSchema(schema *arrow.Schema) (*parquet.Schema, error) {
	g := make(orderedGroup, schema.NumFields())
	for j, f := range schema.Fields() {
		n, err := parquetNode(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		if f.Nullable {
			n = parquet.Optional(n)
		}
		g[j] = namedField{Node: n, name: f.Name}
	}
	return parquet.NewSchema("schema", g), nil
}

func writeParquet(w io.Writer, schema *arrow.Schema, recs []arrow.Record, opts WriteOptions) error {
	pw, err := NewParquetWriter(w, schema, opts)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := pw.Write(rec); err != nil {
			return err
		}
	}
	return pw.Close()
}

// toValues converts rows [s, s+len(out)) of a into Parquet values of leaf
// column j with definition level def for present values.
func toValues(out []parquet.Value, a arrow.Array, s, def, j int) error {
	null := lvl(parquet.NullValue(), 0, j)
	var bm []byte
	off := a.Data().Offset()
	if a.NullN() > 0 {
		bm = a.NullBitmapBytes()
		if def == 0 {
			return fmt.Errorf("null in a non-nullable column")
		}
	}
	switch c := a.(type) {
	case *array.Int8:
		fillInt32(out, c.Int8Values()[s:], bm, off+s, def, j)
	case *array.Int16:
		fillInt32(out, c.Int16Values()[s:], bm, off+s, def, j)
	case *array.Int32:
		fillInt32(out, c.Int32Values()[s:], bm, off+s, def, j)
	case *array.Int64:
		fillInt64(out, c.Int64Values()[s:], bm, off+s, def, j)
	case *array.Uint8:
		fillInt32(out, c.Uint8Values()[s:], bm, off+s, def, j)
	case *array.Uint16:
		fillInt32(out, c.Uint16Values()[s:], bm, off+s, def, j)
	case *array.Uint32:
		fillInt32(out, c.Uint32Values()[s:], bm, off+s, def, j)
	case *array.Uint64:
		fillInt64(out, c.Uint64Values()[s:], bm, off+s, def, j)
	case *array.Float32:
		fillFloat32(out, c.Float32Values()[s:], bm, off+s, def, j)
	case *array.Float64:
		fillFloat64(out, c.Float64Values()[s:], bm, off+s, def, j)
	case *array.Date32:
		fillInt32(out, c.Date32Values()[s:], bm, off+s, def, j)
	case *array.Timestamp:
		fillInt64(out, c.TimestampValues()[s:], bm, off+s, def, j)
	case *array.Float16:
		vals := c.Values()[s:]
		for i := range out {
			if bm != nil && !bitutil.BitIsSet(bm, off+s+i) {
				out[i] = null
			} else {
				out[i] = parquet.FloatValue(vals[i].Float32())
				out[i].SetDefinitionLevel(def)
				out[i].SetColumnIndex(j)
			}
		}
	case *array.Boolean:
		for i := range out {
			if bm != nil && !bitutil.BitIsSet(bm, off+s+i) {
				out[i] = null
			} else {
				out[i] = parquet.BooleanValue(c.Value(s + i))
				out[i].SetDefinitionLevel(def)
				out[i].SetColumnIndex(j)
			}
		}
	case *array.String:
		fillBytes(out, c.ValueOffsets()[s:], bufBytes(c.Data(), 2), bm, off+s, def, j)
	case *array.LargeString:
		fillBytes(out, c.ValueOffsets()[s:], bufBytes(c.Data(), 2), bm, off+s, def, j)
	case *array.Binary:
		fillBytes(out, c.ValueOffsets()[s:], bufBytes(c.Data(), 2), bm, off+s, def, j)
	case *array.LargeBinary:
		fillBytes(out, c.ValueOffsets()[s:], bufBytes(c.Data(), 2), bm, off+s, def, j)
	case *array.Dictionary:
		dict := c.Dictionary()
		dv := make([]parquet.Value, dict.Len())
		if err := toValues(dv, dict, 0, def, j); err != nil {
			return err
		}
		idx, err := dictIndices(c.Indices())
		if err != nil {
			return err
		}
		for i := range out {
			if bm != nil && !bitutil.BitIsSet(bm, off+s+i) {
				out[i] = null
				continue
			}
			k := idx[s+i]
			if k < 0 || k >= int64(len(dv)) {
				return fmt.Errorf("dictionary index %d out of range", k)
			}
			out[i] = dv[k]
		}
	default:
		return fmt.Errorf("type %s cannot be written to Parquet", a.DataType())
	}
	return nil
}

// lvl sets the definition level and column index of v (inlinable, unlike
// Value.Level).
func lvl(v parquet.Value, def, j int) parquet.Value {
	v.SetDefinitionLevel(def)
	v.SetColumnIndex(j)
	return v
}

// The fill functions convert one typed column slice to Parquet values;
// nulls get definition level 0.

func fillInt32[T ~int8 | ~int16 | ~int32 | ~uint8 | ~uint16 | ~uint32](out []parquet.Value, vals []T, bm []byte, off, def, j int) {
	null := lvl(parquet.NullValue(), 0, j)
	vals = vals[:len(out)]
	for i, v := range vals {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = parquet.Int32Value(int32(v))
			out[i].SetDefinitionLevel(def)
			out[i].SetColumnIndex(j)
		} else {
			out[i] = null
		}
	}
}

func fillInt64[T ~int64 | ~uint64](out []parquet.Value, vals []T, bm []byte, off, def, j int) {
	null := lvl(parquet.NullValue(), 0, j)
	vals = vals[:len(out)]
	for i, v := range vals {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = parquet.Int64Value(int64(v))
			out[i].SetDefinitionLevel(def)
			out[i].SetColumnIndex(j)
		} else {
			out[i] = null
		}
	}
}

func fillFloat32(out []parquet.Value, vals []float32, bm []byte, off, def, j int) {
	null := lvl(parquet.NullValue(), 0, j)
	vals = vals[:len(out)]
	for i, v := range vals {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = parquet.FloatValue(v)
			out[i].SetDefinitionLevel(def)
			out[i].SetColumnIndex(j)
		} else {
			out[i] = null
		}
	}
}

func fillFloat64(out []parquet.Value, vals []float64, bm []byte, off, def, j int) {
	null := lvl(parquet.NullValue(), 0, j)
	vals = vals[:len(out)]
	for i, v := range vals {
		if bm == nil || bitutil.BitIsSet(bm, off+i) {
			out[i] = parquet.DoubleValue(v)
			out[i].SetDefinitionLevel(def)
			out[i].SetColumnIndex(j)
		} else {
			out[i] = null
		}
	}
}

// fillBytes makes byte-array values that reference the Arrow data buffer;
// the column writer copies them.
func fillBytes[O int32 | int64](out []parquet.Value, offs []O, data []byte, bm []byte, off, def, j int) {
	null := lvl(parquet.NullValue(), 0, j)
	for i := range out {
		if bm != nil && !bitutil.BitIsSet(bm, off+i) {
			out[i] = null
			continue
		}
		out[i] = parquet.ByteArrayValue(data[offs[i]:offs[i+1]])
		out[i].SetDefinitionLevel(def)
		out[i].SetColumnIndex(j)
	}
}

package files

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/float16"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
)

// allTypes builds a record with one column of every writable type; row 1
// is null in every nullable column. Returned columns are in field order.
func allTypes(t testing.TB, mem memory.Allocator) arrow.Record {
	t.Helper()
	valid := []bool{true, false, true, true, true}
	strDict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	type col struct {
		name string
		dt   arrow.DataType
		fill func(b array.Builder)
	}
	cols := []col{
		{"b", arrow.FixedWidthTypes.Boolean, func(b array.Builder) {
			b.(*array.BooleanBuilder).AppendValues([]bool{true, false, false, true, true}, valid)
		}},
		{"i8", arrow.PrimitiveTypes.Int8, func(b array.Builder) {
			b.(*array.Int8Builder).AppendValues([]int8{-128, 0, 127, 1, -1}, valid)
		}},
		{"i16", arrow.PrimitiveTypes.Int16, func(b array.Builder) {
			b.(*array.Int16Builder).AppendValues([]int16{-32768, 0, 32767, 2, -2}, valid)
		}},
		{"i32", arrow.PrimitiveTypes.Int32, func(b array.Builder) {
			b.(*array.Int32Builder).AppendValues([]int32{math.MinInt32, 0, math.MaxInt32, 3, -3}, valid)
		}},
		{"i64", arrow.PrimitiveTypes.Int64, func(b array.Builder) {
			b.(*array.Int64Builder).AppendValues([]int64{math.MinInt64, 0, math.MaxInt64, 4, -4}, valid)
		}},
		{"u8", arrow.PrimitiveTypes.Uint8, func(b array.Builder) {
			b.(*array.Uint8Builder).AppendValues([]uint8{255, 0, 0, 5, 6}, valid)
		}},
		{"u16", arrow.PrimitiveTypes.Uint16, func(b array.Builder) {
			b.(*array.Uint16Builder).AppendValues([]uint16{65535, 0, 0, 5, 6}, valid)
		}},
		{"u32", arrow.PrimitiveTypes.Uint32, func(b array.Builder) {
			b.(*array.Uint32Builder).AppendValues([]uint32{math.MaxUint32, 0, 1 << 31, 5, 6}, valid)
		}},
		{"u64", arrow.PrimitiveTypes.Uint64, func(b array.Builder) {
			b.(*array.Uint64Builder).AppendValues([]uint64{1<<63 - 1, 0, 12, 5, 6}, valid)
		}},
		{"f16", arrow.FixedWidthTypes.Float16, func(b array.Builder) {
			b.(*array.Float16Builder).AppendValues([]float16.Num{float16.New(1.5), float16.New(0), float16.New(-2), float16.New(0.25), float16.New(8)}, valid)
		}},
		{"f32", arrow.PrimitiveTypes.Float32, func(b array.Builder) {
			b.(*array.Float32Builder).AppendValues([]float32{0.1, 0, float32(math.NaN()), 1e-30, 3}, valid)
		}},
		{"f64", arrow.PrimitiveTypes.Float64, func(b array.Builder) {
			b.(*array.Float64Builder).AppendValues([]float64{0.1, 0, math.Inf(-1), 1e300, 7}, valid)
		}},
		{"s", arrow.BinaryTypes.String, func(b array.Builder) {
			b.(*array.StringBuilder).AppendValues([]string{"red soil", "", "a,\"quoted\"\nvalue", "é", "x"}, valid)
		}},
		{"ls", arrow.BinaryTypes.LargeString, func(b array.Builder) {
			b.(*array.LargeStringBuilder).AppendValues([]string{"one", "", "two", "three", "four"}, valid)
		}},
		{"bin", arrow.BinaryTypes.Binary, func(b array.Builder) {
			b.(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, nil, {255}, {7}, {}}, valid)
		}},
		{"dict", strDict, func(b array.Builder) {
			db := b.(*array.BinaryDictionaryBuilder)
			for i, s := range []string{"van", "", "bus", "van", "saab"} {
				if valid[i] {
					db.AppendString(s)
				} else {
					db.AppendNull()
				}
			}
		}},
		{"date", arrow.FixedWidthTypes.Date32, func(b array.Builder) {
			b.(*array.Date32Builder).AppendValues([]arrow.Date32{19000, 0, -1, 1, 2}, valid)
		}},
		{"ts", &arrow.TimestampType{Unit: arrow.Millisecond}, func(b array.Builder) {
			b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1700000000123, 0, -5, 1, 2}, valid)
		}},
	}
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for j, c := range cols {
		b := array.NewBuilder(mem, c.dt)
		c.fill(b)
		arrs[j] = b.NewArray()
		b.Release()
		fields[j] = arrow.Field{Name: c.name, Type: c.dt, Nullable: true}
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, 5)
	releaseArrays(arrs)
	return rec
}

// cellText renders a cell for comparison across formats.
func cellText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "<null>"
	}
	switch c := a.(type) {
	case *array.Float16:
		return strconv.FormatFloat(float64(c.Value(i).Float32()), 'g', -1, 32)
	case *array.Float32:
		return strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	}
	return a.ValueStr(i)
}

func TestWriteReadRoundTrip(t *testing.T) {
	mem := checked(t)
	rec := allTypes(t, mem)
	defer rec.Release()
	schema := rec.Schema()
	// Write the record and a slice of it (non-zero array offsets).
	sl := rec.NewSlice(1, 5)
	defer sl.Release()
	in := []arrow.Record{rec, sl}
	dir := t.TempDir()

	for _, name := range []string{"out.arrow", "out.arrows", "out.feather"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			for _, comp := range []string{"", "zstd", "lz4"} {
				if err := WriteFile(p, schema, in, WriteOptions{Compression: comp, Mem: mem}); err != nil {
					t.Fatal(err)
				}
				s, out, err := ReadFile(p, ReadOptions{Mem: mem})
				if err != nil {
					t.Fatal(err)
				}
				if !s.Equal(schema) || len(out) != 2 {
					t.Fatalf("schema %v, %d records", s, len(out))
				}
				for i := range in {
					if !array.RecordApproxEqual(in[i], out[i], array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
						t.Errorf("%s record %d differs", comp, i)
					}
				}
				release(out)
			}
		})
	}

	t.Run("parquet", func(t *testing.T) {
		p := filepath.Join(dir, "out.parquet")
		for _, comp := range []string{"", "snappy", "gzip", "none", "lz4"} {
			if err := WriteFile(p, schema, in, WriteOptions{Compression: comp}); err != nil {
				t.Fatal(err)
			}
			if comp == "lz4" {
				// written for other readers; forestd's reader refuses
				// LZ4_RAW (TestParquetLZ4NeverWrongValues)
				if _, _, err := ReadFile(p, ReadOptions{Mem: mem}); err == nil || !strings.Contains(err.Error(), "LZ4_RAW") {
					t.Errorf("lz4: reading back: %v, want the LZ4_RAW refusal", err)
				}
				continue
			}
			s, out, err := ReadFile(p, ReadOptions{Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]arrow.DataType{
				"f16": arrow.PrimitiveTypes.Float32, "ls": arrow.BinaryTypes.String, "dict": arrow.BinaryTypes.String,
			}
			for j, f := range s.Fields() {
				w := schema.Field(j).Type
				if x, ok := want[f.Name]; ok {
					w = x
				}
				if f.Name != schema.Field(j).Name || !arrow.TypeEqual(f.Type, w) || !f.Nullable {
					t.Errorf("field %d: %v, want %s %s", j, f, schema.Field(j).Name, w)
				}
			}
			compareCells(t, in, out, nil)
			release(out)
		}
	})

	for _, name := range []string{"out.csv", "out.csv.gz"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if err := WriteFile(p, schema, in, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			s, out, err := ReadFile(p, ReadOptions{Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer release(out)
			want := map[string]arrow.Type{
				"b": arrow.STRING, "i8": arrow.INT64, "i16": arrow.INT64, "i32": arrow.INT64, "i64": arrow.INT64,
				"u8": arrow.INT64, "u16": arrow.INT64, "u32": arrow.INT64, "u64": arrow.INT64,
				"f16": arrow.FLOAT64, "f32": arrow.FLOAT64, "f64": arrow.FLOAT64,
				"s": arrow.STRING, "ls": arrow.STRING, "bin": arrow.STRING, "dict": arrow.STRING,
				"date": arrow.STRING, "ts": arrow.STRING,
			}
			for _, f := range s.Fields() {
				if f.Type.ID() != want[f.Name] {
					t.Errorf("%s: %s, want %v", f.Name, f.Type, want[f.Name])
				}
			}
			// CSV reads all rows as one batch; compare against the
			// concatenated input with numbers compared as numbers.
			compareCells(t, in, out, func(j int, a, b string) bool {
				if a == b {
					return true
				}
				x, e1 := strconv.ParseFloat(a, 64)
				y, e2 := strconv.ParseFloat(b, 64)
				if e1 != nil || e2 != nil {
					return false
				}
				if schema.Field(j).Type.ID() == arrow.FLOAT32 || schema.Field(j).Type.ID() == arrow.FLOAT16 {
					return float32(x) == float32(y)
				}
				return x == y || (math.IsNaN(x) && math.IsNaN(y))
			})
			// (An empty string or byte string reads back as null.)
		})
	}
}

// compareCells compares the cells of two record lists row by row
// regardless of how rows are split into records. NaN in the input may
// come back as null (CSV).
func compareCells(t *testing.T, in, out []arrow.Record, eq func(j int, a, b string) bool) {
	t.Helper()
	type cell struct{ rec, row int }
	var a, b []cell
	for r, x := range in {
		for i := 0; i < int(x.NumRows()); i++ {
			a = append(a, cell{r, i})
		}
	}
	for r, x := range out {
		for i := 0; i < int(x.NumRows()); i++ {
			b = append(b, cell{r, i})
		}
	}
	if len(a) != len(b) {
		t.Fatalf("%d rows, want %d", len(b), len(a))
	}
	for j := 0; j < int(in[0].NumCols()); j++ {
		for k := range a {
			x := cellText(in[a[k].rec].Column(j), a[k].row)
			y := cellText(out[b[k].rec].Column(j), b[k].row)
			if x == y || (eq != nil && eq(j, x, y)) || (eq != nil && (x == "NaN" || x == "") && y == "<null>") {
				continue
			}
			t.Errorf("column %s row %d: got %q, want %q", in[0].Schema().Field(j).Name, k, y, x)
		}
	}
}

func TestParquetRowGroupsAndRequired(t *testing.T) {
	mem := checked(t)
	n := 250
	b := array.NewFloat64Builder(mem)
	l := array.NewStringBuilder(mem)
	for i := 0; i < n; i++ {
		b.Append(float64(i) / 3)
		l.Append([]string{"a", "b", "c"}[i%3])
	}
	x, y := b.NewArray(), l.NewArray()
	b.Release()
	l.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{x, y}, int64(n))
	x.Release()
	y.Release()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "rg.parquet")
	if err := WriteFile(p, schema, []arrow.Record{rec, rec}, WriteOptions{RowGroupRows: 100}); err != nil {
		t.Fatal(err)
	}
	s, out, err := ReadFile(p, ReadOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(out)
	var sizes []int64
	for _, r := range out {
		sizes = append(sizes, r.NumRows())
	}
	if len(sizes) != 5 || sizes[0] != 100 || sizes[4] != 100 {
		t.Errorf("row groups %v", sizes)
	}
	if !s.Equal(schema) {
		t.Errorf("schema %v, want %v (non-nullable → REQUIRED → non-nullable)", s, schema)
	}
	compareCells(t, []arrow.Record{rec, rec}, out, nil)
}

func TestFrameThroughFiles(t *testing.T) {
	// The path forestd gen takes: frame → record → file → records → frame.
	f := &frame.Frame{
		Names: []string{"x1", "x2"},
		Cols:  [][]float32{{0.1, float32(math.NaN()), 3}, {1, 2, 3}},
		NRows: 3, LabelName: "label", Task: frame.TaskClassification,
		Classes: []string{"0", "1"}, Y: []int32{1, 0, 1},
	}
	mem := checked(t)
	rec := f.ToRecord(mem)
	defer rec.Release()
	for _, name := range []string{"g.parquet", "g.arrow", "g.arrows", "g.csv.gz"} {
		p := filepath.Join(t.TempDir(), name)
		if err := WriteFile(p, rec.Schema(), []arrow.Record{rec}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		s, recs, err := ReadFile(p, ReadOptions{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		g, err := frame.FromRecords(s, recs, frame.Options{Label: "label"})
		release(recs)
		if err != nil {
			t.Fatal(err)
		}
		if g.Task != frame.TaskClassification || len(g.Classes) != 2 || g.Y[0] != 1 || g.Y[1] != 0 {
			t.Errorf("%s: task %v classes %v y %v", name, g.Task, g.Classes, g.Y)
		}
		for j := range f.Cols {
			for i, v := range f.Cols[j] {
				w := g.Cols[j][i]
				if v != w && !(v != v && w != w) {
					t.Errorf("%s: col %d row %d = %v, want %v", name, j, i, w, v)
				}
			}
		}
	}
}

func TestWriteFileErrorsLeaveNothing(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	lb.Append(true)
	la := lb.NewArray()
	lb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: la.DataType()}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{la}, 1)
	la.Release()
	defer rec.Release()
	p := filepath.Join(dir, "x.parquet")
	if err := WriteFile(p, schema, []arrow.Record{rec}, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "column l") {
		t.Errorf("list column: err = %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "x.txt"), schema, nil, WriteOptions{}); err == nil {
		t.Error("unknown extension accepted")
	}
	if err := WriteFile(filepath.Join(dir, "y.parquet"), schema, nil, WriteOptions{Compression: "brotli9"}); err == nil {
		t.Error("unknown compression accepted")
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "m", Type: la.DataType()}}, nil)
	if err := WriteFile(filepath.Join(dir, "z.arrow"), other, []arrow.Record{rec}, WriteOptions{}); err == nil {
		t.Error("record with another schema accepted")
	}
	// Nulls in a non-nullable field.
	nb := array.NewInt64Builder(mem)
	nb.AppendNull()
	na := nb.NewArray()
	nb.Release()
	ns := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: false}}, nil)
	nr := array.NewRecord(ns, []arrow.Array{na}, 1)
	na.Release()
	defer nr.Release()
	if err := WriteFile(filepath.Join(dir, "n.parquet"), ns, []arrow.Record{nr}, WriteOptions{}); err == nil || !strings.Contains(err.Error(), "non-nullable") {
		t.Errorf("null in required column: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x.csv"), ns, nil, WriteOptions{}); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	// An existing file is replaced atomically.
	good := filepath.Join(dir, "good.csv")
	os.WriteFile(good, []byte("old"), 0o644)
	if err := WriteFile(good, ns, nil, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(good); string(b) != "n\n" {
		t.Errorf("replaced content %q", b)
	}
}

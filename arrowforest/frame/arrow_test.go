package frame

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/float16"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// checked returns an allocator that fails the test if anything allocated
// through it is still live when the test ends.
func checked(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// build makes an array of type dt from Go values; nil is a null.
func build(t *testing.T, mem memory.Allocator, dt arrow.DataType, vals ...any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	for _, v := range vals {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Int8Builder:
			bb.Append(int8(v.(int)))
		case *array.Int16Builder:
			bb.Append(int16(v.(int)))
		case *array.Int32Builder:
			bb.Append(int32(v.(int)))
		case *array.Int64Builder:
			bb.Append(int64(v.(int)))
		case *array.Uint8Builder:
			bb.Append(uint8(v.(int)))
		case *array.Uint16Builder:
			bb.Append(uint16(v.(int)))
		case *array.Uint32Builder:
			bb.Append(uint32(v.(int)))
		case *array.Uint64Builder:
			bb.Append(uint64(v.(int)))
		case *array.Float16Builder:
			bb.Append(float16.New(float32(toF(v))))
		case *array.Float32Builder:
			bb.Append(float32(toF(v)))
		case *array.Float64Builder:
			bb.Append(toF(v))
		case *array.BooleanBuilder:
			bb.Append(v.(bool))
		case *array.StringBuilder:
			bb.Append(v.(string))
		case *array.LargeStringBuilder:
			bb.Append(v.(string))
		case *array.BinaryDictionaryBuilder:
			if err := bb.AppendString(v.(string)); err != nil {
				t.Fatal(err)
			}
		case *array.Int64DictionaryBuilder:
			if err := bb.Append(int64(v.(int))); err != nil {
				t.Fatal(err)
			}
		case *array.Float64DictionaryBuilder:
			if err := bb.Append(toF(v)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("build: no case for %T", b)
		}
	}
	return b.NewArray()
}

func toF(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic("toF")
}

// record assembles a record from named columns and releases the columns.
func record(names []string, cols ...arrow.Array) arrow.Record {
	fields := make([]arrow.Field, len(cols))
	for j, c := range cols {
		fields[j] = arrow.Field{Name: names[j], Type: c.DataType(), Nullable: true}
	}
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func release(recs ...arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// same compares float32 slices treating NaN as equal to NaN.
func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

var nan = float32(math.NaN())

func TestFromRecordsNumericTypes(t *testing.T) {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	}
	for _, dt := range types {
		t.Run(dt.String(), func(t *testing.T) {
			mem := checked(t)
			for _, withNulls := range []bool{false, true} {
				vals := []any{1, 2, 3, 4, 5, 120}
				want := []float32{1, 2, 3, 4, 5, 120}
				if withNulls {
					vals[1], vals[4] = nil, nil
					want[1], want[4] = nan, nan
				}
				rec := record([]string{"x", "label"},
					build(t, mem, dt, vals...),
					build(t, mem, arrow.PrimitiveTypes.Int64, 0, 1, 0, 1, 0, 1))
				f, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "label"})
				if err != nil {
					t.Fatal(err)
				}
				if !same(f.Cols[0], want) {
					t.Errorf("nulls=%v: got %v, want %v", withNulls, f.Cols[0], want)
				}
				if err := f.Validate(); err != nil {
					t.Error(err)
				}
				// A slice of the record exercises non-zero array offsets.
				sl := rec.NewSlice(1, 5)
				f2, err := FromRecords(sl.Schema(), []arrow.Record{sl}, Options{Label: "label"})
				if err != nil {
					t.Fatal(err)
				}
				if !same(f2.Cols[0], want[1:5]) {
					t.Errorf("slice nulls=%v: got %v, want %v", withNulls, f2.Cols[0], want[1:5])
				}
				release(rec, sl)
			}
		})
	}
}

func TestFromRecordsFloatNaNAndBool(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"f", "b", "y"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.5, math.NaN(), nil, -2.0),
		build(t, mem, arrow.FixedWidthTypes.Boolean, true, false, nil, true),
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0, 2.0, 3.0, 4.0))
	defer rec.Release()
	f, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if !same(f.Cols[0], []float32{1.5, nan, nan, -2}) {
		t.Errorf("float: %v", f.Cols[0])
	}
	if !same(f.Cols[1], []float32{1, 0, nan, 1}) {
		t.Errorf("bool: %v", f.Cols[1])
	}
	if f.Task != TaskRegression || !reflect.DeepEqual(f.YReg, []float64{1, 2, 3, 4}) {
		t.Errorf("regression label: task %v y %v", f.Task, f.YReg)
	}
	if f.Levels != nil {
		t.Errorf("numeric frame has levels %v", f.Levels)
	}
}

func TestFromRecordsDictionaries(t *testing.T) {
	mem := checked(t)
	strDict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	numDict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.PrimitiveTypes.Int64}
	// Two records whose dictionaries differ (as after an IPC dictionary
	// replacement): the levels are the sorted union.
	r1 := record([]string{"colour", "size", "y"},
		build(t, mem, strDict, "red", "green", nil, "red"),
		build(t, mem, numDict, 10, 20, 10, nil),
		build(t, mem, arrow.PrimitiveTypes.Int64, 0, 1, 0, 1))
	r2 := record([]string{"colour", "size", "y"},
		build(t, mem, strDict, "blue", "red"),
		build(t, mem, numDict, 30, 30),
		build(t, mem, arrow.PrimitiveTypes.Int64, 1, 0))
	defer release(r1, r2)
	recs := []arrow.Record{r1, r2}
	f, err := FromRecords(r1.Schema(), recs, Options{Label: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"blue", "green", "red"}; !reflect.DeepEqual(f.Levels[0], want) {
		t.Errorf("levels %v, want %v", f.Levels[0], want)
	}
	if f.Levels[1] != nil {
		t.Errorf("numeric dictionary got levels %v", f.Levels[1])
	}
	if !same(f.Cols[0], []float32{2, 1, nan, 2, 0, 2}) {
		t.Errorf("colour: %v", f.Cols[0])
	}
	if !same(f.Cols[1], []float32{10, 20, 10, nan, 30, 30}) {
		t.Errorf("size: %v", f.Cols[1])
	}

	// Scoring with the model's levels: an unseen level is NaN, and a plain
	// string column is accepted when levels are given.
	g, err := FeaturesFromRecords(r1.Schema(), recs, []string{"colour"}, [][]string{{"green", "red"}})
	if err != nil {
		t.Fatal(err)
	}
	if !same(g.Cols[0], []float32{1, 0, nan, 1, nan, 1}) {
		t.Errorf("scoring colour: %v", g.Cols[0])
	}
	plain := record([]string{"colour"}, build(t, mem, arrow.BinaryTypes.String, "red", "mauve", nil, "green"))
	defer plain.Release()
	h, err := FeaturesFromRecords(plain.Schema(), []arrow.Record{plain}, []string{"colour"}, [][]string{{"green", "red"}})
	if err != nil {
		t.Fatal(err)
	}
	if !same(h.Cols[0], []float32{1, nan, nan, 0}) {
		t.Errorf("plain colour: %v", h.Cols[0])
	}
	large := record([]string{"colour"}, build(t, mem, arrow.BinaryTypes.LargeString, "red", "green"))
	defer large.Release()
	h, err = FromRecords(large.Schema(), []arrow.Record{large}, Options{Levels: map[string][]string{"colour": {"green", "red"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !same(h.Cols[0], []float32{1, 0}) || !reflect.DeepEqual(h.Levels, [][]string{{"green", "red"}}) {
		t.Errorf("large string colour: %v levels %v", h.Cols[0], h.Levels)
	}
	// Levels for a numeric column: the model expected a categorical.
	if _, err := FeaturesFromRecords(r1.Schema(), recs, []string{"size"}, [][]string{{"a"}}); err == nil || !strings.Contains(err.Error(), "size") {
		t.Errorf("levels on numeric dictionary: err = %v", err)
	}
}

func TestFromRecordsStringFeatureIsAnError(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"a", "petal_length_cm", "label"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0, 2.0),
		build(t, mem, arrow.BinaryTypes.String, "1.4", "1.3"),
		build(t, mem, arrow.PrimitiveTypes.Int64, 0, 1))
	defer rec.Release()
	recs := []arrow.Record{rec}
	for _, opts := range []Options{
		{Label: "label"},
		{Label: "label", Features: []string{"petal_length_cm"}},
	} {
		_, err := FromRecords(rec.Schema(), recs, opts)
		if err == nil || !strings.Contains(err.Error(), "column petal_length_cm is utf8, numeric expected") {
			t.Errorf("%+v: err = %v", opts, err)
		}
	}
	if _, err := FeaturesFromRecords(rec.Schema(), recs, []string{"a", "petal_length_cm"}, nil); err == nil || !strings.Contains(err.Error(), "petal_length_cm") {
		t.Errorf("scoring: err = %v", err)
	}
	f, err := FromRecords(rec.Schema(), recs, Options{Label: "label", Exclude: []string{"petal_length_cm"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Names, []string{"a"}) {
		t.Errorf("names %v", f.Names)
	}
	f, err = FromRecords(rec.Schema(), recs, Options{Label: "label", Features: []string{"a"}})
	if err != nil || !reflect.DeepEqual(f.Names, []string{"a"}) {
		t.Errorf("explicit features: %v %v", f, err)
	}
}

func TestFromRecordsOptionErrors(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"a", "b", "y"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0),
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0),
		build(t, mem, arrow.BinaryTypes.String, "x"))
	defer rec.Release()
	recs := []arrow.Record{rec}
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Label: "nope"}, `label column "nope" not found (columns: a, b, y)`},
		{Options{Label: "Y"}, `label column "Y" not found (columns: a, b, y); did you mean "y"?`},
		{Options{Label: "y", Features: []string{"zz"}}, `feature column "zz" not found`},
		{Options{Label: "y", Features: []string{"B"}}, `feature column "B" not found (columns: a, b, y); did you mean "b"?`},
		{Options{Label: "y", Features: []string{"y"}}, "is the label"},
		{Options{Label: "y", Features: []string{"a", "a"}}, "listed twice"},
		{Options{Label: "y", Features: []string{"a"}, Exclude: []string{"a"}}, "both a feature and excluded"},
		{Options{Label: "y", Exclude: []string{"q"}}, `excluded column "q" not found`},
		{Options{Label: "y", Exclude: []string{"a", "b"}}, "no feature columns"},
		{Options{Label: "y", Task: TaskRegression}, "cannot be a regression target"},
	}
	for _, c := range cases {
		_, err := FromRecords(rec.Schema(), recs, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestFromRecordsDuplicateFeatureNames: two columns of one name cannot both
// be features (a model knows its features by name), and naming one of them
// in Features is ambiguous.
func TestFromRecordsDuplicateFeatureNames(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"a", "a", "y"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0),
		build(t, mem, arrow.PrimitiveTypes.Float64, 2.0),
		build(t, mem, arrow.BinaryTypes.String, "x"))
	defer rec.Release()
	_, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y"})
	if err == nil || !strings.Contains(err.Error(), "column name a occurs twice (columns 1 and 2)") {
		t.Fatalf("err = %v", err)
	}
	_, err = FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y", Features: []string{"a"}})
	if err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("choosing an ambiguous name: err = %v", err)
	}
}

func TestLabels(t *testing.T) {
	strDict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.BinaryTypes.String}
	intDict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Int64}
	cases := []struct {
		name    string
		dt      arrow.DataType
		vals    []any
		task    Task
		classes []string
		y       []int32
		yreg    []float64
		skipped int
		err     string
	}{
		{name: "int numeric order", dt: arrow.PrimitiveTypes.Int64, vals: []any{10, 2, -1, 2, nil},
			classes: []string{"-1", "2", "10"}, y: []int32{2, 1, 0, 1}, skipped: 1},
		{name: "int8", dt: arrow.PrimitiveTypes.Int8, vals: []any{3, 1, 3},
			classes: []string{"1", "3"}, y: []int32{1, 0, 1}},
		{name: "uint32", dt: arrow.PrimitiveTypes.Uint32, vals: []any{7, 0, 7},
			classes: []string{"0", "7"}, y: []int32{1, 0, 1}},
		{name: "string lexicographic", dt: arrow.BinaryTypes.String, vals: []any{"b", "a", nil, "B", "a"},
			classes: []string{"B", "a", "b"}, y: []int32{2, 1, 0, 1}, skipped: 1},
		{name: "large string", dt: arrow.BinaryTypes.LargeString, vals: []any{"red soil", "cotton crop"},
			classes: []string{"cotton crop", "red soil"}, y: []int32{1, 0}},
		{name: "bool", dt: arrow.FixedWidthTypes.Boolean, vals: []any{true, false, true},
			classes: []string{"false", "true"}, y: []int32{1, 0, 1}},
		{name: "bool one value", dt: arrow.FixedWidthTypes.Boolean, vals: []any{true, true},
			classes: []string{"true"}, y: []int32{0, 0}},
		{name: "string dictionary", dt: strDict, vals: []any{"van", "bus", nil, "van"},
			classes: []string{"bus", "van"}, y: []int32{1, 0, 1}, skipped: 1},
		{name: "int dictionary", dt: intDict, vals: []any{10, 9, 10},
			classes: []string{"9", "10"}, y: []int32{1, 0, 1}},
		{name: "float regression", dt: arrow.PrimitiveTypes.Float64, vals: []any{1.5, math.NaN(), nil, 2.5},
			yreg: []float64{1.5, 2.5}, skipped: 2},
		{name: "float32 regression", dt: arrow.PrimitiveTypes.Float32, vals: []any{0.5, 4.0},
			yreg: []float64{0.5, 4}},
		{name: "float classification", dt: arrow.PrimitiveTypes.Float64, vals: []any{2.0, 0.5, math.NaN(), 2.0},
			task: TaskClassification, classes: []string{"0.5", "2"}, y: []int32{1, 0, 1}, skipped: 1},
		{name: "int regression", dt: arrow.PrimitiveTypes.Int32, vals: []any{3, nil, 5},
			task: TaskRegression, yreg: []float64{3, 5}, skipped: 1},
		{name: "infinite target", dt: arrow.PrimitiveTypes.Float64, vals: []any{1.0, math.Inf(1)},
			err: "infinite target"},
		{name: "string regression", dt: arrow.BinaryTypes.String, vals: []any{"a"},
			task: TaskRegression, err: "cannot be a regression target"},
		{name: "string dictionary regression", dt: strDict, vals: []any{"a"},
			task: TaskRegression, err: "cannot be a regression target"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checked(t)
			x := make([]any, len(c.vals))
			for i := range x {
				x[i] = float64(i)
			}
			rec := record([]string{"x", "y"},
				build(t, mem, arrow.PrimitiveTypes.Float64, x...),
				build(t, mem, c.dt, c.vals...))
			defer rec.Release()
			f, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y", Task: c.task})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			if f.SkippedLabels != c.skipped || f.NRows != len(c.vals)-c.skipped {
				t.Errorf("skipped %d rows %d, want %d and %d", f.SkippedLabels, f.NRows, c.skipped, len(c.vals)-c.skipped)
			}
			if c.yreg != nil {
				if f.Task != TaskRegression || !reflect.DeepEqual(f.YReg, c.yreg) {
					t.Errorf("task %v yreg %v, want %v", f.Task, f.YReg, c.yreg)
				}
			} else if f.Task != TaskClassification || !reflect.DeepEqual(f.Classes, c.classes) || !reflect.DeepEqual(f.Y, c.y) {
				t.Errorf("task %v classes %q y %v, want %q %v", f.Task, f.Classes, f.Y, c.classes, c.y)
			}
			// Dropped label rows are dropped from the features too.
			var want []float32
			for i, v := range c.vals {
				if v == nil {
					continue
				}
				if fv, ok := v.(float64); ok && math.IsNaN(fv) {
					continue
				}
				want = append(want, float32(i))
			}
			if !same(f.Cols[0], want) {
				t.Errorf("features %v, want %v", f.Cols[0], want)
			}
		})
	}
}

func TestSkippedLabelsAcrossRecords(t *testing.T) {
	mem := checked(t)
	r1 := record([]string{"x", "y"},
		build(t, mem, arrow.PrimitiveTypes.Int32, 1, 2, nil),
		build(t, mem, arrow.BinaryTypes.String, "a", nil, "b"))
	r2 := record([]string{"x", "y"},
		build(t, mem, arrow.PrimitiveTypes.Int32, 4, 5),
		build(t, mem, arrow.BinaryTypes.String, "b", "a"))
	defer release(r1, r2)
	f, err := FromRecords(r1.Schema(), []arrow.Record{r1, r2}, Options{Label: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if f.NRows != 4 || f.SkippedLabels != 1 || !same(f.Cols[0], []float32{1, nan, 4, 5}) || !reflect.DeepEqual(f.Y, []int32{0, 1, 1, 0}) {
		t.Errorf("rows %d skipped %d x %v y %v", f.NRows, f.SkippedLabels, f.Cols[0], f.Y)
	}
}

func TestFeaturesFromRecords(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"a", "b", "c", "ts"},
		build(t, mem, arrow.PrimitiveTypes.Int16, 1, 2),
		build(t, mem, arrow.PrimitiveTypes.Float32, 0.5, nil),
		build(t, mem, arrow.PrimitiveTypes.Uint8, 7, 8),
		build(t, mem, arrow.BinaryTypes.String, "x", "y"))
	defer rec.Release()
	recs := []arrow.Record{rec}
	f, err := FeaturesFromRecords(rec.Schema(), recs, []string{"c", "a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Names, []string{"c", "a", "b"}) || f.HasLabel() || f.NRows != 2 {
		t.Fatalf("frame %+v", f)
	}
	if !same(f.Cols[0], []float32{7, 8}) || !same(f.Cols[1], []float32{1, 2}) || !same(f.Cols[2], []float32{0.5, nan}) {
		t.Errorf("cols %v", f.Cols)
	}
	_, err = FeaturesFromRecords(rec.Schema(), recs, []string{"a", "pixel_7_7", "b"}, nil)
	if err == nil || !strings.Contains(err.Error(), "missing feature column pixel_7_7") || !strings.Contains(err.Error(), "the model needs 3 features: a, pixel_7_7, b") {
		t.Errorf("missing: err = %v", err)
	}
	_, err = FeaturesFromRecords(rec.Schema(), recs, []string{"a", "ts"}, nil)
	if err == nil || !strings.Contains(err.Error(), "column ts is utf8") {
		t.Errorf("wrong type: err = %v", err)
	}
	if _, err := FeaturesFromRecords(rec.Schema(), recs, []string{"a"}, [][]string{nil, nil}); err == nil {
		t.Error("mismatched levels accepted")
	}
}

func TestRecordsMustMatchSchema(t *testing.T) {
	mem := checked(t)
	r1 := record([]string{"x"}, build(t, mem, arrow.PrimitiveTypes.Int32, 1))
	r2 := record([]string{"x"}, build(t, mem, arrow.PrimitiveTypes.Int64, 1))
	defer release(r1, r2)
	if _, err := FeaturesFromRecords(r1.Schema(), []arrow.Record{r1, r2}, []string{"x"}, nil); err == nil {
		t.Error("records with different types accepted")
	}
}

func TestToRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name      string
		f         *Frame
		labelType arrow.DataType
	}{
		{"integer classes", &Frame{Names: []string{"a", "b"}, Cols: [][]float32{{1, nan, 3}, {0, 1, 0}}, NRows: 3,
			LabelName: "label", Task: TaskClassification, Classes: []string{"-3", "0", "12"}, Y: []int32{2, 0, 1}},
			arrow.PrimitiveTypes.Int64},
		{"string classes", &Frame{Names: []string{"a"}, Cols: [][]float32{{1, 2, 3}}, NRows: 3,
			LabelName: "kind", Task: TaskClassification, Classes: []string{"007", "M", "R"}, Y: []int32{2, 0, 1}},
			arrow.BinaryTypes.String},
		{"regression", &Frame{Names: []string{"a"}, Cols: [][]float32{{1, 2}}, NRows: 2,
			Task: TaskRegression, YReg: []float64{0.25, -7}},
			arrow.PrimitiveTypes.Float64},
		{"no label", &Frame{Names: []string{"a", "b"}, Cols: [][]float32{{1, 2}, {3, nan}}, NRows: 2}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checked(t)
			rec := c.f.ToRecord(mem)
			defer rec.Release()
			s := rec.Schema()
			for j := range c.f.Names {
				if s.Field(j).Type.ID() != arrow.FLOAT32 {
					t.Errorf("feature %d is %s", j, s.Field(j).Type)
				}
			}
			label := ""
			if c.labelType != nil {
				lf := s.Field(s.NumFields() - 1)
				if !arrow.TypeEqual(lf.Type, c.labelType) {
					t.Errorf("label type %s, want %s", lf.Type, c.labelType)
				}
				label = lf.Name
				want := c.f.LabelName
				if want == "" {
					want = "label"
				}
				if label != want {
					t.Errorf("label name %q, want %q", label, want)
				}
			} else if s.NumFields() != len(c.f.Names) {
				t.Errorf("unlabelled frame wrote %d columns", s.NumFields())
			}
			g, err := FromRecords(s, []arrow.Record{rec}, Options{Label: label, Task: c.f.Task})
			if err != nil {
				t.Fatal(err)
			}
			for j := range c.f.Cols {
				if !same(g.Cols[j], c.f.Cols[j]) {
					t.Errorf("col %d: %v, want %v", j, g.Cols[j], c.f.Cols[j])
				}
			}
			if !reflect.DeepEqual(g.YReg, c.f.YReg) {
				t.Errorf("yreg %v, want %v", g.YReg, c.f.YReg)
			}
			// Class indices may be renumbered by sorting; names per row must agree.
			for i := range c.f.Y {
				if g.Classes[g.Y[i]] != c.f.Classes[c.f.Y[i]] {
					t.Errorf("row %d class %q, want %q", i, g.Classes[g.Y[i]], c.f.Classes[c.f.Y[i]])
				}
			}
		})
	}
}

func BenchmarkFromRecords(b *testing.B) {
	const n, p = 100_000, 32
	mem := memory.NewGoAllocator()
	fields := make([]arrow.Field, p+1)
	cols := make([]arrow.Array, p+1)
	for j := 0; j < p; j++ {
		bb := array.NewFloat64Builder(mem)
		for i := 0; i < n; i++ {
			bb.Append(float64(i * j))
		}
		cols[j] = bb.NewArray()
		fields[j] = arrow.Field{Name: "f" + string(rune('a'+j%26)) + string(rune('a'+j/26)), Type: arrow.PrimitiveTypes.Float64}
		bb.Release()
	}
	lb := array.NewInt64Builder(mem)
	for i := 0; i < n; i++ {
		lb.Append(int64(i % 3))
	}
	cols[p] = lb.NewArray()
	fields[p] = arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int64}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	defer rec.Release()
	b.SetBytes(int64(n * p * 8))
	b.ResetTimer()
	for b.Loop() {
		if _, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "label"}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestScoringStringDictionaryWithoutLevels(t *testing.T) {
	mem := checked(t)
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	rec := record([]string{"c"}, build(t, mem, dt, "a", "b"))
	defer rec.Release()
	if _, err := FeaturesFromRecords(rec.Schema(), []arrow.Record{rec}, []string{"c"}, nil); err == nil || !strings.Contains(err.Error(), "column c") {
		t.Errorf("err = %v", err)
	}
}

// TestTargets: several numeric columns read as one multi-output target,
// row-major, across records; a row with a null or NaN in any target is
// dropped and counted; the targets are not features.
func TestTargets(t *testing.T) {
	mem := checked(t)
	names := []string{"x", "a", "b", "s"}
	r1 := record(names,
		build(t, mem, arrow.PrimitiveTypes.Float32, 1, 2, 3),
		build(t, mem, arrow.PrimitiveTypes.Float64, 10, nil, 30),
		build(t, mem, arrow.PrimitiveTypes.Int32, 100, 200, 300),
		build(t, mem, arrow.BinaryTypes.String, "p", "q", "r"))
	r2 := record(names,
		build(t, mem, arrow.PrimitiveTypes.Float32, 4, 5),
		build(t, mem, arrow.PrimitiveTypes.Float64, 40, 50),
		build(t, mem, arrow.PrimitiveTypes.Int32, nil, 500),
		build(t, mem, arrow.BinaryTypes.String, "s", "t"))
	defer release(r1, r2)
	recs := []arrow.Record{r1, r2}
	f, err := FromRecords(r1.Schema(), recs, Options{Targets: []string{"b", "a"}, Exclude: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if f.NRows != 3 || f.SkippedLabels != 2 || !reflect.DeepEqual(f.Names, []string{"x"}) || !same(f.Cols[0], []float32{1, 3, 5}) ||
		!reflect.DeepEqual(f.YReg, []float64{100, 10, 300, 30, 500, 50}) || !reflect.DeepEqual(f.Targets, []string{"b", "a"}) ||
		f.Task != TaskRegression || f.LabelName != "b,a" || f.NumOutputs() != 2 {
		t.Fatalf("frame %+v", f)
	}
	for name, c := range map[string]struct {
		opts Options
		want string
	}{
		"one target":      {Options{Targets: []string{"a"}, Exclude: []string{"s"}}, "use Label"},
		"label too":       {Options{Label: "x", Targets: []string{"a", "b"}, Exclude: []string{"s"}}, "exclude each other"},
		"missing column":  {Options{Targets: []string{"a", "zz"}, Exclude: []string{"s"}}, "zz"},
		"twice":           {Options{Targets: []string{"a", "a"}, Exclude: []string{"s"}}, "twice"},
		"string target":   {Options{Targets: []string{"a", "s"}}, "regression target"},
		"classification":  {Options{Targets: []string{"a", "b"}, Task: TaskClassification, Exclude: []string{"s"}}, "not classes"},
		"target features": {Options{Targets: []string{"a", "b"}, Features: []string{"x", "a"}}, "label and cannot be a feature"},
	} {
		if _, err := FromRecords(r1.Schema(), recs, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", name, err, c.want)
		}
	}
	g := *f
	for name, bad := range map[string]func(){
		"shape":     func() { g.YReg = g.YReg[:5] },
		"one name":  func() { g.Targets = g.Targets[:1] },
		"no target": func() { g.YReg = nil },
	} {
		g = *f
		bad()
		if g.Validate() == nil {
			t.Errorf("%s: Validate accepted %+v", name, g)
		}
	}
	if err := g.SetTargets([]string{"a", "a"}, make([]float64, 6)); err == nil {
		t.Error("SetTargets accepted repeated names")
	}
	if err := g.SetTargets([]string{"a", "b"}, []float64{1, 2, 3, 4, 5, math.Inf(1)}); err == nil {
		t.Error("SetTargets accepted an infinite target")
	}
}

// The line TaskAuto draws for dependence analysis: an integer label with
// more than MaxAutoClasses values is numeric, with as many or fewer it is
// classes; string labels stay classes and a float label is numeric.
func TestNumericIfManyClasses(t *testing.T) {
	mem := checked(t)
	mk := func(dt arrow.DataType, vals []any, task Task) *Frame {
		x := make([]any, len(vals))
		for i := range x {
			x[i] = float64(i)
		}
		rec := record([]string{"x", "y"}, build(t, mem, arrow.PrimitiveTypes.Float64, x...), build(t, mem, dt, vals...))
		defer rec.Release()
		f, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y", Task: task})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ints := func(k int) []any {
		v := make([]any, 2*k)
		for i := range v {
			v[i] = (i*7)%k - 3
		}
		return v
	}
	f := mk(arrow.PrimitiveTypes.Int64, ints(MaxAutoClasses+1), TaskAuto)
	if !f.NumericIfManyClasses(MaxAutoClasses) || f.Task != TaskRegression || f.Y != nil || f.Classes != nil {
		t.Fatalf("%d integer values: task %v", MaxAutoClasses+1, f.Task)
	}
	want := ints(MaxAutoClasses + 1)
	for i, v := range f.YReg {
		if v != float64(want[i].(int)) {
			t.Fatalf("row %d: target %v, want %v", i, v, want[i])
		}
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if f := mk(arrow.PrimitiveTypes.Int64, ints(MaxAutoClasses), TaskAuto); f.NumericIfManyClasses(MaxAutoClasses) || f.NumClasses() != MaxAutoClasses {
		t.Errorf("%d integer values became numeric", MaxAutoClasses)
	}
	names := make([]any, 2*(MaxAutoClasses+5))
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i%(MaxAutoClasses+5))
	}
	if f := mk(arrow.BinaryTypes.String, names, TaskAuto); f.NumericIfManyClasses(MaxAutoClasses) || f.Task != TaskClassification {
		t.Error("a string label became numeric")
	}
	if f := mk(arrow.PrimitiveTypes.Float64, []any{0.5, 1.5, 2.5}, TaskAuto); f.NumericIfManyClasses(1) || f.Task != TaskRegression {
		t.Error("a float label is not numeric under auto")
	}
}

// TestFromRecordsInvalidUTF8: a feature name or a class that is not valid
// UTF-8 is refused before training (a model could not record it).
func TestFromRecordsInvalidUTF8(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"a", "b\xff", "y"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0, 2.0),
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0, 2.0),
		build(t, mem, arrow.BinaryTypes.String, "x", "\xfe"))
	defer rec.Release()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Label: "y"}, `column name "b\xff" (column 2) is not valid UTF-8`},
		{Options{Label: "y", Features: []string{"a"}}, `label column y: class "\xfe" is not valid UTF-8`},
	} {
		_, err := FromRecords(rec.Schema(), []arrow.Record{rec}, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestFromRecordsMalformedArray: an array a Go caller built wrongly (its
// null count is "unknown" and it has no validity bitmap, so arrow-go
// panics counting its nulls) is an error naming the column; the panic,
// in one of decodeFeatures' worker goroutines, would end the process.
func TestFromRecordsMalformedArray(t *testing.T) {
	mem := checked(t)
	vals := memory.NewResizableBuffer(mem)
	vals.Resize(3 * 8)
	defer vals.Release()
	data := array.NewData(arrow.PrimitiveTypes.Float64, 3, []*memory.Buffer{nil, vals}, nil, array.UnknownNullCount, 0)
	bad := array.MakeFromData(data)
	data.Release()
	rec := record([]string{"x", "y"}, bad, build(t, mem, arrow.BinaryTypes.String, "a", "b", "a"))
	defer rec.Release()
	_, err := FromRecords(rec.Schema(), []arrow.Record{rec}, Options{Label: "y"})
	if err == nil || !strings.Contains(err.Error(), "column x: malformed Arrow array") {
		t.Fatalf("err = %v", err)
	}
}

// TestMissingModelFeaturesSuggest: a model's feature the input lacks is
// reported with the input's columns and the closest of them.
func TestMissingModelFeaturesSuggest(t *testing.T) {
	mem := checked(t)
	rec := record([]string{"sepal_length", "petal_width"},
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0),
		build(t, mem, arrow.PrimitiveTypes.Float64, 1.0))
	defer rec.Release()
	_, err := FeaturesFromRecords(rec.Schema(), []arrow.Record{rec}, []string{"sepal_lenght", "petal_width"}, nil)
	want := `missing feature column sepal_lenght; the model needs 2 features: sepal_lenght, petal_width (the input has: sepal_length, petal_width); did you mean "sepal_length"?`
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrMissingColumn) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

package manifold

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// record builds a record with a float64 column "a" (with a null and a
// NaN), an int32 column "b", a fixed-size list<float32>[2] column "v" and
// a string column "s".
func testRecord(t *testing.T, mem memory.Allocator) arrow.Record {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32},
		{Name: "v", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "v_0", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	bld.Field(0).(*array.Float64Builder).AppendValues([]float64{1, 2, 0, math.NaN()}, []bool{true, true, false, true})
	bld.Field(1).(*array.Int32Builder).AppendValues([]int32{10, 20, 30, 40}, nil)
	lb := bld.Field(2).(*array.FixedSizeListBuilder)
	vb := lb.ValueBuilder().(*array.Float32Builder)
	for i := 0; i < 4; i++ {
		if i == 1 {
			lb.AppendNull() // appends two null values itself
			continue
		}
		lb.Append(true)
		vb.AppendValues([]float32{float32(i), float32(10 * i)}, nil)
	}
	bld.Field(3).(*array.StringBuilder).AppendValues([]string{"w", "x", "y", "z"}, nil)
	bld.Field(4).(*array.Float64Builder).AppendValues([]float64{5, 6, 7, 8}, nil)
	return bld.NewRecord()
}

func TestReadResponses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(t, mem)
	defer rec.Release()
	recs := []arrow.Record{rec, rec} // two batches
	r, err := ReadResponses(rec.Schema(), recs, []string{"b", "v", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Targets, []string{"b", "v_0", "v_1", "a"}) || r.Rows != 8 {
		t.Fatalf("targets %v rows %d", r.Targets, r.Rows)
	}
	want := []float64{10, 0, 0, 1, 20, 0, 0, 2, 30, 2, 20, 0, 40, 3, 30, math.NaN()}
	for i, w := range want {
		got := r.Y[i]
		if i == 10 || i == 11 || i == 5 || i == 6 {
			continue // null cells: value unspecified
		}
		if !(got == w || (math.IsNaN(got) && math.IsNaN(w))) {
			t.Fatalf("value %d = %v, want %v", i, got, w)
		}
	}
	if !slices.Equal(r.Valid, []bool{true, false, false, false, true, false, false, false}) {
		t.Fatalf("valid %v", r.Valid)
	}
	for _, c := range []struct {
		cols []string
		msg  string
	}{
		{[]string{"s"}, "response column s is utf8"},
		{[]string{"nope"}, `response column "nope" not found`},
		{[]string{"a", "a"}, "given twice"},
		{[]string{"v", "v_0"}, "v_0 occurs twice"},
		{nil, "no response columns"},
	} {
		_, err := ReadResponses(rec.Schema(), recs, c.cols)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%v: error %v, want %q", c.cols, err, c.msg)
		}
	}
}

func TestReadResponsesRejectsInf(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.PrimitiveTypes.Float32}}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	bld.Field(0).(*array.Float32Builder).AppendValues([]float32{1, float32(math.Inf(1))}, nil)
	rec := bld.NewRecord()
	bld.Release()
	defer rec.Release()
	if _, err := ReadResponses(schema, []arrow.Record{rec}, []string{"y"}); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("infinite response: %v", err)
	}
}

// FuzzReadResponses builds a record from fuzz bytes — column kinds, list
// sizes, nulls and values — and checks that ReadResponses never panics,
// leaks no Arrow memory, and marks exactly the rows with a null or NaN.
func FuzzReadResponses(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{2, 3, 0xff, 0x7f, 0xc0, 0, 0, 0, 1, 1, 1, 1, 9, 9})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		if len(data) < 2 {
			return
		}
		kind, size := data[0]%3, 1+int(data[1]%3)
		data = data[2:]
		var dt arrow.DataType
		switch kind {
		case 0:
			dt = arrow.PrimitiveTypes.Float64
		case 1:
			dt = arrow.PrimitiveTypes.Int16
		default:
			dt = arrow.FixedSizeListOf(int32(size), arrow.PrimitiveTypes.Float64)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "y", Type: dt, Nullable: true}}, nil)
		bld := array.NewRecordBuilder(mem, schema)
		defer bld.Release()
		next := func() (float64, bool) { // value, null
			if len(data) < 3 {
				return 0, true
			}
			b := data[:3]
			data = data[3:]
			v := math.Float64frombits(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2]))
			return v, b[2]%7 == 0
		}
		rows := len(data) / 6
		var wantValid []bool
		for i := 0; i < rows; i++ {
			ok := true
			switch kind {
			case 0:
				v, null := next()
				if null {
					bld.Field(0).AppendNull()
				} else {
					bld.Field(0).(*array.Float64Builder).Append(v)
				}
				ok = !null && !math.IsNaN(v)
			case 1:
				v, null := next()
				if null {
					bld.Field(0).AppendNull()
				} else {
					bld.Field(0).(*array.Int16Builder).Append(int16(math.Float64bits(v)))
				}
				ok = !null
			default:
				lb := bld.Field(0).(*array.FixedSizeListBuilder)
				vb := lb.ValueBuilder().(*array.Float64Builder)
				if _, null := next(); null {
					lb.AppendNull() // appends size null values itself
					wantValid = append(wantValid, false)
					continue
				}
				lb.Append(true)
				for k := 0; k < size; k++ {
					v, vnull := next()
					if vnull {
						vb.AppendNull()
					} else {
						vb.Append(v)
					}
					ok = ok && !vnull && !math.IsNaN(v)
				}
			}
			wantValid = append(wantValid, ok)
		}
		rec := bld.NewRecord()
		defer rec.Release()
		r, err := ReadResponses(schema, []arrow.Record{rec}, []string{"y"})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if r.Rows != rows || len(r.Valid) != rows {
			t.Fatalf("%d rows read, %d built", r.Rows, rows)
		}
		if len(r.Y) != rows*len(r.Targets) {
			t.Fatalf("%d values for %d rows × %d targets", len(r.Y), rows, len(r.Targets))
		}
		for i := range wantValid {
			if r.Valid[i] != wantValid[i] {
				t.Fatalf("row %d valid = %v, want %v", i, r.Valid[i], wantValid[i])
			}
		}
	})
}

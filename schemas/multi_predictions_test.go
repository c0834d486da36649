package schemas

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestBuildMultiPredictions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	kb := array.NewStringBuilder(mem)
	kb.AppendValues([]string{"a", "b"}, nil)
	key := kb.NewArray()
	kb.Release()
	defer key.Release()
	spec := PredictionSpec{ModelID: "m", ModelVersion: 2, Keep: []arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}}
	targets := []string{"y0", "y1", "y2"}
	rec, err := BuildMultiPredictions(mem, spec, targets, "in.parquet", 5, []arrow.Array{key}, []float64{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	want := []string{"model_id", "model_version", "source", "row", "id", "y0", "y1", "y2"}
	for i, f := range rec.Schema().Fields() {
		if f.Name != want[i] {
			t.Fatalf("column %d is %s, want %s", i, f.Name, want[i])
		}
	}
	if got := rec.Column(6).(*array.Float64).Value(1); got != 5 {
		t.Fatalf("y1 of row 1 = %v, want 5", got)
	}
	if got := rec.Column(3).(*array.Int64).Value(1); got != 6 {
		t.Fatalf("row coordinate %d, want 6", got)
	}
	for _, c := range []struct {
		targets []string
		keep    string
		msg     string
	}{
		{[]string{"row"}, "id", "row would be both"},
		{[]string{"id"}, "id", "id would be both"},
		{[]string{"y", "y"}, "id", "predicted column y is listed twice"},
	} {
		sp := PredictionSpec{Keep: []arrow.Field{{Name: c.keep, Type: arrow.BinaryTypes.String}}}
		vals := make([]float64, 2*len(c.targets))
		_, err := BuildMultiPredictions(mem, sp, c.targets, "s", 0, []arrow.Array{key}, vals)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%v: %v, want %q", c.targets, err, c.msg)
		}
	}
	if _, err := BuildMultiPredictions(mem, spec, targets, "s", 0, []arrow.Array{key}, []float64{1, 2}); err == nil {
		t.Fatal("ragged values accepted")
	}
}

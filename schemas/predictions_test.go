package schemas

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestBuildPredictions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	kb := array.NewInt64Builder(mem)
	kb.AppendValues([]int64{7, 8, 9}, nil)
	key := kb.NewArray()
	kb.Release()
	defer key.Release()
	spec := PredictionSpec{ModelID: "abc", ModelVersion: 3, Classes: []string{"no", "yes"},
		Keep: []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}}
	rec, err := BuildPredictions(mem, spec, PredictionBatch{Source: "f.parquet", FirstRow: 10, Keep: []arrow.Array{key},
		Class: []int32{1, 0, 1}, Prob: []float32{0.2, 0.8, 0.9, 0.1, 0.4, 0.6}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(Predictions(spec)) {
		t.Fatalf("schema %v", rec.Schema())
	}
	want := []string{"model_id", "model_version", "source", "row", "id", "prediction", "prob_no", "prob_yes"}
	for i, f := range rec.Schema().Fields() {
		if f.Name != want[i] {
			t.Fatalf("column %d is %s, want %s", i, f.Name, want[i])
		}
	}
	if got := rec.Column(5).(*array.String).Value(1); got != "no" {
		t.Fatalf("prediction of row 1: %s", got)
	}
	if got := rec.Column(3).(*array.Int64).Value(2); got != 12 {
		t.Fatalf("row coordinate %d, want 12", got)
	}
	if got := rec.Column(7).(*array.Float32).Value(0); got != 0.8 {
		t.Fatalf("prob_yes of row 0: %v", got)
	}
	// regression
	r2, err := BuildPredictions(mem, PredictionSpec{ModelID: "x"}, PredictionBatch{Value: []float64{1.5, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Column(4).(*array.Float64).Value(1) != 2 {
		t.Fatal("regression value")
	}
	r2.Release()
	// inconsistent input is an error, not a panic
	if _, err := BuildPredictions(mem, spec, PredictionBatch{Class: []int32{0}, Prob: []float32{1}}); err == nil {
		t.Fatal("short probabilities accepted")
	}
	if _, err := BuildPredictions(mem, PredictionSpec{Classes: []string{"a"}}, PredictionBatch{Class: []int32{3}, Prob: []float32{1}}); err == nil {
		t.Fatal("class index out of range accepted")
	}
}

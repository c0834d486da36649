package schemas

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestBuildLocalityEdges(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := LocalitySpec{Features: []string{"a", "b", "c"}, Metric: "geodesic", K: 8}
	rec, err := BuildLocalityEdges(mem, spec, LocalityBatch{
		Source: []int32{0, 0, 2}, Target: []int32{1, 2, 0}, Rank: []int32{1, 2, 1}, Distance: []float64{0.5, 1.5, 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(LocalityEdges(spec)) || rec.NumRows() != 3 {
		t.Fatalf("schema %v rows %d", rec.Schema(), rec.NumRows())
	}
	want := []string{"source", "target", "source_index", "target_index", "rank", "distance"}
	for i, f := range rec.Schema().Fields() {
		if f.Name != want[i] {
			t.Fatalf("column %d is %s, want %s", i, f.Name, want[i])
		}
	}
	if got := rec.Column(1).(*array.String).Value(1); got != "c" {
		t.Fatalf("target name of edge 1: %s", got)
	}
	if got := rec.Column(5).(*array.Float64).Value(0); got != 0.5 {
		t.Fatalf("distance of edge 0: %v", got)
	}
	if v, ok := rec.Schema().Metadata().GetValue(metaLocalityMetric); !ok || v != "geodesic" {
		t.Fatalf("metric metadata %q", v)
	}
	if v, _ := rec.Schema().Metadata().GetValue(metaLocalityK); v != "8" {
		t.Fatalf("k metadata %q", v)
	}
	// bad input is an error, not a panic, and leaks nothing
	if _, err := BuildLocalityEdges(mem, spec, LocalityBatch{Source: []int32{0}, Target: []int32{3}, Rank: []int32{1}, Distance: []float64{1}}); err == nil {
		t.Fatal("target index out of range accepted")
	}
	if _, err := BuildLocalityEdges(mem, spec, LocalityBatch{Source: []int32{0}, Target: []int32{1}, Rank: []int32{1}}); err == nil {
		t.Fatal("missing distance accepted")
	}
	empty, err := BuildLocalityEdges(mem, spec, LocalityBatch{})
	if err != nil || empty.NumRows() != 0 {
		t.Fatalf("empty batch: %v", err)
	}
	empty.Release()
}

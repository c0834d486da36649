package operators

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/schemas"
)

// TestLocalityEdges: an lfs forest's graph has LFSK edges per feature,
// ranked from 1, between the forest's features, under a checked
// allocator.
func TestLocalityEdges(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 120, Seed: 2, P: 6})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Forest, p.Trees, p.Threads, p.LFSK = forest.KindLFS, 2, 1, 3
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := LocalityEdges(mem, f, fr)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != int64(3*fr.P()) {
		t.Fatalf("%d edges for %d features, k 3", rec.NumRows(), fr.P())
	}
	if ix := rec.Schema().FieldIndices(schemas.ColSource); len(ix) != 1 {
		t.Fatalf("schema %v", rec.Schema())
	}
}

package scoring

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/synth"
)

// TestViewInPlace: the frame Score predicts from a record of float32
// features without nulls holds the record's own value buffers (no copy),
// and a record of several is copied as before.
func TestViewInPlace(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := synth.Generate(synth.Trunk, synth.Options{N: 300, Seed: 1, P: 5})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(tr.Task)
	p.Trees, p.Seed, p.Threads = 2, 3, 1
	f, err := forest.Train(tr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	rec := tr.ToRecord(mem)
	defer rec.Release()
	fr, err := m.view(rec.Schema(), []arrow.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	for k, name := range m.names {
		col := rec.Column(rec.Schema().FieldIndices(name)[0]).(*array.Float32).Float32Values()
		if &fr.Cols[k][0] != &col[0] || len(fr.Cols[k]) != len(col) {
			t.Fatalf("feature %s was copied", name)
		}
	}
	half := rec.NewSlice(0, 150)
	defer half.Release()
	fr2, err := m.view(rec.Schema(), []arrow.Record{half, half})
	if err != nil {
		t.Fatal(err)
	}
	if &fr2.Cols[0][0] == &fr.Cols[0][0] || fr2.NRows != 300 {
		t.Fatal("two records were not copied into one frame")
	}
}

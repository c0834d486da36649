package operators

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// TestTrainTune: a trainer whose Params.Tune is set (what the daemon's
// train.tune sets) trains each window's forest with out-of-bag tuning,
// with explicit params and with the defaults (Trees 0), and the forest
// records the search; without it nothing is tuned.
func TestTrainTune(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	n := 400
	x0, x1 := make([]float32, n), make([]float32, n)
	y := make([]int32, n)
	for i := range x0 {
		x0[i] = float32(i%37) / 37
		x1[i] = float32(i%11) / 11
		if x0[i]+x1[i] > 1 {
			y[i] = 1
		}
	}
	fr := &frame.Frame{Names: []string{"x0", "x1"}, Cols: [][]float32{x0, x1}, NRows: n, LabelName: "y",
		Task: frame.TaskClassification, Classes: []string{"a", "b"}, Y: y}
	for _, c := range []struct {
		name  string
		trees int
		tune  bool
	}{{"explicit", 30, true}, {"defaults", 0, true}, {"untuned", 30, false}} {
		p := forest.DefaultParams(frame.TaskAuto)
		p.Trees, p.Tune, p.Criterion = c.trees, c.tune, ""
		tr, err := NewTrainer(TrainOptions{Label: "y", Window: n, MinRows: 10, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		rec := fr.ToRecord(mem)
		if _, _, err := tr.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		win, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Train(context.Background(), win, 2)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (f.Tuning != nil) != c.tune || f.Params.Tune != c.tune {
			t.Fatalf("%s: tuning record %v, params tune %v; want tuned = %v", c.name, f.Tuning != nil, f.Params.Tune, c.tune)
		}
		if c.tune && len(f.Tuning.Candidates) < 2 {
			t.Fatalf("%s: %d candidates", c.name, len(f.Tuning.Candidates))
		}
	}
}

// TestTrainTuneKind: a trainer that tunes a kind without a candidate set
// is refused when it is made, not at its first retrain.
func TestTrainTuneKind(t *testing.T) {
	p := forest.DefaultParams(frame.TaskAuto)
	p.Forest, p.Tune = forest.KindLFS, true
	if _, err := NewTrainer(TrainOptions{Label: "y", Params: p}); err == nil {
		t.Fatal("a tuned lfs trainer was made")
	}
}

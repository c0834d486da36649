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

// TestTrainCriterionFollowsTask: with an empty Criterion (what forestd
// serve passes) a float label trains a regression forest with mse and a
// class label a classification forest with gini; a fixed classification
// criterion on a float label is still an error.
func TestTrainCriterionFollowsTask(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	n := 200
	x := make([]float32, n)
	yreg := make([]float64, n)
	ycls := make([]int32, n)
	for i := range x {
		x[i] = float32(i%20) / 4
		yreg[i] = 2 * float64(x[i])
		ycls[i] = int32(i % 20 / 10)
	}
	reg := &frame.Frame{Names: []string{"x"}, Cols: [][]float32{x}, NRows: n, LabelName: "y", Task: frame.TaskRegression, YReg: yreg}
	cls := &frame.Frame{Names: []string{"x"}, Cols: [][]float32{x}, NRows: n, LabelName: "y", Task: frame.TaskClassification,
		Classes: []string{"a", "b"}, Y: ycls}
	for _, c := range []struct {
		fr        *frame.Frame
		criterion string
		want      string // criterion of the model, or "" for an error
	}{
		{reg, "", "mse"}, {cls, "", "gini"}, {reg, "gini", ""},
	} {
		p := forest.DefaultParams(frame.TaskAuto)
		p.Trees, p.Criterion = 5, c.criterion
		tr, err := NewTrainer(TrainOptions{Label: "y", Window: n, MinRows: 10, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		rec := c.fr.ToRecord(mem)
		if _, _, err := tr.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		win, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Train(context.Background(), win, 1)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%v label with criterion %q trained", c.fr.Task, c.criterion)
		case c.want != "" && (err != nil || f.Params.Criterion != c.want || f.Task != c.fr.Task):
			t.Errorf("%v label, criterion %q: %v, model criterion %v", c.fr.Task, c.criterion, err, f)
		}
	}
}

package forest

import (
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// emptyLike returns a frame with fr's columns and no rows.
func emptyLike(fr *frame.Frame) *frame.Frame {
	g := &frame.Frame{Names: fr.Names, Task: fr.Task, Classes: fr.Classes, LabelName: fr.LabelName}
	for range fr.Cols {
		g.Cols = append(g.Cols, []float32{})
	}
	return g
}

// TestPredictZeroRows: a batch with no rows is a valid input (an Arrow IPC
// stream may carry a zero-row batch, a CSV only its header); scoring it
// returns an empty prediction at any thread count, for every forest kind
// and both scoring layouts (axis walk and plain), never a division by zero.
func TestPredictZeroRows(t *testing.T) {
	cls := trunkFrame(300, 8, 1)
	reg := multiFrame(300, 2, 0)
	cases := map[string]struct {
		fr *frame.Frame
		p  Params
	}{
		"rf":           {cls, DefaultParams(frame.TaskClassification)},
		"sporf":        {cls, func() Params { p := DefaultParams(frame.TaskClassification); p.Forest = "sporf"; return p }()},
		"rf-exact":     {cls, func() Params { p := DefaultParams(frame.TaskClassification); p.Split = "exact"; return p }()},
		"multi-output": {reg, DefaultParams(frame.TaskRegression)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.p.Trees = 5
			_, c := trainCompiled(t, tc.fr, tc.p)
			for _, threads := range []int{0, 1, 3} {
				pred, err := c.Predict(emptyLike(tc.fr), threads)
				if err != nil {
					t.Fatalf("threads %d: %v", threads, err)
				}
				if len(pred.Class)+len(pred.Prob)+len(pred.Value) != 0 {
					t.Fatalf("threads %d: %d classes, %d probabilities, %d values for no rows",
						threads, len(pred.Class), len(pred.Prob), len(pred.Value))
				}
			}
		})
	}
}

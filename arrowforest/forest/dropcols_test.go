package forest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// TestDropColumnsSameForest: an rf forest trained with
// TrainOptions.DropColumns, whose out-of-bag error and permutation
// importances read the bins' stand-in values for the released columns,
// is the forest trained with them kept (classification with missing
// values, regression, several outputs), and the columns are released.
func TestDropColumnsSameForest(t *testing.T) {
	cls := DefaultParams(frame.TaskClassification)
	cls.Permutation = true
	reg := DefaultParams(frame.TaskRegression)
	reg.Permutation = true
	cases := []struct {
		name string
		fr   func() *frame.Frame
		p    Params
	}{
		{"trunk", func() *frame.Frame { fr := trunkFrame(1500, 8, 1); withMissing(fr, 0.05, 2); return fr }, cls},
		{"regression", func() *frame.Frame { return regressionFrame(1200, 6, 1) }, reg},
		{"multi", func() *frame.Frame { return multiFrame(600, 1, 0.05) }, reg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Trees, c.p.Threads = 8, 2
			kept, dropped := c.fr(), c.fr()
			want, err := Train(kept, c.p, TrainOptions{codesFrom: 1})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Train(dropped, c.p, TrainOptions{DropColumns: true, codesFrom: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(kept.Cols, func(c []float32) bool { return c != nil }) {
				t.Fatal("the columns of a frame trained without DropColumns were released")
			}
			if slices.ContainsFunc(dropped.Cols, func(c []float32) bool { return c != nil }) {
				t.Fatal("DropColumns kept a feature column")
			}
			if want.OOB == nil || want.Importances[ImportancePermutation] == nil {
				t.Fatal("no out-of-bag estimates to compare")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("forest differs with DropColumns: OOB %+v, want %+v", got.OOB, want.OOB)
			}
		})
	}
}

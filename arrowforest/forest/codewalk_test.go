package forest

import (
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/tree"
)

// The out-of-bag pass over the bin codes (codewalk.go) gives the estimates
// of the pass over the codes' stand-in values, for two classes with
// missing values (MissingLeft both ways), three classes and regression;
// it is taken only when every column is released.
func TestCodeWalkSameOOB(t *testing.T) {
	for name, fr := range oobFrames(0.05) {
		f, p := trainOOB(t, fr, TrainOptions{codesFrom: 1})
		c := newTreeWalk(f)
		c.bins = tree.NewBinned(fr.Cols, p.Bins, 2)
		standIns := *fr
		standIns.Cols = make([][]float32, len(fr.Cols))
		released := *fr
		released.Cols = make([][]float32, len(fr.Cols))
		for j := range fr.Cols {
			lut := c.standIns(j)
			standIns.Cols[j] = make([]float32, fr.NRows)
			for i, code := range c.bins.Codes[j] {
				standIns.Cols[j][i] = lut[code]
			}
		}
		if c.codeSplits(standIns.Cols) != nil {
			t.Fatalf("%s: the codes walk was taken with the columns present", name)
		}
		if c.codeSplits(released.Cols) == nil {
			t.Fatalf("%s: the codes walk was not taken on released columns", name)
		}
		in := inBagSets(fr.NRows, p.Trees, p.Seed)
		want := outOfBag(c, &standIns, in, 2)
		if got := outOfBag(c, &released, in, 2); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: codes walk %+v, want %+v", name, got, want)
		}
	}
}

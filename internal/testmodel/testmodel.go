// Package testmodel makes the scoring.Model values that tests of several
// packages share (it imports scoring, so scoring's own tests use package
// fixture instead). Only tests import it.
package testmodel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/arrowforest/tree"
	"github.com/forestd/forestd/scoring"
)

// Wide is a classification model whose facts name classes classes (about
// 380 bytes each) and features features, as a model's facts see them:
// its two trees use four Trunk features and two classes, so the surgery
// changes what a status document or report carries, not what is scored
// (more than two classes add a third tree, a stump naming every class
// with the same frequency, which does not change which class wins).
func Wide(tb testing.TB, version int64, classes, features int) *scoring.Model {
	tb.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: 1, P: 4})
	if err != nil {
		tb.Fatal(err)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 2, 1, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	long := strings.Repeat("a long class name ", 20)
	for i := len(f.Classes); i < classes; i++ {
		f.Classes = append(f.Classes, fmt.Sprintf("class %05d: %s", i, long))
	}
	if k := len(f.Classes); k > 2 {
		// a third tree, a stump whose leaf names every class: a model's
		// classes are bounded by those its leaves name
		// (forest.MaxUnnamedClasses)
		stump := &tree.Tree{Left: []int32{-1}, Right: []int32{-1}, Threshold: []float32{0}, MissingLeft: []bool{false},
			Count: []float32{1}, AtomStart: []int32{0, 0}, LeafStart: []int32{0, int32(k)}}
		for c := 0; c < k; c++ {
			stump.LeafClass = append(stump.LeafClass, int32(c))
			stump.LeafValue = append(stump.LeafValue, 1/float64(k))
		}
		f.Trees = append(f.Trees, stump)
		f.Params.Trees = len(f.Trees)
	}
	for j := len(f.Features); j < features; j++ {
		f.Features = append(f.Features, fmt.Sprintf("feature_%04d", j))
		for k, v := range f.Importances {
			f.Importances[k] = append(v, 1/float64(j))
		}
	}
	m, err := scoring.Encode(f, version, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

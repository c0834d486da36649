package fdm_test

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
)

// FDM_RF on the dissertation's data set (iv): find the marginal feature
// and the XOR triple with the MDS search, map the triple once, and train
// an ordinary forest on the mapped columns.
func Example() {
	train, _ := synth.Generate(synth.XOR4, synth.Options{N: 800, Seed: 1})
	opt := dependence.DefaultSearchOptions()
	opt.Test.Seed = 1
	plan, _, err := fdm.Discover(train.Cols, train.Y, train.NumClasses(), opt)
	if err != nil {
		panic(err)
	}
	fmt.Println("marginal:", plan.Marginal, "groups:", plan.Groups)

	t, err := fdm.Fit(train, plan, fdm.Options{Map: fdm.MapRP}, 1)
	if err != nil {
		panic(err)
	}
	mapped, _ := t.Apply(train)
	fmt.Println("columns:", mapped.Names)

	p := forest.DefaultParams(frame.TaskClassification)
	p.Seed = 1
	f, err := forest.Train(mapped, p, forest.TrainOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("trees:", len(f.Trees))
	// Output:
	// marginal: [0] groups: [[1 2 3]]
	// columns: [m0 fdm_g1_1 fdm_g1_2 fdm_g1_3]
	// trees: 100
}

// RF_FDM: forest kind "fdm" draws a fresh mapping for every tree; the
// groups come from the search when none are given, and end up in the
// params.
func Example_rfFDM() {
	train, _ := synth.Generate(synth.XOR2, synth.Options{N: 800, Seed: 2})
	p := forest.DefaultParams(frame.TaskClassification)
	p.Forest = "fdm"
	f, err := forest.Train(train, p, forest.TrainOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("groups %q, map %s, %d candidates\n", f.Params.FDMGroups, f.Params.FDMMap, f.Params.FDMCandidates)
	// Output:
	// groups "0,1,2", map rp, 10 candidates
}

// RF_FDM with distance-to-landmark mappings: each tree splits on
// |x_G − x_l| for landmarks drawn from its in-bag rows, as linear atoms
// over the features and one derived input per group (the group norm,
// recorded in the forest). Scoring appends the same derived column
// (Forest.Derive) before Predict.
func Example_rfFDMLandmarks() {
	train, _ := synth.Generate(synth.XOR2, synth.Options{N: 800, Seed: 2})
	test, _ := synth.Generate(synth.XOR2, synth.Options{N: 400, Seed: 3})
	p := forest.DefaultParams(frame.TaskClassification)
	p.Forest, p.FDMMap = "fdm", fdm.MapDRL
	f, err := forest.Train(train, p, forest.TrainOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("inputs:", f.InputFeatures(), "derived:", f.Features[f.NumInputs():])
	c, err := forest.Compile(f)
	if err != nil {
		panic(err)
	}
	in, err := f.Derive(test)
	if err != nil {
		panic(err)
	}
	pr, err := c.Predict(in, 2)
	if err != nil {
		panic(err)
	}
	ok := 0
	for i, y := range test.Y {
		if pr.Class[i] == y {
			ok++
		}
	}
	fmt.Println("accuracy ≥ 0.95:", float64(ok)/float64(test.NRows) >= 0.95)
	// Output:
	// inputs: [x3a_0 x3a_1 x3a_2] derived: [fdm_norm_g1]
	// accuracy ≥ 0.95: true
}

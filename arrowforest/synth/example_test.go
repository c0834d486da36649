package synth_test

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/synth"
)

func ExampleGenerate() {
	f, err := synth.Generate("trunk", synth.Options{N: 1000, Seed: 1, P: 4})
	if err != nil {
		panic(err)
	}
	fmt.Println(f.NRows, f.Names, f.LabelName, f.Classes)
	// Output: 1000 [x1 x2 x3 x4] y [0 1]
}

func ExampleGenerate_swissroll() {
	// The responses are ordinary columns; train with --label y0,y1,y2.
	f, err := synth.Generate("swissroll", synth.Options{N: 900, Seed: 1, Clean: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(f.NRows, f.Names)
	// Output: 900 [x1 x2 x3 x4 x5 x6 y0 y1 y2 y0_true y1_true y2_true]
}

func ExampleGenerateMulti() {
	inputs, targets, names, err := synth.GenerateMulti("swissroll", synth.Options{N: 900, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(inputs.Names, names, len(targets), len(targets[0]))
	// Output: [x1 x2 x3 x4 x5 x6] [y0 y1 y2] 3 900
}

func ExampleGroups() {
	f, err := synth.Generate("xor5", synth.Options{N: 200, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(f.P(), f.Classes)
	for _, g := range synth.Groups("xor5") {
		fmt.Println(g)
	}
	// Output:
	// 17 [-1 1]
	// [m0]
	// [m1]
	// [m2]
	// [m3]
	// [m4]
	// [x2a_0 x2a_1]
	// [x2b_0 x2b_1]
	// [x2c_0 x2c_1]
	// [x3a_0 x3a_1 x3a_2]
	// [x3b_0 x3b_1 x3b_2]
}

func ExampleBayesError() {
	be, err := synth.BayesError("trunk", synth.Options{P: 100})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", be)
	// Output: 0.0114
}

func ExampleNames() {
	fmt.Println(synth.Names())
	// Output: [circle hvbars impulse xor1 xor2 xor3 xor4 xor5 trunk parity swissroll]
}

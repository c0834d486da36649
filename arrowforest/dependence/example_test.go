package dependence_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/synth"
)

func columns(name string, n int, seed uint64) ([][]float64, []int32, []string) {
	f, _ := synth.Generate(name, synth.Options{N: n, Seed: seed})
	x := make([][]float64, f.P())
	for j, c := range f.Cols {
		x[j] = make([]float64, len(c))
		for i, v := range c {
			x[j][i] = float64(v)
		}
	}
	return x, f.Y, f.Names
}

// The two features of a 2-D XOR are each independent of the label, but
// jointly they determine it: gCor_n of each alone is about 0 (gCor_n is
// unbiased, so it can be slightly negative, §2.3), of the pair clearly
// positive (dissertation §5.1).
func ExampleGCor() {
	x, y, _ := columns(synth.XOR1, 2000, 1)
	fmt.Printf("gCor(X1) = %.3f\n", dependence.GCor(x[:1], y, 2))
	fmt.Printf("gCor(X2) = %.3f\n", dependence.GCor(x[1:], y, 2))
	fmt.Printf("gCor(X1, X2) = %.3f\n", dependence.GCor(x, y, 2))
	// Output:
	// gCor(X1) = -0.000
	// gCor(X2) = -0.000
	// gCor(X1, X2) = 0.074
}

// A permutation test with the adaptive count of §5.6: no permutation
// reaches the observed statistic, so N doubles from 100 to the maximum.
func ExampleGCorTest() {
	x, y, _ := columns(synth.XOR1, 500, 2)
	r, _ := dependence.GCorTest(x, y, 2, dependence.TestOptions{Seed: 1, MaxPerms: 1000})
	fmt.Printf("b=%d N=%d p=%.4f\n", r.B, r.N, r.PValue)
	// Output:
	// b=0 N=1000 p=0.0010
}

// Bottom-up MDC on the 17 features of §5.7 (xor5): five marginal features
// and the five XOR groups, with the dissertation's per-test rule at
// α = 0.001 (AdjustNone).
func ExampleSearch() {
	x, y, names := columns(synth.XOR5, 1000, 4)
	opt := dependence.DefaultSearchOptions()
	opt.Adjust = dependence.AdjustNone
	opt.Alpha = 0.001
	opt.Test.MaxPerms = 1000
	opt.Test.Seed = 4
	res, err := dependence.Search(x, y, 2, opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range res.Marginal {
		fmt.Print(names[j], " ")
	}
	fmt.Println("are marginally dependent")
	for _, g := range res.Groups {
		for _, j := range g.Features {
			fmt.Print(names[j], " ")
		}
		fmt.Printf("form an %s (p = %.4f)\n", g.Kind, g.PValue)
	}
	// Output:
	// m0 m1 m2 m3 m4 are marginally dependent
	// x2a_0 x2a_1 form an mds (p = 0.0010)
	// x2b_0 x2b_1 form an mds (p = 0.0010)
	// x2c_0 x2c_1 form an mds (p = 0.0010)
	// x3a_0 x3a_1 x3a_2 form an mds (p = 0.0010)
	// x3b_0 x3b_1 x3b_2 form an mds (p = 0.0010)
}

// A numeric label (regression) at the defaults: dCor_n with |y − y'|, and
// Holm's control of the whole analysis at α = 0.05 (SearchOptions.Adjust).
// y = x0 + 2·sign(x1·x2) + noise: x0 is marginally dependent, x1 and x2
// only jointly, x3 not at all.
func ExampleSearchLabel() {
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	x := make([][]float64, 4)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = r.NormFloat64()
		}
	}
	y := make([]float64, n)
	for i := range y {
		y[i] = x[0][i] + 2*math.Copysign(1, x[1][i]*x[2][i]) + 0.1*r.NormFloat64()
	}
	opt := dependence.DefaultSearchOptions()
	opt.Stat = "" // dcor for a numeric label
	opt.Test.Seed = 1
	res, err := dependence.SearchLabel(x, dependence.Numeric(y), opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Stat, res.Adjust, "marginal:", res.Marginal)
	for _, g := range res.Groups {
		fmt.Printf("group %v: adjusted p ≤ α: %v\n", g.Features, g.AdjPValue <= opt.Alpha)
	}
	// Output:
	// dcor holm marginal: [0]
	// group [1 2]: adjusted p ≤ α: true
}

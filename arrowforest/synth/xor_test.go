package synth

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

var xorNames = []string{"xor1", "xor2", "xor3", "xor4", "xor5"}

// TestXORGroups checks Groups against Table 6.1 and the frame's features.
func TestXORGroups(t *testing.T) {
	table := map[string][3]int{ // Table 6.1: # MDS's of size 1, 2, 3
		"xor1": {0, 1, 0}, "xor2": {0, 0, 1}, "xor3": {1, 1, 0}, "xor4": {1, 0, 1}, "xor5": {5, 3, 2},
	}
	for _, name := range xorNames {
		g := Groups(name)
		var sizes [3]int
		var flat []string
		for _, grp := range g {
			sizes[len(grp)-1]++
			flat = append(flat, grp...)
		}
		if sizes != table[name] {
			t.Errorf("%s: MDS sizes %v, want %v (Table 6.1)", name, sizes, table[name])
		}
		f := gen(t, name, Options{N: 10, Seed: 1})
		if !slices.Equal(flat, f.Names) {
			t.Errorf("%s: groups %v do not list the features %v in order", name, g, f.Names)
		}
	}
	want := [][]string{{"m0"}, {"m1"}, {"m2"}, {"m3"}, {"m4"},
		{"x2a_0", "x2a_1"}, {"x2b_0", "x2b_1"}, {"x2c_0", "x2c_1"},
		{"x3a_0", "x3a_1", "x3a_2"}, {"x3b_0", "x3b_1", "x3b_2"}}
	got := Groups("xor5")
	if len(got) != len(want) {
		t.Fatalf("Groups(xor5) = %v", got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("Groups(xor5)[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if Groups("trunk") != nil || Groups("nosuch") != nil {
		t.Error("Groups returns groups for a data set without ground truth")
	}
}

// TestXORRule checks, on the recorded noise-free means, that every XOR
// group's product of means equals the label y ∈ {−1, 1}, that the
// marginal features have mean y, and that the noise has the documented
// standard deviations.
func TestXORRule(t *testing.T) {
	for _, name := range xorNames {
		t.Run(name, func(t *testing.T) {
			const n = 20000
			spec := xorSpecs[name]
			f, mu := genXOR(newRNG(name, 31), spec, n, defaultXORSigma, defaultXORSigmaMarg, true)
			groups := Groups(name)
			for i := range n {
				y := int8(2*f.Y[i] - 1)
				j := 0
				for _, g := range groups {
					prod := int8(1)
					for range g {
						if mu[j][i] != 1 && mu[j][i] != -1 {
							t.Fatalf("row %d feature %s: mean %d", i, f.Names[j], mu[j][i])
						}
						prod *= mu[j][i]
						j++
					}
					if prod != y {
						t.Fatalf("row %d: group %v means multiply to %d, label %d", i, g, prod, y)
					}
				}
			}
			j := 0
			for _, g := range groups {
				sd := defaultXORSigma
				if len(g) == 1 {
					sd = defaultXORSigmaMarg
				}
				for range g {
					res := make([]float32, n)
					for i := range n {
						res[i] = f.Cols[j][i] - float32(mu[j][i])
					}
					m, v, _ := moments(res, nil)
					within(t, "mean noise of "+f.Names[j], m, 0, sd/math.Sqrt(n), 4)
					within(t, "noise variance of "+f.Names[j], v, sd*sd, sd*sd*math.Sqrt(2.0/n), 4)
					j++
				}
			}
		})
	}
}

// TestXORNoiseFree checks the XOR rule through the public API: with a
// negligible σ the features are the means themselves.
func TestXORNoiseFree(t *testing.T) {
	for _, name := range xorNames {
		o := Options{N: 2000, Seed: 2, Sigma: 1e-12}
		if xorSpecs[name].marginal > 0 {
			o.SigmaMarginal = 1e-12
		}
		f := gen(t, name, o)
		for i := range f.NRows {
			y := float32(2*f.Y[i] - 1)
			j := 0
			for _, g := range Groups(name) {
				prod := float32(1)
				for range g {
					v := f.Cols[j][i]
					if v != 1 && v != -1 {
						t.Fatalf("%s row %d %s = %v, want ±1", name, i, f.Names[j], v)
					}
					prod *= v
					j++
				}
				if prod != y {
					t.Fatalf("%s row %d: group %v multiplies to %v, class %q", name, i, g, prod, f.Classes[f.Y[i]])
				}
			}
		}
	}
}

// TestXORDependence checks the dependence structure that makes each group
// an MDS: every feature of an XOR group, and every pair of a size-3 group,
// is independent of y (class-conditional mean of the feature or of the
// pair product ≈ 0), while the product over the whole group has mean y;
// a marginal feature has class-conditional mean y.
func TestXORDependence(t *testing.T) {
	const n = 20000
	f := gen(t, "xor5", Options{N: n, Seed: 37})
	s2 := 1 + defaultXORSigma*defaultXORSigma // E[x²] of an XOR feature
	idx := func(name string) int { return f.FeatureIndex(name) }
	for c := range int32(2) {
		y := float64(2*c - 1)
		keep := inClass(f, c)
		for _, g := range Groups("xor5") {
			if len(g) == 1 {
				m, _, nc := moments(f.Cols[idx(g[0])], keep)
				within(t, fmt.Sprintf("class %v mean of %s", y, g[0]), m, y, defaultXORSigmaMarg/math.Sqrt(float64(nc)), 4)
				continue
			}
			for _, name := range g {
				m, _, nc := moments(f.Cols[idx(name)], keep)
				within(t, fmt.Sprintf("class %v mean of %s", y, name), m, 0, math.Sqrt(s2/float64(nc)), 4)
			}
			prod := func(names ...string) []float32 {
				out := make([]float32, n)
				for i := range n {
					p := float32(1)
					for _, nm := range names {
						p *= f.Cols[idx(nm)][i]
					}
					out[i] = p
				}
				return out
			}
			if len(g) == 3 {
				for a := range 3 {
					pair := []string{g[a], g[(a+1)%3]}
					m, _, nc := moments(prod(pair...), keep)
					within(t, fmt.Sprintf("class %v mean of %v", y, pair), m, 0, s2/math.Sqrt(float64(nc)), 4)
				}
			}
			m, _, nc := moments(prod(g...), keep)
			within(t, fmt.Sprintf("class %v mean of the product of %v", y, g), m, y, math.Pow(s2, float64(len(g))/2)/math.Sqrt(float64(nc)), 4)
		}
	}
}

// TestXORBayes measures the error of the Bayes rule sign(Π x) on xor1 and
// xor2 against the closed form.
func TestXORBayes(t *testing.T) {
	for _, name := range []string{"xor1", "xor2"} {
		const n = 40000
		f := gen(t, name, Options{N: n, Seed: 41})
		errs := 0
		for i := range n {
			p := float32(1)
			for j := range f.Cols {
				p *= f.Cols[j][i]
			}
			pred := int32(0)
			if p > 0 {
				pred = 1
			}
			if pred != f.Y[i] {
				errs++
			}
		}
		be, err := BayesError(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		proportion(t, name+" Bayes-rule error", errs, n, be)
	}
}

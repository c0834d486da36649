package synth

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// ---- helpers shared by the tests of this package ----

// gen generates or fails the test.
func gen(t *testing.T, name string, o Options) *frame.Frame {
	t.Helper()
	f, err := Generate(name, o)
	if err != nil {
		t.Fatalf("Generate(%q, %+v): %v", name, o, err)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("Generate(%q): invalid frame: %v", name, err)
	}
	return f
}

// moments returns the mean, the unbiased variance and the count of column
// col over the rows where keep is true (all rows if keep is nil).
func moments(col []float32, keep func(i int) bool) (mean, variance float64, n int) {
	for i, v := range col {
		if keep == nil || keep(i) {
			mean += float64(v)
			n++
		}
	}
	mean /= float64(n)
	for i, v := range col {
		if keep == nil || keep(i) {
			d := float64(v) - mean
			variance += d * d
		}
	}
	variance /= float64(n - 1)
	return mean, variance, n
}

// inClass selects the rows of class c.
func inClass(f *frame.Frame, c int32) func(int) bool {
	return func(i int) bool { return f.Y[i] == c }
}

// within fails unless |got − want| ≤ k·se.
func within(t *testing.T, what string, got, want, se, k float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > k*se {
		t.Errorf("%s = %.5g, want %.5g ± %.3g (%g standard errors of %.3g)", what, got, want, k*se, k, se)
	}
}

// proportion checks an observed proportion against p within 4 standard
// errors of a binomial proportion over n trials.
func proportion(t *testing.T, what string, count, n int, p float64) {
	t.Helper()
	within(t, what, float64(count)/float64(n), p, math.Sqrt(p*(1-p)/float64(n)), 4)
}

// ---- tests of the package surface ----

type shape struct {
	p       int
	first   string
	last    string
	classes []string
}

var shapes = map[string]shape{
	"trunk":     {defaultTrunkP, "x1", "x10", []string{"0", "1"}},
	"parity":    {defaultParityP, "x1", "x10", []string{"0", "1"}},
	"circle":    {100, "x0", "x99", []string{"0", "1"}},
	"hvbars":    {784, "pixel_0_0", "pixel_27_27", []string{"0", "1"}},
	"impulse":   {100, "t0", "t99", []string{"0", "1"}},
	"xor1":      {2, "x2a_0", "x2a_1", []string{"-1", "1"}},
	"xor2":      {3, "x3a_0", "x3a_2", []string{"-1", "1"}},
	"xor3":      {3, "m0", "x2a_1", []string{"-1", "1"}},
	"xor4":      {4, "m0", "x3a_2", []string{"-1", "1"}},
	"xor5":      {17, "m0", "x3b_2", []string{"-1", "1"}},
	"swissroll": {9, "x1", "y2", nil},
}

func TestNamesAndShapes(t *testing.T) {
	want := []string{"circle", "hvbars", "impulse", "xor1", "xor2", "xor3", "xor4", "xor5", "trunk", "parity", "swissroll"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	Names()[0] = "mutated"
	if Names()[0] != "circle" {
		t.Fatal("Names returns the package's own slice")
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s, ok := shapes[name]
			if !ok {
				t.Fatalf("no expected shape for %q", name)
			}
			const n = 37
			f := gen(t, name, Options{N: n, Seed: 1})
			if f.NRows != n || f.P() != s.p || len(f.Cols) != s.p {
				t.Fatalf("shape %d×%d, want %d×%d", f.NRows, f.P(), n, s.p)
			}
			if f.Names[0] != s.first || f.Names[s.p-1] != s.last {
				t.Errorf("names %q..%q, want %q..%q", f.Names[0], f.Names[s.p-1], s.first, s.last)
			}
			seen := map[string]bool{}
			for _, nm := range f.Names {
				if seen[nm] {
					t.Errorf("duplicate feature name %q", nm)
				}
				seen[nm] = true
			}
			if s.classes == nil {
				if f.HasLabel() || f.LabelName != "" {
					t.Errorf("swissroll frame has a label %q", f.LabelName)
				}
				return
			}
			if !slices.Equal(f.Classes, s.classes) || f.LabelName != "y" || f.Task != frame.TaskClassification || len(f.Y) != n {
				t.Errorf("label %q task %v classes %v (%d labels), want y classification %v", f.LabelName, f.Task, f.Classes, len(f.Y), s.classes)
			}
		})
	}
}

func framesEqual(a, b *frame.Frame) bool {
	if !slices.Equal(a.Names, b.Names) || a.NRows != b.NRows || !slices.Equal(a.Y, b.Y) || !slices.Equal(a.Classes, b.Classes) {
		return false
	}
	for j := range a.Cols {
		for i := range a.Cols[j] {
			if math.Float32bits(a.Cols[j][i]) != math.Float32bits(b.Cols[j][i]) {
				return false
			}
		}
	}
	return true
}

func TestDeterminism(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			o := Options{N: 300, Seed: 42}
			a := gen(t, name, o)
			b := gen(t, name, o)
			if !framesEqual(a, b) {
				t.Fatal("the same seed gave different frames")
			}
			o.Seed = 43
			c := gen(t, name, o)
			if framesEqual(a, c) {
				t.Fatal("different seeds gave identical frames")
			}
			// Labels are fixed by the row index (balanced classes); every
			// feature column must change with the seed.
			for j := range a.Cols {
				if slices.Equal(a.Cols[j], c.Cols[j]) && !constant(a.Cols[j]) {
					t.Fatalf("different seeds gave identical column %s", a.Names[j])
				}
			}
		})
	}
}

// TestPrefix checks that rows are drawn one after another: the first rows
// of a larger sample equal a smaller sample with the same seed.
func TestPrefix(t *testing.T) {
	for _, name := range Names() {
		if name == "swissroll" { // x1, x2 use sample statistics
			continue
		}
		t.Run(name, func(t *testing.T) {
			small := gen(t, name, Options{N: 50, Seed: 7})
			big := gen(t, name, Options{N: 120, Seed: 7})
			for j := range small.Cols {
				if !slices.Equal(small.Cols[j], big.Cols[j][:50]) {
					t.Fatalf("column %s differs in the common rows", small.Names[j])
				}
			}
			if !slices.Equal(small.Y, big.Y[:50]) {
				t.Fatal("labels differ in the common rows")
			}
		})
	}
}

// TestStreamsDiffer checks that two data sets with the same seed do not
// share a random stream: trunk's and impulse's first features differ in
// their noise (trunk x1 minus its class mean vs impulse t0, which has no
// signal before t = 20).
func TestStreamsDiffer(t *testing.T) {
	a := gen(t, "trunk", Options{N: 200, Seed: 1})
	b := gen(t, "impulse", Options{N: 200, Seed: 1})
	same := 0
	for i := range a.Cols[0] {
		s := float32(1)
		if a.Y[i] == 1 {
			s = -1
		}
		if a.Cols[0][i]-s == b.Cols[0][i] {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("trunk and impulse share their noise in %d of 200 rows from seed 1", same)
	}
}

func constant(v []float32) bool {
	for _, x := range v {
		if x != v[0] {
			return false
		}
	}
	return true
}

func TestOptionErrors(t *testing.T) {
	bad := []struct {
		name string
		o    Options
	}{
		{"nosuch", Options{N: 10}},
		{"trunk", Options{N: 0}},
		{"trunk", Options{N: -3}},
		{"trunk", Options{N: 10, P: -1}},
		{"circle", Options{N: 10, P: 5}},
		{"hvbars", Options{N: 10, P: 100}},
		{"xor5", Options{N: 10, P: 3}},
		{"trunk", Options{N: 10, Sigma: 0.4}},
		{"xor1", Options{N: 10, SigmaMarginal: 1.5}},
		{"xor3", Options{N: 10, Sigma: -1}},
		{"xor3", Options{N: 10, Sigma: math.NaN()}},
		{"xor3", Options{N: 10, SigmaMarginal: math.Inf(1)}},
		{"trunk", Options{N: 10, NoiseVar: 0.5}},
		{"trunk", Options{N: 10, Clean: true}},
		{"swissroll", Options{N: 10, NoiseVar: -0.5}},
		{"swissroll", Options{N: 10, P: 3}},
		{"trunk", Options{N: 1 << 30, P: 1000}},
	}
	for _, b := range bad {
		if _, err := Generate(b.name, b.o); err == nil {
			t.Errorf("Generate(%q, %+v) succeeded, want an error", b.name, b.o)
		}
	}
	if _, err := Generate("nosuch", Options{N: 1}); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: error %v does not wrap ErrUnknown", err)
	}
	if _, _, _, err := GenerateMulti("trunk", Options{N: 10}); err == nil {
		t.Error("GenerateMulti(trunk) succeeded, want an error")
	}
	// A fixed dimension may be restated.
	for name, p := range map[string]int{"circle": 100, "hvbars": 784, "impulse": 100, "xor5": 17, "swissroll": 6} {
		if _, err := Generate(name, Options{N: 5, P: p}); err != nil {
			t.Errorf("Generate(%q, P=%d): %v", name, p, err)
		}
	}
}

// TestClassBalance checks that every classification data set is exactly
// balanced, in every prefix too (row i has class i mod 2).
func TestClassBalance(t *testing.T) {
	for _, name := range Names() {
		if name == "swissroll" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{10, 11, 1000} {
				f := gen(t, name, Options{N: n, Seed: 11})
				ones := 0
				for _, y := range f.Y {
					ones += int(y)
				}
				if ones != n/2 {
					t.Fatalf("n=%d: %d rows of class index 1, want %d", n, ones, n/2)
				}
			}
		})
	}
}

// TestBayesErrorValues checks the closed forms against values computed
// independently (Python's math.erfc, see the constants' comments).
func TestBayesErrorValues(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want float64
	}{
		// 0.5*erfc(sqrt(sum(1/j for j in 1..100))/sqrt(2))
		{"trunk", Options{P: 100}, 0.011375761696637786},
		{"trunk", Options{}, 0.04350153878055218},
		// q = 0.5*erfc(0.5*sqrt(32)/sqrt(2)); (1-(1-2q)^p)/2
		{"parity", Options{P: 3}, 0.0069838318419795375},
		{"parity", Options{}, 0.022902439079804382},
		// 0.5*erfc(sqrt(sum(exp(-k/5) for k in 0..79))/2/sqrt(2))
		{"impulse", Options{}, 0.12012182240534477},
		{"circle", Options{}, 0},
		// r = 1-exp(-10/28); (exp(-10)+r^28)/2
		{"hvbars", Options{}, 2.2699964882421748e-05},
		// q = 0.5*erfc(1/0.4/sqrt(2)); (1-(1-2q)^d)/2
		{"xor1", Options{}, 0.012342210764636041},
		{"xor2", Options{}, 0.018398594093955},
	}
	for _, c := range cases {
		got, err := BayesError(c.name, c.o)
		if err != nil {
			t.Errorf("BayesError(%s): %v", c.name, err)
			continue
		}
		if math.Abs(got-c.want) > 1e-12*math.Max(1, c.want) {
			t.Errorf("BayesError(%s, %+v) = %.17g, want %.17g", c.name, c.o, got, c.want)
		}
	}
	for _, name := range []string{"xor3", "xor4", "xor5", "swissroll"} {
		if _, err := BayesError(name, Options{}); err == nil {
			t.Errorf("BayesError(%s) succeeded; it has no closed form", name)
		}
	}
}

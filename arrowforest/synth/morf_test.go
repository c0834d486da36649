package synth

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// cyclicRuns returns the lengths of the maximal runs of 1's of a 0/1
// vector read as a cycle, and the gaps (runs of 0's) between them.
func cyclicRuns(v []float32) (runs, gaps []int) {
	n := len(v)
	start := -1 // a position where a run of 1's begins
	for i := range n {
		if v[i] == 1 && v[(i+n-1)%n] == 0 {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, nil // all zeros or all ones
	}
	cur, one := 0, true
	for k := range n {
		b := v[(start+k)%n] == 1
		if b != one {
			if one {
				runs = append(runs, cur)
			} else {
				gaps = append(gaps, cur)
			}
			cur, one = 0, b
		}
		cur++
	}
	if one {
		runs = append(runs, cur)
	} else {
		gaps = append(gaps, cur)
	}
	return runs, gaps
}

func TestCyclicRuns(t *testing.T) {
	v := make([]float32, 10)
	for _, i := range []int{9, 0, 1, 4, 5} {
		v[i] = 1
	}
	runs, gaps := cyclicRuns(v)
	if !slices.Equal(runs, []int{2, 3}) || !slices.Equal(gaps, []int{3, 2}) {
		t.Fatalf("runs %v gaps %v", runs, gaps)
	}
}

func TestCircle(t *testing.T) {
	const n = 10000
	f := gen(t, "circle", Options{N: n, Seed: 21})
	row := make([]float32, circleLen)
	wrapped, minGap := 0, circleLen
	gapAfter4 := 0.0
	n1, n0 := 0, 0
	var gapHist [circleLen]int // class 1: gap after the length-4 segment
	minGap1 := 0               // class 0: rows whose segments are one 0 apart
	for i := range n {
		for j := range circleLen {
			v := f.Cols[j][i]
			if v != 0 && v != 1 {
				t.Fatalf("row %d feature %d = %v, want 0 or 1", i, j, v)
			}
			row[j] = v
		}
		runs, gaps := cyclicRuns(row)
		want := []int{5, 5}
		if f.Y[i] == 1 {
			want = []int{4, 6}
		}
		got := slices.Clone(runs)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("row %d (class %d): runs of 1's %v, want two non-adjacent segments %v", i, f.Y[i], runs, want)
		}
		for _, g := range gaps {
			minGap = min(minGap, g)
		}
		if row[0] == 1 && row[circleLen-1] == 1 {
			wrapped++
		}
		if f.Y[i] == 1 {
			n1++
			g := gaps[1]
			if runs[0] == 4 {
				g = gaps[0]
			}
			gapAfter4 += float64(g)
			gapHist[g]++
		} else {
			n0++
			if min(gaps[0], gaps[1]) == 1 {
				minGap1++
			}
		}
	}
	if minGap != 1 {
		t.Errorf("smallest gap between segments %d, want 1 (segments may come as close as one 0 apart)", minGap)
	}
	// A segment of length l straddles x99|x0 with probability (l−1)/100, so
	// about 8% of the rows wrap.
	proportion(t, "rows with a segment wrapping around x99|x0", wrapped, n, 0.08)
	// The gap after the length-4 segment is uniform on 1..89.
	within(t, "mean gap after the length-4 segment", gapAfter4/float64(n1), 45, math.Sqrt((89*89-1)/12.0)/math.Sqrt(float64(n1)), 4)
	// Chi-square test of that uniformity over the 89 gaps (df = 88: mean
	// 88, sd √176 ≈ 13.3; 5 sd above the mean).
	chi2 := 0.0
	e := float64(n1) / 89
	for g := 1; g <= 89; g++ {
		chi2 += (float64(gapHist[g]) - e) * (float64(gapHist[g]) - e) / e
	}
	if chi2 > 88+5*math.Sqrt(176) || gapHist[0] != 0 || gapHist[90] != 0 {
		t.Errorf("gap after the length-4 segment is not uniform on 1..89: chi² = %.1f, histogram %v", chi2, gapHist)
	}
	// Class 0: the first gap is uniform on 1..89, so the segments are one
	// 0 apart (on either side) with probability 2/89.
	proportion(t, "class 0 rows whose segments are one 0 apart", minGap1, n0, 2.0/89)
	// Every position is equally likely to be covered: 10 of 100.
	for j := range circleLen {
		m, _, _ := moments(f.Cols[j], nil)
		within(t, fmt.Sprintf("mean of x%d", j), m, 0.1, math.Sqrt(0.09/n), 4.5)
	}
	if be, _ := BayesError("circle", Options{}); be != 0 {
		t.Errorf("circle Bayes error %v, want 0", be)
	}
}

func TestHVBars(t *testing.T) {
	const n = 10000
	f := gen(t, "hvbars", Options{N: n, Seed: 23})
	for r := range barsSide {
		for c := range barsSide {
			if got, want := f.Names[r*barsSide+c], fmt.Sprintf("pixel_%d_%d", r, c); got != want || hvbarsPixel(r, c) != want {
				t.Fatalf("feature %d named %q, want %q", r*barsSide+c, got, want)
			}
		}
	}
	px := func(i, r, c int) float32 { return f.Cols[r*barsSide+c][i] }
	litLines, blank := 0, 0
	var perLine [2][barsSide]int // lit count per class and line index
	var perClass [2]int
	var counts []float64
	for i := range n {
		// Line m of the image: row m for class 0, column m for class 1.
		line := func(m, k int) float32 {
			if f.Y[i] == 0 {
				return px(i, m, k)
			}
			return px(i, k, m)
		}
		lit := 0
		for m := range barsSide {
			v := line(m, 0)
			if v != 0 && v != 1 {
				t.Fatalf("row %d: pixel value %v", i, v)
			}
			for k := 1; k < barsSide; k++ {
				if line(m, k) != v {
					kind := "horizontal row"
					if f.Y[i] == 1 {
						kind = "vertical column"
					}
					t.Fatalf("row %d (class %d): %s %d is not uniformly set", i, f.Y[i], kind, m)
				}
			}
			if v == 1 {
				lit++
				perLine[f.Y[i]][m]++
			}
		}
		litLines += lit
		perClass[f.Y[i]]++
		if lit == 0 {
			blank++
		}
		counts = append(counts, float64(lit))
	}
	// Poisson(10) bars on uniform lines with replacement: every line is lit
	// independently with probability r = 1 − e^{−10/28}.
	r := -math.Expm1(-10.0 / 28)
	proportion(t, "fraction of lit lines", litLines, n*barsSide, r)
	// Every row (class 0) and every column (class 1) is equally likely:
	// the classes are 90° rotations of each other.
	for c := range 2 {
		for m := range barsSide {
			within(t, fmt.Sprintf("class %d: fraction of images with line %d lit", c, m),
				float64(perLine[c][m])/float64(perClass[c]), r, math.Sqrt(r*(1-r)/float64(perClass[c])), 4.5)
		}
	}
	var m, v float64
	for _, c := range counts {
		m += c
	}
	m /= n
	for _, c := range counts {
		v += (c - m) * (c - m)
	}
	v /= n - 1
	// Binomial(28, r) variance 28r(1−r) ≈ 5.88; k distinct lines instead
	// would give about 8.
	within(t, "variance of the number of lit lines", v, 28*r*(1-r), 28*r*(1-r)*math.Sqrt(2.0/n), 4)
	if blank > 5 { // expected n·e^{-10} ≈ 0.45
		t.Errorf("%d blank images in %d, expected about %.2f", blank, n, n*math.Exp(-10))
	}
}

func TestPoisson(t *testing.T) {
	rng := newRNG("test", 1)
	const n = 200000
	var s, ss float64
	zeros := 0
	for range n {
		k := float64(poisson(rng, 10))
		s += k
		ss += k * k
		if k == 0 {
			zeros++
		}
	}
	m := s / n
	v := ss/n - m*m
	within(t, "Poisson(10) mean", m, 10, math.Sqrt(10.0/n), 4)
	// Var of the sample variance ≈ (μ4 − σ⁴)/n with μ4 = λ(1+3λ).
	within(t, "Poisson(10) variance", v, 10, math.Sqrt((10*(1+30.0)-100)/n), 4)
	if poisson(rng, 0) != 0 {
		t.Error("Poisson(0) drew a positive value")
	}
}

func TestImpulse(t *testing.T) {
	const n = 20000
	f := gen(t, "impulse", Options{N: n, Seed: 29})
	for c := range int32(2) {
		for tt := range impulseLen {
			want := 0.0
			if c == 1 && tt >= 20 {
				want = math.Exp(-float64(tt-20) / 10)
			}
			m, v, nc := moments(f.Cols[tt], inClass(f, c))
			se := 1 / math.Sqrt(float64(nc))
			within(t, fmt.Sprintf("class %d mean at t=%d", c, tt), m, want, se, 4.5)
			within(t, fmt.Sprintf("class %d variance at t=%d", c, tt), v, 1, math.Sqrt(2/float64(nc-1)), 4.5)
		}
	}
	// The required reference points, explicitly.
	m25, _, n1 := moments(f.Cols[25], inClass(f, 1))
	within(t, "class 1 mean at t=25", m25, math.Exp(-0.5), 1/math.Sqrt(float64(n1)), 4)
	m20, _, _ := moments(f.Cols[20], inClass(f, 1))
	within(t, "class 1 mean at t=20", m20, 1, 1/math.Sqrt(float64(n1)), 4)
	if impulseSignal(19) != 0 || impulseSignal(20) != 1 || impulseSignal(30) != math.Exp(-1) {
		t.Error("impulseSignal does not match u(t−20)·exp(−(t−20)/10)")
	}

	// The Bayes rule between N(0, I) and N(s, I): class 1 iff sᵀx > ‖s‖²/2.
	var ss float64
	for tt := range impulseLen {
		ss += impulseSignal(tt) * impulseSignal(tt)
	}
	errs := 0
	for i := range n {
		d := 0.0
		for tt := impulseOnset; tt < impulseLen; tt++ {
			d += impulseSignal(tt) * float64(f.Cols[tt][i])
		}
		pred := int32(0)
		if d > ss/2 {
			pred = 1
		}
		if pred != f.Y[i] {
			errs++
		}
	}
	be, _ := BayesError("impulse", Options{})
	proportion(t, "impulse Bayes-rule error", errs, n, be)
}

package synth

import (
	"fmt"
	"math"
	"testing"
)

// TestTrunkMeans checks the class means ±1/√j and the unit variances.
func TestTrunkMeans(t *testing.T) {
	const n, p = 20000, 10
	f := gen(t, "trunk", Options{N: n, Seed: 3, P: p})
	for j := range p {
		if want := fmt.Sprintf("x%d", j+1); f.Names[j] != want {
			t.Fatalf("feature %d named %q, want %q", j, f.Names[j], want)
		}
		mu := 1 / math.Sqrt(float64(j+1))
		for c, sign := range []float64{1, -1} {
			m, v, nc := moments(f.Cols[j], inClass(f, int32(c)))
			within(t, fmt.Sprintf("class %d mean of x%d", c, j+1), m, sign*mu, 1/math.Sqrt(float64(nc)), 4)
			within(t, fmt.Sprintf("class %d variance of x%d", c, j+1), v, 1, math.Sqrt(2/float64(nc-1)), 4)
		}
	}
	if got := trunkMean(3); got[0] != 1 || got[1] != 1/math.Sqrt(2) || got[2] != 1/math.Sqrt(3) {
		t.Errorf("trunkMean(3) = %v", got)
	}
}

// TestTrunkBayes measures the error of the Bayes rule sign(μᵀx) on
// trunk with p = 100 and compares it with Φ(−‖μ‖).
func TestTrunkBayes(t *testing.T) {
	const n, p = 20000, 100
	f := gen(t, "trunk", Options{N: n, Seed: 5, P: p})
	mu := trunkMean(p)
	errs := 0
	for i := range n {
		s := 0.0
		for j, m := range mu {
			s += m * float64(f.Cols[j][i])
		}
		pred := int32(0)
		if s < 0 {
			pred = 1
		}
		if pred != f.Y[i] {
			errs++
		}
	}
	be, err := BayesError("trunk", Options{P: p})
	if err != nil {
		t.Fatal(err)
	}
	proportion(t, "trunk p=100 Bayes-rule error", errs, n, be)
}

// TestParity checks that the class is the parity of the number of zeros
// of the rounded coordinates (up to the Bayes error), that every vertex of
// a class is equally likely, and that each coordinate alone carries no
// information about the class.
func TestParity(t *testing.T) {
	for _, p := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			const n = 20000
			f := gen(t, "parity", Options{N: n, Seed: 9, P: p})
			disagree := 0
			vertexCount := map[int]int{} // vertex bits → rows whose rounded point is that vertex and parity agrees
			classRight := [2]int{}
			for i := range n {
				zeros, bits := 0, 0
				for j := range p {
					if f.Cols[j][i] < 0.5 {
						zeros++
					} else {
						bits |= 1 << j
					}
				}
				if int32(zeros%2) != f.Y[i] {
					disagree++
					continue
				}
				vertexCount[bits]++
				classRight[f.Y[i]]++
			}
			be, err := BayesError("parity", Options{P: p})
			if err != nil {
				t.Fatal(err)
			}
			proportion(t, "rows whose class is not the parity of the rounded point", disagree, n, be)
			if p <= 3 {
				per := 1 << (p - 1) // vertices per class
				for bits, cnt := range vertexCount {
					zeros := p - popcount(bits)
					proportion(t, fmt.Sprintf("share of vertex %0*b in its class", p, bits), cnt, classRight[zeros%2], 1/float64(per))
				}
				if len(vertexCount) != 1<<p {
					t.Errorf("%d vertices seen, want %d", len(vertexCount), 1<<p)
				}
			}
			if p >= 2 {
				// Each coordinate is a fair mixture of N(0,1/32) and N(1,1/32) in both classes.
				sd := math.Sqrt(0.25 + 1.0/32)
				for j := range p {
					for c := range int32(2) {
						m, v, nc := moments(f.Cols[j], inClass(f, c))
						within(t, fmt.Sprintf("class %d mean of x%d", c, j+1), m, 0.5, sd/math.Sqrt(float64(nc)), 4)
						within(t, fmt.Sprintf("class %d variance of x%d", c, j+1), v, sd*sd, 0.25*math.Sqrt(2.0/float64(nc)), 5)
					}
				}
			}
		})
	}
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

package projection

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestAxisDistinct(t *testing.T) {
	s, _ := newAxis(10, 4)
	var c Candidates
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 100; trial++ {
		c.Reset()
		s.Sample(rng, &c)
		seen := map[int32]bool{}
		for a := 0; a < c.Len(); a++ {
			j, ok := c.IsAxis(a)
			if !ok || seen[j] {
				t.Fatalf("atom %d: axis=%v, duplicate=%v", a, ok, seen[j])
			}
			seen[j] = true
		}
	}
}

// TestSparseDistribution: non-zeros per atom follow Poisson(λ) given ≥ 1
// (mean λ/(1−e^−λ)), at distinct features, weights ±1 half and half.
func TestSparseDistribution(t *testing.T) {
	const p, d, lambda = 40, 20, 1.5
	s, err := newSparse(p, d, lambda, false)
	if err != nil {
		t.Fatal(err)
	}
	var c Candidates
	rng := rand.New(rand.NewPCG(2, 2))
	var atoms, nnz, plus, multi float64
	hits := make([]float64, p)
	for trial := 0; trial < 3000; trial++ {
		c.Reset()
		s.Sample(rng, &c)
		if c.Len() != d {
			t.Fatalf("%d atoms, want %d", c.Len(), d)
		}
		for a := 0; a < c.Len(); a++ {
			idx, w := c.Atom(a)
			if len(idx) == 0 {
				t.Fatal("empty atom")
			}
			for q := range idx {
				if q > 0 && idx[q] <= idx[q-1] {
					t.Fatalf("atom features not distinct and sorted: %v", idx)
				}
				if w[q] != 1 && w[q] != -1 {
					t.Fatalf("weight %v", w[q])
				}
				if w[q] == 1 && len(idx) > 1 {
					plus++
				}
				if len(idx) == 1 && w[q] != 1 {
					t.Fatalf("single-feature atom with weight %v, want the axis atom", w[q])
				}
				hits[idx[q]]++
			}
			atoms++
			nnz += float64(len(idx))
			if len(idx) > 1 {
				multi += float64(len(idx))
			}
		}
	}
	want := lambda / (1 - math.Exp(-lambda))
	if m := nnz / atoms; math.Abs(m-want) > 0.02 {
		t.Fatalf("mean non-zeros %v, want %v", m, want)
	}
	if f := plus / multi; math.Abs(f-0.5) > 0.01 {
		t.Fatalf("share of +1 weights %v", f)
	}
	for j, h := range hits { // each feature equally likely: ±5 sd
		exp := nnz / p
		if math.Abs(h-exp) > 5*math.Sqrt(exp) {
			t.Fatalf("feature %d hit %v times, expected %v", j, h, exp)
		}
	}
}

// TestMeanDiffAtoms: RerF(δ) atoms are μ_k − μ_0 over the node's rows.
func TestMeanDiffAtoms(t *testing.T) {
	cols := [][]float32{{1, 3, 10, 14, 0}, {2, 2, 2, 2, 5}, {0, 0, 4, 4, 9}}
	node := &Node{Cols: cols, Rows: []int32{0, 1, 2, 3}, Y: []int32{0, 0, 1, 1}, W: []float64{1, 1, 1, 1}, K: 2}
	s, _ := newSparse(3, 3, 1, true) // D/p = 1: always add the δ atom
	var c Candidates
	c.Reset()
	s.SampleNode(rand.New(rand.NewPCG(1, 1)), &c, node)
	if c.Len() != 4 {
		t.Fatalf("%d atoms, want 3 sparse + 1 mean-difference", c.Len())
	}
	idx, w := c.Atom(3)
	// μ1 − μ0 = (12−2, 2−2, 4−0): feature 1 has zero difference and is dropped
	if len(idx) != 2 || idx[0] != 0 || idx[1] != 2 || w[0] != 10 || w[1] != 4 {
		t.Fatalf("mean-difference atom %v %v", idx, w)
	}
}

// TestPatchCoverageUniform: with the zero-padded corner range every
// feature is covered equally often (MORF paper §3.1).
func TestPatchCoverageUniform(t *testing.T) {
	for _, top := range []Topology{{H: 6, W: 9, C: 1}, {H: 1, W: 30, C: 1, CyclicW: true}, {H: 4, W: 5, C: 3, Interleaved: true}} {
		p := top.H * top.W * top.C
		hmax, wmax := min(3, top.H), min(4, top.W)
		s, err := newPatch(top, p, 10, 1, hmax, 2, wmax, false)
		if err != nil {
			t.Fatal(err)
		}
		var c Candidates
		rng := rand.New(rand.NewPCG(3, 3))
		hits := make([]float64, p)
		total := 0.0
		for trial := 0; trial < 20000; trial++ {
			c.Reset()
			s.Sample(rng, &c)
			for a := 0; a < c.Len(); a++ {
				idx, w := c.Atom(a)
				if len(idx) == 0 || len(idx) > hmax*wmax {
					t.Fatalf("patch of %d cells", len(idx))
				}
				ch := -1
				for q, j := range idx {
					if w[q] != 1 {
						t.Fatalf("weight %v", w[q])
					}
					// all cells in one channel
					cj := int(j) / (top.H * top.W)
					if top.Interleaved {
						cj = int(j) % top.C
					}
					if ch >= 0 && cj != ch {
						t.Fatalf("patch spans channels %d and %d", ch, cj)
					}
					ch = cj
					hits[j]++
					total++
				}
			}
		}
		exp := total / float64(p)
		for j, h := range hits {
			if math.Abs(h-exp) > 6*math.Sqrt(exp) {
				t.Fatalf("%+v: feature %d covered %v times, expected %v", top, j, h, exp)
			}
		}
	}
}

func TestPatchCyclicWraps(t *testing.T) {
	top := Topology{H: 1, W: 10, C: 1, CyclicW: true}
	s, _ := newPatch(top, 10, 1, 1, 1, 4, 4, false)
	var c Candidates
	rng := rand.New(rand.NewPCG(4, 4))
	wrapped := false
	for trial := 0; trial < 200; trial++ {
		c.Reset()
		s.Sample(rng, &c)
		idx, _ := c.Atom(0)
		if len(idx) != 4 {
			t.Fatalf("cyclic patch of width 4 has %d cells: %v", len(idx), idx)
		}
		if idx[0] == 0 && idx[3] == 9 {
			wrapped = true
		}
	}
	if !wrapped {
		t.Fatal("no patch wrapped around the cycle")
	}
}

func TestPatchRejects(t *testing.T) {
	top := Topology{H: 4, W: 4, C: 1}
	if _, err := newPatch(top, 15, 5, 1, 2, 1, 2, false); err == nil {
		t.Error("layout 4x4 accepted for 15 features")
	}
	if _, err := newPatch(top, 16, 5, 1, 5, 1, 2, false); err == nil {
		t.Error("patch taller than the layout accepted")
	}
	if _, err := newPatch(top, 16, 5, 3, 2, 1, 2, false); err == nil {
		t.Error("min above max accepted")
	}
}

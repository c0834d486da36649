package projection

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// patchNode is a node over p features of nrow rows with classes y (NaN at
// every 7th cell, weights 1 or 2), filled from a fixed stream.
func patchNode(p, nrow, k int) *Node {
	rng := rand.New(rand.NewPCG(9, 9))
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, nrow+3) // 3 rows not in the node
		for r := range cols[j] {
			cols[j][r] = float32(rng.NormFloat64())
			if (j*nrow+r)%7 == 3 {
				cols[j][r] = float32(math.NaN())
			}
		}
	}
	n := &Node{Cols: cols, K: k}
	for r := 0; r < nrow; r++ {
		n.Rows = append(n.Rows, int32(r+2))
		n.Y = append(n.Y, int32(r%k))
		n.W = append(n.W, float64(1+r%2))
	}
	return n
}

// refMean is μ_c(j) over the node's rows, weighted, NaN skipped.
func refMean(n *Node, c int, j int32) float64 {
	var s, w float64
	for q, r := range n.Rows {
		if v := n.Cols[j][r]; int(n.Y[q]) == c && v == v {
			s += n.W[q] * float64(v)
			w += n.W[q]
		}
	}
	if w == 0 {
		return 0
	}
	return s / w
}

// TestPatchMeanDiffTwins: with MeanDiff each of the D patches is followed,
// after all D, by its twin — the same support (in the same order) weighted
// by μ_k − μ_0 over the node's in-bag rows — and the D patches are exactly
// those Sample draws from the same stream. K = 3 draws k from {1, 2}.
func TestPatchMeanDiffTwins(t *testing.T) {
	for _, k := range []int{2, 3} {
		top := Topology{H: 4, W: 6, C: 2}
		p := top.H * top.W * top.C
		s, err := newPatch(top, p, 5, 1, 3, 2, 4, true)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := newPatch(top, p, 5, 1, 3, 2, 4, false)
		node := patchNode(p, 40, k)
		var c, ref Candidates
		seenK := map[int]bool{}
		for trial := 0; trial < 30; trial++ {
			c.Reset()
			ref.Reset()
			rng := rand.New(rand.NewPCG(uint64(trial), 5))
			s.SampleNode(rng, &c, node)
			plain.Sample(rand.New(rand.NewPCG(uint64(trial), 5)), &ref)
			if c.Len() != 2*s.D {
				t.Fatalf("K=%d: %d atoms, want %d patches and their twins", k, c.Len(), 2*s.D)
			}
			for a := 0; a < s.D; a++ {
				pi, pw := c.Atom(a)
				ri, rw := ref.Atom(a)
				if !slices.Equal(pi, ri) || !slices.Equal(pw, rw) {
					t.Fatalf("patch %d differs from Sample's: %v vs %v", a, pi, ri)
				}
				ti, tw := c.Atom(s.D + a)
				if !slices.Equal(ti, pi) {
					t.Fatalf("twin %d support %v, patch %v", a, ti, pi)
				}
				// the twin's class: the one whose difference matches
				match := -1
				for kk := 1; kk < k; kk++ {
					ok := true
					for q, j := range ti {
						want := float32(refMean(node, kk, j) - refMean(node, 0, j))
						if math.Abs(float64(tw[q]-want)) > 1e-5*(1+math.Abs(float64(want))) {
							ok = false
							break
						}
					}
					if ok {
						match = kk
						break
					}
				}
				if match < 0 {
					t.Fatalf("K=%d: twin %d weights %v are no class-mean difference over its patch", k, a, tw)
				}
				seenK[match] = true
			}
		}
		if len(seenK) != k-1 {
			t.Errorf("K=%d: twins used classes %v, want all of 1..%d", k, seenK, k-1)
		}
	}
}

// TestPatchMeanDiffFallsBack: regression nodes (K = 0), a one-class node
// and MeanDiff off draw exactly Sample's patches.
func TestPatchMeanDiffFallsBack(t *testing.T) {
	top := Topology{H: 1, W: 30, C: 1}
	s, _ := newPatch(top, 30, 4, 1, 1, 2, 9, true)
	plain, _ := newPatch(top, 30, 4, 1, 1, 2, 9, false)
	reg := patchNode(30, 20, 2)
	reg.K, reg.Y = 0, nil
	one := patchNode(30, 20, 1)
	for _, node := range []*Node{nil, reg, one} {
		var c, ref Candidates
		c.Reset()
		ref.Reset()
		s.SampleNode(rand.New(rand.NewPCG(2, 2)), &c, node)
		plain.Sample(rand.New(rand.NewPCG(2, 2)), &ref)
		if !slices.Equal(c.start, ref.start) || !slices.Equal(c.idx, ref.idx) || !slices.Equal(c.w, ref.w) {
			t.Fatalf("node %v: got %v, want Sample's %v", node, c.idx, ref.idx)
		}
	}
}

// TestPatchMeanDiffNoReferenceClass: when class 0 has no row, there is no
// reference mean and only the patches are drawn.
func TestPatchMeanDiffNoReferenceClass(t *testing.T) {
	top := Topology{H: 1, W: 10, C: 1}
	s, _ := newPatch(top, 10, 3, 1, 1, 2, 5, true)
	node := patchNode(10, 12, 2)
	for q := range node.Y {
		node.Y[q] = 1
	}
	var c Candidates
	c.Reset()
	s.SampleNode(rand.New(rand.NewPCG(4, 4)), &c, node)
	if c.Len() != 3 {
		t.Fatalf("%d atoms, want the 3 patches only", c.Len())
	}
}

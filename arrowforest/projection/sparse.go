package projection

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Node is what a data-aware sampler may look at: the training columns and
// the node's rows with their labels and weights (classification).
type Node struct {
	Cols [][]float32
	Rows []int32
	Y    []int32   // class per node row (aligned with Rows)
	W    []float64 // weight per node row
	K    int
}

// NodeSampler is a Sampler that also looks at the node's data, such as the
// class-conditional mean differences of RerF(δ). The tree builder calls
// SampleNode instead of Sample when a sampler implements it.
type NodeSampler interface {
	Sampler
	SampleNode(rng *rand.Rand, c *Candidates, node *Node)
}

// sparseSampler is SPORF's sampler (Randomer paper §2; MORF paper §2.3): D
// atoms per node, each with k non-zeros at distinct features drawn uniformly,
// k ~ Poisson(λ) conditioned on k ≥ 1 (a zero draw is redrawn) and capped
// at p, every weight +1 or −1 with equal probability.
//
// With MeanDiff set it is RerF(δ): at each node the c−1 differences of
// class-conditional means μ_k − μ_0 (k = 1..c−1, over the node's in-bag
// rows, NaN ignored) are each added as a dense atom with probability D/p.
type sparseSampler struct {
	P, D     int
	Lambda   float64
	MeanDiff bool

	perm []int32
	js   []int32
	idx  []int32
	w    []float32
	cm   classMeans
	all  []int32 // 0..p−1, the support of a dense δ atom
}

// NewSparse returns SPORF's sampler (sparseSampler): d sparse ±1 atoms
// over p features per node, Poisson(lambda) non-zeros each, and with
// meanDiff RerF(δ)'s class-mean-difference atoms.
func NewSparse(p, d int, lambda float64, meanDiff bool) (NodeSampler, error) {
	s, err := newSparse(p, d, lambda, meanDiff)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newSparse is NewSparse with the concrete type, for this package's tests.
func newSparse(p, d int, lambda float64, meanDiff bool) (*sparseSampler, error) {
	if p <= 0 {
		return nil, fmt.Errorf("projection: no features")
	}
	if d < 1 {
		return nil, fmt.Errorf("projection: %d atoms per node; want at least 1", d)
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("projection: lambda %v must be positive", lambda)
	}
	s := &sparseSampler{P: p, D: d, Lambda: lambda, MeanDiff: meanDiff, perm: make([]int32, p), all: make([]int32, p)}
	for i := range s.perm {
		s.perm[i] = int32(i)
		s.all[i] = int32(i)
	}
	return s, nil
}

// poisson draws from Poisson(λ) by inversion (λ is small: a few units).
func poisson(rng *rand.Rand, lambda float64) int {
	l := math.Exp(-lambda)
	k, prod := 0, rng.Float64()
	for prod > l {
		k++
		prod *= rng.Float64()
	}
	return k
}

// Sample draws D sparse ±1 atoms.
func (s *sparseSampler) Sample(rng *rand.Rand, c *Candidates) {
	for a := 0; a < s.D; a++ {
		k := 0
		for k == 0 {
			k = poisson(rng, s.Lambda)
		}
		k = min(k, s.P)
		// features and signs are drawn interleaved (feature, sign, …); the
		// swaps are undone in O(k) so perm is the identity for every atom
		s.idx, s.w, s.js = s.idx[:0], s.w[:0], s.js[:0]
		for i := 0; i < k; i++ {
			j := i + rng.IntN(s.P-i)
			s.js = append(s.js, int32(j))
			s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
			s.idx = append(s.idx, s.perm[i])
			if rng.IntN(2) == 0 {
				s.w = append(s.w, 1)
			} else {
				s.w = append(s.w, -1)
			}
		}
		undoDraw(s.perm, s.js)
		sortAtom(s.idx, s.w)
		if k == 1 {
			// −x ≤ t and x ≤ −t cut the same family of partitions, so a
			// single-feature atom is stored as the axis atom (weight +1),
			// which takes the pre-binned split path
			s.w[0] = 1
		}
		c.Add(s.idx, s.w)
	}
}

// sortAtom orders an atom's entries by feature (insertion sort: atoms are
// short), so equal atoms have equal encodings.
func sortAtom(idx []int32, w []float32) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && idx[j] < idx[j-1]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
}

// SampleNode draws the sparse atoms and, for RerF(δ), the mean-difference
// atoms of this node.
func (s *sparseSampler) SampleNode(rng *rand.Rand, c *Candidates, node *Node) {
	s.Sample(rng, c)
	if !s.MeanDiff || node == nil || node.K < 2 {
		return
	}
	prob := float64(s.D) / float64(s.P)
	meansDone := false
	for k := 1; k < node.K; k++ {
		if rng.Float64() >= prob {
			continue
		}
		if !meansDone {
			meansDone = true
			if !s.cm.fill(node, s.P, s.all) {
				return
			}
		}
		s.idx, s.w = s.cm.delta(k, s.all, s.idx[:0], s.w[:0])
		if len(s.idx) > 0 {
			c.Add(s.idx, s.w)
		}
	}
}

// Package projection owns split atoms and the samplers that draw them.
//
// An atom is a sparse weight vector a over the p features; a split node
// projects a row x onto it (a·x) and compares the result with a threshold.
// Breiman's random forest draws axis atoms (one feature, weight 1); SPORF
// draws sparse ±1 atoms (Randomer paper §2; MORF paper §2.3); MORF draws
// patch atoms on a feature topology (MORF paper §3.1). Every learner in
// package tree works on atoms only, so a new sampler plugs in without
// touching the split search.
package projection

import (
	"fmt"
	"math/rand/v2"
)

// Candidates is a reusable buffer of atoms drawn for one node: a sampler
// appends them (AddAxis, Add), the split search reads them (Len, Atom,
// IsAxis). Reset it before each node; it never shrinks, so a worker
// allocates only while it warms up.
type Candidates struct {
	start []int32
	idx   []int32
	w     []float32
}

// Reset empties the buffer, keeping its capacity.
func (c *Candidates) Reset() {
	c.start = append(c.start[:0], 0)
	c.idx = c.idx[:0]
	c.w = c.w[:0]
}

// Len is the number of atoms in the buffer.
func (c *Candidates) Len() int {
	if len(c.start) == 0 {
		return 0
	}
	return len(c.start) - 1
}

// AddAxis appends the axis atom of feature j (weight 1).
func (c *Candidates) AddAxis(j int32) {
	if len(c.start) == 0 {
		c.start = append(c.start, 0)
	}
	c.idx = append(c.idx, j)
	c.w = append(c.w, 1)
	c.start = append(c.start, int32(len(c.idx)))
}

// Add appends a sparse atom. idx and w must have equal length ≥ 1.
func (c *Candidates) Add(idx []int32, w []float32) {
	if len(c.start) == 0 {
		c.start = append(c.start, 0)
	}
	c.idx = append(c.idx, idx...)
	c.w = append(c.w, w...)
	c.start = append(c.start, int32(len(c.idx)))
}

// Atom returns atom i's feature indices and weights (views into the buffer).
func (c *Candidates) Atom(i int) ([]int32, []float32) {
	a, b := c.start[i], c.start[i+1]
	return c.idx[a:b], c.w[a:b]
}

// IsAxis reports whether atom i is a single feature with weight 1, the case
// that takes the pre-binned axis-aligned split path.
func (c *Candidates) IsAxis(i int) (int32, bool) {
	a, b := c.start[i], c.start[i+1]
	if b-a == 1 && c.w[a] == 1 {
		return c.idx[a], true
	}
	return -1, false
}

// Sampler draws the candidate atoms of one node. Implementations must be
// deterministic given rng and must not keep references to c.
type Sampler interface {
	Sample(rng *rand.Rand, c *Candidates)
}

// axisSampler is Breiman's sampler: MTry distinct features drawn uniformly
// without replacement out of P (MORF paper §2.2; dissertation §1.1).
type axisSampler struct {
	P, MTry int
	perm    []int32
	js      []int32
}

// NewAxis returns Breiman's sampler (axisSampler): mtry of p features
// drawn uniformly without replacement per node.
func NewAxis(p, mtry int) (Sampler, error) {
	s, err := newAxis(p, mtry)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newAxis is NewAxis with the concrete type, for this package's tests.
func newAxis(p, mtry int) (*axisSampler, error) {
	if p <= 0 {
		return nil, fmt.Errorf("projection: no features")
	}
	if mtry < 1 || mtry > p {
		return nil, fmt.Errorf("projection: max features %d outside 1..%d", mtry, p)
	}
	s := &axisSampler{P: p, MTry: mtry, perm: make([]int32, p)}
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	return s, nil
}

// Sample draws MTry distinct features by a partial Fisher–Yates shuffle.
func (s *axisSampler) Sample(rng *rand.Rand, c *Candidates) {
	s.js = drawDistinct(rng, s.perm, s.MTry, s.js)
	for _, j := range s.perm[:s.MTry] {
		c.AddAxis(j)
	}
	undoDraw(s.perm, s.js)
}

// drawDistinct moves k distinct indices drawn uniformly to perm[:k] by a
// partial Fisher–Yates shuffle of perm (which must be the identity) and
// returns the swap partners for undoDraw. Undoing costs O(k), so a draw
// depends on rng alone without an O(p) reset per node.
func drawDistinct(rng *rand.Rand, perm []int32, k int, js []int32) []int32 {
	js = js[:0]
	p := len(perm)
	for i := 0; i < k; i++ {
		j := i + rng.IntN(p-i)
		js = append(js, int32(j))
		perm[i], perm[j] = perm[j], perm[i]
	}
	return js
}

// undoDraw restores perm to the identity after drawDistinct.
func undoDraw(perm, js []int32) {
	for i := len(js) - 1; i >= 0; i-- {
		j := js[i]
		perm[i], perm[j] = perm[j], perm[i]
	}
}

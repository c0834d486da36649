package projection

import (
	"fmt"
	"math/rand/v2"
)

// Topology lays the p features out as C channels of H×W images (row-major
// within a channel). A series is H = 1; a cyclic series also wraps along
// the width (e.g. a discretized circle). Features are either planar
// (channel c, row r, column q is feature c·H·W + r·W + q) or interleaved
// (feature (r·W + q)·C + c, as in pixel-major image dumps).
type Topology struct {
	H, W, C     int
	CyclicW     bool // columns wrap around (cyclic axis)
	CyclicH     bool // rows wrap around
	Interleaved bool
}

// Validate checks the layout against p features.
func (t Topology) Validate(p int) error {
	if t.H < 1 || t.W < 1 || t.C < 1 {
		return fmt.Errorf("projection: topology %d×%d×%d must be positive", t.H, t.W, t.C)
	}
	if t.H*t.W*t.C != p {
		return fmt.Errorf("projection: topology %d×%d with %d channels covers %d features, data has %d", t.W, t.H, t.C, t.H*t.W*t.C, p)
	}
	return nil
}

// Feature returns the feature index of (channel, row, column).
func (t Topology) Feature(c, r, q int) int32 {
	if t.Interleaved {
		return int32((r*t.W+q)*t.C + c)
	}
	return int32(c*t.H*t.W + r*t.W + q)
}

// patchSampler is MORF's sampler (MORF paper §3.1): D atoms per node, each
// the sum of a rectangular patch of one channel. Height h ~ U{HMin..HMax} and width
// w ~ U{WMin..WMax} are drawn independently; the upper-left corner is drawn
// uniformly over the zero-padded border, u ~ U{−h+1..H−1} and
// v ~ U{−w+1..W−1} (0-based: every feature is covered by exactly h·w of
// the corners, so each is equally likely to be in the patch — the paper's
// U{−h+1, H} with 1-based rows, minus the one corner whose patch would lie
// wholly in the padding), and the patch is clipped to the image. Along a
// cyclic axis the corner is uniform over the axis and the patch wraps
// around instead. All weights are 1; with MeanDiff each patch also comes
// as its class-mean-difference twin (SampleNode).
type patchSampler struct {
	Top        Topology
	D          int
	HMin, HMax int
	WMin, WMax int
	// MeanDiff adds, beside each patch, its RerF(δ) twin; see SampleNode.
	MeanDiff bool

	idx   []int32
	w     []float32
	cm    classMeans
	feats []int32 // union of the node's patch supports
	seen  []bool
}

// NewPatch returns MORF's sampler (MORF paper §3.1; patchSampler): d patch
// atoms per node of heights hmin..hmax and widths wmin..wmax on top, each
// with its RerF(δ) twin when meanDiff is set. It validates the bounds
// against the topology.
func NewPatch(top Topology, p, d, hmin, hmax, wmin, wmax int, meanDiff bool) (NodeSampler, error) {
	s, err := newPatch(top, p, d, hmin, hmax, wmin, wmax, meanDiff)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newPatch is NewPatch with the concrete type, for this package's tests.
func newPatch(top Topology, p, d, hmin, hmax, wmin, wmax int, meanDiff bool) (*patchSampler, error) {
	if err := top.Validate(p); err != nil {
		return nil, err
	}
	if d < 1 {
		return nil, fmt.Errorf("projection: %d atoms per node; want at least 1", d)
	}
	if hmin < 1 || wmin < 1 || hmax < hmin || wmax < wmin {
		return nil, fmt.Errorf("projection: patch sizes %dx%d..%dx%d are not a valid range", hmin, wmin, hmax, wmax)
	}
	if hmax > top.H || wmax > top.W {
		return nil, fmt.Errorf("projection: patch up to %dx%d does not fit a %dx%d layout", hmax, wmax, top.H, top.W)
	}
	return &patchSampler{Top: top, D: d, HMin: hmin, HMax: hmax, WMin: wmin, WMax: wmax, MeanDiff: meanDiff}, nil
}

// Sample draws D patch atoms.
func (s *patchSampler) Sample(rng *rand.Rand, c *Candidates) {
	for a := 0; a < s.D; a++ {
		s.samplePatch(rng, c)
	}
}

// SampleNode draws D patch atoms and, with MeanDiff on a classification
// node of at least two classes, each patch's twin: the same support
// weighted by the node's class-conditional mean difference μ_k − μ_0 over
// its in-bag rows (k drawn uniformly from 1..K−1 per patch) instead of 1.
//
// The twin is an atom of the MORF paper's dictionary, a weighted sum over
// a contiguous patch (manifold-oblique-random-forests.md §3: "nonzero
// elements of a_j effectively weight and sum features"), with the weights
// of the Randomer paper's supervised RerF(δ) atom (randomer-forests.txt
// §2) restricted to the patch. Restricted to a patch that covers the
// signal, the mean difference keeps the signal and drops the estimation
// noise of every feature outside it: on impulse (seeds 1–3) the
// class-mean difference over all 100 steps, the plug-in matched filter,
// errs 0.1325, and over steps 20..49 0.1246, against the Bayes rule's
// 0.1226 (e2e/bench/impulse_refs.py).
func (s *patchSampler) SampleNode(rng *rand.Rand, c *Candidates, node *Node) {
	if !s.MeanDiff || node == nil || node.K < 2 {
		s.Sample(rng, c)
		return
	}
	first := c.Len()
	s.Sample(rng, c)
	p := s.Top.H * s.Top.W * s.Top.C
	if len(s.seen) != p {
		s.seen = make([]bool, p)
	}
	s.feats = s.feats[:0]
	for a := first; a < first+s.D; a++ {
		idx, _ := c.Atom(a)
		for _, j := range idx {
			if !s.seen[j] {
				s.seen[j] = true
				s.feats = append(s.feats, j)
			}
		}
	}
	for _, j := range s.feats {
		s.seen[j] = false
	}
	if !s.cm.fill(node, p, s.feats) {
		return
	}
	for a := first; a < first+s.D; a++ {
		k := 1
		if node.K > 2 {
			k = 1 + rng.IntN(node.K-1)
		}
		idx, _ := c.Atom(a)
		s.idx, s.w = s.cm.delta(k, idx, s.idx[:0], s.w[:0])
		if len(s.idx) > 0 {
			c.Add(s.idx, s.w)
		}
	}
}

// samplePatch appends one patch atom (all weights 1) to c.
func (s *patchSampler) samplePatch(rng *rand.Rand, c *Candidates) {
	t := s.Top
	h := s.HMin + rng.IntN(s.HMax-s.HMin+1)
	w := s.WMin + rng.IntN(s.WMax-s.WMin+1)
	ch := 0
	if t.C > 1 {
		ch = rng.IntN(t.C)
	}
	u := corner(rng, h, t.H, t.CyclicH)
	v := corner(rng, w, t.W, t.CyclicW)
	s.idx, s.w = s.idx[:0], s.w[:0]
	for dr := 0; dr < h; dr++ {
		r, ok := cell(u+dr, t.H, t.CyclicH)
		if !ok {
			continue
		}
		for dq := 0; dq < w; dq++ {
			q, ok := cell(v+dq, t.W, t.CyclicW)
			if !ok {
				continue
			}
			s.idx = append(s.idx, t.Feature(ch, r, q))
			s.w = append(s.w, 1)
		}
	}
	sortAtom(s.idx, s.w)
	c.Add(s.idx, s.w)
}

// corner draws the first row (or column) of a patch of extent e on an axis
// of length n: over the zero-padded range −e+1..n−1, or 0..n−1 on a cycle.
func corner(rng *rand.Rand, e, n int, cyclic bool) int {
	if cyclic {
		return rng.IntN(n)
	}
	return -e + 1 + rng.IntN(n+e-1)
}

// cell maps a patch coordinate onto the axis: wrapped on a cycle, dropped
// (zero padding) outside otherwise.
func cell(x, n int, cyclic bool) (int, bool) {
	if cyclic {
		return ((x % n) + n) % n, true
	}
	return x, x >= 0 && x < n
}

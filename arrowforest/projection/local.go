package projection

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// TreeSampler is a Sampler that also prepares once per tree, before the
// tree's first node: local feature sampling draws the tree's feature subset
// there (dissertation §4.1), feature dependence mapping the tree's mappings
// (dissertation §6.4, RF_FDM). The forest calls BeginTree with the tree's
// own random stream and its in-bag rows, so what a tree sees depends on
// (seed, tree index) alone, never on the worker that grows it.
type TreeSampler interface {
	Sampler
	BeginTree(rng *rand.Rand, rows []int32) error
}

// Window draws one tree's local feature subset into dst[:0] (features in
// increasing order). Implementations: patchWindow (features on a
// topology) and locality.NewWindow (a feature and its nearest features on a
// learned locality).
type Window interface {
	Draw(rng *rand.Rand, dst []int32) []int32
}

// localSampler is the sampler of a random forest with local feature sampling
// (RF-LFS, dissertation ch. 4): each tree sees only the subset its Window
// draws (§4.1), and every node of the tree draws MTry(|subset|) distinct
// features of that subset uniformly as axis atoms, Breiman's rule applied
// to the tree's own features (as a scikit-learn forest trained on the
// subset would do).
type localSampler struct {
	Window Window
	// MTry maps a window's size to the number of candidate features per
	// node (1..size).
	MTry func(size int) int

	sub  []int32
	perm []int32
	js   []int32
	m    int
}

// NewLocal returns the sampler of a random forest with local feature
// sampling (RF-LFS, dissertation ch. 4; localSampler): each tree sees the
// subset w draws, each node mtry(|subset|) of its features. BeginTree must
// run before Sample.
func NewLocal(w Window, mtry func(size int) int) (TreeSampler, error) {
	s, err := newLocal(w, mtry)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newLocal is NewLocal with the concrete type, for this package's tests.
func newLocal(w Window, mtry func(size int) int) (*localSampler, error) {
	if w == nil || mtry == nil {
		return nil, fmt.Errorf("projection: local sampling needs a window and an mtry rule")
	}
	return &localSampler{Window: w, MTry: mtry}, nil
}

// BeginTree draws the tree's feature subset.
func (s *localSampler) BeginTree(rng *rand.Rand, _ []int32) error {
	s.sub = s.Window.Draw(rng, s.sub)
	if len(s.sub) == 0 {
		return fmt.Errorf("projection: empty local feature subset")
	}
	s.m = min(max(s.MTry(len(s.sub)), 1), len(s.sub))
	s.perm = s.perm[:0]
	for i := range s.sub {
		s.perm = append(s.perm, int32(i))
	}
	return nil
}

// Sample draws MTry distinct features of the tree's subset.
func (s *localSampler) Sample(rng *rand.Rand, c *Candidates) {
	s.js = drawDistinct(rng, s.perm, s.m, s.js)
	for _, q := range s.perm[:s.m] {
		c.AddAxis(s.sub[q])
	}
	undoDraw(s.perm, s.js)
}

// patchWindow draws a local patch on a feature topology (dissertation §4.1,
// image data): an s×s square of pixels (s positions on a series), with all
// channels of each pixel, s fixed (Min = Max) or drawn per tree from
// Min..Max (§4.2). The upper-left corner is uniform over the positions
// where the patch fits, the (H−s+1)×(W−s+1) cropped image of §4.1; along a
// cyclic axis it is uniform over the axis and the patch wraps around. A
// side longer than an axis is clipped to that axis.
type patchWindow struct {
	Top      Topology
	Min, Max int
}

// NewPatchWindow validates the side range against the topology.
func NewPatchWindow(top Topology, p, minSide, maxSide int) (*patchWindow, error) {
	if err := top.Validate(p); err != nil {
		return nil, err
	}
	if minSide < 1 || maxSide < minSide || maxSide > max(top.H, top.W) {
		return nil, fmt.Errorf("projection: patch sides %d..%d outside 1..%d", minSide, maxSide, max(top.H, top.W))
	}
	return &patchWindow{Top: top, Min: minSide, Max: maxSide}, nil
}

// Draw appends the patch's features in increasing order.
func (w *patchWindow) Draw(rng *rand.Rand, dst []int32) []int32 {
	t := w.Top
	s := w.Min
	if w.Max > w.Min {
		s += rng.IntN(w.Max - w.Min + 1)
	}
	h, wd := min(s, t.H), min(s, t.W)
	u := fitCorner(rng, h, t.H, t.CyclicH)
	v := fitCorner(rng, wd, t.W, t.CyclicW)
	dst = dst[:0]
	for dr := 0; dr < h; dr++ {
		r, _ := cell(u+dr, t.H, t.CyclicH)
		for dq := 0; dq < wd; dq++ {
			q, _ := cell(v+dq, t.W, t.CyclicW)
			for ch := 0; ch < t.C; ch++ {
				dst = append(dst, t.Feature(ch, r, q))
			}
		}
	}
	slices.Sort(dst)
	return dst
}

// fitCorner draws the first row (or column) of a patch of extent e that
// lies wholly on an axis of length n: 0..n−e, or 0..n−1 on a cycle.
func fitCorner(rng *rand.Rand, e, n int, cyclic bool) int {
	if cyclic {
		return rng.IntN(n)
	}
	return rng.IntN(n - e + 1)
}

// randomWindow is the random-subspace baseline the dissertation compares
// LFS with (§4.1, "subspace", Barandiaran 1998; §4.4.1 "subspace-random"):
// each tree sees m features drawn uniformly without replacement, m fixed
// or drawn from Min..Max, with no regard to locality.
type randomWindow struct {
	P, Min, Max int
	perm        []int32
	js          []int32
}

// NewRandomWindow validates the sizes against p features.
func NewRandomWindow(p, minSize, maxSize int) (*randomWindow, error) {
	if p < 1 || minSize < 1 || maxSize < minSize || maxSize > p {
		return nil, fmt.Errorf("projection: subspace sizes %d..%d outside 1..%d", minSize, maxSize, p)
	}
	w := &randomWindow{P: p, Min: minSize, Max: maxSize, perm: make([]int32, p)}
	for i := range w.perm {
		w.perm[i] = int32(i)
	}
	return w, nil
}

// Draw appends m random features in increasing order.
func (w *randomWindow) Draw(rng *rand.Rand, dst []int32) []int32 {
	m := w.Min
	if w.Max > w.Min {
		m += rng.IntN(w.Max - w.Min + 1)
	}
	w.js = drawDistinct(rng, w.perm, m, w.js)
	dst = append(dst[:0], w.perm[:m]...)
	undoDraw(w.perm, w.js)
	slices.Sort(dst)
	return dst
}

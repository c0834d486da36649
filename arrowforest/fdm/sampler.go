package fdm

import (
	"fmt"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/projection"
)

// treeSampler is RF_FDM (dissertation §6.4, Fig. 6.2): every tree has its
// own mapped feature space. At the start of a tree it draws, for each
// group G of the plan, m random mappings on the tree's in-bag rows and
// keeps the |G| with the largest gCor_n (eq. 6.2; dCor_n for a numeric
// label, a regression forest); the tree's candidate
// features are then the marginally dependent features (axis atoms) and
// the kept mappings, each as one linear split atom, so the tree stores
// its mappings in its own split atoms and the model file carries every
// mapping a tree uses. Each node draws MTry(count) of the tree's
// candidates without replacement, count = |S_m| + Σ|G|.
//
// A random projection X_G·r (MapRP, §6.1.1) is an atom over the original
// features (weights r on G). A distance to a landmark |X_G − x_l| (MapDRL,
// §6.1.2) is an atom over the features and one derived input per group,
// s_G of Norms (landmark.go): the split atoms of group g reference column
// len(cols)+g, which the caller must append to the data the trees split
// on (and to scored data) as Norms()[g].Eval of the input columns.
type treeSampler struct {
	cols [][]float32
	lab  labels
	plan Plan
	opts Options
	mtry func(int) int

	sel   selector
	ysub  []int32
	yvsub []float64
	norms []Norm // MapDRL: the derived inputs, column len(cols)+g
	atoms projection.Candidates
	maps  []Mapping
	perm  []int32
	js    []int32
	m     int
}

// newTreeSampler returns an RF_FDM sampler over the training columns with
// class labels y in 0..k−1. mtry maps the tree's candidate count to the
// number drawn per node.
func newTreeSampler(cols [][]float32, y []int32, k int, plan Plan, opts Options, mtry func(int) int) (*treeSampler, error) {
	if len(y) == 0 || k < 2 {
		return nil, fmt.Errorf("fdm: RF_FDM needs class labels (2 or more classes) and an mtry rule")
	}
	return newTreeSamplerLabel(cols, dependence.Classes(y, k), plan, opts, mtry)
}

// NewTreeSamplerLabel returns the RF_FDM sampler (dissertation §6.4,
// treeSampler) over the training columns for a class or a numeric label (a
// regression forest: each tree ranks its mappings by dCor_n), with the
// derived inputs its landmark atoms split on (MapDRL; nil for MapRP):
// group g's s_G is column len(cols)+g.
func NewTreeSamplerLabel(cols [][]float32, lab dependence.Label, plan Plan, opts Options, mtry func(int) int) (projection.TreeSampler, []Norm, error) {
	s, err := newTreeSamplerLabel(cols, lab, plan, opts, mtry)
	if err != nil {
		return nil, nil, err
	}
	return s, s.norms, nil
}

// newTreeSamplerLabel is NewTreeSamplerLabel with the concrete type.
func newTreeSamplerLabel(cols [][]float32, lab dependence.Label, plan Plan, opts Options, mtry func(int) int) (*treeSampler, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if err := plan.Validate(len(cols)); err != nil {
		return nil, err
	}
	plan = plan.sorted()
	n := lab.Len()
	if n == 0 || (!lab.IsNumeric() && lab.K < 2) || mtry == nil {
		return nil, fmt.Errorf("fdm: RF_FDM needs labels (2 or more classes, or numbers) and an mtry rule")
	}
	for j, c := range cols {
		if len(c) != n {
			return nil, fmt.Errorf("fdm: column %d has %d rows, labels %d", j, len(c), n)
		}
	}
	s := &treeSampler{cols: cols, lab: labelsOf(lab), plan: plan, opts: opts, mtry: mtry}
	if opts.Map == MapDRL {
		s.norms = newNorms(cols, plan.Groups)
	}
	return s, nil
}

// Norms returns the derived inputs the tree's landmark atoms split on
// (MapDRL; nil for MapRP): group g's s_G is column len(cols)+g.
func (s *treeSampler) Norms() []Norm { return s.norms }

// BeginTree draws the tree's mappings on its in-bag rows.
func (s *treeSampler) BeginTree(rng *rand.Rand, rows []int32) error {
	if len(rows) < 2 {
		return fmt.Errorf("fdm: a tree needs at least 2 in-bag rows to select mappings, has %d", len(rows))
	}
	sub := s.lab.at(rows, s.ysub, s.yvsub)
	s.ysub, s.yvsub = sub.y, sub.yv
	s.atoms.Reset()
	s.maps = s.maps[:0]
	for _, j := range s.plan.Marginal {
		s.atoms.AddAxis(int32(j))
	}
	idx := make([]int32, 0, 8)
	w := make([]float32, 0, 8)
	for gi, g := range s.plan.Groups {
		best := s.sel.best(rng, s.opts.Map, s.cols, rows, sub, g, s.opts.Candidates, s.opts.keep(len(g)))
		for q := range best {
			mp := &best[q]
			if s.opts.Map == MapDRL {
				idx, w = landmarkAtom(mp, &s.norms[gi], int32(len(s.cols)+gi), idx, w)
			} else {
				idx, w = idx[:0], w[:0]
				for a, j := range mp.Inputs {
					idx = append(idx, int32(j))
					w = append(w, float32(mp.Theta[a]))
				}
			}
			s.atoms.Add(idx, w)
			s.maps = append(s.maps, *mp)
		}
	}
	n := s.atoms.Len()
	s.m = min(max(s.mtry(n), 1), n)
	s.perm = s.perm[:0]
	for i := 0; i < n; i++ {
		s.perm = append(s.perm, int32(i))
	}
	return nil
}

// mappings returns the current tree's selected mappings (a view; valid
// until the next BeginTree).
func (s *treeSampler) mappings() []Mapping { return s.maps }

// Sample draws MTry distinct candidates of the tree.
func (s *treeSampler) Sample(rng *rand.Rand, c *projection.Candidates) {
	s.js = s.js[:0]
	p := len(s.perm)
	for i := 0; i < s.m; i++ {
		j := i + rng.IntN(p-i)
		s.js = append(s.js, int32(j))
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
	for _, q := range s.perm[:s.m] {
		idx, w := s.atoms.Atom(int(q))
		c.Add(idx, w)
	}
	for i := len(s.js) - 1; i >= 0; i-- {
		j := s.js[i]
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
}

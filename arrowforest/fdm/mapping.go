// Package fdm owns feature dependence mapping (FDM, dissertation ch. 6): a
// group of features that is dependent on the label only jointly (an MDS or
// SDS, ch. 5) is mapped to new features that are marginally dependent, so
// that axis-aligned trees can use the joint dependence.
//
// A mapping f(X_G; θ) of a group G is a random projection f_RP = X_G·r with
// r ~ U[−1, 1]^|G| (§6.1.1) or the distance to a random landmark
// f_DRL = |X_G − x_l| with x_l a training row (§6.1.2). For each group m
// random θ are drawn (m = 10) and the k = |G| with the largest Gini
// correlation gCor_n(f(X_G; θ), Y) are kept (§6.2, eq. 6.2). A numeric
// label (regression) ranks the mappings by the distance correlation
// dCor_n(f(X_G; θ), Y) instead: eq. 6.2 is the cheap stand-in for the
// dependence test of eq. 6.1, gCor_n is defined for a categorical label
// only (Definition 12), and dCor_n is chapter 2's measure for a numeric
// response; the groups then come from the dCor search. The mapped
// data is X' = [X_{S_m}, f(X_{S_1}; θ*_1), …, f(X_{S_s}; θ*_s)] (§6.3): the
// marginally dependent features S_m unchanged plus the mapped groups.
//
// Two ways to use it with forests (§6.4): FDM_RF maps the data once before
// training (Fit, Transform.Apply; the mapping travels as a JSON file so
// new data is mapped identically), and RF_FDM draws a fresh mapping for
// every tree (NewTreeSamplerLabel, used by forest kind "fdm"), each kept mapping a
// linear split atom: a projection over the group's features, a landmark
// distance over the features and the group's derived norm (Norm,
// landmark.go). The groups come from the MDS/SDS search of package
// dependence (Discover) or are given.
package fdm

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/forestd/forestd/arrowforest/dependence"
)

// Mapping functions (§6.1).
const (
	MapRP  = "rp"  // random projection, §6.1.1
	MapDRL = "drl" // distance to a random landmark, §6.1.2
)

// DefaultCandidates is m, the number of random mappings drawn per group
// before selection (§6.2: "In our implementation, we set m = 10").
const DefaultCandidates = 10

// Mapping is one mapped feature f(X_G; θ) of a group G.
type Mapping struct {
	Kind   string // MapRP or MapDRL
	Inputs []int  // the group's feature indices
	// Theta is r (rp; weights of Inputs) or the landmark x_l (drl; one
	// value per input).
	Theta []float64
	// GCor is gCor_n(f(X_G; θ), Y) on the rows it was selected on, for a
	// class label; DCor is dCor_n(f(X_G; θ), Y) for a numeric label (the
	// other is 0).
	GCor float64
	DCor float64
}

// score is what a mapping is selected by: gCor_n with a class label (eq.
// 6.2), dCor_n with a numeric one.
func (m *Mapping) score() float64 {
	if m.GCor != 0 {
		return m.GCor
	}
	return m.DCor
}

// labels are the labels of the rows a mapping is selected on: classes y
// in 0..k−1, or numbers yv.
type labels struct {
	y  []int32
	k  int
	yv []float64
}

func labelsOf(l dependence.Label) labels { return labels{y: l.Y, k: l.K, yv: l.Values} }

// at returns the labels of rows.
func (l labels) at(rows []int32, y []int32, yv []float64) labels {
	if l.yv != nil {
		yv = yv[:0]
		for _, i := range rows {
			yv = append(yv, l.yv[i])
		}
		return labels{yv: yv}
	}
	y = y[:0]
	for _, i := range rows {
		y = append(y, l.y[i])
	}
	return labels{y: y, k: l.k}
}

// score sets the selection statistic of the mapped values v (aligned with
// the labels) on mp: gCor_n (eq. 6.2) for classes; for a numeric label
// dCor_n with |y − y'| (Definitions 8–9), the dependence measure of
// chapter 2 defined for a numeric response — eq. 6.2 stands in for the
// p-value of eq. 6.1, which any dependence test gives. An undefined value
// (a constant mapping) scores −Inf.
func (l labels) score(v []float64, mp *Mapping) {
	if l.yv != nil {
		mp.DCor = dependence.DCor1(v, l.yv)
		if math.IsNaN(mp.DCor) {
			mp.DCor = math.Inf(-1)
		}
		return
	}
	mp.GCor = dependence.GCor([][]float64{v}, l.y, l.k)
	if math.IsNaN(mp.GCor) {
		mp.GCor = math.Inf(-1)
	}
}

// Eval writes f(x; θ) for every row i in rows (all rows when rows is nil)
// to dst[:0] and returns it. A NaN input gives NaN.
func (m *Mapping) Eval(cols [][]float32, rows []int32, dst []float64) []float64 {
	n := len(rows)
	if rows == nil {
		n = len(cols[m.Inputs[0]])
	}
	dst = slices.Grow(dst[:0], n)[:n]
	clear(dst)
	rp := m.Kind == MapRP
	for a, j := range m.Inputs {
		c, th := cols[j], m.Theta[a]
		switch {
		case rp && rows == nil:
			for q, v := range c[:n] {
				dst[q] += th * float64(v)
			}
		case rp:
			for q, i := range rows {
				dst[q] += th * float64(c[i])
			}
		case rows == nil:
			for q, v := range c[:n] {
				t := float64(v) - th
				dst[q] += t * t
			}
		default:
			for q, i := range rows {
				t := float64(c[i]) - th
				dst[q] += t * t
			}
		}
	}
	if !rp {
		for q := range dst {
			dst[q] = math.Sqrt(dst[q])
		}
	}
	return dst
}

// selector draws and scores candidate mappings; it keeps scratch memory
// between calls and is not safe for concurrent use.
type selector struct {
	vals []float64
	cand []Mapping
}

// draw returns a random θ for group g (§6.1): r ~ U[−1, 1]^|G| rounded to
// float32 (so that a tree's float32 atom is exactly the selected mapping),
// or the values of a uniformly drawn row of rows as the landmark.
func draw(rng *rand.Rand, kind string, cols [][]float32, rows []int32, g []int) []float64 {
	th := make([]float64, len(g))
	if kind == MapRP {
		for a := range th {
			th[a] = float64(float32(2*rng.Float64() - 1))
		}
		return th
	}
	l := rng.IntN(len(rows))
	for a, j := range g {
		th[a] = float64(cols[j][rows[l]])
	}
	return th
}

// best draws m mappings of group g on rows (with labels lab aligned with
// rows) and returns the keep with the largest gCor_n (eq. 6.2; dCor_n for
// a numeric label), in decreasing order (ties: earlier draw first). A
// mapping whose statistic is undefined (e.g. constant) scores −Inf.
func (s *selector) best(rng *rand.Rand, kind string, cols [][]float32, rows []int32, lab labels, g []int, m, keep int) []Mapping {
	s.cand = s.cand[:0]
	for range m {
		mp := Mapping{Kind: kind, Inputs: g, Theta: draw(rng, kind, cols, rows, g)}
		s.vals = mp.Eval(cols, rows, s.vals)
		lab.score(s.vals, &mp)
		s.cand = append(s.cand, mp)
	}
	slices.SortStableFunc(s.cand, func(a, b Mapping) int { return cmp.Compare(b.score(), a.score()) })
	return slices.Clone(s.cand[:min(keep, m)])
}

// Options are the mapping settings shared by FDM_RF and RF_FDM.
type Options struct {
	// Map is MapRP (default) or MapDRL.
	Map string
	// Candidates is m, the random mappings drawn per group (default 10).
	Candidates int
	// Keep is k, the mapped features kept per group; 0 keeps |G| (§6.2:
	// "we keep the dimension the same by setting k = p").
	Keep int
}

func (o *Options) resolve() error {
	switch o.Map {
	case "":
		o.Map = MapRP
	case MapRP, MapDRL:
	default:
		return fmt.Errorf("fdm: unknown mapping %q (want rp or drl)", o.Map)
	}
	if o.Candidates < 0 || o.Keep < 0 {
		return fmt.Errorf("fdm: candidates %d and keep %d must not be negative", o.Candidates, o.Keep)
	}
	if o.Candidates == 0 {
		o.Candidates = DefaultCandidates
	}
	return nil
}

// keep is the number of mapped features kept for a group of size g.
func (o *Options) keep(g int) int {
	k := g
	if o.Keep > 0 {
		k = o.Keep
	}
	return min(k, o.Candidates)
}

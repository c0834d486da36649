// Package fdm owns feature dependence mapping (FDM, dissertation ch. 6): a
// group of features that is dependent on the label only jointly (an MDS or
// SDS, ch. 5) is mapped to new features that are marginally dependent, so
// that axis-aligned trees can use the joint dependence.
//
// A mapping f(X_G; θ) of a group G is a random projection f_RP = X_G·r with
// r ~ U[−1, 1]^|G| (§6.1.1) or the distance to a random landmark
// f_DRL = |X_G − x_l| with x_l a training row (§6.1.2). For each group m
// random θ are drawn (m = 10) and the k = |G| with the largest Gini
// correlation gCor_n(f(X_G; θ), Y) are kept (§6.2, eq. 6.2). The mapped
// data is X' = [X_{S_m}, f(X_{S_1}; θ*_1), …, f(X_{S_s}; θ*_s)] (§6.3): the
// marginally dependent features S_m unchanged plus the mapped groups.
//
// Two ways to use it with forests (§6.4): FDM_RF maps the data once before
// training (Fit, Transform.Apply; the mapping travels as a JSON file so
// new data is mapped identically), and RF_FDM draws a fresh mapping for
// every tree (TreeSampler, used by forest kind "fdm"), each kept mapping a
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
	// GCor is gCor_n(f(X_G; θ), Y) on the rows it was selected on.
	GCor float64
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

// best draws m mappings of group g on rows (with labels y, k classes,
// aligned with rows) and returns the keep with the largest gCor_n (eq.
// 6.2), in decreasing order of gCor_n (ties: earlier draw first). A
// mapping whose gCor_n is undefined (e.g. constant) scores −Inf.
func (s *selector) best(rng *rand.Rand, kind string, cols [][]float32, rows []int32, y []int32, k int, g []int, m, keep int) []Mapping {
	s.cand = s.cand[:0]
	for range m {
		mp := Mapping{Kind: kind, Inputs: g, Theta: draw(rng, kind, cols, rows, g)}
		s.vals = mp.Eval(cols, rows, s.vals)
		mp.GCor = dependence.GCor([][]float64{s.vals}, y, k)
		if math.IsNaN(mp.GCor) {
			mp.GCor = math.Inf(-1)
		}
		s.cand = append(s.cand, mp)
	}
	slices.SortStableFunc(s.cand, func(a, b Mapping) int { return cmp.Compare(b.GCor, a.GCor) })
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

package forest

import (
	"fmt"
	"slices"
)

// maxRankKnots bounds the knots stored per feature by a RankMap.
const maxRankKnots = 1024

// RankMap is RerF(r)'s marginal rank transform (Randomer paper §2): each
// feature is replaced by its normalised rank in the training data, so
// oblique atoms sum comparably scaled inputs and outliers lose their pull.
//
// To keep models bounded the empirical rank function is stored as at most
// maxRankKnots knots per feature: sorted distinct training values with the
// normalised average rank of each, in [0, 1]. A value equal to a knot maps
// to its rank; a value strictly between two knots maps to the midpoint of
// their ranks (a step function of rank position, never of the value's
// magnitude), and values beyond the ends to the end ranks. So the map, and
// every forest trained through it, is exactly invariant under strictly
// increasing transforms of a feature (Randomer paper §3.2); a feature with
// at most maxRankKnots distinct values keeps them all and gets its exact
// ranks. Training data goes through the same map as scored data. NaN
// stays NaN.
type RankMap struct {
	Knots [][]float32 `json:"knots"`
	Ranks [][]float32 `json:"ranks"`
}

// newRankMap builds the map from training columns.
func newRankMap(cols [][]float32) *RankMap {
	m := &RankMap{Knots: make([][]float32, len(cols)), Ranks: make([][]float32, len(cols))}
	var vals []float32
	for j, col := range cols {
		vals = vals[:0]
		for _, v := range col {
			if v == v {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		n := len(vals)
		if n == 0 {
			continue
		}
		// distinct values with the normalised average rank of their run
		var kv, kr []float32
		for i := 0; i < n; {
			e := i
			for e < n && vals[e] == vals[i] {
				e++
			}
			r := 0.5
			if n > 1 {
				r = (float64(i+e-1) / 2) / float64(n-1)
			}
			kv = append(kv, vals[i])
			kr = append(kr, float32(r))
			i = e
		}
		if len(kv) > maxRankKnots {
			sv, sr := make([]float32, 0, maxRankKnots), make([]float32, 0, maxRankKnots)
			for q := 0; q < maxRankKnots; q++ {
				i := q * (len(kv) - 1) / (maxRankKnots - 1)
				sv = append(sv, kv[i])
				sr = append(sr, kr[i])
			}
			kv, kr = sv, sr
		}
		m.Knots[j], m.Ranks[j] = kv, kr
	}
	return m
}

// Apply maps value v of feature j.
func (m *RankMap) Apply(j int, v float32) float32 {
	if v != v {
		return v
	}
	k, r := m.Knots[j], m.Ranks[j]
	if len(k) == 0 {
		return 0.5
	}
	i, found := slices.BinarySearch(k, v)
	switch {
	case found:
		return r[i]
	case i == 0:
		return r[0]
	case i == len(k):
		return r[len(r)-1]
	}
	return (r[i-1] + r[i]) / 2
}

// Transform returns new columns with the map applied.
func (m *RankMap) Transform(cols [][]float32) [][]float32 {
	out := make([][]float32, len(cols))
	for j, col := range cols {
		o := make([]float32, len(col))
		for i, v := range col {
			o[i] = m.Apply(j, v)
		}
		out[j] = o
	}
	return out
}

// Validate checks the map against p features.
func (m *RankMap) Validate(p int) error {
	if len(m.Knots) != p || len(m.Ranks) != p {
		return fmt.Errorf("rank map covers %d/%d features, want %d", len(m.Knots), len(m.Ranks), p)
	}
	for j := range m.Knots {
		k, r := m.Knots[j], m.Ranks[j]
		if len(k) != len(r) || len(k) > maxRankKnots {
			return fmt.Errorf("rank map of feature %d: %d knots, %d ranks", j, len(k), len(r))
		}
		for i := range k {
			if k[i] != k[i] || r[i] != r[i] || (i > 0 && !(k[i] > k[i-1])) {
				return fmt.Errorf("rank map of feature %d: knots not strictly increasing", j)
			}
		}
	}
	return nil
}

package synth

import (
	"fmt"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/frame"
)

// xorSpec is one row of the dissertation's Table 6.1: the number of
// minimum dependence sets (MDS's) of size 1, 2 and 3.
type xorSpec struct {
	marginal, size2, size3 int
}

// xorSpecs are the artificial data sets of the dissertation, Table 6.1
// (datasets i..v, defined in §5.1 and §5.7).
var xorSpecs = map[string]xorSpec{
	XOR1: {0, 1, 0}, // (i)   2-D XOR, σ = 0.4
	XOR2: {0, 0, 1}, // (ii)  3-D XOR, σ = 0.4
	XOR3: {1, 1, 0}, // (iii) (i) plus a marginal X0, σ' = 1.5
	XOR4: {1, 0, 1}, // (iv)  (ii) plus a marginal X0, σ' = 1.5
	XOR5: {5, 3, 2}, // (v)   the 17 features / 10 MDS's of §5.7
}

func (s xorSpec) dim() int { return s.marginal + 2*s.size2 + 3*s.size3 }

// groups lists the MDS's as feature names, in frame order: marginals m0,
// m1, …; then the size-2 groups x2a_0,x2a_1, x2b_0,x2b_1, …; then the
// size-3 groups x3a_0..x3a_2, x3b_0..x3b_2, ….
func (s xorSpec) groups() [][]string {
	var g [][]string
	for k := range s.marginal {
		g = append(g, []string{fmt.Sprintf("m%d", k)})
	}
	for _, sz := range []struct{ size, count int }{{2, s.size2}, {3, s.size3}} {
		for k := range sz.count {
			grp := make([]string, sz.size)
			for m := range grp {
				grp[m] = fmt.Sprintf("x%d%c_%d", sz.size, 'a'+k, m)
			}
			g = append(g, grp)
		}
	}
	return g
}

// xorClasses are the dissertation's class names: y ∈ {−1, 1}.
func xorClasses() []string { return []string{"-1", "1"} }

// XOR1 … XOR5 are the generalized XOR data sets of the dissertation
// "Improving random forests by feature dependence analysis".
//
// Sources: dissertation §5.1 (generalized XOR and the marginally dependent
// feature), §5.7 (the 17-feature set of 10 MDS's, Fig. 5.2 and Table 5.3)
// and §6.5.1 Table 6.1 (datasets i..v in terms of MDS's):
//
//	name  Table 6.1  MDS's of size 1 / 2 / 3  features
//	xor1  i          0 / 1 / 0                x2a_0 x2a_1
//	xor2  ii         0 / 0 / 1                x3a_0 x3a_1 x3a_2
//	xor3  iii        1 / 1 / 0                m0 x2a_0 x2a_1
//	xor4  iv         1 / 0 / 1                m0 x3a_0 x3a_1 x3a_2
//	xor5  v          5 / 3 / 2                m0..m4 x2a_* x2b_* x2c_* x3a_* x3b_*
//
// §5.1: "x_{i1} is drawn randomly from N(μ_{i1}, σ²), where μ_{i1} is
// randomly chosen from {−1, 1} … The label y_i is determined by
// y_i = Π_k μ_{ik}" and "for each sample i, x_{i0} is randomly drawn from
// N(y_i, σ'²)", with σ = 0.4 and σ' = 1.5. §5.7: "Marginally dependent
// features (MDS's of size 1) are generated as described in Section 5.1.
// The MDS's of size 2 are generated the same way as the 2D XOR example,
// and the MDS's of size 3 are generated the same way as the 3D XOR
// example."
//
// Definition: y ∈ {−1, 1} with probability 1/2 each (class "-1" has index
// 0, class "1" index 1). Each marginal feature m_k ~ N(y, σ'²). For each
// XOR group of size d the means μ_1..μ_{d−1} are independent uniform
// signs and μ_d = y·μ_1⋯μ_{d−1}, so that μ is uniform over the sign
// vectors with Π μ = y; each feature of the group is N(μ_m, σ²). Given y,
// all groups and marginal features are independent.
//
// Resolved detail: with one XOR group the dissertation draws the signs
// first and sets y = Π μ; that is the same joint law as above. With
// several groups (xor5) one label must satisfy every group, so each group
// is drawn conditionally on y — the only reading under which every group
// is an MDS (each proper subset independent of y, the whole group
// dependent), as Fig. 5.2 and Table 5.3 require. Feature order follows
// Table 5.3 (X0..X4 marginal, {X5,X6}, {X7,X8}, {X9,X10},
// {X11,X12,X13}, {X14,X15,X16}). The table lists no independent noise
// features, so there are none. The dissertation's sample sizes (200 in
// §5.7) are left to Options.N.
const (
	XOR1 = "xor1" // Table 6.1 (i): one XOR pair
	XOR2 = "xor2" // Table 6.1 (ii): one XOR triple
	XOR3 = "xor3" // Table 6.1 (iii): a marginal feature and one XOR pair
	XOR4 = "xor4" // Table 6.1 (iv): a marginal feature and one XOR triple
	XOR5 = "xor5" // Table 6.1 (v): the 17 features and 10 MDS's of §5.7
)

// genXOR draws one of XOR1..XOR5; see their constants for the definition.
//
// When means is true, genXOR also returns the noise-free mean of every
// feature and row (the ±1 of the XOR features, y for the marginals),
// column-major, for tests.
func genXOR(rng *rand.Rand, s xorSpec, n int, sigma, sigmaMarg float64, means bool) (*frame.Frame, [][]int8) {
	var featNames []string
	for _, g := range s.groups() {
		featNames = append(featNames, g...)
	}
	f := newClassFrame(featNames, n, xorClasses())
	var mu [][]int8
	if means {
		mu = make([][]int8, len(featNames))
		for j := range mu {
			mu[j] = make([]int8, n)
		}
	}
	put := func(j, i int, m int, sd float64) {
		f.Cols[j][i] = float32(float64(m) + sd*rng.NormFloat64())
		if mu != nil {
			mu[j][i] = int8(m)
		}
	}
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		y := 2*c - 1
		f.Y[i] = int32(c)
		j := 0
		for range s.marginal {
			put(j, i, y, sigmaMarg)
			j++
		}
		for _, sz := range []struct{ size, count int }{{2, s.size2}, {3, s.size3}} {
			for range sz.count {
				prod := 1
				for range sz.size - 1 {
					m := 2*rng.IntN(2) - 1
					prod *= m
					put(j, i, m, sigma)
					j++
				}
				put(j, i, y*prod, sigma)
				j++
			}
		}
	}
	return f, mu
}

package fdm

import (
	"fmt"
	"math"
	"strconv"
)

// Landmark mappings as linear split atoms (RF_FDM with f_DRL, dissertation
// §6.1.2 with §6.4).
//
// f_DRL(x; x_l) = |x_G − x_l| is not linear in x_G, but its square is
// linear in x_G and one derived input per group. With c a fixed centre per
// feature (the training mean),
//
//	|x_G − x_l|² = s_G(x) − 2 Σ_{j∈G} (x_{l,j} − c_j)·x_j + K(x_l),
//	s_G(x)      = Σ_{j∈G} (x_j − c_j)²,
//	K(x_l)      = Σ_{j∈G} (x_{l,j} − c_j)² + 2 Σ_{j∈G} (x_{l,j} − c_j)·c_j,
//
// so with the column s_G next to the features, the atom with weights
// −2(x_{l,j} − c_j) on x_j and 1 on s_G equals |x_G − x_l|² − K(x_l). A
// split "atom ≤ t" is the split "|x_G − x_l| ≤ sqrt(t + K)": the constant
// moves into the threshold and the square root is strictly increasing, so
// the tree splits on the landmark distance itself (up to float32 rounding
// of the atom, the arithmetic both training and scoring use). The mapping
// is still chosen by gCor_n of the distance, computed exactly (eq. 6.2,
// Mapping.Eval). The centre only keeps s_G small (no catastrophic
// cancellation between s_G and the linear part for features far from 0);
// any fixed value gives the same ordering in exact arithmetic.
//
// s_G is an input transform recorded in the model (forest.Derived) and
// applied identically to the data the trees see in training and scoring,
// as RerF(r)'s rank map is.

// Norm is the derived input s_G(x) = Σ_{j∈G} (x_j − c_j)² of a group G.
type Norm struct {
	// Inputs are the group's feature indices, increasing.
	Inputs []int `json:"inputs"`
	// Centre holds c_j per input: the mean of the feature's non-missing
	// training values (0 when it has none).
	Centre []float64 `json:"centre"`
}

// NormName is the name of the derived input of group g (1-based).
func NormName(g int) string { return "fdm_norm_g" + strconv.Itoa(g) }

// newNorms returns the derived inputs of the groups (in the given order;
// each group's features sorted as Plan.sorted does) with centres from the
// training columns.
func newNorms(cols [][]float32, groups [][]int) []Norm {
	pl := Plan{Groups: groups}.sorted()
	out := make([]Norm, 0, len(pl.Groups))
	for _, g := range pl.Groups {
		n := Norm{Inputs: g, Centre: make([]float64, len(g))}
		for a, j := range g {
			var s float64
			var m int
			for _, v := range cols[j] {
				if v == v {
					s += float64(v)
					m++
				}
			}
			if m > 0 {
				n.Centre[a] = s / float64(m)
			}
		}
		out = append(out, n)
	}
	return out
}

// Validate checks the norm against p input features.
func (n *Norm) Validate(p int) error {
	if len(n.Inputs) == 0 || len(n.Inputs) != len(n.Centre) {
		return fmt.Errorf("fdm: norm with %d inputs and %d centres", len(n.Inputs), len(n.Centre))
	}
	for a, j := range n.Inputs {
		if j < 0 || j >= p {
			return fmt.Errorf("fdm: norm input %d outside 0..%d", j, p-1)
		}
		if a > 0 && j <= n.Inputs[a-1] {
			return fmt.Errorf("fdm: norm inputs %v not strictly increasing", n.Inputs)
		}
		if c := n.Centre[a]; math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("fdm: norm centre %v is not finite", c)
		}
	}
	return nil
}

// Eval writes s_G for every row of cols (the input columns) to dst[:0] and
// returns it: summed in float64 in input order, rounded once to float32.
// A missing (NaN) input gives NaN.
func (n *Norm) Eval(cols [][]float32, dst []float32) []float32 {
	rows := len(cols[n.Inputs[0]])
	dst = dst[:0]
	for i := 0; i < rows; i++ {
		var s float64
		for a, j := range n.Inputs {
			d := float64(cols[j][i]) - n.Centre[a]
			s += d * d
		}
		dst = append(dst, float32(s))
	}
	return dst
}

// landmarkAtom appends to idx and w (from [:0]) the linear atom of the
// landmark mapping mp (Kind MapDRL over n.Inputs) whose derived input s_G
// is column col: weights −2(x_{l,j} − c_j) on the inputs, 1 on col.
func landmarkAtom(mp *Mapping, n *Norm, col int32, idx []int32, w []float32) ([]int32, []float32) {
	idx, w = idx[:0], w[:0]
	for a, j := range n.Inputs {
		idx = append(idx, int32(j))
		w = append(w, float32(-2*(mp.Theta[a]-n.Centre[a])))
	}
	return append(idx, col), append(w, 1)
}

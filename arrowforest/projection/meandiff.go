package projection

import "math"

// classMeans accumulates the class-conditional feature means μ_k(j) of a
// node's in-bag rows (weighted by bootstrap multiplicity, NaN ignored),
// the ingredient of the Randomer paper's RerF(δ) atoms δ = μ_k − μ_0
// (randomer-forests.txt §2). It is reused across nodes: fill clears only
// what it needs.
type classMeans struct {
	p, k       int
	sums, cnts []float64 // [class*p + feature]
}

// fill computes the per-class sums and counts of every feature in feats
// over the node's rows. It returns false when class 0 has no row with a
// value in any of those features (no reference mean).
func (m *classMeans) fill(node *Node, p int, feats []int32) bool {
	if m.p != p || m.k != node.K {
		m.p, m.k = p, node.K
		m.sums = make([]float64, node.K*p)
		m.cnts = make([]float64, node.K*p)
	}
	any0 := false
	if m.k == 2 {
		// two classes (most data): the sums stay in registers instead of
		// being stored per row; the same additions in the same order
		for _, f := range feats {
			j := int(f)
			col := node.Cols[j]
			var s0, s1, c0, c1 float64
			for q, r := range node.Rows {
				if v := col[r]; v == v {
					w := node.W[q]
					if node.Y[q] == 0 {
						s0 += w * float64(v)
						c0 += w
					} else {
						s1 += w * float64(v)
						c1 += w
					}
				}
			}
			m.sums[j], m.cnts[j], m.sums[p+j], m.cnts[p+j] = s0, c0, s1, c1
			any0 = any0 || c0 > 0
		}
		return any0
	}
	for _, f := range feats {
		j := int(f)
		for c := 0; c < m.k; c++ {
			m.sums[c*p+j], m.cnts[c*p+j] = 0, 0
		}
		col := node.Cols[j]
		for q, r := range node.Rows {
			if v := col[r]; v == v {
				i := int(node.Y[q])*p + j
				m.sums[i] += node.W[q] * float64(v)
				m.cnts[i] += node.W[q]
			}
		}
		any0 = any0 || m.cnts[j] > 0
	}
	return any0
}

// mean is μ_k(j) (0 when class k has no value of feature j at the node).
func (m *classMeans) mean(k, j int) float64 {
	n := m.cnts[k*m.p+j]
	if n == 0 {
		return 0
	}
	return m.sums[k*m.p+j] / n
}

// delta appends to idx/w the non-zero finite entries μ_k(j) − μ_0(j) for j
// in feats, in the order of feats.
func (m *classMeans) delta(k int, feats []int32, idx []int32, w []float32) ([]int32, []float32) {
	for _, j := range feats {
		d := float32(m.mean(k, int(j)) - m.mean(0, int(j)))
		if d != 0 && !math.IsNaN(float64(d)) && !math.IsInf(float64(d), 0) {
			idx = append(idx, j)
			w = append(w, d)
		}
	}
	return idx, w
}

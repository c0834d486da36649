package manifold

import (
	"fmt"
	"math"
	"slices"
)

// minDistance2 is the smallest squared distance between two different
// training responses: min{D_ij, i ≠ j}², the starting value of
// Algorithm 1.
func minDistance2(d2 []float64, n int) float64 {
	best := math.Inf(1)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if j != i && d2[i*n+j] < best {
				best = d2[i*n+j]
			}
		}
	}
	return best
}

// argmaxRow returns the index of the largest similarity, the lowest index
// among ties (l of Algorithm 1).
func argmaxRow(a []float64) int {
	l := 0
	for i, x := range a {
		if x > a[l] {
			l = i
		}
	}
	return l
}

// alg1 is Algorithm 1's scratch, reusable across calls.
type alg1 struct {
	order []int32
	cur   []float64
}

// run is Algorithm 1 of the dRF paper (§2.3.1) for the most similar
// training response l = argmax a, on squared distances: since t ↦ t² is
// increasing on t ≥ 0, min and max commute with squaring, so the
// algorithm on D² returns exactly the squares of its result on D.
//
//	d̂(y_new, y_l) ← min{D_ij}; Q = {l}
//	repeat: p ← argmax_{i∈S} D_il (ties: lowest index)
//	        d̂(y_new, y_p) ← min{max{d̂(y_new, y_i), D_ip} | i ∈ Q}
//	        move p from S to Q
//
// cur[i] holds min_{j∈Q} max{d̂_j, D_ji} for every i still in S and is
// updated when a point joins Q, so the whole run costs O(N²).
func (s *alg1) run(d2 []float64, n, l int, d2min float64, out []float64) {
	s.order = s.order[:0]
	for i := 0; i < n; i++ {
		if i != l {
			s.order = append(s.order, int32(i))
		}
	}
	row := d2[l*n : l*n+n]
	slices.SortStableFunc(s.order, func(a, b int32) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return 0 // stable: lower index first
	})
	if cap(s.cur) < n {
		s.cur = make([]float64, n)
	}
	cur := s.cur[:n]
	out[l] = d2min
	for _, i := range s.order {
		cur[i] = max(d2min, row[i])
	}
	for t, p := range s.order {
		dp := cur[p]
		out[p] = dp
		rp := d2[int(p)*n : int(p)*n+n]
		for _, i := range s.order[t+1:] {
			if v := max(dp, rp[i]); v < cur[i] {
				cur[i] = v
			}
		}
	}
}

// alg1ClosedForm writes what alg1.run writes, in O(N): D²_lp for every
// p ≠ l and d2min for l. Proof (package documentation): the candidate
// through l gives max{min D, D_lp} = D_lp, and every other candidate q was
// visited before p, so D_lq ≥ D_lp and max{d̂_q, D_qp} ≥ d̂_q = D_lq ≥ D_lp.
// Both only copy existing values, so they agree exactly.
func alg1ClosedForm(d2 []float64, n, l int, d2min float64, out []float64) {
	copy(out, d2[l*n:l*n+n])
	out[l] = d2min
}

// algorithm1 predicts the squared distances from a new response to the n
// training responses (dRF paper §2.3.1, Algorithm 1) from the forest
// similarity vector a and the training squared distances d2 (n×n).
func algorithm1(a, d2 []float64, n int) ([]float64, error) {
	if n < 2 || len(a) != n || len(d2) != n*n {
		return nil, fmt.Errorf("manifold: algorithm1: %d similarities and %d distances for n = %d", len(a), len(d2), n)
	}
	out := make([]float64, n)
	var s alg1
	s.run(d2, n, argmaxRow(a), minDistance2(d2, n), out)
	return out, nil
}

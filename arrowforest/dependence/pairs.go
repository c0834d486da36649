package dependence

import "math"

// distRow sets d[j] = ‖x_i − x_j‖ for j in [0, len(d)), the Euclidean
// distance over the columns of x (the a_kl of Definition 8 and the
// |x_i − x_j|_d of Definition 12). It reads each column once, so the loop
// is column-blocked and allocation free.
func distRow(x [][]float64, i int, d []float64) {
	if len(x) == 1 {
		xi := x[0][i]
		for j, v := range x[0][:len(d)] {
			d[j] = math.Abs(v - xi)
		}
		return
	}
	sqDistRow(x, i, d)
	for j, v := range d {
		d[j] = math.Sqrt(v)
	}
}

// sqDistRow sets d[j] = Σ_c (x_c[j] − x_c[i])², distRow of two or more
// columns before its square root, summed column by column in order.
func sqDistRow(x [][]float64, i int, d []float64) {
	m := len(d)
	xi := x[0][i]
	for j, v := range x[0][:m] {
		t := v - xi
		d[j] = t * t
	}
	for _, c := range x[1:] {
		xi := c[i]
		c = c[:m]
		for j, v := range c {
			t := v - xi
			d[j] += t * t
		}
	}
}

// extRow is distRow of a set of two or more columns whose last column is
// c and whose other columns' sqDistRow at row i is pre: d[j] =
// √(pre[j] + (c_j − c_i)²), the same operations in the same order as
// distRow, so the same bits (prefix.go).
func extRow(pre, c []float64, i int, d []float64) {
	ci := c[i]
	c = c[:len(d)]
	pre = pre[:len(d)]
	for j, v := range c {
		t := v - ci
		d[j] = math.Sqrt(pre[j] + t*t)
	}
}

// dist is distRow's d[j] for row i: the same operations in the same
// order, so the same bits.
func dist(x [][]float64, i, j int) float64 {
	if len(x) == 1 {
		return math.Abs(x[0][j] - x[0][i])
	}
	t := x[0][j] - x[0][i]
	v := t * t
	for _, c := range x[1:] {
		t := c[j] - c[i]
		v += t * t
	}
	return math.Sqrt(v)
}

// pairSums are the sums over the pairs of rows that gCov_n, gCor_n
// (Definition 12) and dCov_n, dCor_n against a categorical label
// (Definitions 8–9 with the 0/1 label distance) need.
type pairSums struct {
	n      int
	tot    float64   // Σ_{i<j} d_ij
	sq     float64   // Σ_{i<j} d_ij²
	within []float64 // Σ_{i<j, y_i=y_j=c} d_ij per class c
	row    []float64 // r_i = Σ_j d_ij (only when asked for)
}

// pairPass sweeps the lower triangle of the distance matrix of x once,
// one row at a time (O(n²·p) time, O(n) memory). When tri is non-nil it
// also stores d_ij (j < i) as float32 in packed row order, tri[i(i−1)/2+j],
// for permutation tests.
func pairPass(x [][]float64, y []int32, k int, wantRow bool, tri []float32) pairSums {
	return pairPassPre(x, nil, y, k, wantRow, tri)
}

// pairPassPre is pairPass that, when pre is non-nil, takes each row's
// distances from pre, the packed sqDistRow triangle of x's columns but the
// last (prefixTri), and the last column (extRow): the same sums to the bit.
func pairPassPre(x [][]float64, pre []float64, y []int32, k int, wantRow bool, tri []float32) pairSums {
	n := len(y)
	ps := pairSums{n: n, within: make([]float64, k)}
	if wantRow {
		ps.row = make([]float64, n)
	}
	d := make([]float64, n)
	// mask[c][j] = 1 when y_j = c, for a few classes: the within-class
	// sum of row i is then a branch-free Σ d_ij·mask[y_i][j] (a class
	// comparison mispredicts about every other pair with balanced
	// classes), the same sum to the bit (v·0 adds +0).
	var mask [][]float64
	if k > 1 && k <= byClassMin {
		mask = make([][]float64, k)
		for c := range mask {
			mask[c] = make([]float64, n)
		}
		for j, c := range y {
			mask[c][j] = 1
		}
	}
	off := 0
	for i := 1; i < n; i++ {
		if len(x) > 1 && mask != nil && wantRow && tri == nil {
			// a search's screens and approximate tests: extRow (over pre,
			// or the prefix of this row) and the sums below in one loop,
			// in the same order
			var p []float64
			if pre != nil {
				p = pre[off : off+i]
			} else {
				p = d[:i]
				sqDistRow(x[:len(x)-1], i, p)
			}
			ci := y[i]
			c := x[len(x)-1]
			xi := c[i]
			c, m, r := c[:i], mask[ci][:i], ps.row[:i]
			var s, s2, w float64
			for j, pv := range p {
				t := c[j] - xi
				v := math.Sqrt(pv + t*t)
				s += v
				s2 += v * v
				w += v * m[j]
				r[j] += v
			}
			ps.tot += s
			ps.sq += s2
			ps.within[ci] += w
			ps.row[i] += s
			off += i
			continue
		}
		di := d[:i]
		if pre != nil {
			extRow(pre[off:off+i], x[len(x)-1], i, di)
		} else {
			distRow(x, i, di)
		}
		ci := y[i]
		var s, s2, w float64
		if mask != nil {
			m := mask[ci][:i]
			for j, v := range di {
				s += v
				s2 += v * v
				w += v * m[j]
			}
		} else {
			for j, v := range di {
				s += v
				s2 += v * v
				if y[j] == ci {
					w += v
				}
			}
		}
		ps.tot += s
		ps.sq += s2
		ps.within[ci] += w
		if wantRow {
			ps.row[i] += s
			r := ps.row[:i]
			for j, v := range di {
				r[j] += v
			}
		}
		if tri != nil {
			t := tri[off : off+i]
			for j, v := range di {
				t[j] = float32(v)
			}
		}
		off += i
	}
	return ps
}

// giniFromSums returns gCov_n and gCor_n of Definition 12 from the total
// pair sum Σ_{i<j} d_ij and the within-class pair sums:
//
//	Δ̂ = C(n,2)⁻¹ Σ_{i<j} d_ij,  Δ̂_k = C(n_k,2)⁻¹ Σ_{i<j∈I_k} d_ij,
//	gCov_n = Δ̂ − Σ_k p̂_k Δ̂_k,   gCor_n = gCov_n / Δ̂,  p̂_k = n_k/n.
//
// Resolved detail: Definition 12 asks for n_k ≥ 2; a class with fewer
// rows has no pairs and contributes p̂_k Δ̂_k = 0. When Δ̂ = 0 (all rows
// equal) gCor_n is 0.
func giniFromSums(n int, cnt []int, tot float64, within []float64) (gcov, gcor float64) {
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	delta := tot / (0.5 * float64(n) * float64(n-1))
	var wsum float64
	for c, nc := range cnt {
		if nc < 2 {
			continue
		}
		// p̂_k Δ̂_k = (n_k/n) · within / (n_k(n_k−1)/2)
		wsum += 2 * within[c] / (float64(n) * float64(nc-1))
	}
	gcov = delta - wsum
	if delta == 0 {
		return gcov, 0
	}
	return gcov, gcov / delta
}

// dcorCatFromSums returns dCor_n (Definition 9, not squared) between a
// numeric set with distances a_kl and a categorical label with the 0/1
// distance b_kl = 1[y_k ≠ y_l] (§2.3: "the distance between two samples
// is 1 if they are of different classes, or 0 otherwise").
//
// Inputs are full (ordered-pair) sums: T = Σ_kl a_kl, a2 = Σ_kl a_kl²,
// r2 = Σ_k r_k² with r_k = Σ_l a_kl, and per class c: S_c = Σ_{k,l∈c} a_kl
// and R_c = Σ_{k∈c} r_k. Because A is double centred,
// Σ A_kl B_kl = Σ A_kl b_kl = −Σ_c Σ_{k,l∈c} A_kl
// = −Σ_c (S_c − 2 n_c R_c/n + n_c² T/n²), and
// Σ A_kl² = a2 − 2 r2/n + T²/n² (Definition 8). For the label,
// Σ b = n² − Σ n_c², r^b_k = n − n_{c(k)}.
func dcorCatFromSums(n int, cnt []int, T, a2, r2 float64, S, R []float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	fn := float64(n)
	var sab float64
	var sumNc2, sumRb2 float64
	for c, nc := range cnt {
		f := float64(nc)
		sab -= S[c] - 2*f*R[c]/fn + f*f*T/(fn*fn)
		sumNc2 += f * f
		sumRb2 += f * (fn - f) * (fn - f)
	}
	saa := a2 - 2*r2/fn + T*T/(fn*fn)
	tb := fn*fn - sumNc2
	sbb := tb - 2*sumRb2/fn + tb*tb/(fn*fn)
	return dcorFromV(sab, saa, sbb)
}

// dcorFromV returns dCor_n = sqrt(dCov²_n / sqrt(dVar²_n(X) dVar²_n(Y)))
// from the three double-centred sums (the 1/n² factors cancel), 0 when a
// distance variance is 0 (Definition 9).
func dcorFromV(sab, saa, sbb float64) float64 {
	if !(saa > 0) || !(sbb > 0) {
		return 0
	}
	r := sab / math.Sqrt(saa*sbb)
	if r <= 0 {
		return 0
	}
	return math.Sqrt(r)
}

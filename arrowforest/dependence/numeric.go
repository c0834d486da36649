package dependence

import (
	"cmp"
	"math"
	"slices"
)

// DCorNum returns dCor_n (dissertation Definitions 8–9, not squared, as
// energy::dcor) between two numeric sets x and y given column-major (the
// rows of x are points of R^p, those of y points of R^q). Two single
// columns take the O(n log n) path of DCor1; otherwise one O(n²·(p+q))
// sweep over the pairs with O(n) memory, using
// Σ A_kl B_kl = Σ a_kl b_kl − (2/n) Σ_k a_k· b_k· + a·· b··/n².
// Rows with a NaN in x or y are left out. It returns NaN when a set has no
// columns, the lengths differ or fewer than two complete rows remain.
func DCorNum(x, y [][]float64) float64 {
	if len(x) == 0 || len(y) == 0 {
		return math.NaN()
	}
	n := len(x[0])
	if !checkSet(x, n) || !checkSet(y, n) {
		return math.NaN()
	}
	if rows := completeRows(n, x, y); rows != nil {
		x, y, n = pickCols(x, rows), pickCols(y, rows), len(rows)
	}
	if n < 2 {
		return math.NaN()
	}
	x, y = rescaled(x), rescaled(y)
	if len(x) == 1 && len(y) == 1 {
		return dcor1(x[0], y[0])
	}
	ra := make([]float64, n)
	rb := make([]float64, n)
	da := make([]float64, n)
	db := make([]float64, n)
	var sab, saa, sbb float64
	for i := 1; i < n; i++ {
		a, b := da[:i], db[:i]
		distRow(x, i, a)
		distRow(y, i, b)
		var s1, s2, s3, t1, t2 float64
		for j, av := range a {
			bv := b[j]
			s1 += av * bv
			s2 += av * av
			s3 += bv * bv
			t1 += av
			t2 += bv
			ra[j] += av
			rb[j] += bv
		}
		sab += s1
		saa += s2
		sbb += s3
		ra[i] += t1
		rb[i] += t2
	}
	return dcorFromRowSums(n, 2*sab, 2*saa, 2*sbb, ra, rb)
}

// dcorFromRowSums finishes Definition 8 from full sums Σ a b, Σ a², Σ b²
// and the row sums.
func dcorFromRowSums(n int, sab, saa, sbb float64, ra, rb []float64) float64 {
	fn := float64(n)
	var ta, tb, rab, raa, rbb float64
	for i := range ra {
		ta += ra[i]
		tb += rb[i]
		rab += ra[i] * rb[i]
		raa += ra[i] * ra[i]
		rbb += rb[i] * rb[i]
	}
	AB := sab - 2*rab/fn + ta*tb/(fn*fn)
	AA := saa - 2*raa/fn + ta*ta/(fn*fn)
	BB := sbb - 2*rbb/fn + tb*tb/(fn*fn)
	return dcorFromV(AB, AA, BB)
}

// DCor1 returns dCor_n (Definitions 8–9, not squared) between two numeric
// vectors in O(n log n) time: the row sums a_k· come from prefix sums over
// the sorted values, and Σ_kl |x_k − x_l||y_k − y_l| from one pass in the
// order of x with Fenwick trees over the ranks of y that hold the count
// and the sums of x, y and x·y of the rows already passed (the approach
// of Huo and Székely, 2016). Rows with a NaN are left out; NaN for unequal
// lengths or fewer than two complete rows.
func DCor1(x, y []float64) float64 {
	return DCorNum([][]float64{x}, [][]float64{y})
}

func rowSumsSorted(v []float64) []float64 {
	n := len(v)
	var total float64
	for _, x := range v {
		total += x
	}
	r := make([]float64, n)
	var pre float64
	for i, x := range v {
		after := total - pre - x
		r[i] = x*float64(i) - pre + after - x*float64(n-1-i)
		pre += x
	}
	return r
}

func centred(v []float64) []float64 {
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x - m
	}
	return out
}

func dcor1(x, y []float64) float64 {
	n := len(x)
	xc, yc := centred(x), centred(y)
	// order by x
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(xc[a], xc[b]) })
	xs := make([]float64, n)
	ys := make([]float64, n) // y in x order
	for i, j := range idx {
		xs[i], ys[i] = xc[j], yc[j]
	}
	ra := rowSumsSorted(xs) // in x order
	// y ranks (dense, ties share a rank) and row sums of b in x order.
	yord := make([]int, n)
	for i := range yord {
		yord[i] = i
	}
	slices.SortFunc(yord, func(a, b int) int { return cmp.Compare(ys[a], ys[b]) })
	ysorted := make([]float64, n)
	for i, j := range yord {
		ysorted[i] = ys[j]
	}
	rbs := rowSumsSorted(ysorted)
	rank := make([]int, n)
	rb := make([]float64, n)
	r := 0
	for i, j := range yord {
		if i > 0 && ysorted[i] != ysorted[i-1] {
			r++
		}
		rank[j] = r + 1 // Fenwick is 1-based
		rb[j] = rbs[i]
	}
	sab := crossSum(xs, ys, rank, r+1)
	var saa, sbb float64
	var sx2, sy2 float64
	for i := range xs {
		sx2 += xs[i] * xs[i]
		sy2 += ys[i] * ys[i]
	}
	// centred: Σ_kl (x_k − x_l)² = 2nΣx²
	saa = 2 * float64(n) * sx2
	sbb = 2 * float64(n) * sy2
	return dcorFromRowSums(n, sab, saa, sbb, ra, rb)
}

// crossSum returns Σ_kl |x_k − x_l||y_k − y_l| for rows in increasing x
// (xs sorted) with y ranks 1..m, in O(n log n) with four Fenwick trees.
// For j in x order and every earlier i (x_i ≤ x_j):
// (x_j − x_i)|y_j − y_i| = ±(x_j y_j − x_j y_i − x_i y_j + x_i y_i), with
// + for y_i ≤ y_j; the trees give the four sums over y_i ≤ y_j.
func crossSum(xs, ys []float64, rank []int, m int) float64 {
	fc := make([]float64, m+1)
	fx := make([]float64, m+1)
	fy := make([]float64, m+1)
	fxy := make([]float64, m+1)
	var C, SX, SY, SXY, total float64
	for j, xj := range xs {
		yj := ys[j]
		var c, sx, sy, sxy float64
		for r := rank[j]; r > 0; r -= r & -r {
			c += fc[r]
			sx += fx[r]
			sy += fy[r]
			sxy += fxy[r]
		}
		lo := xj*yj*c - xj*sy - yj*sx + sxy
		hi := xj*yj*(C-c) - xj*(SY-sy) - yj*(SX-sx) + (SXY - sxy)
		total += lo - hi
		for r := rank[j]; r <= m; r += r & -r {
			fc[r]++
			fx[r] += xj
			fy[r] += yj
			fxy[r] += xj * yj
		}
		C++
		SX += xj
		SY += yj
		SXY += xj * yj
	}
	return 2 * total
}

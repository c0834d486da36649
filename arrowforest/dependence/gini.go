package dependence

import "math"

// GCov returns the sample Gini covariance gCov_n(X, Y) = Δ̂ − Σ_k p̂_k Δ̂_k
// (dissertation Definition 12) between the numeric columns x (column-major;
// the rows of x are points in R^d, d = len(x)) and the categorical labels
// y with values in 0..k-1. One column takes the O(n log n) path through
// the order statistics of eq. (2.1); several columns the O(n²·d) pairwise
// sum, streamed without an n×n matrix. Rows with a NaN are left out. It
// returns NaN for malformed input (no columns, unequal lengths, a label
// outside 0..k-1) or fewer than two complete rows.
func GCov(x [][]float64, y []int32, k int) float64 {
	g, _ := gini(x, y, k)
	return g
}

// GCor returns gCor_n (dissertation Def. 12) between the numeric columns x
// (column-major, len(x) >= 1, equal lengths, float64) and categorical
// labels y with values in 0..k-1. len(x)==1 uses the O(n log n) path.
//
// gCor_n = (Δ̂ − Σ_k p̂_k Δ̂_k)/Δ̂ with Δ̂ the mean pairwise Euclidean
// distance over all C(n,2) pairs and Δ̂_k that within class k. It is an
// unbiased estimator and may be slightly negative under independence
// (§2.3). A class with fewer than two rows contributes 0; a constant x
// gives 0. Rows with a NaN are left out; malformed input gives NaN (see
// GCov).
func GCor(x [][]float64, y []int32, k int) float64 {
	_, g := gini(x, y, k)
	return g
}

func gini(x [][]float64, y []int32, k int) (gcov, gcor float64) {
	if _, ok := checkXY(x, y, k); !ok {
		return math.NaN(), math.NaN()
	}
	x, y = completeXY(x, y)
	if len(y) < 2 {
		return math.NaN(), math.NaN()
	}
	if len(x) == 1 {
		u := newUniCol(x[0], y, k, false)
		return u.gini(u.lab, newUniScratch(k))
	}
	ps := pairPass(rescaled(x), y, k, false, nil)
	return giniFromSums(len(y), classCounts(y, k), ps.tot, ps.within)
}

// DCor returns dCor_n (Def. 8-9, the square root, as energy::dcor) between
// numeric columns x and labels y treated as a categorical (0/1 distance)
// response.
//
// The label distance is b_kl = 1 when y_k ≠ y_l and 0 otherwise (§2.3, the
// "set difference" distance used for dCor in the dissertation's feature
// ranking); with two classes coded 0/1 this equals energy::dcor(x, y).
// One column takes an O(n log n) path (sorted order statistics and prefix
// sums); several columns stream over the pairs in O(n²·d) time and O(n)
// memory. Rows with a NaN are left out; malformed input gives NaN.
func DCor(x [][]float64, y []int32, k int) float64 {
	if _, ok := checkXY(x, y, k); !ok {
		return math.NaN()
	}
	x, y = completeXY(x, y)
	if len(y) < 2 {
		return math.NaN()
	}
	if len(x) == 1 {
		u := newUniCol(x[0], y, k, true)
		s := newUniScratch(k)
		u.sumsGiven(u.lab, s)
		return u.stat(s)
	}
	cnt := classCounts(y, k)
	ps := pairPass(rescaled(x), y, k, true, nil)
	return dcorCatFromPairs(ps, y, cnt)
}

// dcorCatFromPairs turns lower-triangle sums into the full sums of
// dcorCatFromSums.
func dcorCatFromPairs(ps pairSums, y []int32, cnt []int) float64 {
	k := len(cnt)
	S := make([]float64, k)
	R := make([]float64, k)
	for c := range S {
		S[c] = 2 * ps.within[c]
	}
	var r2 float64
	for i, r := range ps.row {
		R[y[i]] += r
		r2 += r * r
	}
	return dcorCatFromSums(ps.n, cnt, 2*ps.tot, 2*ps.sq, r2, S, R)
}

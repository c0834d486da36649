package dependence

import (
	"cmp"
	"math"
	"slices"
)

// Pearson returns the Pearson correlation ρ_{X,Y} = Cov(X,Y)/(σ_X σ_Y) of
// two numeric vectors (dissertation §2.1). Rows where either value is NaN
// are left out. It returns NaN when the lengths differ or fewer than two
// complete rows remain, and 0 when either vector is constant.
func Pearson(x, y []float64) float64 {
	if len(x) != len(y) {
		return math.NaN()
	}
	var n int
	var mx, my float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			continue
		}
		n++
		mx += x[i]
		my += y[i]
	}
	if n < 2 {
		return math.NaN()
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx, syy float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			continue
		}
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// checkXY validates a numeric set against categorical labels: at least one
// column, equal lengths, labels in 0..k-1. It returns n.
func checkXY(x [][]float64, y []int32, k int) (int, bool) {
	if len(x) == 0 || k < 1 {
		return 0, false
	}
	n := len(y)
	for _, c := range x {
		if len(c) != n {
			return 0, false
		}
	}
	for _, v := range y {
		if v < 0 || int(v) >= k {
			return 0, false
		}
	}
	return n, true
}

// checkSet validates a numeric set: at least one column of length n.
func checkSet(x [][]float64, n int) bool {
	if len(x) == 0 {
		return false
	}
	for _, c := range x {
		if len(c) != n {
			return false
		}
	}
	return true
}

// completeRows returns the rows without a NaN in any of the given sets, or
// nil when every row is complete.
func completeRows(n int, sets ...[][]float64) []int {
	bad := false
	for _, s := range sets {
		for _, c := range s {
			for _, v := range c {
				if math.IsNaN(v) {
					bad = true
					break
				}
			}
		}
	}
	if !bad {
		return nil
	}
	rows := make([]int, 0, n)
next:
	for i := 0; i < n; i++ {
		for _, s := range sets {
			for _, c := range s {
				if math.IsNaN(c[i]) {
					continue next
				}
			}
		}
		rows = append(rows, i)
	}
	return rows
}

func pickCols(x [][]float64, rows []int) [][]float64 {
	out := make([][]float64, len(x))
	for j, c := range x {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = c[r]
		}
		out[j] = v
	}
	return out
}

func pickLabels(y []int32, rows []int) []int32 {
	out := make([]int32, len(rows))
	for i, r := range rows {
		out[i] = y[r]
	}
	return out
}

// completeXY drops rows with a NaN in x (complete cases).
func completeXY(x [][]float64, y []int32) ([][]float64, []int32) {
	rows := completeRows(len(y), x)
	if rows == nil {
		return x, y
	}
	return pickCols(x, rows), pickLabels(y, rows)
}

// rescaled returns x scaled by a power of two so that its largest
// magnitude is near 1 when squared distances could underflow or overflow
// (max |x| outside [2⁻²⁰⁰, 2²⁰⁰]); otherwise x itself. Every statistic
// here is invariant under a common scale of a set's columns.
func rescaled(x [][]float64) [][]float64 {
	m := absMax(x)
	if m == 0 || (m >= 0x1p-200 && m <= 0x1p200) {
		return x
	}
	_, e := math.Frexp(m)
	f := math.Ldexp(1, -e)
	out := make([][]float64, len(x))
	for j, c := range x {
		out[j] = make([]float64, len(c))
		for i, v := range c {
			out[j][i] = v * f
		}
	}
	return out
}

// unscaled reports whether rescaled returns x itself.
func unscaled(x [][]float64) bool {
	m := absMax(x)
	return m == 0 || (m >= 0x1p-200 && m <= 0x1p200)
}

// absMax is the largest |v| of x, NaN ignored.
func absMax(x [][]float64) float64 {
	var m float64
	for _, c := range x {
		for _, v := range c {
			if a := math.Abs(v); a > m && !math.IsNaN(a) {
				m = a
			}
		}
	}
	return m
}

// classCounts returns n_k for k classes.
func classCounts(y []int32, k int) []int {
	cnt := make([]int, k)
	for _, c := range y {
		cnt[c]++
	}
	return cnt
}

// sortedPair is a value with its class, sorted by value.
type sortedPair struct {
	v float64
	c int32
}

// sortByValue returns (x_(i), class of x_(i)) in increasing order of x,
// with x centred at its mean (every statistic here is shift invariant; the
// centring keeps the order-statistics sums well conditioned).
func sortByValue(x []float64, y []int32) []sortedPair {
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ps := make([]sortedPair, len(x))
	for i, v := range x {
		ps[i] = sortedPair{v - mean, y[i]}
	}
	slices.SortFunc(ps, func(a, b sortedPair) int { return cmp.Compare(a.v, b.v) })
	return ps
}

// giniMeanDiffSorted returns Σ_{i<j}|x_i − x_j| of sorted values through
// the order statistics of eq. (2.1): Σ_i (2i − n − 1) x_(i) (1-based i).
func giniMeanDiffSorted(ps []sortedPair) float64 {
	n := len(ps)
	var s float64
	for i, p := range ps {
		s += float64(2*(i+1)-n-1) * p.v
	}
	return s
}

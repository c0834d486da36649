package dependence

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// False-discovery control across an analysis (see Search for the family).

// SeqExceed is h of the sequential permutation test an adjusted search
// runs (Besag and Clifford, 1991): a test with threshold t runs up to
// N_t = ⌈h/t⌉ − 1 permutations and stops at the h-th that reaches the
// observed statistic. Its p-value is h/L when it stops after L
// permutations, which is above t, and (b+1)/(N_t+1) when it runs to N_t,
// which is at most t exactly when b < h: the test stops as soon as its
// decision at t is settled, and its p-value is valid (P(p ≤ u) ≤ u under
// independence for every u).
const SeqExceed = 2

// seqPlan is the sequential plan of a test at threshold t under the
// resolved options o: N_t = ⌈SeqExceed/t⌉ − 1, cut to o.MaxPerms
// (Capped), or o's fixed count when o.Perms is set. Unless o.Exact, the
// test spends ApproxShare of t on the approximation (approx.go,
// spectral.go, hybridP) and N_t is that of (1 − ApproxShare)·t.
func seqPlan(t float64, o TestOptions) permPlan {
	if o.Perms > 0 {
		return permPlan{fixed: o.Perms}
	}
	if !o.Exact && t > 0 {
		pl := seqCount(t*(1-ApproxShare), o)
		pl.approxT = t
		return pl
	}
	return seqCount(t, o)
}

// seqCount is the sequential plan of threshold t with permutations only.
func seqCount(t float64, o TestOptions) permPlan {
	need := math.Ceil(SeqExceed/t) - 1
	pl := permPlan{exceed: SeqExceed, max: o.MaxPerms}
	if need < float64(o.MaxPerms) {
		pl.max = max(int(need), SeqExceed)
	} else if need > float64(o.MaxPerms) {
		pl.capped = true
	}
	return pl
}

// byP returns the indices of p in increasing order of p (ties: lower
// index first).
func byP(p []float64) []int {
	ord := make([]int, len(p))
	for i := range ord {
		ord[i] = i
	}
	slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(p[a], p[b]) })
	return ord
}

// holm applies Holm's step-down procedure at level a to the p-values p:
// with p_(1) ≤ … ≤ p_(m), reject H_(1), …, H_(k) for the largest k with
// p_(i) ≤ a/(m − i + 1) for every i ≤ k. It returns the decisions and the
// adjusted p-values max_{j ≤ i} min(1, (m − j + 1) p_(j)) times scale.
func holm(p []float64, a, scale float64) (rej []bool, adj []float64) {
	m := len(p)
	rej, adj = make([]bool, m), make([]float64, m)
	run, stop := 0.0, false
	for i, j := range byP(p) {
		if !stop && p[j] <= a/float64(m-i) {
			rej[j] = true
		} else {
			stop = true
		}
		run = max(run, min(1, float64(m-i)*p[j]))
		adj[j] = min(1, run*scale)
	}
	return rej, adj
}

// bh applies the Benjamini–Hochberg step-up procedure at level a: reject
// H_(1), …, H_(k) for the largest k with p_(k) ≤ k·a/m. It returns the
// decisions and the adjusted p-values min_{j ≥ i} min(1, m p_(j)/j) times
// scale.
func bh(p []float64, a, scale float64) (rej []bool, adj []float64) {
	m := len(p)
	rej, adj = make([]bool, m), make([]float64, m)
	ord := byP(p)
	k := 0
	for i, j := range ord {
		if p[j] <= float64(i+1)*a/float64(m) {
			k = i + 1
		}
	}
	run := 1.0
	for i := m - 1; i >= 0; i-- {
		j := ord[i]
		rej[j] = i < k
		run = min(run, float64(m)*p[j]/float64(i+1))
		adj[j] = min(1, run*scale)
	}
	return rej, adj
}

// choose returns C(n, k) as an int, saturating at math.MaxInt32.
func choose(n, k int) int {
	if k < 0 || n < k {
		return 0
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return int(min(math.Round(c), math.MaxInt32))
}

// topDownBound is the most distinct tests Algorithm 3 runs on r features:
// each pass of its loop tests the set (1) and FindMDS holds out each of
// its s features once (≤ s), and every pass removes at least one feature,
// so Σ_{s=1..r} (1 + s) = r(r+3)/2.
func topDownBound(r int) int { return r * (r + 3) / 2 }

// divideBound is the most distinct tests of Algorithm 4 applied
// repeatedly (divideRepeated) on r features: one call on s features tests
// the set, its halves recursively, the rest and FindMDS on the rest (≤ s),
// D(s) = 2 + s + D(⌊s/2⌋) + D(⌈s/2⌉), D(1) = 1; the repetitions run on
// strictly smaller sets, Σ_{s ≤ r} D(s), and a final joint test.
func divideBound(r int) int {
	d := make([]int, r+1)
	total := 1
	for s := 1; s <= r; s++ {
		if s == 1 {
			d[s] = 1
		} else {
			d[s] = 2 + s + d[s/2] + d[s-s/2]
		}
		total += d[s]
	}
	return total
}

// AdjustPValues applies the procedure a at level alpha to the p-values p
// of one family: Holm's step-down, Benjamini–Hochberg's step-up, or none
// (each p ≤ alpha on its own, adjusted = raw). It returns the decisions
// and the adjusted p-values.
func AdjustPValues(p []float64, a Adjust, alpha float64) ([]bool, []float64, error) {
	switch a {
	case AdjustHolm:
		rej, adj := holm(p, alpha, 1)
		return rej, adj, nil
	case AdjustBH:
		rej, adj := bh(p, alpha, 1)
		return rej, adj, nil
	case AdjustNone:
		rej := make([]bool, len(p))
		for i, v := range p {
			rej[i] = v <= alpha
		}
		return rej, slices.Clone(p), nil
	}
	return nil, nil, fmt.Errorf("dependence: unknown adjustment %q (want holm, bh or none)", a)
}

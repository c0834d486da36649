// Package dependence owns feature–label dependence analysis: the sample
// dependence statistics of the dissertation "Improving random forests by
// feature dependence analysis" (chapter 2), their permutation tests
// (§2.4, §5.6) and the search for minimum dependence sets (MDS) and
// stronger dependence sets (SDS) of chapter 5 (Algorithms 1–6).
//
// # Statistics
//
//   - Pearson correlation ρ (§2.1).
//   - Distance correlation dCor_n (Definitions 8–9, the V-statistic, reported
//     as dCor_n itself like R's energy::dcor, not squared): DCor between a
//     numeric set and a categorical label (0/1 "set difference" distance
//     on the label, §2.3 last paragraph), DCorNum between two numeric sets
//     (and so against a numeric label, with |y − y'|), and DCor1 between
//     two numeric vectors in O(n log n).
//   - Gini covariance gCov_n and correlation gCor_n (Definition 12): GCov
//     and GCor between a numeric set and a categorical label; one column
//     takes the O(n log n) order-statistics path of eq. (2.1).
//
// Multivariate statistics stream over the pairs of rows in blocks and never
// hold an n×n matrix; their memory is O(n·p).
//
// # Labels
//
// A Label is classes (Classes) or numbers (Numeric). Classes take gCor_n or
// dCor_n with the 0/1 distance; numbers take dCor_n with |y − y'| — gCor_n
// is defined for a categorical label only (Definition 12) — and
// SearchLabel and DCorTestNumeric test them: one column permutes the y
// ranks over the x order and forms Σ|x − x'||y − y'| with one Fenwick-tree
// pass, O(n log n) per permutation (uninum.go); a set permutes the label
// over the packed distance triangle.
//
// # Permutation tests
//
// GCorTest, DCorTest and the Search procedures permute the label only
// (dissertation §2.4): Δ̂ and the class sizes are invariant, so a
// univariate test sorts the column once and costs O(n) per permutation
// (the permuted labelling of the sorted positions is drawn on the fly by
// sequential selection sampling, fused with the order-statistics pass of
// eq. 2.1), and a multivariate test computes the pairwise distances once
// (a packed float32 lower triangle, the only n×n structure, optionally on
// a row subsample) and costs one masked pass over it per permutation.
// Permutation i of a test draws from a SplitMix64 stream seeded by (seed,
// the test's feature set, i) alone, so results are identical at any
// thread count. The count is adaptive (§5.6: start at 100, double while no
// permutation reaches the observed statistic, stop at the maximum, 5000
// by default), fixed, or, in a search that controls false discoveries,
// sequential (Besag and Clifford, 1991: stop at the SeqExceed-th
// permutation that reaches the statistic, p = b/N, or after the count its
// threshold needs, p = (b+1)/(N+1); see SeqExceed); b counts permutations
// whose statistic is at least the observed one less 1e-10 (ties).
//
// # False discoveries
//
// Search controls them across the whole analysis by default (AdjustHolm:
// the chance of reporting any false feature or group is at most α;
// AdjustBH: the expected share of false ones is; the family and the
// thresholds are in SearchLabel's doc); AdjustNone is the dissertation's
// per-test rule.
//
// # Missing values
//
// A row with a NaN in any column of the tested set is left out of that
// statistic or test (complete cases).
package dependence

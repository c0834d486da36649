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
//     on the label, §2.3 last paragraph), DCorNum between two numeric sets,
//     and DCor1 between two numeric vectors in O(n log n).
//   - Gini covariance gCov_n and correlation gCor_n (Definition 12): GCov
//     and GCor between a numeric set and a categorical label; one column
//     takes the O(n log n) order-statistics path of eq. (2.1).
//
// Multivariate statistics stream over the pairs of rows in blocks and never
// hold an n×n matrix; their memory is O(n·p).
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
// by default) or fixed; b counts permutations whose statistic is at least
// the observed one less 1e-10 (ties), and the p-value is (b+1)/(N+1).
//
// # Missing values
//
// A row with a NaN in any column of the tested set is left out of that
// statistic or test (complete cases).
package dependence

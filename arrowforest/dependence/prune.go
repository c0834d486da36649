package dependence

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Pruning the bottom-up candidates (issue 30). Algorithms 5 and 6 test
// C(u, 2) pairs and C(u', 3) triples (dissertation §5.3, §5.5): 161,700
// triples for 100 features. What the dissertation's own arguments allow:
//
//   - Members already explained are never extended: an MDC is a union of
//     disjoint MDS's (Definition 15) and an SDC of disjoint SDS's
//     (Definition 17), so the features of a set taken leave every later
//     candidate (bottomUp's used), and S_m never enters (§5.3: the search
//     runs on the marginally independent features). This was already so.
//   - A marginal or pair screen is not allowed for MDS's: every proper
//     subset of an MDS is independent of the label (Definition 13), the
//     XOR sets of §5.1 have exactly independent marginals and pairs, so no
//     marginal or pair statistic can rank their candidates. (For SDS's,
//     §5.5 compares a set with its members' marginal p-values only.)
//   - A family whose threshold cannot be reached is not run (unreachable):
//     a set's χ²₁ p-value is bounded below (|T| ≤ √(S_A·S_B) by
//     Cauchy–Schwarz, so z ≤ √(m(m−3)/2)), and a sequential test's
//     p-value by 1/(MaxN+1).
//   - A family whose threshold the permutations allowed cannot reach is
//     decided by the approximation alone (approxOnly): a test's p-value
//     is min(p_χ²/c, p_seq/(1−c)) (hybridP), and p_seq ≥ 1/(MaxN+1), so
//     when (1−c)·t < 1/(MaxN+1) the permutations cannot change a decision
//     and are not run. Decisions are those of the permutation test to the
//     bit; the tests the approximation leaves between its two bounds count
//     as Unresolved (with more permutations they could have been dependent).
//   - The candidates are screened on a row subsample (screen): §2.2 and
//     §2.3 recommend "a random subset of samples for dependence
//     estimations" when n is large, and a search already tests sets on
//     DefaultSetRows rows. A candidate first gets p_χ² on a seeded subset
//     of m_s of the m set rows; when that is at least approxFutile (the
//     level at which hybridP calls a test not dependent at once) it is not
//     dependent (p = 1, Rows = m_s), otherwise the full test decides. The
//     screen can only drop sets, never add one, so the family-wise bound
//     stands; it costs power only for sets near the threshold (below).
//   - What the dissertation does not allow: cutting the number of triples.
//     Its only argument that could skip a family is the top-down one
//     (§5.3, Algorithm 3 line 4 and Algorithm 4 line 4; Definition 15
//     asks S̄_C ⊥ Y of an MDC): test the features left jointly and stop
//     when they are not dependent. §5.3 itself rejects it for the
//     bottom-up search ("the dependence of the whole set with Y becomes
//     weaker"), and measured it fails exactly where the triples matter: a
//     3-XOR label (flipped on 20%) on 2,000 rows has z = 4.6 on its three
//     columns and z = 0.27, −0.18, 0.48, −0.12, −1.11 with 3, 9, 21, 45
//     and 93 noise columns added (TestGateMissesDilutedXOR3). So the
//     triples stay C(u′, 3) and what
//     is cut is their cost: the screen above, and on large n the
//     projections (projset.go).

// screenMinRows is the fewest rows a candidate screen uses: on the issue's
// data (an XOR pair inside a label that two marginal features and noise
// also drive) the pair's p_χ² over 10 draws was at most 10⁻² on 250 rows
// (under the screen's 0.05) and 2·10⁻⁴ on 500; on 125, up to 0.08.
const screenMinRows = 250

// screenMargin is how many times the screen's cut z_γ the expected screen
// statistic of a set exactly at its family's threshold is: under a fixed
// alternative z grows like the rows m (T ≈ m²θ, √Var T ≈ √2·m·σ_A·σ_B,
// approx.go), its spread like √m, so a set the full test takes at z ≥ z*
// shows about (m_s/m)·z* on m_s rows, and m_s = screenMargin·(z_γ/z*)·m
// puts that at 3·z_γ ≈ 6.
const screenMargin = 3

// chi2Z is the z of approx.go's tail at p in (0, 1): P(χ²₁ ≥ 1 + √2·z)
// = erfc(√((1 + √2·z)/2)) = p, by bisection on erfc (math.Erfcinv loses
// every digit below 10⁻¹⁶, where search thresholds go).
func chi2Z(p float64) float64 {
	lo, hi := 0.0, 40.0 // erfc(40) < 10⁻⁶⁹⁶: below every float64
	for range 100 {
		mid := (lo + hi) / 2
		if math.Erfc(mid) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	e := (lo + hi) / 2
	return (2*e*e - 1) / math.Sqrt2
}

// screenRows returns how many of m set rows screen the candidates of a
// family with threshold t (0: no screen, when it would not be at most
// half of m, or there is no approximation).
func screenRows(t float64, m int) int {
	if !(t > 0) || m < 2*screenMinRows {
		return 0
	}
	zs := chi2Z(ApproxShare * t)
	if !(zs > 0) {
		return 0
	}
	ms := max(screenMinRows, int(math.Ceil(screenMargin*chi2Z(approxFutile)/zs*float64(m))))
	if 2*ms > m {
		return 0
	}
	return ms
}

// zMax is the largest z a set test on m rows can show (Cauchy–Schwarz).
func zMax(m int) float64 {
	if m < 4 {
		return 0
	}
	return math.Sqrt(float64(m) * float64(m-3) / 2)
}

// unreachable reports whether no test of threshold t on at most m rows can
// be dependent: neither its approximation nor its permutations (plan pl).
func unreachable(t float64, m int, pl permPlan) bool {
	if !(t > 0) || pl.fixed > 0 {
		return false
	}
	perm := 1 / (float64(pl.maxN()+1) * (1 - ApproxShare))
	if pl.approxT <= 0 {
		return 1/float64(pl.maxN()+1) > t
	}
	return perm > t && chi2TailP(zMax(m))/ApproxShare > t
}

// permsFutile reports whether the sequential part of pl cannot reach its
// threshold: 1/(MaxN+1), the least p_seq, over 1 − c is above t.
func permsFutile(pl permPlan) bool {
	return pl.approxT > 0 && pl.fixed == 0 && 1/(float64(pl.maxN()+1)*(1-ApproxShare)) > pl.approxT
}

// testPlan is a set test's plan in a search: the permutation plan and the
// search's shortcuts above.
type testPlan struct {
	permPlan
	// approxOnly: the permutations cannot reach the threshold, the
	// approximation decides (permsFutile).
	approxOnly bool
	// screen: the rows (indices into the columns, ascending) of the
	// candidate screen, nil for none.
	screen []int
}

// screenOrder is a seeded order of the set rows (the subsample, or every
// row) whose first m_s, sorted, are a family's screen rows: screens of
// different sizes are nested, and the screen of a set is a function of
// the seed and its family alone.
func (d *data) screenOrder() []int {
	if d.order != nil {
		return d.order
	}
	rows := d.sub
	if rows == nil {
		rows = make([]int, d.lab.Len())
		for i := range rows {
			rows[i] = i
		}
	}
	r := rand.New(rand.NewPCG(d.o.Seed, 0x7363726565)) // "scree"
	d.order = slices.Clone(rows)
	r.Shuffle(len(d.order), func(i, j int) { d.order[i], d.order[j] = d.order[j], d.order[i] })
	return d.order
}

// screenSet returns the first ms rows of screenOrder, ascending.
func (d *data) screenSet(ms int) []int {
	s := slices.Clone(d.screenOrder()[:ms])
	slices.Sort(s)
	return s
}

// screened runs the screen of the columns cols (of the sorted features
// feats) on rows: it reports the result "not dependent" (p = 1, the
// statistic of the screen's rows) and true when the χ²₁ p-value there is
// at least approxFutile.
func (d *data) screened(stat Stat, feats []int, cols [][]float64, rows []int, key string) (TestResult, bool) {
	x, l := d.lab.pick(rows).complete(pickCols(cols, rows))
	if l.Len() < 4 {
		return TestResult{}, false
	}
	pe := d.prefix(feats, rows, len(rows), x)
	defer d.pre.release(pe)
	pr := d.setProblem(stat, x, l, key, nil, true, pe.triangle())
	if chi2TailP(pr.approxZ()) < approxFutile {
		return TestResult{}, false
	}
	return TestResult{Statistic: exactOf(pr), PValue: 1, Rows: l.Len(), Approx: true}, true
}

// approxDecides is the test of pr when the permutations cannot reach the
// threshold (approxOnly): hybridP without them. A test the approximation
// leaves undecided (p_χ²/c above t, p_χ² below hybridP's futility level)
// reports N = MaxN = 0 and Capped, which Search counts as unresolved.
func approxDecides(pr permProblem, pl permPlan) (TestResult, bool) {
	ap, ok := pr.(approxProblem)
	if !ok || pr.rows() < 4 {
		return TestResult{}, false
	}
	pa, futile := approxSteps(ap, pl.approxT) // hybridP's steps 1 and 2 (perm.go)
	r := TestResult{Statistic: exactOf(pr), PValue: pa, Rows: pr.rows(), MaxN: pl.maxN(), Capped: true, Approx: true}
	if pa > pl.approxT && !futile {
		r.MaxN = 0
	}
	return r, true
}

// setProblem returns the test of a set's complete columns x against l:
// random projections (projset.go) when d.projects(rows), otherwise the
// exact statistic with its triangle in *tri (lazy: left for
// preparePerms). key seeds the directions, so a set's test is the same
// at any thread count.
func (d *data) setProblem(stat Stat, x [][]float64, l Label, key string, tri *[]float32, lazy bool, pre []float64) interface {
	permProblem
	approxProblem
} {
	if n := l.Len(); d.projects(n) {
		return newProjSetProblem(x, l, stat, projDirs(len(x), n, d.o.MaxCacheBytes), streamKey(d.o.Seed, keyHash(key))^0x70726f6a)
	}
	if l.IsNumeric() {
		return newSetNumProblemPre(x, l.Values, d.o.MaxCacheBytes, tri, lazy, pre)
	}
	return newSetProblemPre(x, l.Y, l.K, stat, d.o.MaxCacheBytes, tri, lazy, pre)
}

// projects reports whether a set test of n rows uses projections.
func (d *data) projects(n int) bool { return d.proj && n >= projSetMinRows }

// projBytes is the most one projected set test of n rows holds.
func (d *data) projBytes(n int) int64 {
	return int64(projDirs(projSetDirs, n, d.o.MaxCacheBytes)) * int64(n) * projBytesPerRow
}

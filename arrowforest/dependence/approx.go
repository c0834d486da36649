package dependence

import "math"

// The approximate permutation p-value (issue 30): a test whose p-value an
// adjusted search needs far below what a few hundred permutations can show
// takes it from the exact permutation moments of an unbiased distance
// covariance and a χ²₁ tail instead of up to 10⁵ sequential permutations.
//
// With a_ij the distances of the features and b_ij those of the label
// (|y − y'|, or 1[y ≠ y'] for classes: dissertation §2.3, last paragraph),
// U-centring (Székely and Rizzo 2014, "Partial distance correlation with
// methods for dissimilarities", §2.2)
//
//	Ã_ij = a_ij − a_i·/(n−2) − a_·j/(n−2) + a··/((n−1)(n−2)),  i ≠ j,
//
// gives a matrix whose rows sum to 0 off the diagonal, and the statistic
// T = Σ_{i≠j} Ã_ij b_π(i)π(j) = Σ_{i≠j} Ã_ij B̃_π(i)π(j). Over the n!
// permutations π of the label (dissertation §2.4) T has mean 0 and
// variance exactly
//
//	Var T = 2 S_A S_B / (n(n−3)),  S_A = Σ_{i≠j} Ã_ij²,  S_B likewise
//
// (sum over the pairs of index pairs by how many indices they share; the
// same moments Josse and Holmes 2016, "Measuring multivariate association
// and beyond", §3.1, use for RV and dCov, here for the U-statistic, whose
// moments are short). Every sum needs only a·· , Σ a², Σ a_i·² and the
// same of b, which the tests compute anyway, and Σ a b, Σ a_i· b_i·.
//
// The tail: z = T/√Var T tends under independence to Σλ_k(Z_k² − 1)/√(2Σλ_k²)
// (Székely, Rizzo and Bakirov 2007, Theorem 5), whose upper tail is never
// heavier than the one-term case (Z² − 1)/√2, since λ_max ≤ √Σλ²: so
// p = P(χ²₁ ≥ 1 + √2·z) is conservative in the tail (Shen, Panda and
// Vogelstein 2022, "The chi-square test of distance correlation", make the
// same argument with the mean instead of the variance; hyppo's fast Dcorr
// test). A search uses it through hybridP (perm.go) only when it
// settles the test; the sharper tail of spectral.go decides next, and the
// exact sequential test near the threshold.

// uCentredZ returns z = T/√Var T for the ordered-pair sums of numSums and
// Σ_{i≠j} a_ij b_ij = sab, Σ_i a_i· b_i· = rab; NaN when it is undefined
// (n < 4, or a constant side).
func (s *numSums) uCentredZ(sab, rab float64) float64 {
	n := float64(s.n)
	if s.n < 4 {
		return math.NaN()
	}
	k := 1 / ((n - 1) * (n - 2))
	T := sab - 2*rab/(n-2) + s.ta*s.tb*k
	SA := s.saa - 2*s.raa/(n-2) + s.ta*s.ta*k
	SB := s.sbb - 2*s.rbb/(n-2) + s.tb*s.tb*k
	v := 2 * SA * SB / (n * (n - 3))
	if !(v > 0) {
		return math.NaN()
	}
	return T / math.Sqrt(v)
}

// chi2TailP returns P(χ²₁ ≥ 1 + √2·z), the conservative tail of z (see
// above); 1 for z at or below −1/√2 or NaN.
func chi2TailP(z float64) float64 {
	q := 1 + math.Sqrt2*z
	if !(q > 0) {
		return 1
	}
	return math.Erfc(math.Sqrt(q / 2))
}

// classSums fills the label side of numSums for classes with the 0/1
// distance b_ij = 1[y_i ≠ y_j]: b·· = Σ b² = n² − Σ n_c², b_i· = n − n_c(i).
func classSums(n int, cnt []int, s *numSums) {
	fn := float64(n)
	var sq, rbb float64
	for _, c := range cnt {
		fc := float64(c)
		sq += fc * fc
		rbb += fc * (fn - fc) * (fn - fc)
	}
	s.tb, s.sbb, s.rbb = fn*fn-sq, fn*fn-sq, rbb
}

// classCross returns Σ_{i≠j} a_ij b_ij and Σ_i a_i· b_i· for classes from
// a·· (ordered), the within-class pair sums W_c (unordered) and the
// per-class row-sum totals R_c = Σ_{i∈c} a_i·.
func classCross(n int, cnt []int, ta float64, within, rc []float64) (sab, rab float64) {
	sab = ta
	for _, w := range within {
		sab -= 2 * w
	}
	rab = float64(n) * ta
	for c, r := range rc {
		rab -= float64(cnt[c]) * r
	}
	return sab, rab
}

// approxProblem is a permProblem with the approximate p-value above.
type approxProblem interface {
	// approxZ returns z = T/√Var T of the observed labels (NaN when
	// undefined).
	approxZ() float64
	// ratio returns ρ of spectral.go (1 when unknown), the same for every
	// permutation of the labels; it costs O(s²) distances of
	// s = min(n, spectralRows) rows and a Lanczos run.
	ratio() float64
}

// approxP returns the effective-degrees-of-freedom tail p_ν of
// spectral.go (the χ²₁ tail at ρ = 1).
func approxP(ap approxProblem) float64 {
	return effTailP(ap.approxZ(), ap.ratio())
}

func (p *uniProblem) approxZ() float64 {
	u := p.u
	n := len(u.v)
	if n < 4 {
		return math.NaN()
	}
	row, rtot, a2, r2 := u.row, u.rtot, u.a2, u.r2
	if row == nil {
		row = rowSumsSorted(u.v)
		var sq, tot float64
		for _, v := range u.v {
			sq += v * v
			tot += v
		}
		a2 = 2*float64(n)*sq - 2*tot*tot
		rtot, r2 = sumSq(row)
	}
	sc := newUniScratch(p.k)
	u.sumsGiven(u.lab, sc)
	rc := make([]float64, p.k)
	for j, c := range u.lab {
		rc[c] += row[j]
	}
	s := numSums{n: n, ta: rtot, saa: a2, raa: r2}
	classSums(n, u.cnt, &s)
	return s.uCentredZ(classCross(n, u.cnt, rtot, sc.p, rc))
}

func (p *uniProblem) ratio() float64 {
	v := p.u.v
	return specRatio(strideRows(len(v)), func(i, j int) float64 { return math.Abs(v[i] - v[j]) }) * classRatio(p.u.cnt)
}

func (p *setProblem) approxZ() float64 {
	n := len(p.y)
	if n < 4 {
		return math.NaN()
	}
	rc := make([]float64, p.k)
	for i, c := range p.y {
		rc[c] += p.ps.row[i]
	}
	s := numSums{n: n, ta: 2 * p.ps.tot, saa: 2 * p.ps.sq, raa: p.r2}
	classSums(n, p.cnt, &s)
	return s.uCentredZ(classCross(n, p.cnt, 2*p.ps.tot, p.ps.within, rc))
}

func (p *setProblem) ratio() float64 {
	x := p.x
	return specRatio(strideRows(len(p.y)), func(i, j int) float64 { return dist(x, i, j) }) * classRatio(p.cnt)
}

func (p *uniNumProblem) approxZ() float64 {
	n := len(p.u.xs)
	if n < 4 {
		return math.NaN()
	}
	sab, rab := p.u.crossRanks(p.u.obs, make([][4]float64, n+1))
	return p.u.s.uCentredZ(sab, rab)
}

// ratio samples x and y at strides of their sorted orders (quantiles).
func (p *uniNumProblem) ratio() float64 {
	xs, ys := p.u.xs, p.u.ys
	idx := strideRows(len(xs))
	return specRatio(idx, func(i, j int) float64 { return math.Abs(xs[i] - xs[j]) }) *
		specRatio(idx, func(i, j int) float64 { return math.Abs(ys[i] - ys[j]) })
}

func (p *setNumProblem) approxZ() float64 {
	n := len(p.y)
	if n < 4 {
		return math.NaN()
	}
	w := p.newWorker().(*setNumWorker)
	for i := range w.pi {
		w.pi[i] = int32(i)
	}
	sab, rab := w.sums()
	return p.s.uCentredZ(sab, rab)
}

func (p *setNumProblem) ratio() float64 {
	x, y := p.x, p.y
	idx := strideRows(len(y))
	return specRatio(idx, func(i, j int) float64 { return dist(x, i, j) }) *
		specRatio(idx, func(i, j int) float64 { return math.Abs(y[i] - y[j]) })
}

// ApproxShare is the share c of a sequential test's threshold t the
// approximation spends (hybridP): the test's p-value is
// min(p_χ²/c, p_seq/(1−c)), a Bonferroni combination of two valid
// p-values and so valid itself (P(p ≤ u) ≤ u for every u); when p_χ²/c is
// at most t the sequential test is not run, otherwise it runs at the
// threshold (1−c)·t.
const ApproxShare = 0.1

// approxFutile is the least p_χ² at which a sequential test of threshold
// t is settled "not dependent" without permutations (when p_χ² is also at
// least 10·t), with p = min(1, p_χ²/c) (valid, as any p-value above a
// valid one). Skipping the permutations can cost power only, never a false
// finding, and hardly that: p_χ² is most conservative when the null law of
// z is nearly normal, and there p_χ² = 0.05 means z ≈ 2.0, a normal tail of
// 0.023 — far above the (1 − c)·t ≤ 0.005 the permutations would need.
const approxFutile = 0.05

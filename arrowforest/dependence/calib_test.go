package dependence

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// calibCase is one data set of TestApproxCalibration: columns x, and
// either classes y (k of them) or numbers yv.
type calibCase struct {
	name string
	x    [][]float64
	y    []int32
	k    int
	yv   []float64
	// perms, when set, divides the reference's permutations (a large n)
	perms int
}

func (c calibCase) problem() approxProblem {
	switch {
	case c.yv != nil && len(c.x) == 1:
		return newUniNumProblem(c.x[0], c.yv)
	case c.yv != nil:
		return newSetNumProblem(c.x, c.yv, defaultMaxCacheBytes, nil)
	case len(c.x) == 1:
		return &uniProblem{u: newUniCol(c.x[0], c.y, c.k, false), stat: StatGCor, k: c.k}
	}
	return newSetProblem(c.x, c.y, c.k, StatGCor, defaultMaxCacheBytes, nil)
}

// refZ returns the permutation reference: z = T/√Var T (approx.go) of
// perms seeded permutations of the label, T = Σ_{i≠j} Ã_ij b_π(i)π(j)
// from the full U-centred matrices, and the third moments
// g = tr(M³)/tr(M²)^{3/2} of Ã and B̃ (the Pearson type III fit).
func (c calibCase) refZ(perms int) (zs []float64, gA, gB float64) {
	n := len(c.x[0])
	x := rescaled(c.x)
	a := make([][]float64, n)
	b := make([][]float64, n)
	for i := range a {
		a[i], b[i] = make([]float64, n), make([]float64, n)
		for j := range a {
			a[i][j] = dist(x, i, j)
			switch {
			case c.yv != nil:
				b[i][j] = math.Abs(c.yv[i] - c.yv[j])
			case c.y[i] != c.y[j]:
				b[i][j] = 1
			}
		}
	}
	ua, ub := bruteU(a), bruteU(b)
	var sa, sb float64
	for i := range ua {
		for j := range ua {
			sa += ua[i][j] * ua[i][j]
			sb += ub[i][j] * ub[i][j]
		}
	}
	sd := math.Sqrt(2 * sa * sb / float64(n*(n-3)))
	pi := make([]int32, n)
	for i := range pi {
		pi[i] = int32(i)
	}
	zs = make([]float64, perms)
	var ones []int
	for r := range perms {
		if r > 0 {
			shuffle(pi, 77, r)
		}
		var t float64
		if c.k == 2 { // T = −2 Σ Ã_ij over the pairs of class 1 (Ã's rows sum to 0)
			ones = ones[:0]
			for i, q := range pi {
				if c.y[q] == 1 {
					ones = append(ones, i)
				}
			}
			for _, i := range ones {
				ri := ua[i]
				for _, j := range ones {
					t -= 2 * ri[j]
				}
			}
			zs[r] = t / sd
			continue
		}
		for i, ri := range ua {
			bi := b[pi[i]]
			for j, v := range ri {
				t += v * bi[pi[j]]
			}
		}
		zs[r] = t / sd
	}
	return zs, cube(ua, sa), cube(ub, sb)
}

// cube returns tr(M³)/tr(M²)^{3/2} of the symmetric M with tr(M²) = s2.
func cube(m [][]float64, s2 float64) float64 {
	var s3 float64
	for i := range m {
		for j := range m {
			var d float64
			for k := range m {
				d += m[i][k] * m[k][j]
			}
			s3 += m[i][j] * d
		}
	}
	return s3 / math.Pow(s2, 1.5)
}

// pearson3P is the three-moment (Pearson type III) tail of z with
// skewness γ = 2√2·gA·gB (Josse and Holmes 2016), the normal tail for
// γ ≤ 0.
func pearson3P(z, gamma float64) float64 {
	if !(gamma > 1e-6) {
		return 0.5 * math.Erfc(z/math.Sqrt2)
	}
	k := 4 / (gamma * gamma)
	q := k + math.Sqrt(k)*z
	if !(q > 0) {
		return 1
	}
	return mathext.GammaIncRegComp(k, q)
}

// TestApproxCalibration is the calibration contract of the approximation
// (approx.go, spectral.go): for fixed data under independence — every
// permutation of the label equally likely — the p-value p_ν(z) of the
// permuted labels must be super-uniform, P(p_ν ≤ q) ≤ q, in the tail a
// search decides by it. The reference is 10⁵ seeded permutations of each
// data set: sets and single features, two and three classes, numeric
// labels, heavy tails, and n = 80 to 100, where the permutation law is
// farthest from its limit. The test also prints the same rates for the
// χ²₁ tail (hyppo's fast Dcorr, ρ = 1), the normal tail of the
// Székely–Rizzo t-test and the Pearson type III fit, and fails if p_ν is
// not sharper than χ²₁ on the sets (it would then buy nothing), or if it
// over-states the permutation p-value more than approxSlack times
// (P(p_ν ≤ q) < q/approxSlack: hybridP's approxFar rule relies on it).
func TestApproxCalibration(t *testing.T) {
	perms := 100000
	if testing.Short() {
		perms = 20000
	}
	r := rand.New(rand.NewPCG(11, 30))
	norm := func(n int, f func(float64) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f(r.NormFloat64())
		}
		return v
	}
	id := func(v float64) float64 { return v }
	classes := func(n, k int) []int32 {
		y := make([]int32, n)
		for i := range y {
			y[i] = int32(r.IntN(k))
		}
		return y
	}
	wide := func(d, n int) [][]float64 {
		x := make([][]float64, d)
		for j := range x {
			x[j] = norm(n, id)
		}
		return x
	}
	cases := []calibCase{
		{name: "3 columns, 2 classes, n=80", x: [][]float64{norm(80, id), norm(80, id), norm(80, id)}, y: classes(80, 2), k: 2},
		{name: "2 columns, 3 classes, n=90", x: [][]float64{norm(90, id), norm(90, math.Exp)}, y: classes(90, 3), k: 3},
		{name: "3 columns, numeric label, n=80", x: [][]float64{norm(80, id), norm(80, id), norm(80, id)}, yv: norm(80, id)},
		{name: "1 column heavy-tailed, 2 classes, n=100", x: [][]float64{norm(100, math.Exp)}, y: classes(100, 2), k: 2},
		{name: "1 column, numeric label, n=100", x: [][]float64{norm(100, id)}, yv: norm(100, math.Exp)},
		// a wide set (the top-down searches test such): ρ small, p_ν near the normal tail
		{name: "20 columns, 2 classes, n=100", x: wide(20, 100), y: classes(100, 2), k: 2},
		// more rows than spectralRows: ρ from a stride sample
		{name: "3 columns, 2 classes, n=600", x: [][]float64{norm(600, id), norm(600, id), norm(600, math.Exp)}, y: classes(600, 2), k: 2, perms: 10},
	}
	qs := []float64{0.05, 0.01, 1e-3, 1e-4}
	for ci, c := range cases {
		pr := c.problem()
		z0, rho := pr.approxZ(), pr.ratio()
		np := perms
		if c.perms > 0 {
			np /= c.perms
		}
		zs, gA, gB := c.refZ(np)
		if math.Abs(zs[0]-z0) > 1e-4*(1+math.Abs(z0)) { // float32 triangles
			t.Fatalf("%s: reference z %g, problem z %g", c.name, zs[0], z0)
		}
		gamma := 2 * math.Sqrt2 * gA * gB
		methods := []struct {
			name string
			p    func(z float64) float64
		}{
			{"p_ν (ρ=" + ftoa(rho) + ")", func(z float64) float64 { return effTailP(z, rho) }},
			{"χ²₁", chi2TailP},
			{"normal (dcorT)", func(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }},
			{"Pearson III (γ=" + ftoa(gamma) + ")", func(z float64) float64 { return pearson3P(z, gamma) }},
		}
		sorted := slices.Clone(zs)
		slices.Sort(sorted)
		rates := make([][]float64, len(methods))
		for mi, m := range methods {
			rates[mi] = make([]float64, len(qs))
			for qi, q := range qs {
				// p(z) decreases in z: count the permutations whose p ≤ q
				cnt := 0
				for _, z := range sorted {
					if m.p(z) <= q {
						cnt++
					}
				}
				rates[mi][qi] = float64(cnt) / float64(np)
			}
			t.Logf("case %d %s, %s: P(p ≤ q) at q = %v: %v", ci, c.name, m.name, qs, rates[mi])
		}
		for qi, q := range qs {
			if q*float64(np) < 10 {
				continue // too few permutations to see q
			}
			lim := q + 3*math.Sqrt(q/float64(np)) + 1/float64(np)
			if rates[0][qi] > lim {
				t.Errorf("%s: P(p_ν ≤ %g) = %g under permutations, above %g", c.name, q, rates[0][qi], lim)
			}
			// p_ν over-states the permutation p-value by at most
			// approxSlack (the margin of hybridP's approxFar rule)
			if low := q/approxSlack - 3*math.Sqrt(q/approxSlack/float64(np)); rates[0][qi] < low {
				t.Errorf("%s: P(p_ν ≤ %g) = %g under permutations, below %g: p_ν over-states p more than %g×", c.name, q, rates[0][qi], low, float64(approxSlack))
			}
		}
		if len(c.x) > 1 && !(rates[0][1] > rates[1][1]) {
			t.Errorf("%s: p_ν is no sharper than χ²₁ at q = 0.01 (%g vs %g)", c.name, rates[0][1], rates[1][1])
		}
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// TestEffTailBelowChi2 checks what hybridP relies on to decide by the
// χ²₁ tail before it computes ρ: wherever p_χ² ≤ 0.01, p_ν ≤ p_χ²
// for every ρ, so a test the χ²₁ tail settles as dependent p_ν settles too.
func TestEffTailBelowChi2(t *testing.T) {
	for _, rho := range []float64{0.999, 0.95, 0.8, 0.6, 0.4, 0.2, 0.1, 0.03, 0.01} {
		for z := 0.0; z < 80; z += 0.01 {
			pc := chi2TailP(z)
			if pc > 0.01 {
				continue
			}
			if pv := effTailP(z, rho); pv > pc*(1+1e-12) {
				t.Fatalf("ρ = %g, z = %g: p_ν %g above p_χ² %g", rho, z, pv, pc)
			}
		}
	}
}

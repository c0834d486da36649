package dependence

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// The effective-degrees-of-freedom tail (issue 30). Under independence
// z = T/√Var T tends to Σ_kl α_k β_l (Z_kl² − 1)/√(2 Σα² Σβ²), with α_k
// the eigenvalues of the U-centred feature distances Ã and β_l those of
// the label's B̃ (Székely, Rizzo and Bakirov 2007, Theorem 5; approx.go).
// Its upper tail is decided by the largest weight relative to the spread,
//
//	ρ = max|α| max|β| / √(Σα² Σβ²) ∈ (0, 1],
//
// and we take the tail of ν = 1/ρ² equal weights,
//
//	p_ν = P(χ²_ν ≥ ν + √(2ν)·z),
//
// which is the χ²₁ bound of approx.go at ρ = 1 (one dominant term, as a
// single feature has) and tends to the normal tail of the Székely–Rizzo
// t-test (energy::dcorT.test; "The distance correlation t-test of
// independence in high dimension", 2013) as ρ → 0. Among weights with
// the same largest one and the same Σ (a fixed variance) equal weights
// give the heaviest upper tail far out, as the extremal quadratic forms of
// Székely and Bakirov (2003, "Extremal probabilities for Gaussian
// quadratic forms") suggest; the three-moment Pearson type III fit that
// Josse and Holmes (2016, "Measuring multivariate association and
// beyond", §2.2, for the RV coefficient) use instead matches Σα³ and has
// the lighter exponential tail exp(−z/(√2·Σα³/(Σα²)^{3/2})), too light
// where ρ > Σα³/(Σα²)^{3/2}; TestApproxCalibration measures both.
//
// ρ_A comes from at most spectralRows rows taken at a stride (a quantile
// sample when the rows are sorted): the U-centred matrix of those rows,
// its Frobenius norm, and its extreme eigenvalues by Lanczos with full
// reorthogonalisation. ρ_B of c classes is exact: the nonzero eigenvalues
// of the double-centred 0/1 label distances are those of
// diag(n_c) − n_c n_cᵀ/n. ρ is a property of X and of the label's values,
// not of their pairing, so it is the same for every permutation: the
// p-value is a fixed function of z, which a permutation reference checks
// directly (TestApproxCalibration).

// spectralRows is the most rows ρ of a side is computed on (O(s²)
// memory and O(s²·lanczosSteps) time: 256 rows take about a
// millisecond, a fifth of the distance pass of a 2,000-row set test).
const spectralRows = 256

// lanczosSteps is the Lanczos iteration count for the extreme
// eigenvalue of a spectralRows-row matrix: the largest |Ritz value| of
// 256 stride rows (1, 2, 3 and 20 columns, one log-normal) had all its 8
// digits after 12 steps in a trial of 8 to 80.
const lanczosSteps = 16

// strideRows returns s = min(n, spectralRows) row indices ⌊k·n/s⌋.
func strideRows(n int) []int {
	s := min(n, spectralRows)
	idx := make([]int, s)
	for k := range idx {
		idx[k] = k * n / s
	}
	return idx
}

// specRatio returns max|λ|/√Σλ² of the U-centred matrix of the distances
// d(i, j) between the rows idx (approx.go's Ã); 1 (the χ²₁ bound) when it
// is undefined (fewer than 4 rows, or all distances equal).
func specRatio(idx []int, d func(i, j int) float64) float64 {
	s := len(idx)
	if s < 4 {
		return 1
	}
	m := make([]float64, s*s)
	row := make([]float64, s)
	var tot float64
	for i := 1; i < s; i++ {
		for j := range i {
			v := d(idx[i], idx[j])
			m[i*s+j], m[j*s+i] = v, v
			row[i] += v
			row[j] += v
			tot += 2 * v
		}
	}
	fs := float64(s)
	c := tot / ((fs - 1) * (fs - 2))
	var fro float64
	for i := range s {
		for j := range s {
			if i == j {
				m[i*s+j] = 0
				continue
			}
			v := m[i*s+j] - row[i]/(fs-2) - row[j]/(fs-2) + c
			m[i*s+j] = v
			fro += v * v
		}
	}
	if !(fro > 0) {
		return 1
	}
	top := lanczosExtreme(m, s)
	return min(1, top/math.Sqrt(fro))
}

// lanczosExtreme returns the largest |Ritz value| of the symmetric s×s
// matrix m after min(s, lanczosSteps) Lanczos steps with full
// reorthogonalisation, from a fixed pseudo-random start (SplitMix64).
func lanczosExtreme(m []float64, s int) float64 {
	steps := min(s, lanczosSteps)
	q := make([][]float64, 0, steps)
	v := make([]float64, s)
	x := uint64(0x1f2e3d4c5b6a7988)
	for i := range v {
		x = splitmix64(x)
		v[i] = float64(int64(x>>11))/float64(1<<52) - 1
	}
	normalise(v)
	alpha := make([]float64, 0, steps)
	beta := make([]float64, 0, steps)
	w := make([]float64, s)
	for k := 0; k < steps; k++ {
		q = append(q, v)
		for i := range s {
			r := m[i*s : (i+1)*s]
			var acc float64
			for j, mv := range r {
				acc += mv * v[j]
			}
			w[i] = acc
		}
		var a float64
		for i := range w {
			a += w[i] * v[i]
		}
		alpha = append(alpha, a)
		for pass := 0; pass < 2; pass++ { // full reorthogonalisation, twice
			for _, qq := range q {
				var h float64
				for i := range w {
					h += w[i] * qq[i]
				}
				for i := range w {
					w[i] -= h * qq[i]
				}
			}
		}
		b := math.Sqrt(dot(w, w))
		if k == steps-1 || b < 1e-12*math.Abs(a) {
			break
		}
		beta = append(beta, b)
		v = make([]float64, s)
		for i := range w {
			v[i] = w[i] / b
		}
	}
	return tridiagExtreme(alpha, beta)
}

// tridiagExtreme returns the largest |eigenvalue| of the symmetric
// tridiagonal matrix with diagonal alpha and off-diagonal beta.
func tridiagExtreme(alpha, beta []float64) float64 {
	k := len(alpha)
	t := mat.NewSymDense(k, nil)
	for i, a := range alpha {
		t.SetSym(i, i, a)
		if i+1 < k {
			t.SetSym(i, i+1, beta[i])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(t, false) {
		return math.Inf(1) // ρ = 1 after the cap: the χ²₁ bound
	}
	var top float64
	for _, e := range es.Values(nil) {
		top = max(top, math.Abs(e))
	}
	return top
}

func normalise(v []float64) {
	n := math.Sqrt(dot(v, v))
	for i := range v {
		v[i] /= n
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// classRatio returns ρ_B of the 0/1 distances of classes of sizes cnt: the
// largest eigenvalue of diag(n_c) − n_c n_cᵀ/n over the root of the sum of
// their squares (1 for two classes).
func classRatio(cnt []int) float64 {
	var nz []float64
	var n float64
	for _, c := range cnt {
		if c > 0 {
			nz = append(nz, float64(c))
			n += float64(c)
		}
	}
	k := len(nz)
	if k <= 2 {
		return 1
	}
	t := mat.NewSymDense(k, nil)
	for i, a := range nz {
		for j := i; j < k; j++ {
			v := -a * nz[j] / n
			if i == j {
				v += a
			}
			t.SetSym(i, j, v)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(t, false) {
		return 1
	}
	var top, sq float64
	for _, e := range es.Values(nil) {
		top = max(top, math.Abs(e))
		sq += e * e
	}
	if !(sq > 0) {
		return 1
	}
	return min(1, top/math.Sqrt(sq))
}

// effTailP returns P(χ²_ν ≥ ν + √(2ν)·z) with ν = 1/ρ² (see above): the
// χ²₁ tail chi2TailP at ρ = 1; 1 for NaN z.
func effTailP(z, rho float64) float64 {
	if math.IsNaN(z) {
		return 1
	}
	if !(rho > 0) || rho >= 1 {
		return chi2TailP(z)
	}
	nu := 1 / (rho * rho)
	q := nu + math.Sqrt(2*nu)*z
	if !(q > 0) {
		return 1
	}
	return mathext.GammaIncRegComp(nu/2, q/2)
}

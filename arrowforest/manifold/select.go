package manifold

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Choosing σ_G and γ_G of the backscoring map (eqs. (7)–(9)) from the
// training data.
//
// The paper fixes σ_G and γ_G per data set (§3.1: 100 and 200 for its
// swiss roll; §3.2.1: 3 and 20 for its digits): values tied to the scale of
// its data. When the options leave them open, Train chooses them by
// leave-one-out cross-validation of the map z_i ↦ y_i on the training
// pairs. For kernel ridge regression the leave-one-out residual has a
// closed form (Wahba 1990, §4.2; Hastie, Tibshirani & Friedman, The
// Elements of Statistical Learning, 2nd ed., eq. (7.52)): with
// A = K + (N/γ)·I, C = A⁻¹·Y (eq. (8)) and H = K·A⁻¹,
//
//	y_i − g₋ᵢ(z_i) = (y_i − g(z_i)) / (1 − H_ii) = C_i / (A⁻¹)_ii,
//
// since Y − K·C = (N/γ)·C and 1 − H_ii = (N/γ)·(A⁻¹)_ii. One Cholesky
// factorisation of A and inverse of its factor per grid point give all N
// residuals.
// Among the grid points whose leave-one-out error is within one standard
// error of the smallest, the smoothest — fewest effective degrees of
// freedom df = tr(H) = N − (N/γ)·tr(A⁻¹) (ESL §5.4.1, §7.6) — is chosen:
// the one-standard-error rule (ESL §7.10; Breiman et al. 1984), because
// the embedding z_i of a noisy response carries its noise along the
// manifold, which rewards maps that follow the noise.

// Selection is the outcome of SelectBackscore.
type Selection struct {
	// Sigma and Gamma are the chosen σ_G and γ_G.
	Sigma, Gamma float64
	// LOOMSE is the leave-one-out mean squared error of the choice (per
	// response coordinate), SE its standard error, DF the map's effective
	// degrees of freedom tr(H).
	LOOMSE, SE, DF float64
	// BestLOOMSE is the smallest leave-one-out error on the grid.
	BestLOOMSE float64
	// Evaluated counts the grid points evaluated.
	Evaluated int
}

// Grids of SelectBackscore: σ_G = s·2^k for k in SigmaExponents, s the
// median squared distance between embedded training responses (the scale
// of ‖v − w‖² in eq. (9)); γ_G = 10^(j/2) for j in GammaHalfDecades.
var (
	SigmaExponents   = []int{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2}
	GammaHalfDecades = []int{-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
)

// looPoint is one evaluated grid point.
type looPoint struct {
	si, gi         int // grid indices
	sigma, gamma   float64
	mse, se, df    float64
	ok             bool
	evaluatedOrder int
}

// SelectBackscore chooses σ_G and γ_G of eqs. (8)–(9) by leave-one-out
// cross-validation of the map from the N×m embedding z to the N×q
// responses y (row-major; the caller centres y when the map has an
// offset). A positive sigma or gamma is kept fixed and only the other is
// searched. The search evaluates every other point of the grid first and
// then the neighbours of the best; the one-standard-error rule picks among
// all points evaluated. Up to threads grid points of one σ are evaluated
// at once (memory: 8·N² bytes for the kernel matrix and as much per thread);
// the result does not depend on threads.
func SelectBackscore(z []float64, n, m int, y []float64, q int, sigma, gamma float64, threads int) (Selection, error) {
	sel, _, err := selectBackscore(z, n, m, y, q, sigma, gamma, threads)
	return sel, err
}

// selectBackscore is SelectBackscore that also returns the points
// evaluated, in evaluation order.
func selectBackscore(z []float64, n, m int, y []float64, q int, sigma, gamma float64, threads int) (Selection, []*looPoint, error) {
	if n < 3 || m < 1 || q < 1 || len(z) != n*m || len(y) != n*q {
		return Selection{}, nil, fmt.Errorf("manifold: selecting sigma_g and gamma_g: %d embedding values and %d responses for n=%d, m=%d, q=%d", len(z), len(y), n, m, q)
	}
	if sigma < 0 || gamma < 0 || math.IsNaN(sigma) || math.IsNaN(gamma) || math.IsInf(sigma, 0) || math.IsInf(gamma, 0) {
		return Selection{}, nil, fmt.Errorf("manifold: sigma_g %v and gamma_g %v must be finite and not negative (0 = choose)", sigma, gamma)
	}
	sigmas := []float64{sigma}
	if sigma == 0 {
		s := medianSquaredDistance(z, n, m)
		sigmas = sigmas[:0]
		for _, k := range SigmaExponents {
			sigmas = append(sigmas, math.Ldexp(s, k))
		}
	}
	gammas := []float64{gamma}
	if gamma == 0 {
		gammas = gammas[:0]
		for _, j := range GammaHalfDecades {
			gammas = append(gammas, math.Pow(10, float64(j)/2))
		}
	}
	ev := newLOOEval(z, n, m, y, q)
	done := map[[2]int]*looPoint{}
	var order []*looPoint
	run := func(idx [][2]int) {
		var todo [][2]int
		for _, ij := range idx {
			if ij[0] >= 0 && ij[0] < len(sigmas) && ij[1] >= 0 && ij[1] < len(gammas) && done[ij] == nil && !slices.Contains(todo, ij) {
				todo = append(todo, ij)
			}
		}
		// one σ at a time: its kernel matrix is built once for its γ's
		res := make([]*looPoint, len(todo))
		for lo := 0; lo < len(todo); {
			hi := lo
			for hi < len(todo) && todo[hi][0] == todo[lo][0] {
				hi++
			}
			k := ev.gram(sigmas[todo[lo][0]])
			parallelRows(hi-lo, threads, func(t int) {
				ij := todo[lo+t]
				res[lo+t] = ev.point(k, sigmas[ij[0]], gammas[ij[1]])
				res[lo+t].si, res[lo+t].gi = ij[0], ij[1]
			})
			lo = hi
		}
		for k, ij := range todo {
			res[k].evaluatedOrder = len(order)
			done[ij] = res[k]
			order = append(order, res[k])
		}
	}
	// coarse: every other grid point (and the last of each axis)
	var coarse [][2]int
	for i := range sigmas {
		if i%2 != 0 && i != len(sigmas)-1 {
			continue
		}
		for j := range gammas {
			if j%2 == 0 || j == len(gammas)-1 {
				coarse = append(coarse, [2]int{i, j})
			}
		}
	}
	run(coarse)
	best := bestPoint(order)
	if best == nil {
		return Selection{}, nil, fmt.Errorf("manifold: no sigma_g, gamma_g on the grid gives a positive definite backscoring system")
	}
	// fine: the neighbours of the coarse best
	var fine [][2]int
	for di := -1; di <= 1; di++ {
		for dj := -1; dj <= 1; dj++ {
			fine = append(fine, [2]int{best.si + di, best.gi + dj})
		}
	}
	run(fine)
	best = bestPoint(order)
	pick := best
	for _, p := range order {
		if p.ok && p.mse <= best.mse+best.se && (p.df < pick.df || p.df == pick.df && p.evaluatedOrder < pick.evaluatedOrder) {
			pick = p
		}
	}
	return Selection{Sigma: pick.sigma, Gamma: pick.gamma, LOOMSE: pick.mse, SE: pick.se, DF: pick.df,
		BestLOOMSE: best.mse, Evaluated: len(order)}, order, nil
}

// bestPoint is the evaluated point of least leave-one-out error (the
// first evaluated among ties), or nil.
func bestPoint(ps []*looPoint) *looPoint {
	var b *looPoint
	for _, p := range ps {
		if p.ok && (b == nil || p.mse < b.mse) {
			b = p
		}
	}
	return b
}

// looEval evaluates leave-one-out errors of the backscoring map.
type looEval struct {
	z    []float64
	n, m int
	y    []float64 // n×q row-major
	q    int
}

func newLOOEval(z []float64, n, m int, y []float64, q int) *looEval {
	return &looEval{z: z, n: n, m: m, y: slices.Clone(y), q: q}
}

// gram returns the Gaussian kernel matrix of eq. (9) for σ (row-major).
func (e *looEval) gram(sigma float64) []float64 {
	n, m := e.n, e.m
	k := make([]float64, n*n)
	for i := 0; i < n; i++ {
		zi := e.z[i*m : i*m+m]
		k[i*n+i] = 1
		for j := i + 1; j < n; j++ {
			v := gaussian(zi, e.z[j*m:j*m+m], sigma)
			k[i*n+j], k[j*n+i] = v, v
		}
	}
	return k
}

// point evaluates, from the kernel matrix k of σ, the leave-one-out error
// at (σ, γ): the mean over rows and outputs of (C_ir/(A⁻¹)_ii)², its
// standard error over rows, and df = N − (N/γ)·tr(A⁻¹). With the Cholesky
// factor A = UᵀU and its inverse U⁻¹ (LAPACK dpotrf, dtrtri), (A⁻¹)_ii is
// the squared norm of row i of U⁻¹ and C = U⁻¹·(U⁻ᵀ·Y). ok is false when
// A is not numerically positive definite.
func (e *looEval) point(k []float64, sigma, gamma float64) *looPoint {
	n, q := e.n, e.q
	p := &looPoint{sigma: sigma, gamma: gamma}
	ridge := float64(n) / gamma
	a := slices.Clone(k)
	for i := 0; i < n; i++ {
		a[i*n+i] += ridge
	}
	u, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: a})
	if !ok || !lapack64.Trtri(u) {
		return p
	}
	c := blas64.General{Rows: n, Cols: q, Stride: q, Data: slices.Clone(e.y)}
	blas64.Trmm(blas.Left, blas.Trans, 1, u, c)
	blas64.Trmm(blas.Left, blas.NoTrans, 1, u, c)
	var sum, sum2, tr float64
	for i := 0; i < n; i++ {
		var d float64
		for _, x := range a[i*n+i : i*n+n] { // row i of the upper triangle
			d += x * x
		}
		tr += d
		var row float64
		for r := 0; r < q; r++ {
			res := c.Data[i*q+r] / d
			row += res * res
		}
		row /= float64(q)
		sum += row
		sum2 += row * row
	}
	mean := sum / float64(n)
	v := math.Max(sum2/float64(n)-mean*mean, 0)
	p.mse, p.se, p.df = mean, math.Sqrt(v/float64(n)), float64(n)-ridge*tr
	p.ok = !math.IsNaN(mean) && !math.IsInf(mean, 0) && !math.IsNaN(p.df)
	return p
}

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
//
// Out-of-bag selection (SelectBackscoreOOB, the default of Train) scores
// the map where prediction uses it instead: at ẑ_i, the point the forest
// predicts on the embedding for training row i from the trees that did
// not see it (the out-of-bag similarity vector, §2.3.1–2.3.2), against
// y_i. The map is refitted without row i — in closed form, since the
// leave-one-out fit is the full fit with y_i replaced by g₋ᵢ(z_i), so
// C₋ᵢ = C − A⁻¹e_i·(y_i − g₋ᵢ(z_i))ᵀ and
//
//	g₋ᵢ(ẑ_i) = g(ẑ_i) − (k(ẑ_i)ᵀA⁻¹e_i)·C_i/(A⁻¹)_ii,
//
// with k(ẑ_i)ᵀA⁻¹e_i = Σ_j (k(ẑ_i)ᵀU⁻¹)_j·(U⁻¹)_ij. This error is the
// prediction error of the whole dRF pipeline on unseen rows (up to the
// embedding, which saw y_i), so the grid point of least error is chosen,
// without the one-standard-error rule.

// Selection is the outcome of SelectBackscore.
type Selection struct {
	// Sigma and Gamma are the chosen σ_G and γ_G.
	Sigma, Gamma float64
	// MSE is the cross-validated mean squared error of the choice (per
	// response coordinate; leave-one-out or out-of-bag), SE its standard
	// error, DF the map's effective degrees of freedom tr(H).
	MSE, SE, DF float64
	// BestMSE is the smallest cross-validated error on the grid.
	BestMSE float64
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
	sel, _, err := selectBackscore(z, n, m, y, q, nil, sigma, gamma, threads)
	return sel, err
}

// OOBPoints are the out-of-bag points of SelectBackscoreOOB: Z (len(Rows)×m
// row-major) is where the forest puts training row Rows[k] on the
// embedding when only the trees that did not see it vote.
type OOBPoints struct {
	Rows []int32
	Z    []float64
}

// SelectBackscoreOOB is SelectBackscore scored out of bag: the error of
// the map refitted without row Rows[k] at the point oob.Z[k] against that
// row's response, and the grid point of least error is chosen (see the
// comment at the top of this file). At least 3 points are needed.
func SelectBackscoreOOB(z []float64, n, m int, y []float64, q int, oob OOBPoints, sigma, gamma float64, threads int) (Selection, error) {
	if len(oob.Rows) < 3 || len(oob.Z) != len(oob.Rows)*m {
		return Selection{}, fmt.Errorf("manifold: selecting sigma_g and gamma_g out of bag: %d points with %d coordinates (need at least 3 points of dimension %d)", len(oob.Rows), len(oob.Z), m)
	}
	for _, r := range oob.Rows {
		if r < 0 || int(r) >= n {
			return Selection{}, fmt.Errorf("manifold: out-of-bag row %d outside 0..%d", r, n-1)
		}
	}
	sel, _, err := selectBackscore(z, n, m, y, q, &oob, sigma, gamma, threads)
	return sel, err
}

// selectBackscore is SelectBackscore (oob nil) or SelectBackscoreOOB that
// also returns the points evaluated, in evaluation order.
func selectBackscore(z []float64, n, m int, y []float64, q int, oob *OOBPoints, sigma, gamma float64, threads int) (Selection, []*looPoint, error) {
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
	ev.oob = oob
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
		if oob == nil && p.ok && p.mse <= best.mse+best.se && (p.df < pick.df || p.df == pick.df && p.evaluatedOrder < pick.evaluatedOrder) {
			pick = p
		}
	}
	return Selection{Sigma: pick.sigma, Gamma: pick.gamma, MSE: pick.mse, SE: pick.se, DF: pick.df,
		BestMSE: best.mse, Evaluated: len(order)}, order, nil
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

// looEval evaluates leave-one-out (or, with oob, out-of-bag) errors of
// the backscoring map.
type looEval struct {
	z    []float64
	n, m int
	y    []float64 // n×q row-major
	q    int
	oob  *OOBPoints
}

// kernels are the Gaussian kernel matrices of one σ: k (N×N) between the
// training points, ko (len(oob.Rows)×N) from the out-of-bag points to them.
type kernels struct{ k, ko []float64 }

func newLOOEval(z []float64, n, m int, y []float64, q int) *looEval {
	return &looEval{z: z, n: n, m: m, y: slices.Clone(y), q: q}
}

// gram returns the Gaussian kernel matrices of eq. (9) for σ (row-major).
func (e *looEval) gram(sigma float64) kernels {
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
	var ko []float64
	if e.oob != nil {
		no := len(e.oob.Rows)
		ko = make([]float64, no*n)
		for o := 0; o < no; o++ {
			zo := e.oob.Z[o*m : o*m+m]
			for j := 0; j < n; j++ {
				ko[o*n+j] = gaussian(zo, e.z[j*m:j*m+m], sigma)
			}
		}
	}
	return kernels{k: k, ko: ko}
}

// point evaluates, from the kernel matrices of σ, the cross-validated
// error at (σ, γ): the mean over rows and outputs of the squared
// leave-one-out residuals (C_ir/(A⁻¹)_ii)² — or, with out-of-bag points,
// of y_ir − g₋ᵢ(ẑ_i)_r (oobResiduals) —, its standard error over rows, and
// df = N − (N/γ)·tr(A⁻¹). With the Cholesky factor A = UᵀU and its inverse
// U⁻¹ (LAPACK dpotrf, dtrtri), (A⁻¹)_ii is the squared norm of row i of
// U⁻¹ and C = U⁻¹·(U⁻ᵀ·Y). ok is false when A is not numerically positive
// definite.
func (e *looEval) point(ks kernels, sigma, gamma float64) *looPoint {
	n, q := e.n, e.q
	p := &looPoint{sigma: sigma, gamma: gamma}
	ridge := float64(n) / gamma
	a := slices.Clone(ks.k)
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
	// diag[i] = (A⁻¹)_ii, the squared norm of row i of U⁻¹ (upper triangle)
	diag := make([]float64, n)
	var tr float64
	for i := 0; i < n; i++ {
		var d float64
		for _, x := range a[i*n+i : i*n+n] {
			d += x * x
		}
		diag[i] = d
		tr += d
	}
	var rows []float64 // per-row mean squared residual over the q outputs
	if e.oob == nil {
		rows = make([]float64, n)
		for i := 0; i < n; i++ {
			var row float64
			for r := 0; r < q; r++ {
				res := c.Data[i*q+r] / diag[i]
				row += res * res
			}
			rows[i] = row / float64(q)
		}
	} else {
		rows = e.oobResiduals(ks.ko, u, c, diag)
	}
	var sum, sum2 float64
	for _, row := range rows {
		sum += row
		sum2 += row * row
	}
	nr := float64(len(rows))
	mean := sum / nr
	v := math.Max(sum2/nr-mean*mean, 0)
	p.mse, p.se, p.df = mean, math.Sqrt(v/nr), float64(n)-ridge*tr
	p.ok = !math.IsNaN(mean) && !math.IsInf(mean, 0) && !math.IsNaN(p.df)
	return p
}

// oobResiduals returns, per out-of-bag point k of training row i, the mean
// over outputs of (y_ir − g₋ᵢ(ẑ_k)_r)², with g₋ᵢ(ẑ) = g(ẑ) −
// (k(ẑ)ᵀA⁻¹e_i)·C_i/(A⁻¹)_ii (see the top of this file). ko is the
// out-of-bag kernel matrix, uinv = U⁻¹ (upper), c = C, diag the (A⁻¹)_ii.
func (e *looEval) oobResiduals(ko []float64, uinv blas64.Triangular, c blas64.General, diag []float64) []float64 {
	n, q := e.n, e.q
	no := len(e.oob.Rows)
	kg := blas64.General{Rows: no, Cols: n, Stride: n, Data: ko}
	g := blas64.General{Rows: no, Cols: q, Stride: q, Data: make([]float64, no*q)}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, kg, c, 0, g) // g(ẑ_k) = k(ẑ_k)ᵀC
	ku := blas64.General{Rows: no, Cols: n, Stride: n, Data: slices.Clone(ko)}
	blas64.Trmm(blas.Right, blas.NoTrans, 1, uinv, ku) // k(ẑ_k)ᵀU⁻¹
	out := make([]float64, no)
	for k, i := range e.oob.Rows {
		// s = k(ẑ_k)ᵀA⁻¹e_i = Σ_{j≥i} (k(ẑ_k)ᵀU⁻¹)_j·(U⁻¹)_ij
		var s float64
		urow := uinv.Data[int(i)*n : int(i)*n+n]
		kurow := ku.Data[k*n : k*n+n]
		for j := int(i); j < n; j++ {
			s += kurow[j] * urow[j]
		}
		var row float64
		for r := 0; r < q; r++ {
			pred := g.Data[k*q+r] - s*c.Data[int(i)*q+r]/diag[i]
			res := e.y[int(i)*q+r] - pred
			row += res * res
		}
		out[k] = row / float64(q)
	}
	return out
}

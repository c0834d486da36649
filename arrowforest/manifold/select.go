package manifold

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/gonum"
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
// since Y − K·C = (N/γ)·C and 1 − H_ii = (N/γ)·(A⁻¹)_ii.
// Among the grid points whose leave-one-out error is within one standard
// error of the smallest, the smoothest — fewest effective degrees of
// freedom df = tr(H) = N − (N/γ)·tr(A⁻¹) (ESL §5.4.1, §7.6) — is chosen:
// the one-standard-error rule (ESL §7.10; Breiman et al. 1984), because
// the embedding z_i of a noisy response carries its noise along the
// manifold, which rewards maps that follow the noise.
//
// Out-of-bag selection (selectBackscoreOOB, the default of Train) scores
// the map where prediction uses it instead: at ẑ_i, the point the forest
// predicts on the embedding for training row i from the trees that did
// not see it (the out-of-bag similarity vector, §2.3.1–2.3.2), against
// y_i. The map is refitted without row i — in closed form, since the
// leave-one-out fit is the full fit with y_i replaced by g₋ᵢ(z_i), so
// C₋ᵢ = C − A⁻¹e_i·(y_i − g₋ᵢ(z_i))ᵀ and
//
//	g₋ᵢ(ẑ_i) = g(ẑ_i) − (k(ẑ_i)ᵀA⁻¹e_i)·C_i/(A⁻¹)_ii,
//
// This error is the prediction error of the whole dRF pipeline on unseen
// rows (up to the embedding, which saw y_i), so the grid point of least
// error is chosen, without the one-standard-error rule.
//
// Cost. A factorisation of A per grid point costs O(N³) (a Cholesky
// factorisation, the inverse of its factor for (A⁻¹)_ii and an
// N_oob×N×N product for k(ẑ_i)ᵀA⁻¹e_i). But γ enters A only as the shift
// N/γ of K, which a similarity transformation leaves alone: once per σ, K
// is reduced to tridiagonal form K = Q·T·Qᵀ (Householder, O(N³)) and
// P = K_oob·Q formed (O(N_oob·N²)); then every γ costs O(N²) — an LDLᵀ
// factorisation of the tridiagonal T + (N/γ)·I and solves with it
// (looEval.point). Tridiagonal rather than diagonal (the eigendecomposition
// K = V·Λ·Vᵀ, with which (A⁻¹)_ii = Σ_j V_ij²/(λ_j + N/γ)) because the
// reduction is the first of the eigensolver's three steps and about half
// its time (gonum's dsytrd + dorgtr against dsyev, N = 1000: 0.49 s
// against 1.0 s), while the extra O(N²) solve per γ is small. The errors
// equal the Cholesky computation's to rounding (select_ref_test.go).

// Selection is the outcome of selectBackscoreRef.
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

// Grids of selectBackscoreRef: σ_G = s·2^k for k in sigmaExponents, s the
// median squared distance between embedded training responses (the scale
// of ‖v − w‖² in eq. (9)); γ_G = 10^(j/2) for j in gammaHalfDecades.
var (
	sigmaExponents   = [...]int{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2}
	gammaHalfDecades = [...]int{-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
)

// looPoint is one evaluated grid point.
type looPoint struct {
	si, gi         int // grid indices
	sigma, gamma   float64
	mse, se, df    float64
	ok             bool
	evaluatedOrder int
}

// selectBackscoreRef chooses σ_G and γ_G of eqs. (8)–(9) by leave-one-out
// cross-validation of the map from the N×m embedding z to the N×q
// responses y (row-major; the caller centres y when the map has an
// offset). A positive sigma or gamma is kept fixed and only the other is
// searched. The search evaluates every other point of the grid first and
// then the neighbours of the best; the one-standard-error rule picks among
// all points evaluated. Up to threads σ's are evaluated at once, each
// reducing its kernel matrix once for all its γ's (memory per thread:
// 16·N² bytes for Qᵀ and a solve, and 8·N·N_oob for P out of bag; one
// more σ's Qᵀ and P are kept for the fine pass); the result does not
// depend on threads.
func selectBackscoreRef(z []float64, n, m int, y []float64, q int, sigma, gamma float64, threads int) (Selection, error) {
	sel, _, err := selectBackscore(z, n, m, y, q, nil, sigma, gamma, threads)
	return sel, err
}

// oobPointSet are the out-of-bag points of selectBackscoreOOB: Z (len(Rows)×m
// row-major) is where the forest puts training row Rows[k] on the
// embedding when only the trees that did not see it vote.
type oobPointSet struct {
	Rows []int32
	Z    []float64
}

// selectBackscoreOOB is selectBackscoreRef scored out of bag: the error of
// the map refitted without row Rows[k] at the point oob.Z[k] against that
// row's response, and the grid point of least error is chosen (see the
// comment at the top of this file). At least 3 points are needed.
func selectBackscoreOOB(z []float64, n, m int, y []float64, q int, oob oobPointSet, sigma, gamma float64, threads int) (Selection, error) {
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

// selectBackscore is selectBackscoreRef (oob nil) or selectBackscoreOOB that
// also returns the points evaluated, in evaluation order.
func selectBackscore(z []float64, n, m int, y []float64, q int, oob *oobPointSet, sigma, gamma float64, threads int) (Selection, []*looPoint, error) {
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
		for _, k := range sigmaExponents {
			sigmas = append(sigmas, math.Ldexp(s, k))
		}
	}
	gammas := []float64{gamma}
	if gamma == 0 {
		gammas = gammas[:0]
		for _, j := range gammaHalfDecades {
			gammas = append(gammas, math.Pow(10, float64(j)/2))
		}
	}
	ev := newLOOEval(z, n, m, y, q)
	ev.oob = oob
	done := map[[2]int]*looPoint{}
	var order []*looPoint
	// kept holds the kernels of the σ of the least error so far: the fine
	// pass evaluates more γ's of that σ. It saves time only; what is
	// evaluated does not depend on it.
	var (
		mu     sync.Mutex
		kept   *kernels
		keptSI = -1
		keptP  *looPoint
	)
	run := func(idx [][2]int) {
		var todo [][2]int
		for _, ij := range idx {
			if ij[0] >= 0 && ij[0] < len(sigmas) && ij[1] >= 0 && ij[1] < len(gammas) && done[ij] == nil && !slices.Contains(todo, ij) {
				todo = append(todo, ij)
			}
		}
		// groups of one σ (todo lists each σ's points together)
		var groups [][2]int // [lo, hi) in todo
		for lo := 0; lo < len(todo); {
			hi := lo
			for hi < len(todo) && todo[hi][0] == todo[lo][0] {
				hi++
			}
			groups = append(groups, [2]int{lo, hi})
			lo = hi
		}
		res := make([]*looPoint, len(todo))
		// up to threads σ's at once; each builds its kernels once and
		// evaluates its γ's in turn
		parallelRows(len(groups), threads, func(g int) {
			lo, hi := groups[g][0], groups[g][1]
			si := todo[lo][0]
			mu.Lock()
			ks := kept
			if keptSI != si {
				ks = nil
			}
			mu.Unlock()
			if ks == nil {
				k := ev.gram(sigmas[si])
				ks = &k
			}
			var gb *looPoint // this σ's best, by bestPoint's rule
			for t := lo; t < hi; t++ {
				ij := todo[t]
				p := ev.point(*ks, sigmas[si], gammas[ij[1]])
				p.si, p.gi, p.evaluatedOrder = ij[0], ij[1], len(order)+t
				res[t] = p
				if p.ok && (gb == nil || p.mse < gb.mse) {
					gb = p
				}
			}
			mu.Lock()
			if gb != nil && (keptP == nil || gb.mse < keptP.mse || gb.mse == keptP.mse && gb.evaluatedOrder < keptP.evaluatedOrder) {
				kept, keptSI, keptP = ks, si, gb
			}
			mu.Unlock()
		})
		for k, ij := range todo {
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
	yt   []float64 // yᵀ, q×n
	q    int
	oob  *oobPointSet
}

// kernels is what the error at any γ of one σ needs: the Gaussian kernel
// matrix of eq. (9) reduced to tridiagonal form, K = Q·T·Qᵀ, and the
// products of Q with the responses and the out-of-bag kernel matrix.
type kernels struct {
	qt   []float64 // Qᵀ, N×N row-major
	d, e []float64 // T's diagonal (N) and off-diagonal (N−1)
	w    []float64 // QᵀY, N×q
	pt   []float64 // Qᵀ·K_oobᵀ = (K_oob·Q)ᵀ, N×len(oob.Rows); nil without out-of-bag points
	no   int       // out-of-bag points
}

func newLOOEval(z []float64, n, m int, y []float64, q int) *looEval {
	yt := make([]float64, q*n)
	for i := 0; i < n; i++ {
		for r := 0; r < q; r++ {
			yt[r*n+i] = y[i*q+r]
		}
	}
	return &looEval{z: z, n: n, m: m, y: slices.Clone(y), yt: yt, q: q}
}

// gram builds the Gaussian kernel matrices of eq. (9) for σ — K (N×N)
// between the training points and K_oob (len(oob.Rows)×N) from the
// out-of-bag points to them — and reduces K to tridiagonal form by
// Householder reflections (LAPACK dsytrd, dorgtr: Golub & Van Loan,
// Matrix Computations, 4th ed., §8.3.1), about 8N³/3 flops once per σ.
func (e *looEval) gram(sigma float64) kernels {
	n, m, q := e.n, e.m, e.q
	a := make([]float64, n*n) // upper triangle of K; dsytrd reads no other
	for i := 0; i < n; i++ {
		zi := e.z[i*m : i*m+m]
		a[i*n+i] = 1
		for j := i + 1; j < n; j++ {
			a[i*n+j] = gaussian(zi, e.z[j*m:j*m+m], sigma)
		}
	}
	var impl gonum.Implementation
	ks := kernels{d: make([]float64, n), e: make([]float64, n-1)}
	tau := make([]float64, n-1)
	work := []float64{0}
	impl.Dsytrd(blas.Upper, n, a, n, ks.d, ks.e, tau, work, -1)
	lwork := int(work[0])
	impl.Dorgtr(blas.Upper, n, a, n, tau, work, -1)
	lwork = max(lwork, int(work[0]), 1)
	work = make([]float64, lwork)
	impl.Dsytrd(blas.Upper, n, a, n, ks.d, ks.e, tau, work, lwork)
	impl.Dorgtr(blas.Upper, n, a, n, tau, work, lwork)
	for i := 0; i < n; i++ { // a = Q → Qᵀ in place
		for j := i + 1; j < n; j++ {
			a[i*n+j], a[j*n+i] = a[j*n+i], a[i*n+j]
		}
	}
	ks.qt = a
	ks.w = make([]float64, n*q) // QᵀY
	for j := 0; j < n; j++ {
		for r := 0; r < q; r++ {
			ks.w[j*q+r] = floats.Dot(a[j*n:j*n+n], e.yt[r*n:r*n+n])
		}
	}
	if e.oob != nil {
		no := len(e.oob.Rows)
		kot := make([]float64, n*no) // K_oobᵀ
		for j := 0; j < n; j++ {
			zj := e.z[j*m : j*m+m]
			for o := 0; o < no; o++ {
				kot[j*no+o] = gaussian(e.oob.Z[o*m:o*m+m], zj, sigma)
			}
		}
		pt := blas64.General{Rows: n, Cols: no, Stride: no, Data: make([]float64, n*no)}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: n, Cols: n, Stride: n, Data: a},
			blas64.General{Rows: n, Cols: no, Stride: no, Data: kot}, 0, pt)
		ks.pt, ks.no = pt.Data, no
	}
	return ks
}

// point evaluates, from the tridiagonal form of σ's kernel matrix, the
// cross-validated error at (σ, γ): the mean over rows and outputs of the
// squared leave-one-out residuals (C_ir/(A⁻¹)_ii)² — or, with out-of-bag
// points, of y_ir − g₋ᵢ(ẑ_i)_r (oobResiduals) —, its standard error over
// rows, and df = N − (N/γ)·tr(A⁻¹).
//
// A = K + (N/γ)·I = Q·(T + (N/γ)·I)·Qᵀ: the shift leaves Q alone, so each
// γ costs one LDLᵀ factorisation of the tridiagonal T + (N/γ)·I (LAPACK
// dpttrf, O(N)) and solves with it: X = (T + (N/γ)·I)⁻¹·Qᵀ (N right-hand
// sides, O(N²)), whence A⁻¹ = Q·X, (A⁻¹)_ii = Σ_j Q_ij·X_ji and
// C = A⁻¹·Y = Q·((T + (N/γ)·I)⁻¹·QᵀY). T + (N/γ)·I is similar to A,
// which is symmetric positive definite (K is positive semi-definite: the
// Gaussian kernel is positive definite), so the factorisation needs no
// pivoting and is backward stable (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., §9.5); nothing is clamped. ok is false
// when a pivot is not positive, which happens only when N/γ is below the
// rounding level of K (ε·‖K‖), as a Cholesky factorisation of A would
// fail there too.
func (e *looEval) point(ks kernels, sigma, gamma float64) *looPoint {
	n, q := e.n, e.q
	p := &looPoint{sigma: sigma, gamma: gamma}
	ridge := float64(n) / gamma
	var impl gonum.Implementation
	d := make([]float64, n)
	for i, v := range ks.d {
		d[i] = v + ridge
	}
	off := slices.Clone(ks.e)
	if !impl.Dpttrf(n, d, off) {
		return p
	}
	x := slices.Clone(ks.qt)
	impl.Dpttrs(n, n, d, off, x, n)
	wp := slices.Clone(ks.w)
	impl.Dpttrs(n, q, d, off, wp, q)
	// diag[i] = (A⁻¹)_ii = Σ_j (Qᵀ)_ji·X_ji
	diag := make([]float64, n)
	for j := 0; j < n; j++ {
		qr, xr := ks.qt[j*n:j*n+n], x[j*n:j*n+n]
		for i := range diag {
			diag[i] += qr[i] * xr[i]
		}
	}
	var tr float64
	for _, v := range diag {
		tr += v
	}
	// Cᵀ = (Q·W)ᵀ, W = (T + (N/γ)·I)⁻¹·QᵀY (q×N: long rows for the BLAS)
	ct := blas64.General{Rows: q, Cols: n, Stride: n, Data: make([]float64, q*n)}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: n, Cols: q, Stride: q, Data: wp},
		blas64.General{Rows: n, Cols: n, Stride: n, Data: ks.qt}, 0, ct)
	var rows []float64 // per-row mean squared residual over the q outputs
	if e.oob == nil {
		rows = make([]float64, n)
		for i := 0; i < n; i++ {
			var row float64
			for r := 0; r < q; r++ {
				res := ct.Data[r*n+i] / diag[i]
				row += res * res
			}
			rows[i] = row / float64(q)
		}
	} else {
		rows = e.oobResiduals(ks, x, wp, ct.Data, diag)
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
// (k(ẑ)ᵀA⁻¹e_i)·C_i/(A⁻¹)_ii (see the top of this file). With
// P = K_oob·Q (ks.pt holds Pᵀ), X = (T + (N/γ)·I)⁻¹·Qᵀ and
// W = (T + (N/γ)·I)⁻¹·QᵀY (wp): g(ẑ_k) = k(ẑ_k)ᵀC = (P·W)_k and
// k(ẑ_k)ᵀA⁻¹e_i = Σ_j P_kj·X_ji. ct = Cᵀ (q×N), diag the (A⁻¹)_ii.
func (e *looEval) oobResiduals(ks kernels, x, wp, ct, diag []float64) []float64 {
	n, q, no := e.n, e.q, ks.no
	gt := blas64.General{Rows: q, Cols: no, Stride: no, Data: make([]float64, q*no)} // g(ẑ_k)ᵀ
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: n, Cols: q, Stride: q, Data: wp},
		blas64.General{Rows: n, Cols: no, Stride: no, Data: ks.pt}, 0, gt)
	s := make([]float64, no) // s_k = k(ẑ_k)ᵀA⁻¹e_i
	for j := 0; j < n; j++ {
		pr, xr := ks.pt[j*no:j*no+no], x[j*n:j*n+n]
		for k, i := range e.oob.Rows {
			s[k] += pr[k] * xr[i]
		}
	}
	out := make([]float64, no)
	for k, i := range e.oob.Rows {
		var row float64
		for r := 0; r < q; r++ {
			pred := gt.Data[r*no+k] - s[k]*ct[r*n+int(i)]/diag[i]
			res := e.y[int(i)*q+r] - pred
			row += res * res
		}
		out[k] = row / float64(q)
	}
	return out
}

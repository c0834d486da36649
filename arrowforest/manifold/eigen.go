package manifold

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Partial symmetric eigen-solver for classical MDS (dRF paper §2.3.2):
// only the m largest eigenpairs of the doubly centred N×N matrix K are
// needed, and m (2..25) is far below N (up to Options.MaxRows = 2000),
// so a Krylov method replaces the full dense decomposition.
//
// Method: block Lanczos (Lanczos 1950; the block form of Golub & Underwood
// 1977) with full reorthogonalisation and Rayleigh–Ritz on the projected
// block-tridiagonal matrix, as in Golub & Van Loan, Matrix Computations,
// 4th ed., §10.1 (Krylov subspaces and the Lanczos process), §10.2
// (convergence of the extremal Ritz values) and §10.3 (practical
// procedures: full reorthogonalisation, block Lanczos). The Krylov space
// simply grows — no restarts — until the m largest Ritz pairs converge or
// a step budget is spent (eigBudget); K is dense, so one (block) product
// with it costs 2·N²·b flops and dominates everything else while the
// space stays well below N.
//
//   - Blocks of b = 4 vectors: a single-vector Krylov space holds, in
//     exact arithmetic, one vector of each eigenspace, so an eigenvalue of
//     multiplicity 2 — the cos/sin pairs of responses on a circle, for
//     instance — would be found once and a smaller one returned in its
//     place, with a small residual. A block of b random start vectors
//     captures multiplicities up to b. When b or more of the wanted Ritz
//     values coincide (to 10× the convergence tolerance) and a smaller one
//     is wanted after them, copies could be missing and the full solver
//     is used instead (clusterRisk). Blocks also read K once per b
//     products.
//   - Full reorthogonalisation by classical Gram–Schmidt applied twice
//     (Kahan's "twice is enough", in Parlett, The Symmetric Eigenvalue
//     Problem): every new Lanczos vector is made orthogonal to the whole
//     basis, so no spurious copies of converged Ritz values appear. A new
//     vector that the second pass shrinks by more than 1/√2, or that
//     vanishes, lies numerically in the basis (an invariant subspace was
//     found, e.g. the range of a low-rank K); it is replaced by a fresh
//     random vector orthogonal to the basis with a zero coupling
//     coefficient, so the Krylov space keeps growing.
//   - Convergence: for a Ritz pair (θ, Q·s) of the space of blocks 1..j,
//     A·Q·s − θ·Q·s = Q_{j+1}·B_j·s_j (s_j the last block of s, B_j the
//     coupling to block j+1), so its residual norm is ‖B_j·s_j‖, the
//     Lanczos residual estimate (GVL §10.1, in block form). A pair is
//     converged when this is at most eigTol·‖A‖, with ‖A‖ estimated from
//     below by the largest |Ritz value| and ‖A·q‖ seen. Some eigenvalue
//     lies within the residual norm of θ (Kahan's residual bound), and
//     O(ε·‖A‖) is the floor any backward stable method reaches; 1e-10·‖A‖
//     leaves five decades above it. In the MDS case K's largest
//     eigenvalue is also its largest in magnitude, and this is the
//     1e-10·|θ_1| bound; when a negative eigenvalue dominates, the bound
//     is relative to it, as the floor is. The converged pairs are then
//     verified explicitly with one product by A per vector.
//   - Largest algebraic eigenvalues: the Ritz values are sorted and the
//     top m taken. By Cauchy interlacing the i-th largest Ritz value
//     never exceeds λ_i, so a large negative eigenvalue (a non-Euclidean
//     Isomap distance) can only appear at the bottom of the Ritz
//     spectrum, never among the m returned.
//   - Determinism: the start block (and any replacement vector) is drawn
//     from a fixed-seed PCG stream; the products with A and the
//     Gram–Schmidt dot products and updates are split across goroutines
//     with each output element one goroutine's sum in a fixed order, and
//     everything else runs serially, so the result is bit-identical at
//     any thread count.

const (
	// eigTol is the convergence bound of a Ritz pair's residual
	// relative to ‖A‖ (see above).
	eigTol = 1e-10
	// eigFullN: at or below this order the full solver is used.
	eigFullN = 64
	// eigSeed1, eigSeed2 seed the start block.
	eigSeed1, eigSeed2 = 0x6d6473, 0x6c616e637a6f73
)

// eigBlock is the block size b: multiplicities up to 4 are captured, and
// four products per pass over K were the fastest of b = 1…8 on swiss-roll
// Isomap matrices (N = 1000, 2000; m = 2, 10, 25).
const eigBlock = 4

// eigBudget is the largest Krylov dimension tried for m wanted pairs of
// an n×n matrix with block size b, a multiple of b; 0 means the partial
// solver is not worth it and the full one is used. The budget is
// 8·m + 200 — swiss-roll Isomap matrices converge by about 6·m + 20 —
// and at most n/2: the basis costs n·k numbers, reorthogonalisation
// O(n·k²) and each Ritz step O(k³) (done at geometrically spaced k), so
// past n/2 the dense decomposition is as cheap. The partial solver is
// used when n > 64 and the budget leaves room for 2·m + 2·b vectors,
// i.e. m ≤ n/4 − b.
func eigBudget(n, m, b int) int {
	if n <= eigFullN {
		return 0
	}
	k := min(8*m+200, n/2)
	k -= k % b
	if k < 2*m+2*b {
		return 0
	}
	return k
}

// topEigenSym returns the m largest (algebraic) eigenvalues of the
// symmetric n×n row-major matrix a, descending, and unit eigenvectors:
// vecs[l*n:(l+1)*n] belongs to vals[l]. ok is false when the partial
// solver is not used (eigBudget), does not converge within its budget, or
// refuses a cluster (clusterRisk); the caller then uses the full
// decomposition. a is read as a full matrix and must be symmetric; it is
// not modified.
func topEigenSym(a []float64, n, m, threads int) (vals, vecs []float64, ok bool) {
	if m < 1 || m > n || len(a) != n*n {
		return nil, nil, false
	}
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	b := eigBlock
	kmax := eigBudget(n, m, b)
	if kmax == 0 {
		return nil, nil, false
	}
	vals, vecs, _, stop := lanczosTop(a, n, m, b, kmax, threads)
	return vals, vecs, stop == lanczosConverged
}

// lanczos is the state of one block Lanczos run.
type lanczos struct {
	a       []float64
	n, b    int
	threads int
	q       [][]float64 // orthonormal basis, block j is q[j*b:(j+1)*b]
	h       []float64   // projected matrix, ld×ld row-major, leading k×k used
	ld      int
	rng     *rand.Rand
	x, y    []float64 // n×b interleaved product buffers
	anorm   float64   // running lower bound of ‖A‖: max ‖A·q‖
	coef    []float64 // Gram–Schmidt scratch
}

// lanczosStop says why lanczosTop stopped.
type lanczosStop int

const (
	lanczosConverged lanczosStop = iota
	lanczosBudget                // kmax reached without convergence
	lanczosCluster               // a cluster of ≥ b wanted values (see clusterRisk)
	lanczosFailed                // the projected problem failed or is not finite
)

func newLanczos(a []float64, n, b, kmax, threads int) *lanczos {
	lz := &lanczos{
		a: a, n: n, b: b, threads: threads,
		ld: kmax + b, rng: rand.New(rand.NewPCG(eigSeed1, eigSeed2)),
		x: make([]float64, n*b), y: make([]float64, n*b),
		coef: make([]float64, kmax+b),
	}
	lz.h = make([]float64, lz.ld*lz.ld)
	for c := 0; c < b; c++ {
		lz.appendRandom()
	}
	return lz
}

// lanczosTop runs block Lanczos with block size b up to a Krylov dimension
// kmax (a multiple of b, kmax+b ≤ n); k is the dimension it stopped at.
// The first Ritz step is at k = 2·m + 20 (rounded up to blocks), later
// ones each k/8 further, so the O(k³) Ritz steps cost a fixed multiple
// of the last one.
func lanczosTop(a []float64, n, m, b, kmax, threads int) (vals, vecs []float64, k int, stop lanczosStop) {
	lz := newLanczos(a, n, b, kmax, threads)
	next := min(kmax, roundUp(2*m+20, b))
	for j := 0; ; j++ {
		lz.extend(j)
		k = (j + 1) * b
		if k < next {
			continue
		}
		theta, s, res, ok := lz.ritz(k, m)
		if !ok {
			return nil, nil, k, lanczosFailed
		}
		tol := eigTol * lz.normEstimate(theta)
		conv := true
		for _, r := range res {
			conv = conv && r <= tol
		}
		if conv {
			if clusterRisk(theta, m, b, tol) {
				return nil, nil, k, lanczosCluster
			}
			if vals, vecs, ok := lz.verify(k, m, theta, s, tol); ok {
				return vals, vecs, k, lanczosConverged
			}
		}
		if k >= kmax {
			return nil, nil, k, lanczosBudget
		}
		next = min(kmax, roundUp(k+max(k/8, 2*b), b))
	}
}

func roundUp(k, b int) int { return (k + b - 1) / b * b }

// clusterRisk reports whether b or more Ritz values (theta ascending) lie
// within 10·tol of each other and a smaller one is still among the m
// wanted. A block Krylov space from b start vectors holds at most b
// vectors of an eigenspace (exactly so for an exact multiple eigenvalue,
// numerically so for a cluster tighter than the convergence tolerance),
// so further copies may be missing and that smaller value may not be
// among the m largest eigenvalues. A cluster that reaches to the end of
// the wanted list is harmless: any missing copy has the same eigenvalue
// as the ones found (the null space of a low-rank K, for instance).
func clusterRisk(theta []float64, m, b int, tol float64) bool {
	k := len(theta)
	d := 10 * tol
	for i := 0; i < m; i++ { // i-th largest: theta[k-1-i]
		top := theta[k-1-i]
		j := i
		for j+1 < k && top-theta[k-2-j] <= d {
			j++
		}
		if j-i+1 >= b && j+1 < m {
			return true
		}
	}
	return false
}

// appendRandom appends a normal random vector orthogonalised against the
// basis (twice) and normalised; a draw that falls into the span is
// redrawn.
func (lz *lanczos) appendRandom() {
	v := make([]float64, lz.n)
	for {
		for i := range v {
			v[i] = lz.rng.NormFloat64()
		}
		r0 := floats.Norm(v, 2)
		r1, r2 := lz.orthogonalise(v, nil)
		if r2 > 0.5*r1 && r2 > 1e-8*r0 {
			floats.Scale(1/r2, v)
			lz.q = append(lz.q, v)
			return
		}
	}
}

// orthogonalise makes v orthogonal to the whole basis by classical
// Gram–Schmidt applied twice; coef (len(q), or nil) receives the summed
// projection coefficients. It returns ‖v‖ after the first and the second
// pass.
func (lz *lanczos) orthogonalise(v, coef []float64) (r1, r2 float64) {
	k := len(lz.q)
	c := lz.coef[:k]
	if coef != nil {
		clear(coef[:k])
	}
	for pass := 0; pass < 2; pass++ {
		lz.parallel(k, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				c[t] = floats.Dot(lz.q[t], v)
			}
		})
		lz.parallel(lz.n, func(lo, hi int) {
			vs := v[lo:hi]
			for t, ct := range c {
				for i, qi := range lz.q[t][lo:hi] {
					vs[i] -= ct * qi
				}
			}
		})
		if coef != nil {
			for t, ct := range c {
				coef[t] += ct
			}
		}
		if pass == 0 {
			r1 = floats.Norm(v, 2)
		} else {
			r2 = floats.Norm(v, 2)
		}
	}
	return r1, r2
}

// extend multiplies block j by A, orthogonalises the b products against
// the basis and each other, appends block j+1 and fills block column j of
// the projected matrix: diagonal block A_j = Q_jᵀ·A·Q_j (symmetrised) and
// the coupling B_j below it (and B_jᵀ above).
func (lz *lanczos) extend(j int) {
	n, b, ld := lz.n, lz.b, lz.ld
	blk := lz.q[j*b : (j+1)*b]
	for i := 0; i < n; i++ {
		for c, v := range blk {
			lz.x[i*b+c] = v[i]
		}
	}
	lz.matmul(lz.x, lz.y, b)
	coef := make([]float64, len(lz.q)+b)
	w := make([]float64, n)
	k0 := j * b // first column of block j
	k1 := k0 + b
	for c := 0; c < b; c++ {
		for i := range w {
			w[i] = lz.y[i*b+c]
		}
		lz.anorm = max(lz.anorm, floats.Norm(w, 2))
		r1, r2 := lz.orthogonalise(w, coef)
		// diagonal block: coefficients on block j
		for c2 := 0; c2 < b; c2++ {
			lz.h[(k0+c2)*ld+k0+c] = coef[k0+c2]
		}
		// coupling: coefficients on the new block's earlier columns
		for c2 := 0; c2 < c; c2++ {
			lz.h[(k1+c2)*ld+k0+c] = coef[k1+c2]
		}
		if r2 < r1/math.Sqrt2 || r2 <= 1e-14*lz.anorm {
			// numerically in the span: an invariant subspace; deflate
			lz.h[(k1+c)*ld+k0+c] = 0
			lz.appendRandom()
			continue
		}
		lz.h[(k1+c)*ld+k0+c] = r2
		floats.Scale(1/r2, w)
		lz.q = append(lz.q, w)
		w = make([]float64, n)
	}
	// symmetrise A_j; mirror B_j above the diagonal
	for r := 0; r < b; r++ {
		for c := r + 1; c < b; c++ {
			s := 0.5 * (lz.h[(k0+r)*ld+k0+c] + lz.h[(k0+c)*ld+k0+r])
			lz.h[(k0+r)*ld+k0+c], lz.h[(k0+c)*ld+k0+r] = s, s
		}
		for c := 0; c < b; c++ {
			lz.h[(k0+c)*ld+k1+r] = lz.h[(k1+r)*ld+k0+c]
		}
	}
}

// ritz solves the k×k projected problem: theta ascending, s (k×k) with
// the Ritz vectors' coordinates in its columns, and res the Lanczos
// residual estimates ‖B_j·s_j‖ of the m largest pairs, largest first. ok
// is false when the projected problem failed or is not finite.
func (lz *lanczos) ritz(k, m int) (theta []float64, s *mat.Dense, res []float64, ok bool) {
	hs := mat.NewSymDense(k, nil)
	for r := 0; r < k; r++ {
		for c := r; c < k; c++ {
			hs.SetSym(r, c, lz.h[r*lz.ld+c])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(hs, true) {
		return nil, nil, nil, false
	}
	theta = es.Values(nil)
	for _, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, nil, false
		}
	}
	s = new(mat.Dense)
	es.VectorsTo(s)
	b, ld := lz.b, lz.ld
	k0 := k - b
	res = make([]float64, m)
	for l := range res {
		col := k - 1 - l
		var rr float64
		for r := 0; r < b; r++ {
			var x float64
			for c := 0; c < b; c++ {
				x += lz.h[(k+r)*ld+k0+c] * s.At(k0+c, col)
			}
			rr += x * x
		}
		res[l] = math.Sqrt(rr)
	}
	return theta, s, res, true
}

// normEstimate is the lower bound of ‖A‖₂ the convergence test uses: the
// largest of ‖A·q‖ over the basis and |θ| over the Ritz values.
func (lz *lanczos) normEstimate(theta []float64) float64 {
	return max(lz.anorm, math.Abs(theta[0]), math.Abs(theta[len(theta)-1]))
}

// verify forms the m largest Ritz pairs and checks ‖A·y − θ·y‖ ≤ tol for
// each with one product by A (all m in one pass over A).
func (lz *lanczos) verify(k, m int, theta []float64, s *mat.Dense, tol float64) (vals, vecs []float64, ok bool) {
	n := lz.n
	vals = make([]float64, m)
	vecs = make([]float64, m*n)
	for l := 0; l < m; l++ {
		col := k - 1 - l
		vals[l] = theta[col]
		y := vecs[l*n : (l+1)*n]
		for t := 0; t < k; t++ {
			st := s.At(t, col)
			for i, qi := range lz.q[t] {
				y[i] += st * qi
			}
		}
		floats.Scale(1/floats.Norm(y, 2), y)
	}
	res := lz.residuals(vals, vecs)
	for _, r := range res {
		if !(r <= tol) {
			return nil, nil, false
		}
	}
	return vals, vecs, true
}

// residuals are ‖A·y_l − θ_l·y_l‖ for the pairs (vals[l],
// vecs[l*n:(l+1)*n]), from one product of A with all of them.
func (lz *lanczos) residuals(vals, vecs []float64) []float64 {
	n, m := lz.n, len(vals)
	x := make([]float64, n*m)
	ay := make([]float64, n*m)
	for l := 0; l < m; l++ {
		for i, v := range vecs[l*n : (l+1)*n] {
			x[i*m+l] = v
		}
	}
	lz.matmul(x, ay, m)
	res := make([]float64, m)
	for l := range res {
		var rr float64
		for i := 0; i < n; i++ {
			d := ay[i*m+l] - vals[l]*x[i*m+l]
			rr += d * d
		}
		res[l] = math.Sqrt(rr)
	}
	return res
}

// matmul sets y = A·x for the n×w interleaved blocks x and y (element
// (i, c) at i*w+c), four columns at a time so that a row of A is read
// from memory once and the sums stay in registers. Rows are split across
// the goroutines; each output element is one goroutine's sum in column
// order, so the result does not depend on the thread count.
func (lz *lanczos) matmul(x, y []float64, w int) {
	n, a := lz.n, lz.a
	lz.parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := a[i*n : (i+1)*n]
			c0 := 0
			for ; c0+4 <= w; c0 += 4 {
				var s0, s1, s2, s3 float64
				for j, aij := range row {
					xj := x[j*w+c0 : j*w+c0+4 : j*w+c0+4]
					s0 += aij * xj[0]
					s1 += aij * xj[1]
					s2 += aij * xj[2]
					s3 += aij * xj[3]
				}
				y[i*w+c0], y[i*w+c0+1], y[i*w+c0+2], y[i*w+c0+3] = s0, s1, s2, s3
			}
			for ; c0 < w; c0++ {
				var s0 float64
				for j, aij := range row {
					s0 += aij * x[j*w+c0]
				}
				y[i*w+c0] = s0
			}
		}
	})
}

// parallel runs fn over [0, n) split into contiguous ranges, one per
// goroutine (up to lz.threads; small ranges run inline).
func (lz *lanczos) parallel(n int, fn func(lo, hi int)) {
	t := min(lz.threads, n/64)
	if t <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for g := 0; g < t; g++ {
		lo, hi := g*n/t, (g+1)*n/t
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

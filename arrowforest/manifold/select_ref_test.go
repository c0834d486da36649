package manifold

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// choleskyPoint is the straightforward computation that looEval.point
// replaces, the reference of TestSelectTridiagonalMatchesCholesky: the
// kernel matrices of σ, one Cholesky factorisation A = UᵀU of
// A = K + (N/γ)·I and the inverse of its factor U⁻¹ (LAPACK dpotrf,
// dtrtri): (A⁻¹)_ii is the squared norm of row i of U⁻¹, C = U⁻¹·(U⁻ᵀ·Y),
// and out of bag k(ẑ_k)ᵀA⁻¹e_i = Σ_j (k(ẑ_k)ᵀU⁻¹)_j·(U⁻¹)_ij.
func choleskyPoint(e *looEval, sigma, gamma float64) *looPoint {
	n, m, q := e.n, e.m, e.q
	p := &looPoint{sigma: sigma, gamma: gamma}
	ridge := float64(n) / gamma
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		a[i*n+i] = 1 + ridge
		for j := i + 1; j < n; j++ {
			v := gaussian(e.z[i*m:i*m+m], e.z[j*m:j*m+m], sigma)
			a[i*n+j], a[j*n+i] = v, v
		}
	}
	u, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: a})
	if !ok || !lapack64.Trtri(u) {
		return p
	}
	c := blas64.General{Rows: n, Cols: q, Stride: q, Data: slices.Clone(e.y)}
	blas64.Trmm(blas.Left, blas.Trans, 1, u, c)
	blas64.Trmm(blas.Left, blas.NoTrans, 1, u, c)
	diag := make([]float64, n)
	var tr float64
	for i := 0; i < n; i++ {
		for _, x := range a[i*n+i : i*n+n] {
			diag[i] += x * x
		}
		tr += diag[i]
	}
	var rows []float64
	if e.oob == nil {
		for i := 0; i < n; i++ {
			var row float64
			for r := 0; r < q; r++ {
				res := c.Data[i*q+r] / diag[i]
				row += res * res
			}
			rows = append(rows, row/float64(q))
		}
	} else {
		no := len(e.oob.Rows)
		ku := blas64.General{Rows: no, Cols: n, Stride: n, Data: make([]float64, no*n)}
		for o := 0; o < no; o++ {
			for j := 0; j < n; j++ {
				ku.Data[o*n+j] = gaussian(e.oob.Z[o*m:o*m+m], e.z[j*m:j*m+m], sigma)
			}
		}
		g := blas64.General{Rows: no, Cols: q, Stride: q, Data: make([]float64, no*q)}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ku, c, 0, g)
		blas64.Trmm(blas.Right, blas.NoTrans, 1, u, ku)
		for k, i := range e.oob.Rows {
			var s float64
			for j := int(i); j < n; j++ {
				s += ku.Data[k*n+j] * a[int(i)*n+j]
			}
			var row float64
			for r := 0; r < q; r++ {
				res := e.y[int(i)*q+r] - (g.Data[k*q+r] - s*c.Data[int(i)*q+r]/diag[i])
				row += res * res
			}
			rows = append(rows, row/float64(q))
		}
	}
	var sum, sum2 float64
	for _, r := range rows {
		sum += r
		sum2 += r * r
	}
	nr := float64(len(rows))
	p.mse = sum / nr
	p.se = math.Sqrt(math.Max(sum2/nr-p.mse*p.mse, 0) / nr)
	p.df = float64(n) - ridge*tr
	p.ok = !math.IsNaN(p.mse) && !math.IsInf(p.mse, 0)
	return p
}

// TestSelectTridiagonalMatchesCholesky: on 300 swiss-roll rows with the
// out-of-bag points Train builds (and on the same data leave-one-out),
// the error, its standard error and df that looEval.point gets from the
// tridiagonal form of K equal the straightforward Cholesky computation to
// 1e-9 relative at grid corners and in the middle (γ up to 10⁶: the worst
// conditioned systems of the grid), and at every point the search
// evaluates; and the Cholesky errors of those points make the search take
// the same decisions — the same coarse best (hence the same fine
// neighbourhood) and the same choice — so a search by Cholesky selects
// the same σ_G, γ_G.
func TestSelectTridiagonalMatchesCholesky(t *testing.T) {
	emb, y, oob := oobSetup(t, 300, 30)
	n, m, q := emb.N, emb.M, 3
	med := medianSquaredDistance(emb.Z, n, m)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(b), 1e-300) }
	for _, o := range []*oobPointSet{nil, &oob} {
		kind := "leave-one-out"
		if o != nil {
			kind = "out-of-bag"
		}
		ev := newLOOEval(emb.Z, n, m, y, q)
		ev.oob = o
		for _, sg := range [][2]float64{{-8, -2}, {-8, 12}, {2, -2}, {2, 12}, {-3, 5}, {0, 8}} {
			sigma, gamma := math.Ldexp(med, int(sg[0])), math.Pow(10, sg[1]/2)
			got, want := ev.point(ev.gram(sigma), sigma, gamma), choleskyPoint(ev, sigma, gamma)
			if !got.ok || !want.ok || !near(got.mse, want.mse) || !near(got.se, want.se) || !near(got.df, want.df) {
				t.Errorf("%s sigma %v gamma %v: tridiagonal mse %v se %v df %v (ok %v), Cholesky mse %v se %v df %v (ok %v)",
					kind, sigma, gamma, got.mse, got.se, got.df, got.ok, want.mse, want.se, want.df, want.ok)
			}
		}
		sel, pts, err := selectBackscore(emb.Z, n, m, y, q, o, 0, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref := make([]*looPoint, len(pts))
		coarse := 0
		for k, p := range pts {
			r := choleskyPoint(ev, p.sigma, p.gamma)
			r.si, r.gi, r.evaluatedOrder = p.si, p.gi, p.evaluatedOrder
			ref[k] = r
			if !near(p.mse, r.mse) || !near(p.df, r.df) || !near(p.se, r.se) {
				t.Errorf("%s sigma %v gamma %v: tridiagonal mse %v df %v, Cholesky %v %v", kind, p.sigma, p.gamma, p.mse, p.df, r.mse, r.df)
			}
			if (p.si%2 == 0 || p.si == len(sigmaExponents)-1) && (p.gi%2 == 0 || p.gi == len(gammaHalfDecades)-1) {
				coarse = k + 1 // the coarse points come first
			}
		}
		if a, b := bestPoint(pts[:coarse]), bestPoint(ref[:coarse]); a.si != b.si || a.gi != b.gi {
			t.Errorf("%s: coarse best at grid (%d, %d), by Cholesky (%d, %d)", kind, a.si, a.gi, b.si, b.gi)
		}
		best := bestPoint(ref)
		pick := best
		for _, p := range ref {
			if o == nil && p.ok && p.mse <= best.mse+best.se && (p.df < pick.df || p.df == pick.df && p.evaluatedOrder < pick.evaluatedOrder) {
				pick = p
			}
		}
		if pick.sigma != sel.Sigma || pick.gamma != sel.Gamma {
			t.Errorf("%s: chosen sigma %v gamma %v, by Cholesky %v %v", kind, sel.Sigma, sel.Gamma, pick.sigma, pick.gamma)
		}
		if len(pts) <= coarse {
			t.Errorf("%s: %d points evaluated, %d of them coarse", kind, len(pts), coarse)
		}
	}
}

package manifold

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/forestd/forestd/arrowforest/forest"
)

// spectralMatrix is Hᵣ…H₁·diag(lam)·H₁…Hᵣ for three random Householder
// reflectors H = I − 2vvᵀ: a dense symmetric matrix whose eigenvalues are
// lam (up to rounding), built in O(n²).
func spectralMatrix(lam []float64, seed uint64) []float64 {
	n := len(lam)
	a := make([]float64, n*n)
	for i, l := range lam {
		a[i*n+i] = l
	}
	rng := rand.New(rand.NewPCG(seed, 77))
	v := make([]float64, n)
	u := make([]float64, n)
	for r := 0; r < 3; r++ {
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		floats.Scale(1/floats.Norm(v, 2), v)
		for i := range u {
			u[i] = floats.Dot(a[i*n:(i+1)*n], v)
		}
		alpha := floats.Dot(v, u)
		// (I − 2vvᵀ)A(I − 2vvᵀ) = A − 2v·uᵀ − 2u·vᵀ + 4α·v·vᵀ with u = A·v
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				x := a[i*n+j] - 2*v[i]*u[j] - 2*u[i]*v[j] + 4*alpha*v[i]*v[j]
				a[i*n+j], a[j*n+i] = x, x
			}
		}
	}
	return a
}

// swissKernel is the doubly centred Isomap matrix K of n swiss-roll
// responses (dRF paper §3.1, k = 7).
func swissKernel(t testing.TB, n int) []float64 {
	t.Helper()
	_, _, y, _, _ := swissSplit(t, n, n, 1)
	d2, err := SquaredDistances(y, n, 3, forest.DistanceIsomap, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	return centredKernel(d2, n)
}

// checkTop compares the partial solver's m pairs with the reference
// (vals descending, vecs[l*n:(l+1)*n]): eigenvalues to 1e-9 relative,
// unit orthogonal eigenvectors equal to the reference's up to sign to
// 1e-7.
func checkTop(t *testing.T, name string, n int, vals, vecs, refVals, refVecs []float64) {
	t.Helper()
	m := len(vals)
	for l := 0; l < m; l++ {
		if d := math.Abs(vals[l] - refVals[l]); d > 1e-9*math.Abs(refVals[l]) {
			t.Fatalf("%s: eigenvalue %d = %v, reference %v", name, l, vals[l], refVals[l])
		}
		u := vecs[l*n : (l+1)*n]
		w := refVecs[l*n : (l+1)*n]
		sign := 1.0
		if floats.Dot(u, w) < 0 {
			sign = -1
		}
		var dd float64
		for i := range u {
			d := u[i] - sign*w[i]
			dd += d * d
		}
		if math.Sqrt(dd) > 1e-7 {
			t.Fatalf("%s: eigenvector %d differs from the reference by %.3g", name, l, math.Sqrt(dd))
		}
		for l2 := 0; l2 <= l; l2++ {
			want := 0.0
			if l2 == l {
				want = 1
			}
			if g := floats.Dot(u, vecs[l2*n:(l2+1)*n]); math.Abs(g-want) > 1e-12 {
				t.Fatalf("%s: eigenvectors %d·%d = %v, want %v", name, l, l2, g, want)
			}
		}
	}
}

// TestTopEigenSymNegativeDominant: matrices whose most negative
// eigenvalues are four to eight times the largest positive one, with a
// bulk of both signs below the wanted ones: the partial solver returns
// the m largest algebraic eigenpairs, those of gonum's full
// decomposition (and the constructed spectrum), never a negative one.
func TestTopEigenSymNegativeDominant(t *testing.T) {
	for _, n := range []int{200, 300, 1000} {
		a, want := negativeDominant(n)
		m := len(want)
		vals, vecs, ok := topEigenSym(a, n, m, 2)
		if !ok {
			t.Fatalf("n=%d: partial solver did not converge", n)
		}
		refVals, refVecs, err := fullTopEigenSym(a, n, m)
		if err != nil {
			t.Fatal(err)
		}
		checkTop(t, fmt.Sprintf("n=%d", n), n, vals, vecs, refVals, refVecs)
		for l, w := range want {
			if math.Abs(vals[l]-w) > 1e-9*w {
				t.Fatalf("n=%d: eigenvalue %d = %v, constructed %v", n, l, vals[l], w)
			}
		}
	}
}

// negativeDominant is an n×n matrix with eigenvalues 10, 9, …, 5 (the
// wanted ones), −80, −60, −50, −40 and n − 10 uniform in [−2, 2].
func negativeDominant(n int) (a, want []float64) {
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	lam := make([]float64, n)
	want = []float64{10, 9, 8, 7, 6, 5}
	copy(lam, want)
	copy(lam[6:], []float64{-80, -60, -50, -40})
	for i := 10; i < n; i++ {
		lam[i] = -2 + 4*rng.Float64()
	}
	return spectralMatrix(lam, uint64(n)), want
}

// projector is V·Vᵀ for the n-vectors vecs[l*n:(l+1)*n], l < m.
func projector(vecs []float64, n, m int) []float64 {
	p := make([]float64, n*n)
	for l := 0; l < m; l++ {
		u := vecs[l*n : (l+1)*n]
		for i, ui := range u {
			for j, uj := range u {
				p[i*n+j] += ui * uj
			}
		}
	}
	return p
}

func frobDiff(a, b []float64) float64 {
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

// TestTopEigenSymRepeated: a triple top eigenvalue and a pair 1e-9 apart
// (individual vectors are not defined, so the eigenspaces are compared
// through their projectors), and a top eigenvalue of multiplicity 5 —
// more than the block holds — which the partial solver must refuse when
// a smaller eigenvalue is wanted too (the full solver then answers).
func TestTopEigenSymRepeated(t *testing.T) {
	n := 400
	rng := rand.New(rand.NewPCG(11, 12))
	bulk := func(lam []float64, from int) {
		for i := from; i < n; i++ {
			lam[i] = -3 + 6*rng.Float64()
		}
	}
	lam := make([]float64, n)
	copy(lam, []float64{10, 10, 10, 8, 8 + 1e-9, 6, -20})
	bulk(lam, 7)
	a := spectralMatrix(lam, 5)
	vals, vecs, ok := topEigenSym(a, n, 6, 1)
	if !ok {
		t.Fatal("triple eigenvalue: partial solver did not converge")
	}
	refVals, refVecs, err := fullTopEigenSym(a, n, 6)
	if err != nil {
		t.Fatal(err)
	}
	for l := range vals {
		if math.Abs(vals[l]-refVals[l]) > 1e-9*refVals[l] {
			t.Fatalf("eigenvalue %d = %v, reference %v", l, vals[l], refVals[l])
		}
	}
	for _, sp := range [][2]int{{0, 3}, {3, 5}, {0, 6}} { // the triple, the pair, all
		lo, hi := sp[0], sp[1]
		p := projector(vecs[lo*n:hi*n], n, hi-lo)
		q := projector(refVecs[lo*n:hi*n], n, hi-lo)
		if d := frobDiff(p, q); d > 1e-7 {
			t.Fatalf("eigenspace %d..%d: projectors differ by %.3g", lo, hi, d)
		}
	}

	// multiplicity 5 > block size 4
	copy(lam, []float64{10, 10, 10, 10, 10, 7, 5, -20})
	bulk(lam, 8)
	a = spectralMatrix(lam, 6)
	_, _, _, stop := lanczosTop(a, n, 7, eigBlock, eigBudget(n, 7, eigBlock), 1)
	if stop != lanczosCluster {
		t.Fatalf("multiplicity 5 with m = 7: stop %v, want the cluster refusal", stop)
	}
	if vals, _, ok := topEigenSym(a, n, 7, 1); ok {
		// whatever the solver accepts must be right: 10 five times, 7, 5
		for l, w := range []float64{10, 10, 10, 10, 10, 7, 5} {
			if math.Abs(vals[l]-w) > 1e-9*w {
				t.Fatalf("multiplicity 5 with m = 7: eigenvalue %d = %v, want %v", l, vals[l], w)
			}
		}
	}
	// three of the five copies: any three vectors of the eigenspace will do
	vals, vecs, ok = topEigenSym(a, n, 3, 1)
	if !ok {
		t.Fatal("multiplicity 5 with m = 3: partial solver did not converge")
	}
	_, refVecs, _ = fullTopEigenSym(a, n, 5)
	p5 := projector(refVecs, n, 5)
	for l := 0; l < 3; l++ {
		if math.Abs(vals[l]-10) > 1e-9*10 {
			t.Fatalf("multiplicity 5: eigenvalue %d = %v, want 10", l, vals[l])
		}
		u := vecs[l*n : (l+1)*n]
		pu := make([]float64, n)
		for i := range pu {
			pu[i] = floats.Dot(p5[i*n:(i+1)*n], u)
		}
		if d := frobDiff(pu, u); d > 1e-7 {
			t.Fatalf("multiplicity 5: vector %d is %.3g outside the eigenspace", l, d)
		}
	}
}

// TestTopEigenSymSwissRoll: the doubly centred Isomap matrix of swiss-roll
// responses, which has negative eigenvalues larger in magnitude than the
// 25th positive one, against gonum's full decomposition; and the size
// rule (n ≤ 64: the full solver).
func TestTopEigenSymSwissRoll(t *testing.T) {
	for _, c := range []struct {
		n  int
		ms []int
	}{{1000, []int{2, 10, 25}}, {200, []int{2, 5, 10}}} {
		a := swissKernel(t, c.n)
		refVals, refVecs, err := fullTopEigenSym(a, c.n, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if c.n == 1000 && !(refVals[c.n-1] < -refVals[24]) {
			t.Fatalf("the Isomap matrix's smallest eigenvalue %v is not below −λ_25 = %v", refVals[c.n-1], -refVals[24])
		}
		for _, m := range c.ms {
			vals, vecs, ok := topEigenSym(a, c.n, m, 2)
			if !ok {
				t.Fatalf("n=%d m=%d: partial solver did not converge", c.n, m)
			}
			checkTop(t, fmt.Sprintf("n=%d m=%d", c.n, m), c.n, vals, vecs, refVals, refVecs)
		}
	}
	a := swissKernel(t, 64)
	if _, _, ok := topEigenSym(a, 64, 2, 1); ok {
		t.Fatal("n = 64 should use the full solver")
	}
	if _, _, ok := topEigenSym(swissKernel(t, 100), 100, 25, 1); ok {
		t.Fatal("m = 25 of n = 100 should use the full solver")
	}
}

// TestTopEigenSymThreads: bit-identical eigenpairs at 1, 2 and 5 threads.
func TestTopEigenSymThreads(t *testing.T) {
	neg, _ := negativeDominant(300)
	for _, a := range [][]float64{swissKernel(t, 500), neg} {
		n := int(math.Sqrt(float64(len(a))))
		var v0, u0 []float64
		for _, threads := range []int{1, 2, 5} {
			vals, vecs, ok := topEigenSym(a, n, 6, threads)
			if !ok {
				t.Fatalf("n=%d threads=%d: did not converge", n, threads)
			}
			if v0 == nil {
				v0, u0 = vals, vecs
				continue
			}
			if !bitsEqual(vals, v0) || !bitsEqual(vecs, u0) {
				t.Fatalf("n=%d: %d threads give different bits than 1", n, threads)
			}
		}
	}
}

func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestLanczosResidualEstimate: before convergence, the Lanczos estimate
// ‖B_j·s_j‖ of each wanted Ritz pair's residual equals the residual
// ‖A·y − θ·y‖ computed explicitly (the identity A·Q_j = Q_j·T_j +
// Q_{j+1}·B_j·E_jᵀ holds to rounding under full reorthogonalisation).
func TestLanczosResidualEstimate(t *testing.T) {
	n := 600
	a := swissKernel(t, n)
	m, b := 10, eigBlock
	lz := newLanczos(a, n, b, 200, 2)
	for _, k := range []int{40, 160} {
		for len(lz.q) <= k {
			lz.extend(len(lz.q)/b - 1)
		}
		theta, s, res, ok := lz.ritz(k, m)
		if !ok {
			t.Fatal("projected problem failed")
		}
		anorm := lz.normEstimate(theta)
		vals := make([]float64, m)
		vecs := make([]float64, m*n)
		for l := 0; l < m; l++ {
			col := k - 1 - l
			vals[l] = theta[col]
			for tt := 0; tt < k; tt++ {
				for i, qi := range lz.q[tt] {
					vecs[l*n+i] += s.At(tt, col) * qi
				}
			}
		}
		explicit := lz.residuals(vals, vecs)
		unconverged := 0
		for l := range res {
			if math.Abs(res[l]-explicit[l]) > 1e-11*anorm {
				t.Fatalf("k=%d pair %d: estimate %v, explicit residual %v", k, l, res[l], explicit[l])
			}
			if explicit[l] > eigTol*anorm {
				unconverged++
			}
		}
		if (k == 40) != (unconverged > 0) {
			t.Fatalf("k=%d: %d pairs unconverged; the test wants some at k = 40 and none at 160", k, unconverged)
		}
		// the explicit check at the end rejects what has not converged
		_, _, ok = lz.verify(k, m, theta, s, eigTol*anorm)
		if ok != (unconverged == 0) {
			t.Fatalf("k=%d: verify says %v with %d pairs unconverged", k, ok, unconverged)
		}
	}
}

// TestClassicalMDSPartialMatchesFull: ClassicalMDS through the partial
// solver and through the full decomposition give the same embedding
// (to 1e-7 of its largest coordinate), for Isomap distances and for
// Euclidean distances of 3-D responses with m = 5 > rank K, where the
// zero eigenvalues are dropped.
func TestClassicalMDSPartialMatchesFull(t *testing.T) {
	_, _, y, _, _ := swissSplit(t, 1000, 1000, 2)
	for _, c := range []struct {
		dist string
		n, m int
	}{{forest.DistanceIsomap, 1000, 10}, {forest.DistanceEuclidean, 300, 5}} {
		n := c.n
		d2, err := SquaredDistances(y[:3*n], n, 3, c.dist, 7, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := topEigenSym(centredKernel(d2, n), n, c.m, 2); !ok {
			t.Fatalf("%s: the partial solver is not used", c.dist)
		}
		part, err := ClassicalMDS(d2, n, c.m, 2)
		if err != nil {
			t.Fatal(err)
		}
		full, err := classicalMDS(d2, n, c.m, 2, true)
		if err != nil {
			t.Fatal(err)
		}
		wantM := c.m
		if c.dist == forest.DistanceEuclidean {
			wantM = 3
		}
		if part.M != full.M || part.M != wantM {
			t.Fatalf("%s: %d dimensions, full solver %d, want %d", c.dist, part.M, full.M, wantM)
		}
		for l := range part.Lambda {
			if math.Abs(part.Lambda[l]-full.Lambda[l]) > 1e-9*full.Lambda[l] {
				t.Fatalf("%s: λ_%d = %v, full %v", c.dist, l, part.Lambda[l], full.Lambda[l])
			}
		}
		big := 0.0
		for _, z := range full.Z {
			big = math.Max(big, math.Abs(z))
		}
		for i, z := range full.Z {
			if math.Abs(part.Z[i]-z) > 1e-7*big {
				t.Fatalf("%s: Z[%d] = %v, full %v", c.dist, i, part.Z[i], z)
			}
		}
	}
	// all responses equal: no positive eigenvalue on either path
	zero := make([]float64, 100*100)
	if _, err := ClassicalMDS(zero, 100, 2, 1); err == nil {
		t.Fatal("zero distances accepted")
	}
	// a non-finite distance: Lanczos gives up, the full solver fails
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		d2 := make([]float64, 100*100)
		for i := range 100 {
			for j := range 100 {
				d2[i*100+j] = float64((i - j) * (i - j))
			}
		}
		d2[5*100+7] = bad
		if _, err := ClassicalMDS(d2, 100, 3, 1); err == nil {
			t.Fatalf("distance %v accepted", bad)
		}
	}
}

// TestClusterRisk: the refusal rule on hand-made Ritz spectra (ascending),
// block size 4, m = 6.
func TestClusterRisk(t *testing.T) {
	for _, c := range []struct {
		theta []float64
		risk  bool
	}{
		{[]float64{-9, 1, 2, 3, 4, 5, 6, 7, 8}, false},
		{[]float64{-9, 1, 2, 3, 5, 5, 5, 5, 8}, true},  // four copies, then 3 is wanted
		{[]float64{-9, 1, 2, 3, 4, 5, 5, 5, 8}, false}, // three copies: the block holds them
		{[]float64{-9, 0, 0, 0, 0, 0, 0, 7, 8}, false}, // four or more copies to the end of the wanted list
		{[]float64{-9, 1, 2, 5, 5, 5, 5, 8, 8}, false}, // the cluster ends the wanted list
		{[]float64{-9, 1, 2, 3, 4, 8, 8, 8, 8}, true},
	} {
		if got := clusterRisk(c.theta, 6, 4, 1e-9); got != c.risk {
			t.Fatalf("%v: risk %v, want %v", c.theta, got, c.risk)
		}
	}
}

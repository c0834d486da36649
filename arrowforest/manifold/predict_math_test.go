package manifold

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/mds"

	"github.com/forestd/forestd/arrowforest/forest"
)

// lineD2 is the squared distance matrix of the 1-D points.
func lineD2(pts []float64) []float64 {
	n := len(pts)
	d2 := make([]float64, n*n)
	for i, a := range pts {
		for j, b := range pts {
			d2[i*n+j] = (a - b) * (a - b)
		}
	}
	return d2
}

// TestAlgorithm1HandCase runs Algorithm 1 on four points of a line,
// y = 0, 1, 3, 7, with a = (0.1, 0.7, 0.2, 0): l = 1, min D = 1, and the
// points are visited in decreasing distance from y_1: 3 (D=6), 2 (D=2),
// 0 (D=1).
//
//	d̂_1 = min D                               = 1
//	d̂_3 = max(d̂_1, D_13)                      = max(1, 6) = 6
//	d̂_2 = min(max(d̂_1, D_12), max(d̂_3, D_32)) = min(2, 6) = 2
//	d̂_0 = min(max(1, D_10), max(6, D_30), max(2, D_20)) = min(1, 7, 3) = 1
//
// so d̂ = (1, 1, 2, 6), and squared (1, 1, 4, 36).
func TestAlgorithm1HandCase(t *testing.T) {
	d2 := lineD2([]float64{0, 1, 3, 7})
	got, err := algorithm1([]float64{0.1, 0.7, 0.2, 0}, d2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 1, 4, 36}; !slices.Equal(got, want) {
		t.Fatalf("Algorithm 1 gave %v, want %v", got, want)
	}
	// ties in a go to the lowest index: l = 0, d̂ = (1, 1, 3, 7)
	got, _ = algorithm1([]float64{0.5, 0, 0.5, 0}, d2, 4)
	if want := []float64{1, 1, 9, 49}; !slices.Equal(got, want) {
		t.Fatalf("with a tie Algorithm 1 gave %v, want %v", got, want)
	}
	if _, err := algorithm1([]float64{1}, d2, 4); err == nil {
		t.Fatal("wrong-length similarity vector accepted")
	}
}

// TestAlgorithm1ClosedForm checks the identity stated in the package
// documentation on random metric data: as printed, Algorithm 1 returns
// D_lp for every p ≠ l and min D for l.
func TestAlgorithm1ClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	checked := 0
	for trial := 0; trial < 20; trial++ {
		n := 5 + rng.IntN(60)
		y := make([]float64, 2*n)
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		d2, err := SquaredDistances(y, n, 2, forest.DistanceIsomap, min(5, n-1), 1)
		if err != nil {
			continue // a disconnected draw: nothing to check
		}
		checked++
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(5))
		}
		got, err := algorithm1(a, d2, n)
		if err != nil {
			t.Fatal(err)
		}
		l := argmaxRow(a)
		closed := make([]float64, n)
		alg1ClosedForm(d2, n, l, minDistance2(d2, n), closed)
		if !slices.Equal(closed, got) {
			t.Fatalf("trial %d: the closed form Predict uses differs from Algorithm 1", trial)
		}
		for p := 0; p < n; p++ {
			want := d2[l*n+p]
			if p == l {
				want = minDistance2(d2, n)
			}
			if got[p] != want {
				t.Fatalf("trial %d: d̂²(%d) = %v, want %v (l = %d)", trial, p, got[p], want, l)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d of 20 random draws had a connected graph", checked)
	}
}

// TestMDSMatchesGonum compares the embedding with gonum's independent
// Torgerson scaling (stat/mds) up to the sign of each axis, and checks
// that Euclidean points in R² are recovered exactly (all pairwise
// distances).
func TestMDSMatchesGonum(t *testing.T) {
	ref := readIsomapRef(t)
	n := ref.N
	d2, err := SquaredDistances(ref.Points, n, ref.Q, forest.DistanceIsomap, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ClassicalMDS(d2, n, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	dis := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			dis.SetSym(i, j, math.Sqrt(d2[i*n+j]))
		}
	}
	var dst mat.Dense
	k, eig := mds.TorgersonScaling(&dst, make([]float64, n), dis)
	if k < e.M {
		t.Fatalf("gonum finds %d positive eigenvalues, we use %d", k, e.M)
	}
	for l := 0; l < e.M; l++ {
		if math.Abs(eig[l]-e.Lambda[l]) > 1e-8*eig[0] {
			t.Fatalf("eigenvalue %d: %v, gonum %v", l, e.Lambda[l], eig[l])
		}
		sign := 1.0
		if dst.At(0, l)*e.Z[l] < 0 {
			sign = -1
		}
		for i := 0; i < n; i++ {
			if d := e.Z[i*e.M+l] - sign*dst.At(i, l); math.Abs(d) > 1e-6*math.Sqrt(eig[0]) {
				t.Fatalf("coordinate (%d, %d): %v, gonum %v", i, l, e.Z[i*e.M+l], sign*dst.At(i, l))
			}
		}
	}
	// Euclidean points in the plane: a 2-D embedding keeps every distance
	rng := rand.New(rand.NewPCG(4, 2))
	pts := make([]float64, 40)
	for i := range pts {
		pts[i] = 10 * rng.NormFloat64()
	}
	pd2, _ := SquaredDistances(pts, 20, 2, forest.DistanceEuclidean, 0, 1)
	pe, err := ClassicalMDS(pd2, 20, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		for j := 0; j < 20; j++ {
			if got := sqDist(pe.Z[2*i:2*i+2], pe.Z[2*j:2*j+2]); math.Abs(got-pd2[i*20+j]) > 1e-9*(1+pd2[i*20+j]) {
				t.Fatalf("(%d,%d): embedded distance² %v, original %v", i, j, got, pd2[i*20+j])
			}
		}
	}
}

// TestOOSOfTrainingPoint: eqs. (2)–(3) applied to the exact distances of
// training response m. The terms of eq. (3) that do not depend on i cancel
// against the eigenvectors (they are orthogonal to the ones vector), and
// what remains is N/(N+1) times Σ_i u_il·K_mi = N/(N+1)·λ_l·u_ml, so the
// out-of-sample point is N/(N+1)·z_m: the training embedding up to the
// augmented-sample factor.
func TestOOSOfTrainingPoint(t *testing.T) {
	ref := readIsomapRef(t)
	n := ref.N
	d2, _ := SquaredDistances(ref.Points, n, ref.Q, forest.DistanceIsomap, 7, 1)
	e, err := ClassicalMDS(d2, n, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	shrink := float64(n) / float64(n+1)
	for _, m := range []int{0, 17, n - 1} {
		z, err := embedOOS(d2, e, d2[m*n:(m+1)*n])
		if err != nil {
			t.Fatal(err)
		}
		for l := 0; l < e.M; l++ {
			want := shrink * e.Z[m*e.M+l]
			if math.Abs(z[l]-want) > 1e-8*math.Sqrt(e.Lambda[0]) {
				t.Fatalf("row %d axis %d: out-of-sample %v, want N/(N+1)·z = %v", m, l, z[l], want)
			}
			if math.Abs(z[l]-e.Z[m*e.M+l]) > math.Abs(e.Z[m*e.M+l])/float64(n)+1e-9 {
				t.Fatalf("row %d axis %d: out-of-sample %v too far from z = %v", m, l, z[l], e.Z[m*e.M+l])
			}
		}
	}
}

// TestBackscoreInterpolates: eq. (8) with a vanishing regulariser N/γ_G
// (γ_G → ∞) makes eq. (7) interpolate the training responses; a strong
// one (small γ_G) does not. The coefficients solve the system of eq. (8).
func TestBackscoreInterpolates(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	n, m, q := 40, 2, 3
	z := make([]float64, n*m)
	y := make([]float64, n*q)
	for i := range z {
		z[i] = 3 * rng.NormFloat64()
	}
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	sigma := 1.0
	for _, c := range []struct {
		gamma   float64
		interp  bool
		maxDiff float64
	}{{1e12, true, 1e-6}, {1, false, 0.05}} {
		coef, err := backscoreCoef(z, n, m, y, q, sigma, c.gamma)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i < n; i++ {
			got, err := backscoreRows(z, m, coef, q, sigma, z[i*m:i*m+m])
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < q; r++ {
				worst = math.Max(worst, math.Abs(got[r]-y[i*q+r]))
				// (K + N/γ·I)·C = Y: eq. (7) at z_i plus the ridge term
				if lhs := got[r] + float64(n)/c.gamma*coef[i*q+r]; math.Abs(lhs-y[i*q+r]) > 1e-9 {
					t.Fatalf("gamma %v: row %d output %d: (K + N/γ I)C = %v, Y = %v", c.gamma, i, r, lhs, y[i*q+r])
				}
			}
		}
		if c.interp && worst > c.maxDiff {
			t.Fatalf("gamma %v: worst training residual %v, want interpolation", c.gamma, worst)
		}
		if !c.interp && worst < c.maxDiff {
			t.Fatalf("gamma %v: worst training residual %v, want visible shrinkage", c.gamma, worst)
		}
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {math.Inf(1), 1}, {1, math.NaN()}} {
		if _, err := backscoreCoef(z, n, m, y, q, bad[0], bad[1]); err == nil {
			t.Fatalf("sigma %v gamma %v accepted", bad[0], bad[1])
		}
	}
}

package manifold

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// looRef is testdata/loo_sklearn.json (make_loo_ref.py): leave-one-out
// errors of the backscoring map computed by scikit-learn refitting
// KernelRidge on every n−1 rows, and the trace of the hat matrix.
type looRef struct {
	Tool    string    `json:"tool"`
	N, M, Q int       `json:"-"`
	Z       []float64 `json:"z"`
	Y       []float64 `json:"y"`
	Cases   []struct {
		Sigma  float64 `json:"sigma"`
		Gamma  float64 `json:"gamma"`
		LOOMSE float64 `json:"loo_mse"`
		OOBMSE float64 `json:"oob_mse"`
		DF     float64 `json:"df"`
	} `json:"cases"`
	OOBRows []int32   `json:"oob_rows"`
	OOBZ    []float64 `json:"oob_z"`
}

func readLOORef(t *testing.T) *looRef {
	t.Helper()
	b, err := os.ReadFile("testdata/loo_sklearn.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref looRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	var shape struct{ N, M, Q int }
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	ref.N, ref.M, ref.Q = shape.N, shape.M, shape.Q
	if ref.N*ref.M != len(ref.Z) || ref.N*ref.Q != len(ref.Y) || len(ref.Cases) == 0 {
		t.Fatalf("reference file is inconsistent: n=%d m=%d q=%d, %d z, %d y", ref.N, ref.M, ref.Q, len(ref.Z), len(ref.Y))
	}
	return &ref
}

// TestCVMatchesSklearn: the closed-form leave-one-out error
// C_i/(A⁻¹)_ii equals scikit-learn's brute-force leave-one-out (n refits
// of KernelRidge); the closed-form out-of-bag error (the map refitted
// without row i, evaluated at a point near z_i, against y_i) equals
// scikit-learn refitting KernelRidge without each row; and
// df = N − (N/γ)·tr(A⁻¹) equals tr(K(K + (N/γ)I)⁻¹).
func TestCVMatchesSklearn(t *testing.T) {
	ref := readLOORef(t)
	if len(ref.OOBRows) < 3 || len(ref.OOBZ) != len(ref.OOBRows)*ref.M {
		t.Fatalf("reference has %d out-of-bag rows and %d coordinates", len(ref.OOBRows), len(ref.OOBZ))
	}
	for _, oob := range []*oobPointSet{nil, {Rows: ref.OOBRows, Z: ref.OOBZ}} {
		ev := newLOOEval(ref.Z, ref.N, ref.M, ref.Y, ref.Q)
		ev.oob = oob
		kind := "leave-one-out"
		if oob != nil {
			kind = "out-of-bag"
		}
		for _, c := range ref.Cases {
			p := ev.point(ev.gram(c.Sigma), c.Sigma, c.Gamma)
			if !p.ok {
				t.Fatalf("sigma %v gamma %v: not positive definite", c.Sigma, c.Gamma)
			}
			want := c.LOOMSE
			if oob != nil {
				want = c.OOBMSE
			}
			if math.Abs(p.mse-want) > 1e-7*want {
				t.Errorf("sigma %v gamma %v: %s MSE %v, scikit-learn %v", c.Sigma, c.Gamma, kind, p.mse, want)
			}
			if math.Abs(p.df-c.DF) > 1e-7*c.DF {
				t.Errorf("sigma %v gamma %v: df %v, numpy %v", c.Sigma, c.Gamma, p.df, c.DF)
			}
		}
	}
}

// TestSelectBackscoreOOBRule: out of bag, the choice is the evaluated
// grid point of least error (no one-standard-error rule), the same at any
// thread count; malformed out-of-bag points are errors.
func TestSelectBackscoreOOBRule(t *testing.T) {
	ref := readLOORef(t)
	oob := oobPointSet{Rows: ref.OOBRows, Z: ref.OOBZ}
	sel, pts, err := selectBackscore(ref.Z, ref.N, ref.M, ref.Y, ref.Q, &oob, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	best := bestPoint(pts)
	if sel.MSE != best.mse || sel.BestMSE != best.mse || sel.Sigma != best.sigma || sel.Gamma != best.gamma {
		t.Fatalf("chosen %+v, least error %v at sigma %v gamma %v", sel, best.mse, best.sigma, best.gamma)
	}
	loo, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y, ref.Q, 0, 0, 1)
	if err != nil || loo.MSE == sel.MSE {
		t.Fatalf("leave-one-out selection %+v gives the out-of-bag error %v (%v)", loo, sel.MSE, err)
	}
	again, err := selectBackscoreOOB(ref.Z, ref.N, ref.M, ref.Y, ref.Q, oob, 0, 0, 3)
	if err != nil || again != sel {
		t.Fatalf("3 threads: %+v, 1 thread: %+v (%v)", again, sel, err)
	}
	for name, bad := range map[string]oobPointSet{
		"two points":       {Rows: oob.Rows[:2], Z: oob.Z[:2*ref.M]},
		"short z":          {Rows: oob.Rows, Z: oob.Z[1:]},
		"row out of range": {Rows: append([]int32{int32(ref.N)}, oob.Rows[1:]...), Z: oob.Z},
		"negative row":     {Rows: append([]int32{-1}, oob.Rows[1:]...), Z: oob.Z},
	} {
		if _, err := selectBackscoreOOB(ref.Z, ref.N, ref.M, ref.Y, ref.Q, bad, 0, 0, 1); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// TestSelectBackscoreRule: on the reference data the choice obeys the
// one-standard-error rule over every point evaluated (within one SE of
// the least error, fewest degrees of freedom), lies on the grid, is found
// again at any thread count, and a given σ or γ stays fixed.
func TestSelectBackscoreRule(t *testing.T) {
	ref := readLOORef(t)
	sel, pts, err := selectBackscore(ref.Z, ref.N, ref.M, ref.Y, ref.Q, nil, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Evaluated != len(pts) || len(pts) < 40 {
		t.Fatalf("%d points evaluated, selection says %d", len(pts), sel.Evaluated)
	}
	best := math.Inf(1)
	var bestSE float64
	for _, p := range pts {
		if p.ok && p.mse < best {
			best, bestSE = p.mse, p.se
		}
	}
	if sel.BestMSE != best || sel.MSE > best+bestSE {
		t.Fatalf("chosen error %v, best %v ± %v (reported best %v)", sel.MSE, best, bestSE, sel.BestMSE)
	}
	for _, p := range pts {
		if p.ok && p.mse <= best+bestSE && p.df < sel.DF {
			t.Fatalf("sigma %v gamma %v is within one SE (%v) with df %v < chosen %v", p.sigma, p.gamma, p.mse, p.df, sel.DF)
		}
	}
	if sel.DF >= float64(ref.N)/2 || sel.MSE >= 0.1 {
		t.Fatalf("chosen map: df %v, leave-one-out MSE %v (noise variance 0.04)", sel.DF, sel.MSE)
	}
	onGrid := func(v float64, grid []float64) bool {
		return slices.ContainsFunc(grid, func(g float64) bool { return math.Abs(v-g) <= 1e-12*g })
	}
	var gammas []float64
	for _, j := range gammaHalfDecades {
		gammas = append(gammas, math.Pow(10, float64(j)/2))
	}
	var sigmas []float64
	med := medianSquaredDistance(ref.Z, ref.N, ref.M)
	for _, k := range sigmaExponents {
		sigmas = append(sigmas, math.Ldexp(med, k))
	}
	if !onGrid(sel.Sigma, sigmas) || !onGrid(sel.Gamma, gammas) {
		t.Fatalf("chosen sigma %v gamma %v not on the grid", sel.Sigma, sel.Gamma)
	}
	again, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y, ref.Q, 0, 0, 3)
	if err != nil || again != sel {
		t.Fatalf("3 threads: %+v, 1 thread: %+v (%v)", again, sel, err)
	}
	fixedS, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y, ref.Q, 0.5, 0, 2)
	if err != nil || fixedS.Sigma != 0.5 || !onGrid(fixedS.Gamma, gammas) {
		t.Fatalf("sigma fixed at 0.5: %+v (%v)", fixedS, err)
	}
	fixedG, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y, ref.Q, 0, 1000, 2)
	if err != nil || fixedG.Gamma != 1000 || !onGrid(fixedG.Sigma, sigmas) {
		t.Fatalf("gamma fixed at 1000: %+v (%v)", fixedG, err)
	}
	for _, bad := range [][2]float64{{-1, 0}, {0, math.NaN()}, {math.Inf(1), 0}} {
		if _, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y, ref.Q, bad[0], bad[1], 1); err == nil {
			t.Fatalf("sigma %v gamma %v accepted", bad[0], bad[1])
		}
	}
	if _, err := selectBackscoreRef(ref.Z, ref.N, ref.M, ref.Y[:5], ref.Q, 0, 0, 1); err == nil {
		t.Fatal("short responses accepted")
	}
}

// TestSelectBackscoreDenoises: for a noisy circle parametrised by its
// angle (z = t, y = (cos t, sin t) + noise of variance 0.04 per
// coordinate), the map chosen by leave-one-out is much closer to the
// noise-free circle than the noise is, and than the smoothest map of the
// grid (which cannot follow the circle).
func TestSelectBackscoreDenoises(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	n := 300
	z := make([]float64, n)
	y := make([]float64, 2*n)
	for i := range z {
		z[i] = 2 * math.Pi * rng.Float64()
		y[2*i] = math.Cos(z[i]) + 0.2*rng.NormFloat64()
		y[2*i+1] = math.Sin(z[i]) + 0.2*rng.NormFloat64()
	}
	errAt := func(sigma, gamma float64) float64 {
		coef, err := backscoreCoef(z, n, 1, y, 2, sigma, gamma)
		if err != nil {
			t.Fatal(err)
		}
		var se float64
		for k := 0; k < 200; k++ {
			a := 2 * math.Pi * (float64(k) + 0.5) / 200
			g, _ := backscoreRows(z, 1, coef, 2, sigma, []float64{a})
			se += (g[0]-math.Cos(a))*(g[0]-math.Cos(a)) + (g[1]-math.Sin(a))*(g[1]-math.Sin(a))
		}
		return se / 400
	}
	sel, err := selectBackscoreRef(z, n, 1, y, 2, 0, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	chosen := errAt(sel.Sigma, sel.Gamma)
	smooth := errAt(math.Ldexp(medianSquaredDistance(z, n, 1), sigmaExponents[len(sigmaExponents)-1]),
		math.Pow(10, float64(gammaHalfDecades[0])/2))
	if chosen > 0.01 || chosen > smooth/10 {
		t.Fatalf("error against the noise-free circle: chosen map (sigma %v, gamma %v) %v, smoothest map %v; noise variance 0.04",
			sel.Sigma, sel.Gamma, chosen, smooth)
	}
}

// TestTrainSelectsBackscore: with σ_G and γ_G left to Train, the model
// records the choice (out of bag by default, leave-one-out when asked)
// and the centred map's offset (the training responses' mean); given σ_G,
// γ_G and Center false give the paper's map (no offset, nothing selected).
func TestTrainSelectsBackscore(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 300, 300, 3)
	o := smallOptions()
	o.SigmaG, o.GammaG = 0, 0
	f, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	d := f.DRF
	if d.SelectedBy != SelectOOB || !(d.SelectMSE > 0) || !(d.SigmaG > 0) || !(d.GammaG > 0) {
		t.Fatalf("selection not recorded: by %q, error %v, sigma %v, gamma %v", d.SelectedBy, d.SelectMSE, d.SigmaG, d.GammaG)
	}
	o.Select = SelectLOO
	l, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	if l.DRF.SelectedBy != SelectLOO || !(l.DRF.SelectMSE > 0) {
		t.Fatalf("leave-one-out selection not recorded: by %q, error %v", l.DRF.SelectedBy, l.DRF.SelectMSE)
	}
	o.Select = SelectOOB
	for r := 0; r < 3; r++ {
		var mean float64
		for i := 0; i < d.Rows(); i++ {
			mean += d.Responses[i*3+r] / float64(d.Rows())
		}
		if math.Abs(d.Offset[r]-mean) > 1e-12*(1+math.Abs(mean)) {
			t.Fatalf("offset %d is %v, the responses' mean %v", r, d.Offset[r], mean)
		}
	}
	o.SigmaG, o.GammaG, o.Center = 100, 200, false
	g, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	if g.DRF.Offset != nil || g.DRF.SelectedBy != "" || g.DRF.SelectMSE != 0 || g.DRF.SigmaG != 100 || g.DRF.GammaG != 200 {
		t.Fatalf("given sigma, gamma and no centring: offset %v, by %q", g.DRF.Offset, g.DRF.SelectedBy)
	}
}

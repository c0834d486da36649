package dependence

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func numCase(seed uint64, n, p int, f func(x []float64, e float64) float64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 11))
	x := make([][]float64, p)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = r.NormFloat64()
		}
	}
	y := make([]float64, n)
	row := make([]float64, p)
	for i := range y {
		for j := range row {
			row[j] = x[j][i]
		}
		y[i] = f(row, r.NormFloat64())
	}
	return x, y
}

// The permutation kernels of a numeric label (the Fenwick pass over one
// column, the packed-triangle and recomputed passes over a set) give
// dCor_n of the permuted labels, with ties in x and y.
func TestNumericKernelsMatchStatistic(t *testing.T) {
	for seed := range uint64(6) {
		n := 3 + int(seed)*37
		x, y := numCase(seed, n, 3, func(r []float64, e float64) float64 { return r[0]*r[1] + 0.3*e })
		if seed%2 == 0 { // ties
			for i := range y {
				x[0][i] = math.Round(x[0][i] * 2)
				y[i] = math.Round(y[i])
			}
		}
		u := newUniNumProblem(x[0], y)
		cached := newSetNumProblem(x, y, defaultMaxCacheBytes, nil)
		direct := newSetNumProblem(x, y, 0, nil)
		if cached.tri == nil || direct.tri != nil {
			t.Fatal("cache budget not applied")
		}
		wu := u.newWorker().(*uniNumWorker)
		wc, wd := cached.newWorker().(*setNumWorker), direct.newWorker().(*setNumWorker)
		if o, e := u.observed(); math.Abs(o-DCorNum(x[:1], [][]float64{y})) > 1e-12 || math.Abs(o-e) > 1e-12 {
			t.Errorf("n=%d: univariate observed %v, exact %v", n, o, e)
		}
		for idx := range 6 {
			perm := make([]int32, n)
			for i := range perm {
				perm[i] = int32(i)
			}
			if idx > 0 {
				shuffle(perm, 5, idx)
			}
			yp := make([]float64, n)
			for i, q := range perm {
				yp[i] = y[q]
			}
			want := DCorNum(x, [][]float64{yp})
			copy(wc.pi, perm)
			copy(wd.pi, perm)
			if got := wc.eval(); math.Abs(got-want) > 1e-6 {
				t.Errorf("n=%d perm %d: cached kernel %.12g, statistic %.12g", n, idx, got, want)
			}
			if got := wd.eval(); math.Abs(got-want) > 1e-12 {
				t.Errorf("n=%d perm %d: direct kernel %.15g, statistic %.15g", n, idx, got, want)
			}
			// univariate: the arrangement of y ranks over the x order
			// that permutation π of the rows makes
			want1 := DCorNum(x[:1], [][]float64{yp})
			ur := newUniNum(x[0], yp)
			if got := wu.eval(ur.obs); math.Abs(got-want1) > 1e-12 {
				t.Errorf("n=%d perm %d: univariate kernel %.15g, statistic %.15g", n, idx, got, want1)
			}
		}
	}
}

// A numeric label's test statistics agree with energy::dcor (refs.json,
// make_refs.R), and the permutation p-value of a weak dependence agrees
// with energy::dcor.test's within Monte Carlo error.
func TestNumericLabelAgainstR(t *testing.T) {
	refs := readRefs(t)
	for _, name := range []string{"num1", "numties", "reg_x2", "reg_set", "reg_ties", "reg_weak"} {
		want, ok := refs[name]
		if !ok {
			t.Fatalf("refs.json has no case %s", name)
		}
		rc := readRefCase(t, name)
		r, err := DCorTestNumeric(rc.x, rc.z[0], TestOptions{Perms: 9, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		near(t, name+" DCorTestNumeric statistic", r.Statistic, want["dcor"], 1e-9)
		res, err := SearchLabel(rc.x, Numeric(rc.z[0]), SearchOptions{Method: MethodMarginal, Alpha: 0.05, Test: TestOptions{Perms: 9}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rc.x) == 1 {
			near(t, name+" SearchLabel statistic", res.Statistic[0], want["dcor"], 1e-9)
		}
		if res.Stat != StatDCor {
			t.Errorf("%s: a numeric label's default statistic is %s, want dcor", name, res.Stat)
		}
	}
	rc := readRefCase(t, "reg_weak")
	w := refs["reg_weak"]
	R := int(w["dcor_test_R"])
	r, err := DCorTestNumeric(rc.x, rc.z[0], TestOptions{Perms: R, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	pr := w["dcor_test_p"]
	sd := math.Sqrt(2 * pr * (1 - pr) / float64(R))
	if math.Abs(r.PValue-pr) > 4*sd {
		t.Errorf("reg_weak: p = %.5f with %d permutations, energy::dcor.test %.5f (± %.5f)", r.PValue, R, pr, 4*sd)
	}
}

// gCor_n with a numeric label is refused with a message naming dcor; a
// non-finite label or one of the wrong length is an error.
func TestNumericLabelErrors(t *testing.T) {
	x, y := numCase(1, 20, 2, func(r []float64, e float64) float64 { return e })
	o := DefaultSearchOptions() // gcor
	if _, err := SearchLabel(x, Numeric(y), o); err == nil || !strings.Contains(err.Error(), "dcor") {
		t.Errorf("gcor with a numeric label: %v", err)
	}
	bad := append([]float64(nil), y...)
	bad[3] = math.NaN()
	if _, err := SearchLabel(x, Numeric(bad), SearchOptions{Alpha: 0.05}); err == nil {
		t.Error("NaN label accepted")
	}
	if _, err := SearchLabel(x, Numeric(y[:5]), SearchOptions{Alpha: 0.05}); err == nil {
		t.Error("short label accepted")
	}
	if _, err := DCorTestNumeric(x, y[:3], TestOptions{}); err == nil {
		t.Error("DCorTestNumeric: short label accepted")
	}
}

// A numeric label's MDS search finds an XOR-like product pair y = x1·x2
// (each alone independent of y in distribution of the mean, dependent in
// spread) and a marginal feature.
func TestNumericSearchFindsGroups(t *testing.T) {
	x, y := numCase(4, 400, 5, func(r []float64, e float64) float64 { return 2*r[0] + math.Copysign(1, r[1]*r[2]) + 0.2*e })
	o := SearchOptions{Alpha: 0.05, Method: MethodMDCBottomUp, Test: TestOptions{Seed: 2}}
	r, err := SearchLabel(x, Numeric(y), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Marginal) != 1 || r.Marginal[0] != 0 {
		t.Errorf("S_m = %v, want [0]", r.Marginal)
	}
	if len(r.Groups) != 1 || len(r.Groups[0].Features) != 2 || r.Groups[0].Features[0] != 1 || r.Groups[0].Features[1] != 2 {
		t.Errorf("groups %+v, want {1, 2}", r.Groups)
	}
}

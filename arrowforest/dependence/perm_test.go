package dependence

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// The per-permutation kernels (packed float32 triangle with the two-class
// shortcut, K-class masks, recomputed distances, sorted univariate sums)
// must give the statistic of the permuted labels.
func TestPermutationKernelsMatchStatistic(t *testing.T) {
	for _, k := range []int{2, 3, 5} {
		for _, stat := range []Stat{StatGCor, StatDCor} {
			x, y := randCase(uint64(k), 120, 3, k, 0.4)
			exact := GCor
			if stat == StatDCor {
				exact = DCor
			}
			cached := newSetProblem(x, y, k, stat, defaultMaxCacheBytes, nil)
			direct := newSetProblem(x, y, k, stat, 0, nil) // over budget: recompute
			if cached.tri == nil || direct.tri != nil {
				t.Fatal("cache budget not applied")
			}
			u := &uniProblem{u: newUniCol(x[0], y, k, stat == StatDCor), stat: stat, k: k}
			wc, wd, wu := cached.newWorker().(*setWorker), direct.newWorker().(*setWorker), u.newWorker().(*uniWorker)
			if o, e := u.observed(); math.Abs(o-exact(x[:1], y, k)) > 1e-12 || o != e {
				t.Errorf("k=%d %s: univariate observed %v, statistic %v", k, stat, o, exact(x[:1], y, k))
			}
			for idx := range 5 {
				lab := append([]int32(nil), y...)
				if idx > 0 {
					shuffle(lab, 99, idx)
				}
				want := exact(x, lab, k)
				if got := wc.eval(lab); math.Abs(got-want) > 1e-6 {
					t.Errorf("k=%d %s perm %d: cached kernel %.12g, statistic %.12g", k, stat, idx, got, want)
				}
				if got := wd.eval(lab); math.Abs(got-want) > 1e-12 {
					t.Errorf("k=%d %s perm %d: direct kernel %.15g, statistic %.15g", k, stat, idx, got, want)
				}
				// univariate: labels given in sorted order
				sl := append([]int32(nil), u.u.lab...)
				if idx > 0 {
					shuffle(sl, 99, idx)
				}
				xs := [][]float64{u.u.v}
				want1 := exact(xs, sl, k)
				if got := wu.eval(sl); math.Abs(got-want1) > 1e-12 {
					t.Errorf("k=%d %s perm %d: univariate kernel %.15g, statistic %.15g", k, stat, idx, got, want1)
				}
			}
		}
	}
}

// The univariate permutations draw the labelling by sequential selection
// sampling: every arrangement of the class sizes over the sorted positions
// must be equally likely, and the statistic must be that arrangement's.
func TestSelectionSamplingIsUniform(t *testing.T) {
	for _, y := range [][]int32{{0, 1, 1, 0}, {0, 1, 2, 1, 0}} {
		k := int(slices.Max(y)) + 1
		x := []float64{0.3, 1.9, 2.2, 4.7, 8.1}[:len(y)]
		for _, stat := range []Stat{StatGCor, StatDCor} {
			u := &uniProblem{u: newUniCol(x, y, k, stat == StatDCor), stat: stat, k: k}
			w := u.newWorker().(*uniWorker)
			// every distinct arrangement and its statistic
			arr := map[string]float64{}
			var rec func(lab []int32, left []int)
			rec = func(lab []int32, left []int) {
				if len(lab) == len(y) {
					arr[fmt.Sprint(lab)] = w.eval(lab)
					return
				}
				for c := range left {
					if left[c] > 0 {
						left[c]--
						rec(append(lab, int32(c)), left)
						left[c]++
					}
				}
			}
			rec(nil, classCounts(y, k))
			counts := map[float64]int{}
			want := map[float64]int{}
			for _, v := range arr {
				want[v]++
			}
			const draws = 30000
			for idx := range draws {
				v := w.perm(7, idx)
				if want[v] == 0 {
					t.Fatalf("%v %s: permutation statistic %v is no arrangement's", y, stat, v)
				}
				counts[v]++
			}
			var chi2 float64
			for v, m := range want {
				e := float64(draws) * float64(m) / float64(len(arr))
				chi2 += (float64(counts[v]) - e) * (float64(counts[v]) - e) / e
			}
			df := float64(len(want) - 1)
			if chi2 > df+5*math.Sqrt(2*df) {
				t.Errorf("%v %s: χ² = %.1f with %v degrees of freedom over %d arrangements", y, stat, chi2, df, len(arr))
			}
		}
	}
}

// Fisher–Yates with the per-permutation streams: every arrangement of 4
// items equally likely (χ² with 23 degrees of freedom).
func TestShuffleIsUniform(t *testing.T) {
	counts := map[[4]int32]int{}
	const draws = 48000
	for idx := range draws {
		lab := []int32{0, 1, 2, 3}
		shuffle(lab, 12345, idx)
		counts[[4]int32(lab)]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d arrangements seen, want 24", len(counts))
	}
	var chi2 float64
	exp := float64(draws) / 24
	for _, c := range counts {
		chi2 += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chi2 > 49.7 { // 0.999 quantile of χ²(23)
		t.Errorf("χ² = %.1f over 24 arrangements; not uniform", chi2)
	}
}

func TestPermutationTestIsThreadIndependent(t *testing.T) {
	x, y := randCase(11, 300, 2, 3, 0.08)
	for _, cols := range [][][]float64{x[:1], x} {
		for _, f := range []func([][]float64, []int32, int, TestOptions) (TestResult, error){GCorTest, DCorTest} {
			var first TestResult
			for i, th := range []int{1, 2, 5} {
				r, err := f(cols, y, 3, TestOptions{Seed: 42, Threads: th, Perms: 203})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = r
					if r.N != 203 || r.PValue != float64(r.B+1)/204 || r.Rows != 300 {
						t.Fatalf("result %+v", r)
					}
					continue
				}
				if r != first {
					t.Errorf("%d columns, %d threads: %+v, with 1 thread %+v", len(cols), th, r, first)
				}
			}
			other, _ := f(cols, y, 3, TestOptions{Seed: 43, Threads: 1, Perms: 203})
			if other.Statistic != first.Statistic {
				t.Errorf("the seed changed the statistic")
			}
		}
	}
}

func TestAdaptiveCount(t *testing.T) {
	// strong dependence: no permutation reaches it, N doubles to the cap
	x, y := randCase(1, 200, 1, 2, 2)
	r, err := GCorTest(x, y, 2, TestOptions{MaxPerms: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.B != 0 || r.N != 1000 || math.Abs(r.PValue-1.0/1001) > 1e-15 {
		t.Errorf("dependent: %+v, want b=0 N=1000 (100,200,400,800,1000)", r)
	}
	if !r.Dependent(0, 1000) || r.Dependent(0, 5000) || !r.Dependent(0.001, 1000) {
		t.Errorf("α rules wrong for %+v", r)
	}
	// a constant feature: every permutation ties the observed 0, so the
	// first round of 100 ends the test with b = 100, p = 1
	x, y = randCase(2, 200, 1, 2, 0)
	r, _ = GCorTest([][]float64{make([]float64, 200)}, y, 2, TestOptions{Seed: 1})
	if r.N != 100 || r.B != 100 || r.PValue != 1 {
		t.Errorf("constant: %+v, want N=100, b=100", r)
	}
	// fixed count
	r, _ = DCorTest(x, y, 2, TestOptions{Seed: 1, Perms: 37})
	if r.N != 37 {
		t.Errorf("fixed: N = %d", r.N)
	}
	// MaxRows subsample for sets
	x, y = randCase(3, 500, 2, 2, 0.5)
	r, _ = GCorTest(x, y, 2, TestOptions{Seed: 1, Perms: 10, MaxRows: 120})
	if r.Rows != 120 {
		t.Errorf("MaxRows: %d rows tested", r.Rows)
	}
}

func TestTestErrors(t *testing.T) {
	good := [][]float64{{1, 2, 3}}
	if _, err := GCorTest(good, []int32{0, 1, 5}, 2, TestOptions{}); err == nil {
		t.Error("label out of range accepted")
	}
	if _, err := DCorTest(nil, nil, 2, TestOptions{}); err == nil {
		t.Error("no columns accepted")
	}
	if _, err := GCorTest(good, []int32{0, 1, 0}, 2, TestOptions{Perms: -1}); err == nil {
		t.Error("negative Perms accepted")
	}
	if _, err := GCorTest(good, []int32{0, 1, 0}, 2, TestOptions{MaxRows: 1}); err == nil {
		t.Error("MaxRows 1 accepted")
	}
	// all rows NaN: no test possible, p = 1
	r, err := GCorTest([][]float64{{math.NaN(), math.NaN()}}, []int32{0, 1}, 2, TestOptions{})
	if err != nil || r.PValue != 1 || r.N != 0 {
		t.Errorf("no complete rows: %+v %v", r, err)
	}
}

// p-values are calibrated: under independence the share of p ≤ 0.05 is
// within binomial noise of 5%. With p = (b+1)/(N+1) and N = 199 fixed,
// P(p ≤ 0.05) = 10/200 exactly; with the adaptive count it is
// P(b ≤ 4 at N = 100) = 5/101. Seeds are fixed, so the test is
// deterministic; the bound is 3.5 binomial standard deviations.
func TestPValuesCalibrated(t *testing.T) {
	type variant struct {
		name  string
		p     int
		stat  Stat
		opt   TestOptions
		level float64
	}
	variants := []variant{
		{"gcor univariate fixed", 1, StatGCor, TestOptions{Perms: 199, Threads: 1}, 10.0 / 200},
		{"dcor univariate adaptive", 1, StatDCor, TestOptions{Threads: 1}, 5.0 / 101},
		{"gcor 2-d fixed", 2, StatGCor, TestOptions{Perms: 199, Threads: 1}, 10.0 / 200},
		{"dcor 3-class 2-d adaptive", 2, StatDCor, TestOptions{Threads: 1}, 5.0 / 101},
	}
	for _, v := range variants {
		runs := 2000
		n := 60
		if v.p > 1 {
			runs, n = 1000, 40
		}
		hits := 0
		for run := range runs {
			k := 2
			if v.name[:4] == "dcor" && v.p > 1 {
				k = 3
			}
			x, y := randCase(uint64(1000+run), n, v.p, k, 0)
			o := v.opt
			o.Seed = uint64(run)
			o, _ = o.resolve()
			r := newData(x, Classes(y, k), o).test(v.stat, nil, adaptivePlan(o), 1)
			if r.PValue <= 0.05 {
				hits++
			}
		}
		share := float64(hits) / float64(runs)
		sd := math.Sqrt(v.level * (1 - v.level) / float64(runs))
		t.Logf("%s: %d/%d = %.4f (expected %.4f ± %.4f)", v.name, hits, runs, share, v.level, sd)
		if math.Abs(share-v.level) > 3.5*sd {
			t.Errorf("%s: share of p ≤ 0.05 is %.4f, want %.4f ± %.4f", v.name, share, v.level, 3.5*sd)
		}
	}
}

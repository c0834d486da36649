package dependence

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/synth"
)

// issueCase draws issue 30's data (as e2e/bench/dependence scale-data):
// p features N(0, 1) rounded to float32, a two-class label from two
// marginal features (0, 1), one XOR pair (2, 3) and noise.
func issueCase(n, p int, seed uint64) ([][]float64, []int32) {
	r := rand.New(rand.NewPCG(seed, 0x7363616c65))
	x := make([][]float64, p)
	for j := range x {
		x[j] = make([]float64, n)
	}
	y := make([]int32, n)
	for i := range n {
		for j := range x {
			x[j][i] = float64(float32(r.NormFloat64()))
		}
		s := 0.8*x[0][i] + 0.8*x[1][i] + 1.5*math.Copysign(1, x[2][i]*x[3][i]) + r.NormFloat64()
		if s > 0 {
			y[i] = 1
		}
	}
	return x, y
}

func searchPruned(t *testing.T, x [][]float64, y []int32, noPrune bool, threads, maxRows int) *SearchResult {
	t.Helper()
	o := DefaultSearchOptions()
	o.Test.Threads, o.Test.MaxRows = threads, maxRows
	o.noPrune = noPrune
	r, err := Search(x, y, 2, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The candidate screen and the approximation-only families (prune.go)
// leave the structure found where it was: on issue 30's case (two
// marginal features and an XOR pair among 16, 2,500 rows: set tests on
// 2,000) and on xor5 (§5.7, n = 1,000) the search finds the same S_m and
// groups as without them, while the screen drops most candidates.
func TestPruneKeepsStructure(t *testing.T) {
	type tc struct {
		name string
		x    [][]float64
		y    []int32
	}
	var cases []tc
	x, y := issueCase(2500, 16, 1)
	cases = append(cases, tc{"issue", x, y})
	for seed := uint64(1); seed <= 3; seed++ {
		x, y, _ := xorData(t, synth.XOR5, 1000, seed)
		cases = append(cases, tc{"xor5", x, y})
	}
	for i, c := range cases {
		old := searchPruned(t, c.x, c.y, true, 2, DefaultSetRows)
		got := searchPruned(t, c.x, c.y, false, 2, DefaultSetRows)
		if !reflect.DeepEqual(got.Marginal, old.Marginal) || !reflect.DeepEqual(found(got), found(old)) {
			t.Errorf("%s %d: S_m %v groups %v, without pruning %v %v", c.name, i, got.Marginal, found(got), old.Marginal, found(old))
		}
		if len(found(got)) == 0 {
			t.Errorf("%s %d: no group found", c.name, i)
		}
		screened := 0
		for _, st := range got.Stages {
			screened += st.Screened
		}
		// every set test but the groups' is of an independent set here
		if sets := got.Tests - len(c.x) - len(got.Groups); got.Stages[0].ScreenRows == 0 || 10*screened < 8*sets {
			t.Errorf("%s %d: %d of %d set tests screened out (stages %+v)", c.name, i, screened, sets, got.Stages)
		}
	}
}

// With the screen on (1,000 set rows, screens of about 450), the search is the
// same at any thread count.
func TestPruneThreads(t *testing.T) {
	x, y := issueCase(2500, 16, 2)
	first := searchPruned(t, x, y, false, 1, 1000)
	if first.Stages[0].ScreenRows == 0 {
		t.Fatalf("no screen: %+v", first.Stages)
	}
	for _, th := range []int{2, 5} {
		if r := searchPruned(t, x, y, false, th, 1000); !reflect.DeepEqual(r, first) {
			t.Errorf("%d threads: %+v\nwant (1 thread) %+v", th, r, first)
		}
	}
}

// When no permutation count allowed can reach a test's threshold,
// approxDecides gives hybridP's decision without the permutations: the
// same p ≤ t, and the tests the approximation leaves open unresolved.
func TestApproxOnlyDecidesAsPermutations(t *testing.T) {
	o, err := TestOptions{MaxPerms: 1000}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	const thr = 1e-6
	pl := seqPlan(thr, o)
	if !permsFutile(pl) {
		t.Fatalf("plan %+v is not futile", pl)
	}
	zones := map[string]int{}
	for seed := uint64(1); seed <= 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		n := 60 + 40*int(seed%8)
		shift := float64(seed%4) * 0.9 // none to a strong XOR
		x := [][]float64{make([]float64, n), make([]float64, n)}
		y := make([]int32, n)
		for i := range n {
			y[i] = int32(r.IntN(2))
			a, b := r.NormFloat64(), r.NormFloat64()
			if y[i] == 1 {
				a += shift * math.Copysign(1, b)
			}
			x[0][i], x[1][i] = a, b
		}
		pr := newSetProblemLazy(x, y, 2, StatGCor, defaultMaxCacheBytes, nil, true)
		want, _ := runPerm(pr, 7, pl, 1, nil)
		got, ok := approxDecides(newSetProblemLazy(x, y, 2, StatGCor, defaultMaxCacheBytes, nil, true), pl)
		if !ok {
			t.Fatal("no approximation")
		}
		if (got.PValue <= thr) != (want.PValue <= thr) {
			t.Errorf("seed %d: approximation alone p = %g, with permutations %g (N = %d)", seed, got.PValue, want.PValue, want.N)
		}
		switch {
		case got.PValue <= thr:
			zones["taken"]++
		case got.N == got.MaxN:
			zones["open"]++
			if want.N == 0 {
				t.Errorf("seed %d: open without the approximation, yet hybridP ran no permutation", seed)
			}
		default:
			zones["settled"]++
		}
	}
	for _, z := range []string{"taken", "open", "settled"} {
		if zones[z] == 0 {
			t.Errorf("no case %s: %v", z, zones)
		}
	}
}

// A family whose threshold neither the approximation (12 rows: z ≤ 7.3)
// nor 1,000 permutations can reach runs no test, and finds what the full
// search finds (nothing, here).
func TestUnreachableFamily(t *testing.T) {
	x, y := issueCase(12, 30, 3)
	var res [2]*SearchResult
	for i, np := range []bool{true, false} {
		o := DefaultSearchOptions()
		o.Test.MaxPerms = 1000
		o.noPrune = np
		r, err := Search(x, y, 2, o)
		if err != nil {
			t.Fatal(err)
		}
		res[i] = r
	}
	old, got := res[0], res[1]
	if !got.Stages[0].Unreachable || got.Tests != len(x) {
		t.Errorf("stages %+v, %d tests, want the pairs unreachable and only the %d marginal tests", got.Stages, got.Tests, len(x))
	}
	if old.Tests <= len(x) || !reflect.DeepEqual(found(got), found(old)) || !reflect.DeepEqual(got.Marginal, old.Marginal) {
		t.Errorf("without pruning %d tests, groups %v; with %v", old.Tests, found(old), found(got))
	}
}

// screenRows: none below 500 set rows or without a threshold, at least
// screenMinRows, at most half the rows, fewer for smaller thresholds.
func TestScreenRows(t *testing.T) {
	for _, p := range []float64{0.05, 1e-3, 1e-8, 1e-20} {
		if z := chi2Z(p); math.Abs(chi2TailP(z)-p) > 1e-6*p {
			t.Errorf("chi2TailP(chi2Z(%g)) = %g", p, chi2TailP(z))
		}
	}
	if screenRows(1e-5, 2*screenMinRows-1) != 0 || screenRows(0, 5000) != 0 {
		t.Error("a screen below 500 rows or without a threshold")
	}
	prev := 2000
	for _, thr := range []float64{1e-4, 1e-6, 1e-8, 1e-12} {
		ms := screenRows(thr, 2000)
		if ms < screenMinRows || 2*ms > 2000 || ms > prev {
			t.Errorf("screenRows(%g, 2000) = %d (previous %d)", thr, ms, prev)
		}
		prev = ms
	}
}

// The top-down gate (§5.3, Algorithms 3–4: test the features left
// jointly, stop when they are not dependent) would skip a 3-XOR's family:
// diluted among noise columns its z falls to noise level (prune.go's
// note on what the dissertation does not allow).
func TestGateMissesDilutedXOR3(t *testing.T) {
	const n = 2000
	r := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, 96)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = r.NormFloat64()
		}
	}
	y := make([]int32, n)
	for i := range y {
		if x[0][i]*x[1][i]*x[2][i] > 0 {
			y[i] = 1
		}
		if r.Float64() < 0.2 {
			y[i] = 1 - y[i]
		}
	}
	z := func(w int) float64 { return newSetProblemLazy(x[:w], y, 2, StatGCor, 0, nil, true).approxZ() }
	if z3 := z(3); z3 < 4 {
		t.Fatalf("the 3-XOR alone: z %.2f, want ≥ 4", z3)
	}
	for _, w := range []int{6, 24, 96} {
		if zw := z(w); zw > 2 {
			t.Errorf("the 3-XOR among %d columns: z %.2f, want the noise level (< 2)", w, zw)
		}
	}
}

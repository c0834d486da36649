package dependence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/synth"
)

// xorData draws one of the dissertation's XOR data sets and the indices of
// its true groups (synth.Groups, by name).
func xorData(t testing.TB, name string, n int, seed uint64) ([][]float64, []int32, [][]int) {
	t.Helper()
	f, err := synth.Generate(name, synth.Options{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	x := make([][]float64, f.P())
	for j, c := range f.Cols {
		x[j] = make([]float64, len(c))
		for i, v := range c {
			x[j][i] = float64(v)
		}
	}
	var groups [][]int
	for _, g := range synth.Groups(name) {
		var idx []int
		for _, nm := range g {
			idx = append(idx, f.FeatureIndex(nm))
		}
		groups = append(groups, idx)
	}
	return x, f.Y, groups
}

// truth splits the true groups into S_m (singletons) and the XOR groups.
func truth(groups [][]int) (marg []int, sets [][]int) {
	for _, g := range groups {
		if len(g) == 1 {
			marg = append(marg, g[0])
		} else {
			sets = append(sets, g)
		}
	}
	return marg, sets
}

func found(r *SearchResult) [][]int {
	var g [][]int
	for _, x := range r.Groups {
		g = append(g, x.Features)
	}
	slices.SortFunc(g, func(a, b []int) int { return slices.Compare(a, b) })
	return g
}

// Bottom-up MDC (Algorithm 5, sizes 2 and 3) with the per-test rule
// (AdjustNone) recovers xor5's true groups exactly (S_m and every MDS) in
// at least 9 of 10 seeds at n = 1000.
//
// α = 0.001: after S_m, Algorithm 5 tests up to 15 independent pairs among
// the 3-XOR features before the triples, and S_m itself tests 12
// independent features; at α = 0.05 the chance of no false positive is
// about 0.95^27 ≈ 0.25, so exact recovery needs a small α (a
// multiple-testing effect the dissertation's single n = 200 run does not
// show). MaxPerms = 1000 is enough for p = 1/1001 ≤ α.
func TestBottomUpMDCRecoversXOR5(t *testing.T) {
	exact := 0
	for seed := uint64(1); seed <= 10; seed++ {
		x, y, groups := xorData(t, synth.XOR5, 1000, seed)
		wantM, wantSets := truth(groups)
		o := DefaultSearchOptions()
		o.Method, o.Adjust = MethodMDCBottomUp, AdjustNone
		o.Alpha = 0.001
		o.Test = TestOptions{MaxPerms: 1000, Seed: seed}
		r, err := Search(x, y, 2, o)
		if err != nil {
			t.Fatal(err)
		}
		got := found(r)
		ok := reflect.DeepEqual(r.Marginal, wantM) && reflect.DeepEqual(got, wantSets)
		if ok {
			exact++
		}
		t.Logf("seed %d: S_m %v groups %v exact=%v", seed, r.Marginal, got, ok)
	}
	if exact < 9 {
		t.Errorf("bottom-up MDC recovered xor5 exactly in %d of 10 seeds, want ≥ 9", exact)
	}
}

// Every method on a small data set whose structure is unambiguous at this
// size: xor3 (a marginal X0 and one XOR pair) plus one pure-noise feature.
func TestMethodsOnXOR3(t *testing.T) {
	x, y, _ := xorData(t, synth.XOR3, 400, 3)
	noise, _ := randCase(77, 400, 1, 2, 0)
	x = append(x, noise[0]) // features: m0, x2a_0, x2a_1, noise
	want := map[Method][][]int{
		MethodMarginal:    nil,
		MethodMDCTopDown:  {{1, 2}},
		MethodMDCDivide:   {{1, 2}},
		MethodMDCBottomUp: {{1, 2}},
	}
	for m, w := range want {
		o := DefaultSearchOptions()
		o.Method, o.Adjust = m, AdjustNone
		o.Alpha = 0.01
		o.Test = TestOptions{MaxPerms: 400, Seed: 5}
		r, err := Search(x, y, 2, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Marginal, []int{0}) {
			t.Errorf("%s: S_m = %v, want [0]", m, r.Marginal)
		}
		if got := found(r); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: groups %v, want %v", m, got, w)
		}
		wantLabel := []int{-1, 0, 0, 0}
		if len(w) > 0 {
			wantLabel = []int{-1, 1, 1, 0}
			if g := r.Groups[0]; g.Kind != KindMDS || g.B != 0 || g.PValue != 1.0/401 {
				t.Errorf("%s: group %+v, want an MDS with b = 0, N = 400", m, g)
			}
		}
		if !reflect.DeepEqual(r.Label, wantLabel) {
			t.Errorf("%s: labels %v, want %v", m, r.Label, wantLabel)
		}
		if m == MethodMDCTopDown || m == MethodMDCDivide {
			if r.Rest == nil || r.Rest.PValue <= 0.01 {
				t.Errorf("%s: the remaining noise feature should test independent, got %+v", m, r.Rest)
			}
		}
	}
	// SDC takes a pair when p_joint < min(p_m): the XOR pair qualifies.
	o := DefaultSearchOptions()
	o.Method, o.Adjust = MethodSDCBottomUp, AdjustNone
	o.Alpha = 0.01
	o.Test = TestOptions{MaxPerms: 400, Seed: 5}
	r, err := Search(x, y, 2, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) == 0 || !reflect.DeepEqual(r.Groups[0].Features, []int{1, 2}) || r.Groups[0].Kind != KindSDS {
		t.Errorf("SDC groups %+v, want {1,2} first", r.Groups)
	}
	for _, g := range r.Groups {
		pm := 2.0
		for _, f := range g.Features {
			pm = min(pm, r.PValue[f])
		}
		if !(g.PValue < pm) {
			t.Errorf("SDC group %v has p_joint %v ≥ min marginal %v", g.Features, g.PValue, pm)
		}
	}
}

// oracle answers set tests without data: a set is dependent (b = 0 at
// N = 1000) when it contains one of the true groups and has at most
// maxSize features (maxSize models the dilution of §5.3: a big set's
// dependence is too weak to test as significant), otherwise independent
// with p = pInd(set).
func oracle(groups [][]int, maxSize int, pInd func([]int) float64) func([]int) TestResult {
	return func(set []int) TestResult {
		if len(set) <= maxSize {
			for _, g := range groups {
				all := true
				for _, f := range g {
					all = all && slices.Contains(set, f)
				}
				if all {
					return TestResult{B: 0, N: 1000, PValue: 1.0 / 1001}
				}
			}
		}
		p := pInd(set)
		return TestResult{B: int(p*101) - 1, N: 100, PValue: p}
	}
}

func oracleSearcher(groups [][]int, maxSize int, pInd func([]int) float64) *searcher {
	o := DefaultSearchOptions()
	o.Alpha, o.Adjust = 0.01, AdjustNone
	o, _ = o.resolve()
	o.Test.MaxPerms = 1000
	return &searcher{o: o, tf: oracle(groups, maxSize, pInd)}
}

// The features X5..X16 of §5.7 and their five MDS's.
var (
	xor5Rest   = []int{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	xor5Groups = [][]int{{5, 6}, {7, 8}, {9, 10}, {11, 12, 13}, {14, 15, 16}}
)

func half([]int) float64 { return 0.5 }

// With exact tests, Algorithms 2–5 find exactly the MDS's; FindMDS drops
// features in order, so Algorithm 3 finds the last group first.
func TestAlgorithmsWithExactTests(t *testing.T) {
	s := oracleSearcher(xor5Groups, 99, half)
	if got := s.findMDS(xor5Rest); !reflect.DeepEqual(got, []int{14, 15, 16}) {
		t.Errorf("FindMDS (Algorithm 2) = %v, want [14 15 16]", got)
	}
	got, rest := s.topDown(xor5Rest)
	want := [][]int{{14, 15, 16}, {11, 12, 13}, {9, 10}, {7, 8}, {5, 6}}
	if !reflect.DeepEqual(got, want) || rest != nil {
		t.Errorf("top-down (Algorithm 3) = %v rest %v, want %v", got, rest, want)
	}
	if got := s.bottomUp(xor5Rest, false); !reflect.DeepEqual(got, xor5Groups) {
		t.Errorf("bottom-up (Algorithm 5) = %v, want %v", got, xor5Groups)
	}
	for seed := range uint64(5) {
		s.rng = rand.New(rand.NewPCG(seed, 1))
		got, _ := s.divideRepeated(xor5Rest)
		slices.SortFunc(got, func(a, b []int) int { return a[0] - b[0] })
		for _, g := range got {
			slices.Sort(g)
		}
		if !reflect.DeepEqual(got, xor5Groups) {
			t.Errorf("divide and conquer (Algorithm 4), partition seed %d = %v", seed, got)
		}
	}
	// a feature outside every group stays out; the rest's joint test is reported
	s = oracleSearcher(xor5Groups, 99, half)
	got, rest = s.topDown(append(slices.Clone(xor5Rest), 17))
	if len(got) != 5 || rest == nil || rest.PValue != 0.5 {
		t.Errorf("top-down with a noise feature: %v rest %+v", got, rest)
	}
}

// §5.3: when a big set's dependence is too weak to detect, the top-down
// searches stop at once, while bottom-up MDC still finds every MDS.
func TestTopDownStopsOnDilutedDependence(t *testing.T) {
	s := oracleSearcher(xor5Groups, 6, half)
	if got, rest := s.topDown(xor5Rest); len(got) != 0 || rest == nil {
		t.Errorf("top-down on 12 diluted features: %v, want nothing", got)
	}
	s.rng = rand.New(rand.NewPCG(1, 1))
	if got, rest := s.divideRepeated(xor5Rest); len(got) != 0 || rest == nil {
		t.Errorf("divide and conquer on 12 diluted features: %v, want nothing", got)
	}
	if got := s.bottomUp(xor5Rest, false); !reflect.DeepEqual(got, xor5Groups) {
		t.Errorf("bottom-up = %v, want %v", got, xor5Groups)
	}
}

// Algorithm 6 takes the first partner whose joint p-value is below both
// marginal p-values, whether or not the pair is dependent at α, and then
// looks for triples among what is left.
func TestSDCComparesPValues(t *testing.T) {
	marg := map[int]float64{1: 0.3, 2: 0.6, 3: 0.2, 4: 0.9, 5: 0.8, 6: 0.7}
	joint := map[string]float64{"1,2": 0.5, "1,3": 0.25, "2,4": 0.55, "5,6": 0.75, "2,5,6": 0.4}
	pInd := func(set []int) float64 {
		if len(set) == 1 {
			return marg[set[0]]
		}
		k := strings.Trim(strings.ReplaceAll(fmt.Sprint(set), " ", ","), "[]")
		if p, ok := joint[k]; ok {
			return p
		}
		return 0.99
	}
	s := oracleSearcher(nil, 99, pInd)
	got := s.bottomUp([]int{1, 2, 3, 4, 5, 6}, true)
	// 1: {1,2} 0.5 ≥ 0.3, {1,3} 0.25 < min(0.3, 0.2)? no; 2: {2,4} 0.55 < 0.6 yes;
	// 5: {5,6} 0.75 < 0.7? no. Triples of {1,3,5,6}: none below; so:
	want := [][]int{{2, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SDC = %v, want %v", got, want)
	}
	joint["1,3,5"] = 0.1
	if got := s.bottomUp([]int{1, 2, 3, 4, 5, 6}, true); !reflect.DeepEqual(got, [][]int{{2, 4}, {1, 3, 5}}) {
		t.Errorf("SDC with a strong triple = %v", got)
	}
}

func TestSearchDeterministic(t *testing.T) {
	x, y, _ := xorData(t, synth.XOR4, 300, 2)
	var first *SearchResult
	for _, th := range []int{1, 2, 3} {
		o := DefaultSearchOptions()
		o.Method = MethodMDCDivide
		o.Test = TestOptions{MaxPerms: 500, Seed: 9, Threads: th, MaxRows: 250}
		r, err := Search(x, y, 2, o)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r
			if r.SetRows != 250 {
				t.Errorf("SetRows %d", r.SetRows)
			}
			continue
		}
		if !reflect.DeepEqual(r, first) {
			t.Errorf("threads %d: %+v\nwant %+v", th, r, first)
		}
	}
}

func TestSearchOptionErrors(t *testing.T) {
	x, y := randCase(1, 20, 2, 2, 0)
	bad := []struct {
		name string
		mod  func(*SearchOptions)
		k    int
	}{
		{"stat", func(o *SearchOptions) { o.Stat = "pearson" }, 2},
		{"method", func(o *SearchOptions) { o.Method = "greedy" }, 2},
		{"alpha > 1", func(o *SearchOptions) { o.Alpha = 1.5 }, 2},
		{"alpha < 0", func(o *SearchOptions) { o.Alpha = -0.1 }, 2},
		{"max size", func(o *SearchOptions) { o.MaxSize = 4 }, 2},
		{"perms", func(o *SearchOptions) { o.Test.MaxPerms = -5 }, 2},
		{"one class", func(o *SearchOptions) {}, 1},
	}
	for _, b := range bad {
		o := DefaultSearchOptions()
		b.mod(&o)
		if _, err := Search(x, y, b.k, o); err == nil {
			t.Errorf("%s: accepted", b.name)
		} else if !strings.HasPrefix(err.Error(), "dependence: ") {
			t.Errorf("%s: error %q lacks the package prefix", b.name, err)
		}
	}
	if _, err := Search(x, []int32{0, 1}, 2, DefaultSearchOptions()); err == nil {
		t.Error("label length mismatch accepted")
	}
	if _, err := Search(nil, y, 2, DefaultSearchOptions()); err == nil {
		t.Error("no features accepted")
	}
	for _, m := range methods() {
		if got, err := ParseMethod(string(m)); err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseStat("gini"); err == nil {
		t.Error("ParseStat accepted gini")
	}
}

// A search's context stops it: before it starts, between tests, and in
// the middle of one long test; a context that is never done changes
// nothing.
func TestSearchContext(t *testing.T) {
	x, y := randCase(3, 300, 24, 2, 0)
	base := DefaultSearchOptions()
	base.Test = TestOptions{Seed: 5, Threads: 2}
	want, err := Search(x, y, 2, base)
	if err != nil {
		t.Fatal(err)
	}
	live := base
	live.Context = context.Background()
	if got, err := Search(x, y, 2, live); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("with a live context: err %v, result differs: %v", err, !reflect.DeepEqual(got, want))
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	o := base
	o.Context = cancelled
	if r, err := Search(x, y, 2, o); !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("cancelled before: result %v, err %v", r != nil, err)
	}

	// cancelled at the tenth set test: no further test runs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o = base
	o.Context = ctx
	sets := 0
	o.Progress = func(p SearchProgress) {
		if p.Stage == "sets" {
			if sets++; sets == 10 {
				cancel()
			}
		}
	}
	if r, err := Search(x, y, 2, o); !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("cancelled between tests: result %v, err %v", r != nil, err)
	}
	if sets != 10 {
		t.Errorf("%d set tests ran, want the search to stop after 10", sets)
	}

	// tests of 10^8 fixed permutations each (hours), stopped after 50 ms
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	o = base
	o.Method, o.Adjust, o.Alpha = MethodMDCTopDown, AdjustNone, 0.05
	o.Test.Perms = 100_000_000
	o.Context = ctx
	t0 := time.Now()
	if r, err := Search(x, y, 2, o); !errors.Is(err, context.DeadlineExceeded) || r != nil {
		t.Fatalf("stopped in a test: result %v, err %v", r != nil, err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the search took %v to stop", d)
	}
}

// The bottom-up searches run set tests ahead on their threads
// (data.prefetch); the result — groups, p-values, the count of tests — is
// the same at any thread count, and the same as one test at a time.
func TestBottomUpThreads(t *testing.T) {
	x, y, _ := xorData(t, synth.XOR5, 300, 3)
	for _, m := range []Method{MethodMDCBottomUp, MethodSDCBottomUp} {
		var first *SearchResult
		for _, th := range []int{1, 2, 5} {
			o := DefaultSearchOptions()
			o.Method = m
			o.Test = TestOptions{MaxPerms: 20000, Seed: 4, Threads: th}
			r, err := Search(x, y, 2, o)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = r
				if len(r.Groups) == 0 {
					t.Fatalf("%s found no group on xor5", m)
				}
				continue
			}
			if !reflect.DeepEqual(r, first) {
				t.Errorf("%s, %d threads: %+v\nwant (1 thread) %+v", m, th, r, first)
			}
		}
	}
}

package dependence

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// Holm's and Benjamini–Hochberg's adjusted p-values agree with R's
// stats::p.adjust (testdata/padjust.json, make_refs.R), and the decisions
// at a level are those of the adjusted p-values.
func TestAdjustAgainstR(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "padjust.json"))
	if err != nil {
		t.Fatalf("reference values: %v", err)
	}
	var ref struct{ P, Holm, BH []float64 }
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.P) != 40 {
		t.Fatalf("padjust.json has %d p-values", len(ref.P))
	}
	for _, c := range []struct {
		name string
		proc func([]float64, float64, float64) ([]bool, []float64)
		want []float64
	}{{"holm", holm, ref.Holm}, {"BH", bh, ref.BH}} {
		for _, a := range []float64{0.01, 0.05, 0.2} {
			rej, adj := c.proc(ref.P, a, 1)
			for i := range adj {
				near(t, c.name+" adjusted", adj[i], c.want[i], 1e-12)
				if rej[i] != (c.want[i] <= a) {
					t.Errorf("%s at %v: p[%d] = %v (adjusted %v) rejected %v", c.name, a, i, ref.P[i], c.want[i], rej[i])
				}
			}
			// scale puts the adjusted p-values on the scale of another level
			_, adj2 := c.proc(ref.P, a, 2)
			for i := range adj2 {
				near(t, c.name+" scaled", adj2[i], min(1, 2*adj[i]), 1e-12)
			}
		}
	}
}

// The sequential p-value (SeqExceed exceedances or N_t permutations) is
// valid: under independence P(p ≤ u) ≤ u, at the test's threshold and
// above it; the decision p ≤ t is b < SeqExceed after N_t.
//
// With the approximation (the default, Exact false: hybridP) the p-value
// min(p_χ²/c, p_seq/(1−c)) is valid too, and the decision at t is
// p_χ²/c ≤ t or b < SeqExceed after the N_t of (1−c)·t.
func TestSequentialPValueValid(t *testing.T) {
	for _, exact := range []bool{true, false} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) { testSequentialValid(t, exact) })
	}
}

func testSequentialValid(t *testing.T, exact bool) {
	const runs = 3000
	tt := 0.02
	o, _ := TestOptions{MaxPerms: 100000, Exact: exact}.resolve()
	pl := seqPlan(tt, o)
	tseq := tt
	if !exact {
		tseq = tt * (1 - ApproxShare)
	}
	if pl.max != int(math.Ceil(SeqExceed/tseq))-1 || pl.capped || pl.exceed != SeqExceed || (pl.approxT > 0) == exact {
		t.Fatalf("plan %+v", pl)
	}
	us := []float64{tt, 0.1, 0.3, 0.6}
	hits := make([]int, len(us))
	perms := 0
	for run := range runs {
		x, y := numCase(uint64(run), 25, 1, func(r []float64, e float64) float64 { return e })
		o.Seed = uint64(run)
		d := newData(x, Numeric(y), o)
		r := d.test(StatDCor, nil, pl, 1)
		perms += r.N
		if (r.PValue <= tt) != (r.B < SeqExceed && r.N == pl.max || r.Approx && r.PValue <= tt) {
			t.Fatalf("run %d: p %v with b %d N %d: the decision is not b < h after N_t", run, r.PValue, r.B, r.N)
		}
		for i, u := range us {
			if r.PValue <= u {
				hits[i]++
			}
		}
	}
	for i, u := range us {
		share := float64(hits[i]) / runs
		sd := math.Sqrt(u * (1 - u) / runs)
		t.Logf("P(p ≤ %v) = %.4f", u, share)
		if share > u+3.5*sd {
			t.Errorf("P(p ≤ %v) = %.4f, above %v + 3.5 sd", u, share, u)
		}
	}
	// and it stops early: a null test needs a few permutations, not N_t
	if mean := float64(perms) / runs; mean > 30 {
		t.Errorf("null tests ran %.1f permutations on average", mean)
	}
}

// With a cap below the count a threshold needs, the plan says so and a
// test that ran to the cap without reaching it is unresolved.
func TestSequentialCap(t *testing.T) {
	o, _ := TestOptions{MaxPerms: 500, Exact: true}.resolve()
	pl := seqPlan(1e-4, o)
	if pl.max != 500 || !pl.capped {
		t.Fatalf("plan %+v, want max 500 capped", pl)
	}
	x, y, _ := xorData(t, "xor1", 300, 1) // two features, jointly dependent
	res, err := Search(x, y, 2, SearchOptions{Alpha: 0.001, Method: MethodMDCBottomUp, MaxSize: 2, Test: TestOptions{MaxPerms: 500, Seed: 1, Exact: true}})
	if err != nil {
		t.Fatal(err)
	}
	// the pair's threshold 0.0005 needs 3999 permutations; 500 leave p ≥ 1/501
	if len(res.Groups) != 0 || res.Unresolved != 1 || !res.Stages[0].Capped || res.Stages[0].MaxN != 500 {
		t.Errorf("groups %v, unresolved %d, stages %+v", res.Groups, res.Unresolved, res.Stages)
	}
	res, err = Search(x, y, 2, SearchOptions{Alpha: 0.001, Method: MethodMDCBottomUp, MaxSize: 2, Test: TestOptions{Seed: 1, Exact: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Unresolved != 0 || res.Groups[0].N != 3999 || res.Groups[0].AdjPValue > 0.001 {
		t.Errorf("uncapped: groups %+v, unresolved %d", res.Groups, res.Unresolved)
	}
	// the χ²₁ approximation settles the pair far below its threshold with
	// no permutation, cap or not (issue 30)
	res, err = Search(x, y, 2, SearchOptions{Alpha: 0.001, Method: MethodMDCBottomUp, MaxSize: 2, Test: TestOptions{MaxPerms: 500, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Unresolved != 0 || res.Groups[0].N != 0 || res.Groups[0].AdjPValue > 1e-6 {
		t.Errorf("approximated: groups %+v, unresolved %d", res.Groups, res.Unresolved)
	}
}

// Under independence (every feature unrelated to the label) the share of
// analyses that report any marginal feature or any group stays within
// binomial noise of α for Holm and BH (where the false discovery rate is
// the family-wise rate); the per-test rule reports false findings in most
// analyses, which this test would catch.
func TestFalseFindingsUnderIndependence(t *testing.T) {
	const runs, alpha = 300, 0.05
	share := func(adj Adjust, method Method, numeric bool) float64 {
		hitRuns := 0
		for run := range runs {
			x, y := randCase(uint64(5000+run), 80, 7, 2, 0)
			lab := Classes(y, 2)
			if numeric {
				var yv []float64
				x, yv = numCase(uint64(9000+run), 80, 7, func(r []float64, e float64) float64 { return e })
				lab = Numeric(yv)
			}
			r, err := SearchLabel(x, lab, SearchOptions{Alpha: alpha, Adjust: adj, Method: method, Test: TestOptions{Seed: uint64(run), Threads: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Marginal) > 0 || len(r.Groups) > 0 {
				hitRuns++
			}
		}
		return float64(hitRuns) / runs
	}
	limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/runs)
	for _, c := range []struct {
		adj     Adjust
		method  Method
		numeric bool
	}{
		{AdjustHolm, MethodMDCBottomUp, false}, {AdjustBH, MethodMDCBottomUp, false},
		{AdjustHolm, MethodSDCBottomUp, false}, {AdjustHolm, MethodMDCTopDown, false},
		{AdjustHolm, MethodMDCBottomUp, true},
	} {
		s := share(c.adj, c.method, c.numeric)
		t.Logf("%s %s numeric=%v: %.3f of analyses report a finding", c.adj, c.method, c.numeric, s)
		if s > limit {
			t.Errorf("%s %s numeric=%v: %.3f of analyses under independence report a finding, promised ≤ %v (+ 3 sd = %.3f)", c.adj, c.method, c.numeric, s, alpha, limit)
		}
	}
	if s := share(AdjustNone, MethodMarginal, false); s < 0.25 {
		t.Errorf("the per-test rule reports a finding in %.3f of analyses; the test cannot tell it from a controlled one", s)
	}
}

// Progress reports every test: the marginal stage counts to p, the set
// stage's done count rises by one per test and never passes its total,
// and the totals are upper bounds of the tests run.
func TestSearchProgress(t *testing.T) {
	x, y, _ := xorData(t, "xor5", 300, 2)
	var mu sync.Mutex
	var got []SearchProgress
	o := DefaultSearchOptions()
	o.Test = TestOptions{Seed: 1, MaxPerms: 3000}
	o.Progress = func(p SearchProgress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}
	res, err := Search(x, y, 2, o)
	if err != nil {
		t.Fatal(err)
	}
	var marg, sets []SearchProgress
	for _, p := range got {
		if p.Stage == "marginal" {
			marg = append(marg, p)
		} else {
			sets = append(sets, p)
		}
		if p.Done > p.Total {
			t.Errorf("progress %+v: done above total", p)
		}
	}
	if len(marg) != 17 || marg[16].Done != 17 || marg[16].Total != 17 {
		t.Errorf("marginal progress %+v", marg)
	}
	if len(marg)+len(sets) != res.Tests {
		t.Errorf("%d progress calls for %d tests", len(marg)+len(sets), res.Tests)
	}
	for i, p := range sets {
		if p.Done != i+1 || p.Stage != "sets" {
			t.Errorf("set progress %d: %+v", i, p)
		}
		if i > 0 && p.Total > sets[i-1].Total {
			t.Errorf("set progress total rose: %+v after %+v", p, sets[i-1])
		}
	}
	// the search is the same without the callback
	o.Progress = nil
	res2, err := Search(x, y, 2, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, res2) {
		t.Error("the progress callback changed the result")
	}
}

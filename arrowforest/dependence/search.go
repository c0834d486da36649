package dependence

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// data is a feature matrix with labels prepared for repeated tests: the
// MaxRows subsample is drawn once, and results are cached by feature set,
// so a set tested twice (as FindMDS and the top-down loops do) gets the
// same answer without new permutations.
type data struct {
	x     [][]float64
	lab   Label
	o     TestOptions
	sub   []int // rows of the subsample for set tests, nil for all
	mu    sync.Mutex
	cache map[string]*cached
	tests int
	// onTest, when set, is called (under mu) after each new test.
	onTest func()
	setMu  sync.Mutex  // serialises set tests, which share tri
	tri    []float32   // distance triangle reused by successive set tests
	spare  [][]float32 // more triangles, for prefetch's workers
	// ctx, when set, stops the tests: a test asked for after it is done,
	// or stopped by it, reports p = 1 and is not cached (Search then
	// returns the context's error, never such a result).
	ctx context.Context
	// order is screenOrder's row order, drawn once (prune.go).
	order []int
	// proj: set tests of at least projSetMinRows rows use random
	// projections (projset.go); a search sets it, single tests do not.
	proj bool
	// pre holds the prefix triangles of set tests (prefix.go); a search
	// sets it, single tests do not.
	pre *prefixCache
}

func newData(x [][]float64, lab Label, o TestOptions) *data {
	d := &data{x: x, lab: lab, o: o, cache: map[string]*cached{}}
	n := lab.Len()
	if o.MaxRows > 0 && n > o.MaxRows {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		r := rand.New(rand.NewPCG(o.Seed, 0x726f7773)) // "rows"
		for i := 0; i < o.MaxRows; i++ {
			j := i + r.IntN(n-i)
			idx[i], idx[j] = idx[j], idx[i]
		}
		d.sub = idx[:o.MaxRows]
		slices.Sort(d.sub)
	}
	return d
}

// setKey names a feature set (sorted indices) and the statistic.
func setKey(stat Stat, feats []int) string {
	var b strings.Builder
	b.WriteString(string(stat))
	for _, f := range feats {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(f))
	}
	return b.String()
}

func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// cached is a test's result; counted says whether the search has asked
// for it yet (a test prefetch ran ahead of the search counts only then).
type cached struct {
	r        TestResult
	counted  bool
	screened bool // the candidate screen dropped the set (prune.go)
}

// test runs (or recalls) the permutation test of the features feats (nil
// for every column) with the plan pl. One feature uses every complete row
// and the O(n) (classes) or O(n log n) (numbers) per-permutation path; a
// set uses the subsample's complete rows and the cached distance triangle.
func (d *data) test(stat Stat, feats []int, pl permPlan, threads int) TestResult {
	r, _ := d.testWith(stat, feats, testPlan{permPlan: pl}, threads)
	return r
}

// testWith is test with a search's set plan; it also reports whether the
// candidate screen dropped the set (prune.go).
func (d *data) testWith(stat Stat, feats []int, pl testPlan, threads int) (TestResult, bool) {
	if feats == nil {
		feats = make([]int, len(d.x))
		for j := range feats {
			feats[j] = j
		}
	}
	if d.stopped() {
		return TestResult{Statistic: math.NaN(), PValue: 1}, false
	}
	feats = slices.Clone(feats)
	slices.Sort(feats)
	key := setKey(stat, feats)
	d.mu.Lock()
	if c, ok := d.cache[key]; ok {
		if !c.counted {
			c.counted = true
			d.count()
		}
		d.mu.Unlock()
		return c.r, c.screened
	}
	d.mu.Unlock()
	var r TestResult
	ok, scr := false, false
	if len(feats) == 1 {
		r, scr, ok = d.run(stat, feats, key, pl, threads, nil)
	} else {
		d.setMu.Lock()
		r, scr, ok = d.run(stat, feats, key, pl, threads, &d.tri)
		d.setMu.Unlock()
	}
	if !ok {
		return TestResult{Statistic: math.NaN(), PValue: 1}, false
	}
	d.mu.Lock()
	d.cache[key] = &cached{r: r, counted: true, screened: scr}
	d.count()
	d.mu.Unlock()
	return r, scr
}

// count counts a test the search asked for (under mu).
func (d *data) count() {
	d.tests++
	if d.onTest != nil {
		d.onTest()
	}
}

// run runs the test of the sorted features feats named key; a set test
// keeps its distance triangle in *tri. A set is first screened on pl's
// screen rows, and with pl.approxOnly decided without permutations
// (prune.go): screened says the screen dropped it. It reports ok = false
// when the context stopped it.
func (d *data) run(stat Stat, feats []int, key string, pl testPlan, threads int, tri *[]float32) (r TestResult, screened, ok bool) {
	cols := make([][]float64, len(feats))
	for i, f := range feats {
		cols[i] = d.x[f]
	}
	if len(cols) > 1 && pl.screen != nil {
		if r, ok := d.screened(stat, feats, cols, pl.screen, key); ok {
			return r, true, !d.stopped()
		}
	}
	var pr permProblem
	if len(cols) == 1 {
		x, l := d.lab.complete(cols)
		if l.IsNumeric() {
			pr = newUniNumProblem(x[0], l.Values)
		} else {
			pr = &uniProblem{u: newUniCol(x[0], l.Y, l.K, stat == StatDCor), stat: stat, k: l.K}
		}
	} else {
		x, l := cols, d.lab
		if d.sub != nil {
			x, l = pickCols(x, d.sub), l.pick(d.sub)
		}
		x, l = l.complete(x)
		pr = d.setProblem(stat, x, l, key, tri, pl.approxT > 0, nil)
	}
	if pl.approxOnly {
		if r, ok := approxDecides(pr, pl.permPlan); ok {
			return r, false, !d.stopped()
		}
	}
	r, ok = runPerm(pr, streamKey(d.o.Seed, keyHash(key)), pl.permPlan, threads, d.stopped)
	return r, false, ok
}

// prefetch runs the tests of the sets (two or more features each) that
// are not cached yet, up to workers at a time, each on one goroutine, so
// that the search's next test calls find them: a test's result depends on
// its set, statistic, plan and seed alone, never on when or on how many
// threads it runs, and a prefetched test counts (Tests, progress) only
// when the search asks for it. The set tests of a search otherwise run one
// after another — their permutations are few (sequential tests stop
// early) and their distance triangle is built on one thread — so this is
// how a search uses its threads. Every worker keeps a triangle: workers
// are as many as TestOptions.MaxCacheBytes holds.
func (d *data) prefetch(stat Stat, sets [][]int, pl testPlan, workers int) {
	if d.stopped() {
		return
	}
	type job struct {
		feats []int
		key   string
	}
	var jobs []job
	d.mu.Lock()
	for _, f := range sets {
		f = slices.Clone(f)
		slices.Sort(f)
		key := setKey(stat, f)
		if _, ok := d.cache[key]; !ok && len(f) > 1 {
			jobs = append(jobs, job{f, key})
		}
	}
	d.mu.Unlock()
	rows := d.lab.Len()
	if d.sub != nil {
		rows = len(d.sub)
	}
	if d.projects(rows) {
		workers = int(min(int64(workers), d.o.MaxCacheBytes/max(1, d.projBytes(rows))))
	} else if tb := int64(rows) * int64(rows-1) / 2 * 4; tb > 0 {
		workers = int(min(int64(workers), (d.o.MaxCacheBytes-d.preBytes())/tb))
	}
	workers = min(workers, len(jobs))
	if workers < 2 {
		return
	}
	d.setMu.Lock()
	defer d.setMu.Unlock()
	for len(d.spare) < workers-1 {
		d.spare = append(d.spare, nil)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		tri := &d.tri
		if w > 0 {
			tri = &d.spare[w-1]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				r, scr, ok := d.run(stat, jobs[i].feats, jobs[i].key, pl, 1, tri)
				if !ok {
					return
				}
				d.mu.Lock()
				if _, done := d.cache[jobs[i].key]; !done {
					d.cache[jobs[i].key] = &cached{r: r, screened: scr}
				}
				d.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// setRows is the number of rows set tests draw from.
func (d *data) setRows() int {
	if d.sub != nil {
		return len(d.sub)
	}
	return d.lab.Len()
}

// stopped reports whether the search's context is done.
func (d *data) stopped() bool { return d.ctx != nil && d.ctx.Err() != nil }

// stopErr is the error Search returns when its context stopped it.
func (d *data) stopErr() error {
	if !d.stopped() {
		return nil
	}
	return fmt.Errorf("dependence: search stopped after %d tests: %w", d.tests, context.Cause(d.ctx))
}

// Group is one discovered minimum dependence set (Definition 13) or
// stronger dependence set (Definition 16) with its joint test.
type Group struct {
	Features  []int   // feature indices, increasing
	Kind      string  // "mds" or "sds"
	PValue    float64 // joint p-value (b+1)/(N+1), or b/N of a sequential test stopped early
	Statistic float64 // joint statistic
	B, N      int     // joint permutation counts
	// AdjPValue is the joint p-value adjusted for the set search's family,
	// on the scale of Alpha (see Search); PValue with AdjustNone.
	AdjPValue float64
	// Approx says that the approximation (χ²₁ or χ²_ν, approx.go) settled the joint test
	// without permutations (TestResult.Approx).
	Approx bool
}

// Group kinds.
const (
	KindMDS = "mds"
	KindSDS = "sds"
)

// SetStage is one family of the set search under AdjustHolm or AdjustBH:
// the candidate sets of one size (bottom-up methods; Size 2 or 3) or every
// test the method may run (top-down methods; Size 0), each tested at
// Threshold = share of AlphaSets / Family, with at most MaxN permutations
// (Capped: TestOptions.MaxPerms cut MaxN below ⌈SeqExceed/Threshold⌉ − 1).
//
// The search's shortcuts (prune.go): ScreenRows > 0 says each candidate
// was first tested on that many of the set rows and dropped there when
// p_χ² ≥ approxFutile (Screened of them were); ApproxOnly that no permutation count up to MaxN
// could reach Threshold, so the approximation alone decided; and
// Unreachable that not even it could, so no candidate was tested.
type SetStage struct {
	Size        int
	Family      int
	Threshold   float64
	MaxN        int
	Capped      bool
	ScreenRows  int
	Screened    int
	ApproxOnly  bool
	Unreachable bool
}

// SearchResult is the outcome of Search.
type SearchResult struct {
	Stat   Stat
	Method Method
	Alpha  float64
	// Adjust is the false-discovery control. AlphaMarginal and AlphaSets
	// are the shares of Alpha the marginal screen and the set search spend
	// (both Alpha with AdjustNone).
	Adjust        Adjust
	AlphaMarginal float64
	AlphaSets     float64
	// MaxPerms is the cap on a test's permutations the search used
	// (TestOptions.MaxPerms resolved: DefaultMaxPermsAdjusted under Holm
	// or BH, DefaultMaxPerms under AdjustNone, unless given).
	MaxPerms int
	// Marginal is the marginal dependence set S_m (Algorithm 1), increasing.
	Marginal []int
	// Per feature: the marginal test.
	Statistic []float64
	PValue    []float64
	B, N      []int
	// Approx marks the marginal tests the approximation settled
	// without permutations (TestResult.Approx; N is 0).
	Approx []bool
	// AdjPValue is each feature's marginal p-value adjusted across the p
	// marginal tests (Holm or Benjamini–Hochberg) on the scale of Alpha:
	// the feature is in S_m when it is ≤ Alpha. PValue with AdjustNone.
	AdjPValue []float64
	// Label is the feature labelling of Table 5.3: -1 for S_m, 0 for a
	// feature in no group, g ≥ 1 for a feature of Groups[g−1].
	Label []int
	// Groups are the MDS's (MDC methods) or SDS's (SDC) found among the
	// marginally independent features, in discovery order.
	Groups []Group
	// Rest is the joint test of the features left in no group and not in
	// S_m when the method ends with that test (top-down methods), else
	// nil; RestAdjPValue is its adjusted p-value.
	Rest          *TestResult
	RestAdjPValue float64
	// Stages are the set search's families (nil with AdjustNone).
	Stages []SetStage
	// MarginalMaxN is the most permutations a marginal test could run,
	// MarginalCapped whether TestOptions.MaxPerms cut it below what the
	// smallest marginal threshold needed.
	MarginalMaxN   int
	MarginalCapped bool
	// Unresolved counts the tests whose decision the permutation cap left
	// open: not dependent, but with more permutations they could have
	// been (an adjusted test that ran to a capped MaxN; with AdjustNone a
	// test with b = 0 at the maximum whose p-value 1/(N+1) is still above
	// α). FeatureUnresolved marks the features among them.
	Unresolved        int
	FeatureUnresolved []bool
	// Tests counts the distinct permutation tests run; SetRows is the
	// number of rows set tests draw from (n, or MaxRows).
	Tests   int
	SetRows int
}

// Search runs the MDS/SDS search of dissertation ch. 5 on feature columns
// x with class labels y in 0..k−1 (k ≥ 2); see SearchLabel.
func Search(x [][]float64, y []int32, k int, opt SearchOptions) (*SearchResult, error) {
	if k < 2 {
		return nil, fmt.Errorf("dependence: search needs at least two classes, got %d", k)
	}
	if _, ok := checkXY(x, y, k); !ok {
		return nil, fmt.Errorf("dependence: search needs at least one feature column, columns of %d rows and labels in 0..%d", len(y), k-1)
	}
	return SearchLabel(x, Classes(y, k), opt)
}

// SearchLabel runs the MDS/SDS search of dissertation ch. 5 on the feature
// columns x (column-major: x[j] is feature j) against a class or numeric
// label.
//
// It first finds the marginal dependence set S_m (Algorithm 1, every
// feature tested alone, in parallel over features), then, unless the
// method is marginal, searches the remaining features with Algorithm 3
// (mdc-topdown), 4 (mdc-dc), 5 (mdc-bottomup) or 6 (sdc-bottomup). All
// p-values come from permutation tests of opt.Stat (§5.6; dcor for a
// numeric label, whose default it is).
//
// # False discoveries
//
// With AdjustNone every test stands at α on its own, as in the
// dissertation (§5.3), and the count is adaptive (§5.6). Otherwise the
// family is every test whose rejection the report states as a discovery:
// the p marginal tests and the set tests. The marginal screen spends
// α_m = α/2 (α with the marginal method) and the set search α_s = α/2:
//
//   - marginal: Holm's step-down (AdjustHolm) or Benjamini–Hochberg's
//     step-up (AdjustBH) over the p tests at α_m;
//   - bottom-up methods (Algorithms 5, 6): α_s is split equally between
//     the sizes 2 and 3 (all of it to 2 with MaxSize 2); size s is tested
//     at Bonferroni's share/C(u, s), u the features still unused when that
//     size starts — every candidate set of that size, tested or not;
//   - top-down methods (Algorithms 3, 4): α_s/M, M the most distinct tests
//     the method can run on the remaining features (topDownBound,
//     divideBound);
//   - Algorithm 6 takes an SDS only when its joint test also passes its
//     threshold (it compares p-values alone with AdjustNone).
//
// Under AdjustHolm the probability that the analysis reports any false
// feature or group is then at most α: Holm controls the marginal screen at
// α_m and Bonferroni the set search at α_s (Holm 1979). Under independence
// of every feature and the label this holds exactly — when the screen
// rejects nothing the set families are the fixed candidate sets over all
// features, and a top-down method stops at its first joint test — and it
// is the probability the tests of this package measure. Under AdjustBH
// the expected share of false discoveries is at most α_m + α_s = α (BH at
// α_m for positively dependent tests, and the set search's family-wise
// α_s bounds its share); under independence it equals the family-wise
// rate, so the same bound applies. Tests run sequentially (seqPlan,
// SeqExceed) up to TestOptions.MaxPerms (default DefaultMaxPermsAdjusted);
// a test the cap left undecided is counted in Unresolved.
func SearchLabel(x [][]float64, lab Label, opt SearchOptions) (*SearchResult, error) {
	if lab.IsNumeric() && opt.Stat == "" {
		opt.Stat = StatDCor
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if len(x) == 0 || !checkSet(x, lab.Len()) {
		return nil, fmt.Errorf("dependence: search needs at least one feature column of %d rows", lab.Len())
	}
	if err := lab.check(lab.Len()); err != nil {
		return nil, err
	}
	if lab.IsNumeric() && o.Stat != StatDCor {
		return nil, errGCorNumeric
	}
	d := newData(x, lab, o.Test)
	d.proj = true
	d.pre = newPrefixCache(o.Test.MaxCacheBytes/prefixShare, o.Test.Threads+1)
	d.ctx = o.Context
	s := &searcher{d: d, o: o}
	p := len(x)
	res := &SearchResult{
		Stat: o.Stat, Method: o.Method, Alpha: o.Alpha, Adjust: o.Adjust, MaxPerms: o.Test.MaxPerms,
		AlphaMarginal: o.Alpha, AlphaSets: o.Alpha,
		Statistic: make([]float64, p), PValue: make([]float64, p), AdjPValue: make([]float64, p),
		B: make([]int, p), N: make([]int, p), Label: make([]int, p), Approx: make([]bool, p),
		FeatureUnresolved: make([]bool, p),
		SetRows:           lab.Len(),
	}
	if d.sub != nil {
		res.SetRows = len(d.sub)
	}
	adjusted := o.Adjust != AdjustNone
	if adjusted && o.Method != MethodMarginal {
		res.AlphaMarginal, res.AlphaSets = o.Alpha/2, o.Alpha/2
	}
	if !adjusted {
		s.setPlan = testPlan{permPlan: adaptivePlan(o.Test)}
	}
	d.onTest = s.tick
	// Algorithm 1: S_m, parallel over features (each test single-threaded).
	margPlan := adaptivePlan(o.Test)
	if adjusted {
		margPlan = seqPlan(res.AlphaMarginal/float64(p), o.Test)
	}
	res.MarginalMaxN, res.MarginalCapped = margPlan.maxN(), margPlan.capped
	s.stage, s.left = "marginal", func() int { return p - s.done }
	marg := s.marginals(p, margPlan)
	var rej []bool
	switch o.Adjust {
	case AdjustHolm, AdjustBH:
		pv := make([]float64, p)
		for j, r := range marg {
			pv[j] = r.PValue
		}
		proc := holm
		if o.Adjust == AdjustBH {
			proc = bh
		}
		rej, res.AdjPValue = proc(pv, res.AlphaMarginal, o.Alpha/res.AlphaMarginal)
	default:
		rej = make([]bool, p)
		for j, r := range marg {
			rej[j] = s.dependent(r)
			res.AdjPValue[j] = r.PValue
		}
	}
	var rest []int
	for j, r := range marg {
		res.Statistic[j], res.PValue[j], res.B[j], res.N[j], res.Approx[j] = r.Statistic, r.PValue, r.B, r.N, r.Approx
		if rej[j] {
			res.Marginal = append(res.Marginal, j)
			res.Label[j] = -1
		} else {
			rest = append(rest, j)
			if s.unresolved(r) {
				res.FeatureUnresolved[j] = true
				res.Unresolved++
			}
		}
	}
	if err := d.stopErr(); err != nil {
		return nil, err
	}
	s.stage, s.done = "sets", 0
	var groups [][]int
	switch o.Method {
	case MethodMarginal:
	case MethodMDCTopDown:
		bound := topDownBound(len(rest))
		s.family(0, bound)
		s.left = func() int { return bound - s.done }
		groups, res.Rest = s.topDown(rest)
	case MethodMDCDivide:
		bound := divideBound(len(rest))
		s.family(0, bound)
		s.left = func() int { return bound - s.done }
		groups, res.Rest = s.divideRepeated(rest)
	case MethodMDCBottomUp:
		groups = s.bottomUp(rest, false)
	case MethodSDCBottomUp:
		groups = s.bottomUp(rest, true)
	}
	kind := KindMDS
	if o.Method == MethodSDCBottomUp {
		kind = KindSDS
	}
	for gi, g := range groups {
		g = slices.Clone(g)
		slices.Sort(g)
		r := s.test(g)
		res.Groups = append(res.Groups, Group{Features: g, Kind: kind, PValue: r.PValue, Statistic: r.Statistic, B: r.B, N: r.N,
			AdjPValue: s.adjusted(r.PValue, len(g)), Approx: r.Approx})
		for _, f := range g {
			res.Label[f] = gi + 1
		}
	}
	if res.Rest != nil {
		res.RestAdjPValue = s.adjusted(res.Rest.PValue, 0)
	}
	if err := d.stopErr(); err != nil {
		return nil, err
	}
	res.Stages = s.stages
	res.Unresolved += len(s.openSets)
	res.Tests = d.tests
	return res, nil
}

type searcher struct {
	d   *data
	o   SearchOptions
	rng *rand.Rand // partitions of Algorithm 4
	// tf, when set, replaces the permutation test of a set (tests use an
	// oracle to check the algorithms' logic exactly).
	tf func(feats []int) TestResult
	// the set tests' plan and, when adjusted, their families: the current
	// threshold and plan, and every family so far
	setPlan testPlan
	setT    float64
	stages  []SetStage
	// openSets holds the set tests the permutation cap left undecided.
	openSets map[string]bool
	// progress: the stage, tests done in it and a bound on those left
	stage string
	done  int
	left  func() int
}

// stopped reports whether the search's context is done (never with an
// oracle's tests).
func (s *searcher) stopped() bool { return s.d != nil && s.d.stopped() }

// tick counts a finished test and reports progress (called under d.mu).
func (s *searcher) tick() {
	s.done++
	if s.o.Progress == nil {
		return
	}
	left := 0
	if s.left != nil {
		left = max(s.left(), 0)
	}
	s.o.Progress(SearchProgress{Stage: s.stage, Done: s.done, Total: s.done + left})
}

// family starts a family of set tests of one size (0: any) with family
// candidates: under adjustment they are tested at their share of α_s
// (all of it, or half for each of sizes 2 and 3 of a bottom-up method)
// over the family, sequentially.
func (s *searcher) family(size, n int) {
	if s.o.Adjust == AdjustNone {
		return
	}
	a := s.o.Alpha / 2
	if size > 0 && s.o.MaxSize == 3 {
		a /= 2
	}
	st := SetStage{Size: size, Family: n}
	if n > 0 {
		st.Threshold = a / float64(n)
		pl := seqPlan(st.Threshold, s.o.Test)
		s.setPlan = testPlan{permPlan: pl, approxOnly: !s.o.noPrune && permsFutile(pl)}
		st.MaxN, st.Capped, st.ApproxOnly = pl.maxN(), pl.capped, s.setPlan.approxOnly
		if size > 0 && s.d != nil && !s.o.noPrune {
			m := s.d.setRows()
			st.Unreachable = unreachable(pl.approxT, m, pl)
			if ms := screenRows(pl.approxT, m); ms > 0 {
				s.setPlan.screen, st.ScreenRows = s.d.screenSet(ms), ms
			}
		}
	}
	s.setT = st.Threshold
	s.stages = append(s.stages, st)
}

// skipFamily reports whether the current family is Unreachable (no
// candidate of it can be dependent: prune.go).
func (s *searcher) skipFamily() bool {
	return len(s.stages) > 0 && s.stages[len(s.stages)-1].Unreachable
}

// adjusted returns p adjusted for the family a set of the given size was
// tested in (size 0: the top-down family), on the scale of α.
func (s *searcher) adjusted(p float64, size int) float64 {
	if s.o.Adjust == AdjustNone {
		return p
	}
	for _, st := range s.stages {
		if (st.Size == 0 || st.Size == size) && st.Threshold > 0 {
			return min(1, p*s.o.Alpha/st.Threshold)
		}
	}
	return 1
}

func (s *searcher) maxN() int {
	if s.o.Test.Perms > 0 {
		return s.o.Test.Perms
	}
	return s.o.Test.MaxPerms
}

// dependent is the per-test rule (AdjustNone).
func (s *searcher) dependent(r TestResult) bool { return r.Dependent(s.o.Alpha, s.maxN()) }

// unresolved reports whether a test found not dependent could have been
// with more permutations: it ran to a MaxN the cap cut (adjusted), or, with
// the per-test rule, no permutation reached it and 1/(N+1) is above α.
func (s *searcher) unresolved(r TestResult) bool {
	if s.o.Adjust == AdjustNone {
		return s.o.Alpha > 0 && r.B == 0 && r.N == r.MaxN && r.PValue > s.o.Alpha
	}
	return r.Capped && r.N == r.MaxN && r.B < SeqExceed
}

// depSet decides a set test: the per-test rule, or the family's threshold.
func (s *searcher) depSet(feats []int, r TestResult) bool {
	if s.o.Adjust == AdjustNone {
		if s.dependent(r) {
			return true
		}
	} else if r.PValue <= s.setT {
		return true
	}
	if s.unresolved(r) {
		if s.openSets == nil {
			s.openSets = map[string]bool{}
		}
		s.openSets[setKey(s.o.Stat, feats)] = true
	}
	return false
}

// test runs the joint test of a set with every worker.
func (s *searcher) test(feats []int) TestResult {
	if s.tf != nil {
		return s.tf(feats)
	}
	r, scr := s.d.testWith(s.o.Stat, feats, s.setPlan, s.o.Test.Threads)
	if scr && len(s.stages) > 0 {
		s.stages[len(s.stages)-1].Screened++
	}
	return r
}

func (s *searcher) dep(feats []int) bool {
	if len(feats) == 0 {
		return false
	}
	return s.depSet(feats, s.test(feats))
}

// marginals tests every feature alone, spreading features over workers.
func (s *searcher) marginals(p int, pl permPlan) []TestResult {
	out := make([]TestResult, p)
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(s.o.Test.Threads, p) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= p {
					return
				}
				out[j] = s.d.test(s.o.Stat, []int{j}, pl, 1)
			}
		}()
	}
	wg.Wait()
	return out
}

func without(set []int, x int) []int {
	out := make([]int, 0, len(set))
	for _, v := range set {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func minus(set, drop []int) []int {
	out := make([]int, 0, len(set))
	for _, v := range set {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}

// findMDS is Algorithm 2: hold out each feature in turn and drop it when
// the remaining features stay dependent. A single remaining feature is
// never dropped (the empty set is independent).
func (s *searcher) findMDS(set []int) []int {
	mds := slices.Clone(set)
	for _, x := range set {
		if len(mds) <= 1 {
			break
		}
		rest := without(mds, x)
		if s.dep(rest) {
			mds = rest
		}
	}
	return mds
}

// topDown is Algorithm 3: while the remaining set is dependent, remove one
// MDS found by FindMDS. It returns the groups and the final joint test.
func (s *searcher) topDown(set []int) ([][]int, *TestResult) {
	var groups [][]int
	for len(set) > 0 {
		r := s.test(set)
		if !s.depSet(set, r) {
			return groups, &r
		}
		m := s.findMDS(set)
		groups = append(groups, m)
		set = minus(set, m)
	}
	return groups, nil
}

// divideRepeated applies Algorithm 4 and, as §5.3 suggests ("the
// algorithm may be repeatedly applied to the remaining features"), applies
// it again to the features left while they stay dependent and it finds
// something.
func (s *searcher) divideRepeated(set []int) ([][]int, *TestResult) {
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(s.o.Test.Seed, 0x6d64632d6463)) // "mdc-dc"
	}
	var groups [][]int
	for len(set) > 0 {
		g := s.divide(set)
		groups = append(groups, g...)
		for _, m := range g {
			set = minus(set, m)
		}
		if len(g) == 0 || len(set) == 0 {
			break
		}
	}
	if len(set) == 0 {
		return groups, nil
	}
	r := s.test(set)
	return groups, &r
}

// divide is Algorithm 4 (FINDMDC2): stop if the set is independent; split
// it at random into halves (sizes differ by at most one), recurse, remove
// what the halves found, and if the rest is still dependent add one MDS
// found by FindMDS. A single dependent feature is its own MDS (the
// recursion's base case, which the pseudo-code leaves implicit).
func (s *searcher) divide(set []int) [][]int {
	if !s.dep(set) {
		return nil
	}
	if len(set) == 1 {
		return [][]int{set}
	}
	perm := s.rng.Perm(len(set))
	h := len(set) / 2
	s1 := make([]int, 0, h)
	s2 := make([]int, 0, len(set)-h)
	for i, pi := range perm {
		if i < h {
			s1 = append(s1, set[pi])
		} else {
			s2 = append(s2, set[pi])
		}
	}
	slices.Sort(s1)
	slices.Sort(s2)
	groups := append(s.divide(s1), s.divide(s2)...)
	rest := set
	for _, g := range groups {
		rest = minus(rest, g)
	}
	if !s.dep(rest) {
		return groups
	}
	return append(groups, s.findMDS(rest))
}

// bottomUp is Algorithm 5 (MDC, sdc=false) or Algorithm 6 (SDC, sdc=true)
// for sets of size 2 and then, on the features still unused, size 3 (the
// nesting level raised by one, §5.3 and §5.5). A candidate set is taken
// when it is dependent (MDC: p ≤ α, or the family's threshold) or when its
// joint p-value is below the smallest marginal p-value of its members
// (SDC: p_joint < min p_m, and under adjustment also the family's
// threshold); its features are then excluded and the outer loop moves on
// ("break").
func (s *searcher) bottomUp(set []int, sdc bool) [][]int {
	used := make(map[int]bool)
	var groups [][]int
	accept := func(c []int) bool {
		r := s.test(c)
		if !sdc {
			return s.depSet(c, r)
		}
		pm := 2.0
		for _, f := range c {
			pm = min(pm, s.test([]int{f}).PValue)
		}
		return r.PValue < pm && (s.o.Adjust == AdjustNone || s.depSet(c, r))
	}
	unusedFrom := func(list []int, i int) int {
		u := 0
		for _, f := range list[i:] {
			if !used[f] {
				u++
			}
		}
		return u
	}
	triples := func(u int) int {
		if s.o.MaxSize < 3 {
			return 0
		}
		return choose(u, 3)
	}
	// the progress bound: the pairs of a = set[at] from position bj on,
	// and every pair of the unused features after at; then the triples
	at, bj := 0, 0
	s.left = func() int {
		pairs := choose(unusedFrom(set, at+1), 2) // every pair after at
		if !used[set[at]] {
			pairs += unusedFrom(set, bj)
		}
		return pairs + triples(unusedFrom(set, 0))
	}
	s.family(2, choose(len(set), 2))
	skip := s.skipFamily()
	for i, a := range set {
		at = i
		if used[a] || s.stopped() || skip {
			continue
		}
		pairs := func(yield func(candidate) bool) {
			for j := i + 1; j < len(set); j++ {
				if b := set[j]; !used[b] && !yield(candidate{feats: []int{a, b}, j: j}) {
					return
				}
			}
		}
		if g := s.first(pairs, func(c candidate) { bj = c.j + 1 }, accept); g != nil {
			groups = append(groups, g)
			used[a], used[g[1]] = true, true
		}
	}
	if s.o.MaxSize < 3 {
		return groups
	}
	var left []int
	for _, f := range set {
		if !used[f] {
			left = append(left, f)
		}
	}
	// the progress bound: for a = left[at], the pairs (b, c) from b at
	// position bj (c from position ck for the current b), then every
	// triple of the unused features after at
	var ck int
	at, bj = 0, 0
	s.left = func() int {
		n := triples(unusedFrom(left, at+1))
		if !used[left[at]] {
			n += unusedFrom(left, ck) + choose(unusedFrom(left, bj+1), 2)
		}
		return n
	}
	s.family(3, choose(len(left), 3))
	skip = s.skipFamily()
	for i, a := range left {
		at = i
		if used[a] || s.stopped() || skip {
			continue
		}
		trios := func(yield func(candidate) bool) {
			for j := i + 1; j < len(left); j++ {
				if used[left[j]] {
					continue
				}
				for k := j + 1; k < len(left); k++ {
					if c := left[k]; !used[c] && !yield(candidate{feats: []int{a, left[j], c}, j: j, k: k}) {
						return
					}
				}
			}
		}
		if g := s.first(trios, func(c candidate) { bj, ck = c.j, c.k+1 }, accept); g != nil {
			groups = append(groups, g)
			used[a], used[g[1]], used[g[2]] = true, true, true
		}
	}
	return groups
}

// candidate is a set a bottom-up search may accept, and where its loops
// stand when they reach it (for the progress bound).
type candidate struct {
	feats []int
	j, k  int
}

// first tests the candidates of seq in order and returns the first that
// accept takes (nil for none), calling at before each test. With more than
// one thread it runs the tests of the next few candidates concurrently
// first (data.prefetch): the candidates are tested exactly as one at a
// time — the same results, in the same order, counted when reached — and
// only the few prefetched past an accepted one are wasted.
func (s *searcher) first(seq iter.Seq[candidate], at func(candidate), accept func([]int) bool) []int {
	ahead := 1
	if s.tf == nil && s.o.Test.Threads > 1 {
		ahead = 4 * s.o.Test.Threads
	}
	batch := make([]candidate, 0, ahead)
	sets := make([][]int, 0, ahead)
	var found []int
	take := func() bool {
		if len(batch) > 1 {
			sets = sets[:0]
			for _, c := range batch {
				sets = append(sets, c.feats)
			}
			s.d.prefetch(s.o.Stat, sets, s.setPlan, s.o.Test.Threads)
		}
		for _, c := range batch {
			at(c)
			if accept(c.feats) {
				found = c.feats
				return true
			}
		}
		batch = batch[:0]
		return false
	}
	for c := range seq {
		if batch = append(batch, c); len(batch) == ahead && take() {
			return found
		}
	}
	if len(batch) > 0 && take() {
		return found
	}
	return nil
}

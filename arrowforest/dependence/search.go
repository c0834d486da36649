package dependence

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// data is a feature matrix with labels prepared for repeated tests: the
// MaxRows subsample is drawn once, and results are cached by feature set,
// so a set tested twice (as FindMDS and the top-down loops do) gets the
// same answer without new permutations.
type data struct {
	x     [][]float64
	y     []int32
	k     int
	o     TestOptions
	sub   []int // rows of the subsample for set tests, nil for all
	mu    sync.Mutex
	cache map[string]TestResult
	tests int
	setMu sync.Mutex // serialises set tests, which share tri
	tri   []float32  // distance triangle reused by successive set tests
}

func newData(x [][]float64, y []int32, k int, o TestOptions) *data {
	d := &data{x: x, y: y, k: k, o: o, cache: map[string]TestResult{}}
	n := len(y)
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

// test runs (or recalls) the permutation test of the features feats (nil
// for every column). One feature uses every complete row and the
// O(n)-per-permutation path; a set uses the subsample's complete rows and
// the cached distance triangle.
func (d *data) test(stat Stat, feats []int, threads int) TestResult {
	if feats == nil {
		feats = make([]int, len(d.x))
		for j := range feats {
			feats[j] = j
		}
	}
	feats = slices.Clone(feats)
	slices.Sort(feats)
	key := setKey(stat, feats)
	d.mu.Lock()
	if r, ok := d.cache[key]; ok {
		d.mu.Unlock()
		return r
	}
	d.mu.Unlock()
	cols := make([][]float64, len(feats))
	for i, f := range feats {
		cols[i] = d.x[f]
	}
	var pr permProblem
	if len(cols) == 1 {
		x, y := completeXY(cols, d.y)
		pr = &uniProblem{u: newUniCol(x[0], y, d.k, stat == StatDCor), stat: stat, k: d.k}
	} else {
		d.setMu.Lock()
		defer d.setMu.Unlock()
		x, y := cols, d.y
		if d.sub != nil {
			x, y = pickCols(x, d.sub), pickLabels(y, d.sub)
		}
		x, y = completeXY(x, y)
		pr = newSetProblem(x, y, d.k, stat, d.o.MaxCacheBytes, &d.tri)
	}
	r := runPerm(pr, streamKey(d.o.Seed, keyHash(key)), d.o, threads)
	d.mu.Lock()
	d.cache[key] = r
	d.tests++
	d.mu.Unlock()
	return r
}

// Group is one discovered minimum dependence set (Definition 13) or
// stronger dependence set (Definition 16) with its joint test.
type Group struct {
	Features  []int   // feature indices, increasing
	Kind      string  // "mds" or "sds"
	PValue    float64 // joint p-value (b+1)/(N+1)
	Statistic float64 // joint statistic
	B, N      int     // joint permutation counts
}

// Group kinds.
const (
	KindMDS = "mds"
	KindSDS = "sds"
)

// SearchResult is the outcome of Search.
type SearchResult struct {
	Stat   Stat
	Method Method
	Alpha  float64
	// Marginal is the marginal dependence set S_m (Algorithm 1), increasing.
	Marginal []int
	// Per feature: the marginal test.
	Statistic []float64
	PValue    []float64
	B, N      []int
	// Label is the feature labelling of Table 5.3: -1 for S_m, 0 for a
	// feature in no group, g ≥ 1 for a feature of Groups[g−1].
	Label []int
	// Groups are the MDS's (MDC methods) or SDS's (SDC) found among the
	// marginally independent features, in discovery order.
	Groups []Group
	// Rest is the joint test of the features left in no group and not in
	// S_m when the method ends with that test (top-down methods), else nil.
	Rest *TestResult
	// Tests counts the distinct permutation tests run; SetRows is the
	// number of rows set tests draw from (n, or MaxRows).
	Tests   int
	SetRows int
}

// Search runs the MDS/SDS search of dissertation ch. 5 on feature columns x with labels y.
//
// It first finds the marginal dependence set S_m (Algorithm 1, every
// feature tested alone, in parallel over features), then, unless the
// method is marginal, searches the remaining features with Algorithm 3
// (mdc-topdown), 4 (mdc-dc), 5 (mdc-bottomup) or 6 (sdc-bottomup). All
// p-values come from permutation tests of opt.Stat (§5.6). x is
// column-major (x[j] is feature j), y holds labels in 0..k-1 and k ≥ 2.
func Search(x [][]float64, y []int32, k int, opt SearchOptions) (*SearchResult, error) {
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if k < 2 {
		return nil, fmt.Errorf("dependence: search needs at least two classes, got %d", k)
	}
	if _, ok := checkXY(x, y, k); !ok {
		return nil, fmt.Errorf("dependence: search needs at least one feature column, columns of %d rows and labels in 0..%d", len(y), k-1)
	}
	d := newData(x, y, k, o.Test)
	s := &searcher{d: d, o: o}
	p := len(x)
	res := &SearchResult{
		Stat: o.Stat, Method: o.Method, Alpha: o.Alpha,
		Statistic: make([]float64, p), PValue: make([]float64, p),
		B: make([]int, p), N: make([]int, p), Label: make([]int, p),
		SetRows: len(y),
	}
	if d.sub != nil {
		res.SetRows = len(d.sub)
	}
	// Algorithm 1: S_m, parallel over features (each test single-threaded).
	marg := s.marginals(p)
	var rest []int
	for j, r := range marg {
		res.Statistic[j], res.PValue[j], res.B[j], res.N[j] = r.Statistic, r.PValue, r.B, r.N
		if s.dependent(r) {
			res.Marginal = append(res.Marginal, j)
			res.Label[j] = -1
		} else {
			rest = append(rest, j)
		}
	}
	var groups [][]int
	switch o.Method {
	case MethodMarginal:
	case MethodMDCTopDown:
		groups, res.Rest = s.topDown(rest)
	case MethodMDCDivide:
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
		res.Groups = append(res.Groups, Group{Features: g, Kind: kind, PValue: r.PValue, Statistic: r.Statistic, B: r.B, N: r.N})
		for _, f := range g {
			res.Label[f] = gi + 1
		}
	}
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
}

func (s *searcher) maxN() int {
	if s.o.Test.Perms > 0 {
		return s.o.Test.Perms
	}
	return s.o.Test.MaxPerms
}

func (s *searcher) dependent(r TestResult) bool { return r.Dependent(s.o.Alpha, s.maxN()) }

// test runs the joint test of a set with every worker.
func (s *searcher) test(feats []int) TestResult {
	if s.tf != nil {
		return s.tf(feats)
	}
	return s.d.test(s.o.Stat, feats, s.o.Test.Threads)
}

func (s *searcher) dep(feats []int) bool {
	if len(feats) == 0 {
		return false
	}
	return s.dependent(s.test(feats))
}

// marginals tests every feature alone, spreading features over workers.
func (s *searcher) marginals(p int) []TestResult {
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
				out[j] = s.d.test(s.o.Stat, []int{j}, 1)
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
		if !s.dependent(r) {
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
// when it is dependent (MDC: p ≤ α) or when its joint p-value is below the
// smallest marginal p-value of its members (SDC: p_joint < min p_m); its
// features are then excluded and the outer loop moves on ("break").
func (s *searcher) bottomUp(set []int, sdc bool) [][]int {
	used := make(map[int]bool)
	var groups [][]int
	accept := func(c []int) bool {
		r := s.test(c)
		if !sdc {
			return s.dependent(r)
		}
		pm := 2.0
		for _, f := range c {
			pm = min(pm, s.test([]int{f}).PValue)
		}
		return r.PValue < pm
	}
	for i, a := range set {
		if used[a] {
			continue
		}
		for _, b := range set[i+1:] {
			if used[b] {
				continue
			}
			if accept([]int{a, b}) {
				groups = append(groups, []int{a, b})
				used[a], used[b] = true, true
				break
			}
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
outer:
	for i, a := range left {
		if used[a] {
			continue
		}
		for j := i + 1; j < len(left); j++ {
			b := left[j]
			if used[b] {
				continue
			}
			for _, c := range left[j+1:] {
				if used[c] {
					continue
				}
				if accept([]int{a, b, c}) {
					groups = append(groups, []int{a, b, c})
					used[a], used[b], used[c] = true, true, true
					continue outer
				}
			}
		}
	}
	return groups
}

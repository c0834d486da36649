package dependence

import (
	"context"
	"fmt"
	"math"
	"runtime"
)

// Stat names the test statistic.
type Stat string

// The statistics a test or search can use (dissertation §5.6 uses gCor).
const (
	StatGCor Stat = "gcor" // gCor_n, Definition 12
	StatDCor Stat = "dcor" // dCor_n, Definitions 8–9: against the 0/1 distance of a class label, or |y − y'| of a numeric one
)

// ParseStat parses "gcor" or "dcor".
func ParseStat(s string) (Stat, error) {
	switch Stat(s) {
	case StatGCor, StatDCor:
		return Stat(s), nil
	}
	return "", fmt.Errorf("unknown statistic %q (want gcor or dcor)", s)
}

// Defaults of the permutation tests (dissertation §5.6) and of the search.
const (
	defaultMinPerms      = 100     // §5.6: "we start with a small number of tests, e.g., 100"
	DefaultMaxPerms      = 5000    // §2.4, §5.6: N = 5000 (the per-test rule, AdjustNone)
	DefaultAlpha         = 0.05    // §5.7, Table 5.3
	defaultMaxCacheBytes = 1 << 30 // packed float32 distance triangle of a set test
	DefaultMaxSize       = 3       // §5.5: "we found it efficient to identify only SDS's of size = 2 and 3"
	// DefaultMaxPermsAdjusted caps a test's permutations under AdjustHolm
	// and AdjustBH, where the count a test needs follows from its
	// threshold (see SeqExceed) and may pass 5000.
	DefaultMaxPermsAdjusted = 200000
	// DefaultSetRows is the seeded row subsample DefaultSearchOptions
	// gives tests of feature sets (TestOptions.MaxRows): a set test costs
	// O(n²) (dissertation §2.2, §2.3: "When n is large, using a random
	// subset of samples for dependence estimations is recommended"), so a
	// search's set tests cost the same from 2,000 rows on, with the power
	// of a 2,000-row test; single features always use every row.
	DefaultSetRows = 2000
)

// TestOptions controls a permutation test (dissertation §2.4, §5.6).
// The zero value of every field means its default.
type TestOptions struct {
	// Perms, when positive, runs exactly that many permutations. Zero
	// selects the adaptive count of §5.6: MinPerms permutations, doubled
	// while none reaches the observed statistic (b = 0), up to MaxPerms.
	Perms int
	// MinPerms is the first adaptive round (default 100).
	MinPerms int
	// MaxPerms caps the adaptive count (default 5000; in a Search with
	// AdjustHolm or AdjustBH, DefaultMaxPermsAdjusted).
	MaxPerms int
	// Seed seeds the permutations: permutation i of a test draws from a
	// stream derived from (Seed, the test's identity, i) alone.
	Seed uint64
	// Threads bounds the workers (default runtime.GOMAXPROCS(0)). The
	// result does not depend on it.
	Threads int
	// MaxRows, when positive, limits tests of feature sets (two or more
	// columns) to a seeded random subsample of that many rows; the
	// statistic and p-value of such a test are those of the subsample.
	// In a Search, set tests of 8,000 rows or more (projSetMinRows) use
	// random projections instead of the O(n²) statistic (projset.go).
	// Single-feature tests always use every row (they cost O(n) per
	// permutation).
	MaxRows int
	// MaxCacheBytes bounds the packed float32 distance triangle
	// (2·n·(n−1) bytes) a set test keeps to permute labels only; above it
	// each permutation recomputes the distances (O(n²·d) instead of
	// O(n²)). A bottom-up search tests sets on up to Threads goroutines
	// at once, each with its triangle, as many as fit in MaxCacheBytes
	// together with the float64 prefix triangles its candidate screens
	// share (prefix.go), which take at most a sixteenth of it. Default
	// 1 GiB.
	MaxCacheBytes int64
	// Exact, when true, decides every sequential test (AdjustHolm,
	// AdjustBH) by permutations alone. By default such a test first
	// takes the approximation of its permutation distribution
	// (approx.go, spectral.go: the χ²₁ tail, then the tail of ν = 1/ρ²
	// equal weights) and runs no permutation when that p-value, divided
	// by ApproxShare, is already at its threshold.
	Exact bool
}

func (o TestOptions) resolve() (TestOptions, error) {
	if o.Perms < 0 || o.MinPerms < 0 || o.MaxPerms < 0 || o.Threads < 0 || o.MaxRows < 0 || o.MaxCacheBytes < 0 {
		return o, fmt.Errorf("dependence: negative test option in %+v", o)
	}
	if o.MinPerms == 0 {
		o.MinPerms = defaultMinPerms
	}
	if o.MaxPerms == 0 {
		o.MaxPerms = DefaultMaxPerms
	}
	if o.MinPerms > o.MaxPerms {
		o.MinPerms = o.MaxPerms
	}
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.MaxRows == 1 {
		return o, fmt.Errorf("dependence: MaxRows must be 0 (all rows) or at least 2, got 1")
	}
	if o.MaxCacheBytes == 0 {
		o.MaxCacheBytes = defaultMaxCacheBytes
	}
	return o, nil
}

// Method names an MDS/SDS search of dissertation chapter 5.
type Method string

// The search methods.
const (
	// MethodMarginal finds the marginal dependence set S_m only (Algorithm 1).
	MethodMarginal Method = "marginal"
	// MethodMDCTopDown is Algorithm 3: FindMDS (Algorithm 2) repeated while
	// the remaining set is dependent.
	MethodMDCTopDown Method = "mdc-topdown"
	// MethodMDCDivide is Algorithm 4, divide and conquer.
	MethodMDCDivide Method = "mdc-dc"
	// MethodMDCBottomUp is Algorithm 5 for set sizes 2 and then 3.
	MethodMDCBottomUp Method = "mdc-bottomup"
	// MethodSDCBottomUp is Algorithm 6 for set sizes 2 and then 3.
	MethodSDCBottomUp Method = "sdc-bottomup"
)

// methods lists the methods in the order of the dissertation.
func methods() []Method {
	return []Method{MethodMarginal, MethodMDCTopDown, MethodMDCDivide, MethodMDCBottomUp, MethodSDCBottomUp}
}

// ParseMethod parses a method name.
func ParseMethod(s string) (Method, error) {
	for _, m := range methods() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown method %q (want marginal, mdc-topdown, mdc-dc, mdc-bottomup or sdc-bottomup)", s)
}

// Adjust names how a search controls false discoveries across its tests.
type Adjust string

// The procedures (see Search).
const (
	// AdjustHolm controls the family-wise error rate: the probability that
	// the analysis reports any false feature or group is at most α.
	AdjustHolm Adjust = "holm"
	// AdjustBH controls the false discovery rate: the expected share of
	// false features and groups among those reported is at most α.
	AdjustBH Adjust = "bh"
	// AdjustNone is the dissertation's per-test rule: every test at α on
	// its own (§5.3), with the adaptive count of §5.6.
	AdjustNone Adjust = "none"
)

// ParseAdjust parses "holm", "bh" or "none".
func ParseAdjust(s string) (Adjust, error) {
	switch Adjust(s) {
	case AdjustHolm, AdjustBH, AdjustNone:
		return Adjust(s), nil
	}
	return "", fmt.Errorf("unknown adjustment %q (want holm, bh or none)", s)
}

// SearchProgress reports how far a search is: Done tests of at most Total
// (Total shrinks as the search rules candidate sets out). Stage is
// "marginal" while the features are tested alone, then "sets".
type SearchProgress struct {
	Stage       string
	Done, Total int
}

// SearchOptions controls Search. Start from DefaultSearchOptions: the zero
// value means AdjustHolm with α = 0, which is an error.
type SearchOptions struct {
	// Stat is the test statistic (default gcor, as in §5.6). A numeric
	// label takes dcor only: gCor_n is defined for a categorical label
	// (Definition 12).
	Stat Stat
	// Method is the search (default mdc-bottomup, the method §5.7 finds
	// exact on the artificial data).
	Method Method
	// Alpha is the level α. With AdjustHolm (the default) it bounds the
	// family-wise error rate of the whole analysis, with AdjustBH its false
	// discovery rate (both need α > 0); with AdjustNone it applies to
	// every test on its own: a set is dependent when its p-value
	// (b+1)/(N+1) ≤ α, and α = 0 means b = 0 after the maximum number of
	// permutations (MaxPerms, or Perms when fixed), the rule of §5.7's
	// mice experiment; Algorithm 6 (SDC) then uses α only for S_m.
	Alpha float64
	// Adjust is the false-discovery control (default AdjustHolm; see
	// Search for the family and the thresholds).
	Adjust Adjust
	// MaxSize is the largest set size the bottom-up methods try: 2 or 3
	// (default 3).
	MaxSize int
	// Test holds the permutation-test options.
	Test TestOptions
	// Progress, when set, is called after each test with the tests done
	// and the most still to do. Calls are serialised; a slow callback
	// slows the search.
	Progress func(SearchProgress)
	// Context, when set, stops the search early: no test starts after it
	// is done, a running test stops within a few permutations, and Search
	// returns an error wrapping Context.Err() instead of a result.
	Context context.Context
	// noPrune turns off prune.go's candidate screen and its families
	// decided by the approximation alone (tests compare the decisions
	// with and without them).
	noPrune bool
}

// DefaultSearchOptions returns gcor, mdc-bottomup, Holm's family-wise
// control at α = 0.05 over the whole analysis, sizes 2 and 3, sequential
// permutation counts up to DefaultMaxPermsAdjusted with the
// approximation (approx.go, spectral.go), set tests on DefaultSetRows rows.
func DefaultSearchOptions() SearchOptions {
	return SearchOptions{Stat: StatGCor, Method: MethodMDCBottomUp, Alpha: DefaultAlpha, Adjust: AdjustHolm, MaxSize: DefaultMaxSize,
		Test: TestOptions{MaxRows: DefaultSetRows}}
}

func (o SearchOptions) resolve() (SearchOptions, error) {
	var err error
	if o.Stat == "" {
		o.Stat = StatGCor
	}
	if o.Stat, err = ParseStat(string(o.Stat)); err != nil {
		return o, fmt.Errorf("dependence: %w", err)
	}
	if o.Method == "" {
		o.Method = MethodMDCBottomUp
	}
	if o.Method, err = ParseMethod(string(o.Method)); err != nil {
		return o, fmt.Errorf("dependence: %w", err)
	}
	if math.IsNaN(o.Alpha) || o.Alpha < 0 || o.Alpha > 1 {
		return o, fmt.Errorf("dependence: Alpha must be in [0, 1], got %v", o.Alpha)
	}
	if o.Adjust == "" {
		o.Adjust = AdjustHolm
	}
	if o.Adjust, err = ParseAdjust(string(o.Adjust)); err != nil {
		return o, fmt.Errorf("dependence: %w", err)
	}
	if o.Adjust != AdjustNone && o.Alpha == 0 {
		return o, fmt.Errorf("dependence: Alpha 0 (no permutation may reach the statistic) is a per-test rule: use it with Adjust none, or give %s a level in (0, 1]", o.Adjust)
	}
	if o.Adjust != AdjustNone && o.Test.MaxPerms == 0 {
		o.Test.MaxPerms = DefaultMaxPermsAdjusted
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxSize != 2 && o.MaxSize != 3 {
		return o, fmt.Errorf("dependence: MaxSize must be 2 or 3, got %d", o.MaxSize)
	}
	if o.Test, err = o.Test.resolve(); err != nil {
		return o, err
	}
	return o, nil
}

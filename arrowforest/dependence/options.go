package dependence

import (
	"fmt"
	"math"
	"runtime"
)

// Stat names the test statistic.
type Stat string

// The statistics a test or search can use (dissertation §5.6 uses gCor).
const (
	StatGCor Stat = "gcor" // gCor_n, Definition 12
	StatDCor Stat = "dcor" // dCor_n against the 0/1 label distance, Definitions 8–9
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
	DefaultMinPerms      = 100     // §5.6: "we start with a small number of tests, e.g., 100"
	DefaultMaxPerms      = 5000    // §2.4, §5.6: N = 5000
	DefaultAlpha         = 0.05    // §5.7, Table 5.3
	DefaultMaxCacheBytes = 1 << 30 // packed float32 distance triangle of a set test
	DefaultMaxSize       = 3       // §5.5: "we found it efficient to identify only SDS's of size = 2 and 3"
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
	// MaxPerms caps the adaptive count (default 5000).
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
	// Single-feature tests always use every row (they cost O(n) per
	// permutation).
	MaxRows int
	// MaxCacheBytes bounds the packed float32 distance triangle
	// (2·n·(n−1) bytes) a set test keeps to permute labels only; above it
	// each permutation recomputes the distances (O(n²·d) instead of
	// O(n²)). Default 1 GiB.
	MaxCacheBytes int64
}

func (o TestOptions) resolve() (TestOptions, error) {
	if o.Perms < 0 || o.MinPerms < 0 || o.MaxPerms < 0 || o.Threads < 0 || o.MaxRows < 0 || o.MaxCacheBytes < 0 {
		return o, fmt.Errorf("dependence: negative test option in %+v", o)
	}
	if o.MinPerms == 0 {
		o.MinPerms = DefaultMinPerms
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
		o.MaxCacheBytes = DefaultMaxCacheBytes
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

// Methods lists the methods in the order of the dissertation.
func Methods() []Method {
	return []Method{MethodMarginal, MethodMDCTopDown, MethodMDCDivide, MethodMDCBottomUp, MethodSDCBottomUp}
}

// ParseMethod parses a method name.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown method %q (want marginal, mdc-topdown, mdc-dc, mdc-bottomup or sdc-bottomup)", s)
}

// SearchOptions controls Search. Start from DefaultSearchOptions: the zero
// value is valid but means α = 0.
type SearchOptions struct {
	// Stat is the test statistic (default gcor, as in §5.6).
	Stat Stat
	// Method is the search (default mdc-bottomup, the method §5.7 finds
	// exact on the artificial data).
	Method Method
	// Alpha is the significance level α: a set is dependent when its
	// p-value (b+1)/(N+1) ≤ α. α = 0 means b = 0 after the maximum number
	// of permutations (MaxPerms, or Perms when fixed), the rule of §5.7's
	// mice experiment. Algorithm 6 (SDC) uses α only for S_m.
	Alpha float64
	// MaxSize is the largest set size the bottom-up methods try: 2 or 3
	// (default 3).
	MaxSize int
	// Test holds the permutation-test options.
	Test TestOptions
}

// DefaultSearchOptions returns gcor, mdc-bottomup, α = 0.05, sizes 2 and 3,
// adaptive permutations 100..5000.
func DefaultSearchOptions() SearchOptions {
	return SearchOptions{Stat: StatGCor, Method: MethodMDCBottomUp, Alpha: DefaultAlpha, MaxSize: DefaultMaxSize}
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

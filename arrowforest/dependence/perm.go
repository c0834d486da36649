package dependence

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// TestResult is the outcome of one permutation test (dissertation §2.4).
type TestResult struct {
	// Statistic is the observed gCor_n or dCor_n on the rows tested.
	Statistic float64
	// B counts the permutations whose statistic reached the observed one.
	B int
	// N is the number of permutations run.
	N int
	// PValue is (B+1)/(N+1).
	PValue float64
	// Rows is the number of rows tested (complete cases, after any
	// MaxRows subsample).
	Rows int
	// MaxN is the most permutations the test could run (the fixed count,
	// the adaptive maximum, or the sequential count of its threshold),
	// and Capped says that TestOptions.MaxPerms cut MaxN below the count
	// its threshold needed, so that a p-value at the threshold may be out
	// of reach (see Search).
	MaxN   int
	Capped bool
	// Approx says that the p-value came from the approximation of the
	// permutation distribution (approx.go, spectral.go) without
	// permutations (N = 0): the rule of hybridP settled it.
	Approx bool
}

// Dependent applies the significance level α (dissertation §5.3): p ≤ α,
// where α = 0 means b = 0 after the maximum count maxN.
func (r TestResult) Dependent(alpha float64, maxN int) bool {
	if alpha == 0 {
		return r.B == 0 && r.N >= maxN
	}
	return r.PValue <= alpha
}

// tieTol is the absolute tolerance under which a permuted statistic counts
// as reaching the observed one: both are dimensionless (gCor_n, dCor_n),
// and arrangements that are equal in exact arithmetic (ties) may differ
// by rounding.
const tieTol = 1e-10

// permProblem is a test statistic prepared for permutations of the label.
type permProblem interface {
	// observed is the statistic of the unpermuted labels computed the way
	// permutations are (for the comparison) and exactly (for the report).
	observed() (cmp, exact float64)
	newWorker() permWorker
	rows() int
}

// permWorker evaluates permutations; one per goroutine.
type permWorker interface {
	// perm returns the statistic under permutation idx of stream s.
	perm(s uint64, idx int) float64
}

// splitmix64 is the SplitMix64 finaliser (Steele, Lea and Flood 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streamKey derives a test's stream from the seed and the test identity.
func streamKey(seed, id uint64) uint64 {
	return splitmix64(splitmix64(seed) ^ splitmix64(id^0x5bd1e9955bd1e995))
}

// permRNG is a SplitMix64 generator whose state starts at a hash of
// (stream, permutation index), so permutation idx is the same whichever
// worker runs it.
type permRNG struct{ s uint64 }

func newPermRNG(stream uint64, idx int) permRNG {
	return permRNG{splitmix64(stream ^ splitmix64(uint64(idx)+0x632be59bd9b4e019))}
}

func (r *permRNG) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// below returns a uniform integer in [0, n) for 0 < n < 2³², from a 32-bit
// draw by Lemire's multiply-and-reject method (unbiased). Each 64-bit
// output serves two draws.
type below struct {
	r    permRNG
	buf  uint64
	have bool
}

func (b *below) u32() uint32 {
	if b.have {
		b.have = false
		return uint32(b.buf >> 32)
	}
	b.buf = b.r.next()
	b.have = true
	return uint32(b.buf)
}

func (b *below) n(n uint32) uint32 {
	hi, lo := bits.Mul32(b.u32(), n)
	if lo < n {
		t := -n % n
		for lo < t {
			hi, lo = bits.Mul32(b.u32(), n)
		}
	}
	return hi
}

// boundedSlow finishes Lemire's multiply-and-reject draw in [0, bound)
// when the first product fell in the rejection zone; it redraws from the
// SplitMix64 state st.
func boundedSlow(hi, lo, bound uint32, st *uint64) uint32 {
	t := -bound % bound
	for lo < t {
		r := permRNG{*st}
		z := r.next()
		*st = r.s
		hi, lo = bits.Mul32(uint32(z), bound)
	}
	return hi
}

// shuffle applies a Fisher–Yates shuffle to lab.
func shuffle(lab []int32, stream uint64, idx int) {
	b := below{r: newPermRNG(stream, idx)}
	for i := len(lab) - 1; i > 0; i-- {
		j := b.n(uint32(i + 1))
		lab[i], lab[j] = lab[j], lab[i]
	}
}

// permPlan says how many permutations a test runs.
type permPlan struct {
	// fixed > 0: exactly that many.
	fixed int
	// exceed > 0: sequential (Besag and Clifford, 1991): stop at the
	// exceed-th permutation reaching the observed statistic, after L
	// permutations, with p = exceed/L, or after max with
	// p = (b+1)/(max+1). Otherwise the adaptive count of §5.6: min,
	// doubled while b = 0, up to max.
	exceed   int
	min, max int
	capped   bool // max was cut by TestOptions.MaxPerms
	// approxT > 0: the decision threshold t of a sequential test that
	// spends ApproxShare of it on the approximation (hybridP); the
	// sequential counts above are then those of (1 − ApproxShare)·t.
	approxT float64
}

// adaptivePlan is the plan of TestOptions o (resolved): its fixed count,
// or the adaptive count of §5.6.
func adaptivePlan(o TestOptions) permPlan {
	if o.Perms > 0 {
		return permPlan{fixed: o.Perms}
	}
	return permPlan{min: o.MinPerms, max: o.MaxPerms}
}

func (pl permPlan) maxN() int {
	if pl.fixed > 0 {
		return pl.fixed
	}
	return pl.max
}

// runPerm runs the permutation test of pr with the plan pl.
// Permutations are split in chunks over up to threads workers; b is an
// integer count and a sequential test stops at a permutation index, so
// the result does not depend on threads. stop (nil: never) is asked
// between chunks of permutations; once it reports true the workers
// finish their current permutation and runPerm returns false with no
// result.
func runPerm(pr permProblem, stream uint64, pl permPlan, threads int, stop func() bool) (TestResult, bool) {
	ap, ok := pr.(approxProblem)
	if pl.approxT <= 0 || !ok || pr.rows() < 4 {
		return runExact(pr, stream, pl, threads, stop)
	}
	return hybridP(pr, ap, stream, pl, threads, stop)
}

// hybridP is the test of pl's threshold t = pl.approxT with the
// approximation (approx.go, spectral.go): p = min(p_ν/c, p_seq/(1−c)),
// c = ApproxShare, valid as a Bonferroni combination of two valid
// p-values. The rule, cheapest first:
//
//  1. z alone: p_χ² ≤ min(c·t, chi2First) is dependent, p = p_χ²/c (then
//     p_ν ≤ p_χ² too: TestEffTailBelowChi2); p_χ² ≥ max(approxFutile,
//     10t) is not, p = min(1, p_χ²/c).
//  2. ρ (O(s²) on s ≤ spectralRows rows): p_ν ≤ c·t is dependent,
//     p = p_ν/c; p_ν ≥ approxFar·t is not, p = min(1, p_ν/c).
//  3. Otherwise the sequential permutation test decides at (1−c)·t.
func hybridP(pr permProblem, ap approxProblem, stream uint64, pl permPlan, threads int, stop func() bool) (TestResult, bool) {
	pa, futile := approxSteps(ap, pl.approxT)
	if pa <= pl.approxT || futile {
		return TestResult{Statistic: exactOf(pr), PValue: pa, Rows: pr.rows(), MaxN: pl.maxN(), Capped: pl.capped, Approx: true}, true
	}
	if pp, ok := pr.(interface{ preparePerms() }); ok {
		pp.preparePerms()
	}
	r, ok := runExact(pr, stream, pl, threads, stop)
	r.PValue = min(pa, r.PValue/(1-ApproxShare))
	return r, ok
}

// approxSteps is hybridP's steps 1 and 2 at threshold t: the approximate
// p-value min(1, p/c), p = p_χ² where step 1 settles the test, else p_ν;
// futile reports p_χ² ≥ max(approxFutile, 10t) or p_ν ≥ approxFar·t,
// which settle "not dependent" (no false finding can come of it; the
// p-value is valid as it stands).
func approxSteps(ap approxProblem, t float64) (pa float64, futile bool) {
	z := ap.approxZ()
	pc := chi2TailP(z)
	futile = pc >= max(approxFutile, 10*t)
	p := pc
	if !(pc <= min(ApproxShare*t, chi2First)) && !futile {
		p = effTailP(z, ap.ratio())
		futile = p >= approxFar*t
	}
	return min(1, p/ApproxShare), futile
}

// approxFar is how many times its threshold t a test's p_ν must be for
// hybridP to settle it "not dependent" without permutations (step 2).
// Like approxFutile this can cost power, never a false finding, and it
// costs power only where p_ν over-states the permutation p-value p* more
// than approxFar·t/p* times. It does so by a bounded factor: P(p_ν ≤ q)
// under permutations is p* at the z where p_ν = q, so the ratio
// P(p_ν ≤ q)/q of TestApproxCalibration (10⁵ permutations of seven data
// sets) is p*/p_ν there: 0.87 to 0.97 at q = 0.05, 0.58 to 0.91 at 0.01,
// 0.29 to 0.9 at 10⁻³ and 0.1 to 0.8 at 10⁻⁴ (1 to 8 permutations of
// 10⁵ there); the test asserts it is not below approxSlack⁻¹. (p_ν tends
// to the normal tail as ρ → 0, which is below the permutation tail, and
// is the exact χ²₁ limit at ρ = 1: Székely, Rizzo and Bakirov 2007,
// Theorem 5.) At p* ≥ approxFar/approxSlack·t = 3t the sequential test
// at (1−c)·t with h = SeqExceed rejects only when at most one of its
// ⌈h/((1−c)t)⌉ permutations reaches the statistic, with probability
// P(Binomial ≤ 1) ≤ P(Poisson(6.7) ≤ 1) < 0.01; at a ratio of 0.3,
// P(Poisson(20) ≤ 1) < 10⁻⁷. On issue 30's 5,000 × 20 case (seed 1)
// each of the 122 pairs and triples that ran permutations before had p_ν
// 44 to 1,900 times its threshold: 32,614 permutations in all, 88% of
// the analysis's CPU time. This is the futility half of a sequential test
// that stops when the p-value is clearly above the threshold it must
// beat (Gandy 2009, "Sequential implementation of Monte Carlo tests with
// uniformly bounded resampling risk", §1, and Besag and Clifford 1991),
// with the approximation's z in place of the first permutations.
const approxFar = 30

// approxSlack is the most TestApproxCalibration lets p_ν over-state the
// permutation p-value (p_ν/p* at P(p_ν ≤ q) = p*): the margin approxFar
// is chosen for.
const approxSlack = 10

// chi2First bounds the χ²₁ p-values hybridP settles before it computes ρ:
// below it p_ν ≤ p_χ² for every ρ (TestEffTailBelowChi2).
const chi2First = 0.01

// exactOf is the reported statistic of pr without the comparison value
// observed also computes (a pass over the triangle for a set).
func exactOf(pr permProblem) float64 {
	if e, ok := pr.(interface{ exactStat() float64 }); ok {
		return e.exactStat()
	}
	_, exact := pr.observed()
	return exact
}

func (p *setProblem) exactStat() float64    { return p.exact }
func (p *setNumProblem) exactStat() float64 { return p.exact }

// runExact is runPerm with permutations only.
func runExact(pr permProblem, stream uint64, pl permPlan, threads int, stop func() bool) (TestResult, bool) {
	if stop == nil {
		stop = func() bool { return false }
	}
	cmpObs, exact := pr.observed()
	res := TestResult{Statistic: exact, Rows: pr.rows(), MaxN: pl.maxN(), Capped: pl.capped}
	if math.IsNaN(cmpObs) {
		// no test is possible (fewer than two rows): report p = 1
		res.PValue = 1
		return res, true
	}
	var workers []permWorker
	thr := cmpObs - tieTol
	grow := func(nw int) {
		for len(workers) < nw {
			workers = append(workers, pr.newWorker())
		}
	}
	var halted atomic.Bool
	// chunk counts the permutations of [lo, hi) reaching the statistic
	// with worker w, unless stop says otherwise before it starts.
	chunk := func(w permWorker, lo, hi int) int {
		if stop() {
			halted.Store(true)
			return 0
		}
		b := 0
		for idx := lo; idx < hi; idx++ {
			if w.perm(stream, idx) >= thr {
				b++
			}
		}
		return b
	}
	count := func(lo, hi int) int {
		nw := min(threads, (hi-lo+permChunk-1)/permChunk)
		grow(nw)
		if nw <= 1 {
			b := 0
			for start := lo; start < hi && !halted.Load(); start += permChunk {
				b += chunk(workers[0], start, min(start+permChunk, hi))
			}
			return b
		}
		var next atomic.Int64
		next.Store(int64(lo))
		var total atomic.Int64
		var wg sync.WaitGroup
		for w := range nw {
			wg.Add(1)
			go func(pw permWorker) {
				defer wg.Done()
				b := 0
				for !halted.Load() {
					start := int(next.Add(permChunk)) - permChunk
					if start >= hi {
						break
					}
					b += chunk(pw, start, min(start+permChunk, hi))
				}
				total.Add(int64(b))
			}(workers[w])
		}
		wg.Wait()
		return int(total.Load())
	}
	switch {
	case pl.fixed > 0:
		res.B, res.N = count(0, pl.fixed), pl.fixed
	case pl.exceed > 0:
		var hits []bool
		// hitsIn marks hits[idx−lo] for the permutations in [lo, hi) that
		// reach the observed statistic, one permutation at a time per
		// worker (a sequential test's permutations are few or costly).
		hitsIn := func(lo, hi int) {
			hits = append(hits[:0], make([]bool, hi-lo)...)
			nw := min(threads, hi-lo)
			grow(nw)
			if nw <= 1 {
				for idx := lo; idx < hi && !halted.Load(); idx++ {
					hits[idx-lo] = chunk(workers[0], idx, idx+1) > 0
				}
				return
			}
			var next atomic.Int64
			next.Store(int64(lo))
			var wg sync.WaitGroup
			for w := range nw {
				wg.Add(1)
				go func(pw permWorker) {
					defer wg.Done()
					for !halted.Load() {
						idx := int(next.Add(1)) - 1
						if idx >= hi {
							return
						}
						hits[idx-lo] = chunk(pw, idx, idx+1) > 0
					}
				}(workers[w])
			}
			wg.Wait()
		}
		round := max(2*pl.exceed, threads)
		for res.N < pl.max {
			lo, hi := res.N, min(res.N+round, pl.max)
			if hitsIn(lo, hi); halted.Load() {
				return res, false
			}
			for i, h := range hits {
				if h {
					res.B++
					if res.B == pl.exceed {
						res.N = lo + i + 1
						res.PValue = float64(res.B) / float64(res.N)
						return res, true
					}
				}
			}
			res.N = hi
			round = min(2*round, seqMaxRound)
		}
	default:
		target := pl.min
		for {
			res.B += count(res.N, target)
			res.N = target
			if res.B > 0 || res.N >= pl.max || halted.Load() {
				break
			}
			target = min(2*target, pl.max)
		}
	}
	if halted.Load() {
		return res, false
	}
	res.PValue = float64(res.B+1) / float64(res.N+1)
	return res, true
}

// seqMaxRound bounds a round of a sequential test (a permutation past the
// stopping one is wasted work, never a different result).
const seqMaxRound = 1 << 14

// permChunk is the number of permutations a worker takes at a time.
const permChunk = 8

// --- one column ---

type uniProblem struct {
	u    *uniCol
	stat Stat
	k    int
}

func (p *uniProblem) rows() int { return len(p.u.v) }

func (p *uniProblem) observed() (float64, float64) {
	if len(p.u.v) < 2 {
		return math.NaN(), math.NaN()
	}
	v := p.newWorker().(*uniWorker).eval(p.u.lab)
	return v, v
}

func (p *uniProblem) newWorker() permWorker {
	return &uniWorker{p: p, s: newUniScratch(p.k)}
}

type uniWorker struct {
	p *uniProblem
	s *uniScratch
}

func (w *uniWorker) eval(lab []int32) float64 {
	w.p.u.sumsGiven(lab, w.s)
	return w.p.u.stat(w.s)
}

// perm draws permutation idx of the labels over the sorted positions by
// sequential selection sampling, fused with the order-statistics pass.
func (w *uniWorker) perm(stream uint64, idx int) float64 {
	b := below{r: newPermRNG(stream, idx)}
	w.p.u.sumsRandom(&b, w.s)
	return w.p.u.stat(w.s)
}

// --- a set of columns ---

// setProblem permutes the labels of a multivariate test. The pair sums
// that do not depend on the labels (Σ d, Σ d², row sums) are computed once
// in float64; the label-dependent within-class sums come from the packed
// float32 triangle tri, or, when tri is nil (over MaxCacheBytes), from
// distances recomputed per permutation.
type setProblem struct {
	x     [][]float64
	y     []int32
	k     int
	stat  Stat
	cnt   []int
	ps    pairSums // exact sums with row sums
	r2    float64
	tri   []float32
	exact float64
	// byClass: within-class sums class by class (byClassMin)
	byClass bool
	lazy    lazyTri
}

// lazyTri is a triangle left for preparePerms: its cache bound and buffer,
// and the set's prefix triangle (prefix.go, nil for none).
type lazyTri struct {
	maxCache int64
	buf      *[]float32
	pending  bool
	pre      []float64
}

// fillTri returns the packed triangle of x's distances (as pairPass
// writes it) in the buffer triBuffer gives, or nil over maxCache.
func (l *lazyTri) fill(x [][]float64, n int) []float32 {
	tri := triBuffer(n, l.maxCache, l.buf)
	if tri == nil {
		return nil
	}
	d := make([]float64, n)
	off := 0
	for i := 1; i < n; i++ {
		di := d[:i]
		if l.pre != nil {
			extRow(l.pre[off:off+i], x[len(x)-1], i, di)
		} else {
			distRow(x, i, di)
		}
		t := tri[off : off+i]
		for j, v := range di {
			t[j] = float32(v)
		}
		off += i
	}
	return tri
}

// preparePerms builds the triangle a lazy problem left out.
func (p *setProblem) preparePerms() {
	if p.lazy.pending {
		p.lazy.pending = false
		p.tri = p.lazy.fill(p.x, len(p.y))
		p.lazy.pre = nil
	}
}

// newSetProblem prepares a set test. buf, when long enough, is reused for
// the distance triangle (a search runs its set tests one after another, so
// one buffer serves them all and memory stays at one triangle).
func newSetProblem(x [][]float64, y []int32, k int, stat Stat, maxCache int64, buf *[]float32) *setProblem {
	return newSetProblemLazy(x, y, k, stat, maxCache, buf, false)
}

// newSetProblemLazy is newSetProblem that, when lazy, leaves the distance
// triangle to preparePerms: a test the approximation settles (hybridP)
// needs only the pair sums.
func newSetProblemLazy(x [][]float64, y []int32, k int, stat Stat, maxCache int64, buf *[]float32, lazy bool) *setProblem {
	return newSetProblemPre(x, y, k, stat, maxCache, buf, lazy, nil)
}

// newSetProblemPre is newSetProblemLazy with the distances of x from pre,
// the prefix triangle of x's columns but the last (prefix.go), when it is
// non-nil: the caller vouches that x needs no rescaling.
func newSetProblemPre(x [][]float64, y []int32, k int, stat Stat, maxCache int64, buf *[]float32, lazy bool, pre []float64) *setProblem {
	n := len(y)
	x = rescaled(x)
	p := &setProblem{x: x, y: y, k: k, stat: stat, cnt: classCounts(y, k)}
	if n < 2 {
		p.exact = math.NaN()
		return p
	}
	if lazy {
		p.lazy = lazyTri{maxCache: maxCache, buf: buf, pending: true, pre: pre}
	} else {
		p.tri = triBuffer(n, maxCache, buf)
	}
	p.byClass = k >= byClassMin
	p.ps = pairPassPre(x, pre, y, k, true, p.tri)
	for _, r := range p.ps.row {
		p.r2 += r * r
	}
	if stat == StatDCor {
		p.exact = dcorCatFromPairs(p.ps, y, p.cnt)
	} else {
		_, p.exact = giniFromSums(n, p.cnt, p.ps.tot, p.ps.within)
	}
	return p
}

// triBuffer returns the packed triangle of n rows (n(n−1)/2 float32),
// reusing *buf when it is long enough, or nil over maxCache bytes.
func triBuffer(n int, maxCache int64, buf *[]float32) []float32 {
	if bytes := int64(n) * int64(n-1) / 2 * 4; bytes > maxCache {
		return nil
	}
	m := n * (n - 1) / 2
	if buf != nil && cap(*buf) >= m {
		return (*buf)[:m]
	}
	t := make([]float32, m)
	if buf != nil {
		*buf = t
	}
	return t
}

func (p *setProblem) rows() int { return len(p.y) }

func (p *setProblem) observed() (float64, float64) {
	if len(p.y) < 2 {
		return math.NaN(), math.NaN()
	}
	w := p.newWorker().(*setWorker)
	return w.eval(p.y), p.exact
}

func (p *setProblem) newWorker() permWorker {
	n := len(p.y)
	w := &setWorker{p: p, lab: make([]int32, n), W: make([]float64, p.k), R: make([]float64, p.k), S: make([]float64, p.k)}
	if p.byClass {
		w.start, w.next, w.members = make([]int32, p.k+1), make([]int32, p.k), make([]int32, n)
		return w
	}
	w.z = make([][]float32, p.k)
	for c := range w.z {
		w.z[c] = make([]float32, n)
	}
	if p.tri == nil {
		w.d = make([]float64, n)
	}
	return w
}

// byClassMin is the number of classes from which a set test sums the
// within-class distances class by class (setWorker.withinByClass) instead
// of by masked dot products over every earlier row: the masks take
// classes × rows memory (an identifier as the label, 50,000 rows: 10 GB
// per worker) and their clearing classes × rows time per permutation,
// while the pairs within classes number only Σ n_c²/2.
const byClassMin = 8

type setWorker struct {
	p       *setProblem
	lab     []int32
	z       [][]float32 // z[c][j] = 1 when lab[j] = c (masked dot products)
	d       []float64   // distance row when there is no cache
	start   []int32     // class c's rows are members[start[c]:start[c+1]], ascending (by class)
	next    []int32     // the counting sort's fill positions
	members []int32
	W, R, S []float64
}

func (w *setWorker) perm(stream uint64, idx int) float64 {
	copy(w.lab, w.p.y)
	shuffle(w.lab, stream, idx)
	return w.eval(w.lab)
}

// eval returns the statistic for labels lab: the within-class pair sums
// W_c = Σ_{j<i, lab_j = lab_i = c} d_ij come from one masked dot product
// per row (with two classes only the rows of class 1, since
// W_0 = Σ d − Σ_i z_i r_i + W_1).
func (w *setWorker) eval(lab []int32) float64 {
	p := w.p
	n := len(lab)
	k := p.k
	two := k == 2
	if w.members != nil { // the worker was made for a byClass problem
		w.withinByClass(lab)
	} else {
		w.withinMasked(lab)
	}
	if two {
		var zr float64
		for i, c := range lab {
			if c == 1 {
				zr += p.ps.row[i]
			}
		}
		w.W[0] = p.ps.tot - zr + w.W[1]
	}
	if p.stat == StatDCor {
		clear(w.R)
		for i, c := range lab {
			w.R[c] += p.ps.row[i]
		}
		for c := range w.S {
			w.S[c] = 2 * w.W[c]
		}
		return dcorCatFromSums(n, p.cnt, 2*p.ps.tot, 2*p.ps.sq, p.r2, w.S, w.R)
	}
	_, g := giniFromSums(n, p.cnt, p.ps.tot, w.W)
	return g
}

// withinMasked sets W[c] to the sum of the distances within class c of
// lab (class 0's left for eval with two classes), one masked dot product
// per row against its earlier rows.
func (w *setWorker) withinMasked(lab []int32) {
	p := w.p
	n := len(lab)
	for c := range w.z {
		clear(w.z[c])
	}
	for j, c := range lab {
		w.z[c][j] = 1
	}
	clear(w.W)
	two := p.k == 2
	off := 0
	for i := 1; i < n; i++ {
		c := lab[i]
		if two && c == 0 {
			off += i
			continue
		}
		zc := w.z[c][:i]
		var s float64
		if p.tri != nil {
			s = dotMask(p.tri[off:off+i], zc)
		} else {
			d := w.d[:i]
			distRow(p.x, i, d)
			s = dotMask64(d, zc)
		}
		w.W[c] += s
		off += i
	}
}

// withinByClass is withinMasked through each class's rows: row i adds
// its distances to the earlier rows of its class only, into the same
// partial sums dotMask (dotMask64 without the cache) keeps — the lane of
// j, the remainder to lane 0, combined in the same order — so W is the
// same to the bit (a masked-out row adds exactly 0 there), in time
// proportional to the pairs within classes and memory to the rows.
func (w *setWorker) withinByClass(lab []int32) {
	p := w.p
	// the rows of each class, ascending (a counting sort)
	clear(w.start)
	for _, c := range lab {
		w.start[c+1]++
	}
	for c := 1; c < len(w.start); c++ {
		w.start[c] += w.start[c-1]
	}
	next := w.next
	copy(next, w.start)
	for j, c := range lab {
		w.members[next[c]] = int32(j)
		next[c]++
	}
	clear(w.W)
	for c := 0; c < p.k; c++ {
		if c == 0 && p.k == 2 { // eval derives W[0]
			continue
		}
		rows := w.members[w.start[c]:w.start[c+1]]
		for q, i := range rows {
			if q == 0 {
				continue
			}
			w.W[c] += p.rowWithin(int(i), rows[:q])
		}
	}
}

// rowWithin returns row i's sum of distances to the earlier rows js
// (ascending), summed as dotMask (or dotMask64 without the cache) sums the
// whole row with a mask.
func (p *setProblem) rowWithin(i int, js []int32) float64 {
	if p.tri != nil {
		off := i * (i - 1) / 2
		t := p.tri[off : off+i]
		full := i &^ 3 // dotMask's four lanes cover j < full; the rest go to lane 0
		var s [4]float64
		for _, j := range js {
			l := int(j) & 3
			if int(j) >= full {
				l = 0
			}
			s[l] += float64(t[j])
		}
		return (s[0] + s[1]) + (s[2] + s[3])
	}
	full := i &^ 1 // dotMask64's two lanes
	var s [2]float64
	for _, j := range js {
		l := int(j) & 1
		if int(j) >= full {
			l = 0
		}
		s[l] += dist(p.x, i, int(j))
	}
	return s[0] + s[1]
}

// dotMask returns Σ t_j z_j in float64 for float32 distances and a 0/1 mask.
func dotMask(t, z []float32) float64 {
	z = z[:len(t)]
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(t); j += 4 {
		s0 += float64(t[j] * z[j])
		s1 += float64(t[j+1] * z[j+1])
		s2 += float64(t[j+2] * z[j+2])
		s3 += float64(t[j+3] * z[j+3])
	}
	for ; j < len(t); j++ {
		s0 += float64(t[j] * z[j])
	}
	return (s0 + s1) + (s2 + s3)
}

func dotMask64(t []float64, z []float32) float64 {
	z = z[:len(t)]
	var s0, s1 float64
	j := 0
	for ; j+2 <= len(t); j += 2 {
		s0 += t[j] * float64(z[j])
		s1 += t[j+1] * float64(z[j+1])
	}
	for ; j < len(t); j++ {
		s0 += t[j] * float64(z[j])
	}
	return s0 + s1
}

// --- public tests ---

// GCorTest runs the permutation test of gCor_n between the columns x and
// the labels y (dissertation §2.4, §5.6; H0: X and Y independent) and
// returns the observed statistic, b, N and p = (b+1)/(N+1). Rows with a
// NaN are left out. One column costs O(n log n) once and O(n) per
// permutation; several columns O(n²·d) once and O(n²) per permutation.
func GCorTest(x [][]float64, y []int32, k int, opt TestOptions) (TestResult, error) {
	return statTest(StatGCor, x, y, k, opt)
}

// DCorTest is GCorTest with dCor_n against the 0/1 label distance
// (Definitions 8–9; as energy::dcor.test with a 0/1-coded two-class label).
func DCorTest(x [][]float64, y []int32, k int, opt TestOptions) (TestResult, error) {
	return statTest(StatDCor, x, y, k, opt)
}

// DCorTestNumeric is the permutation test of dCor_n between the columns x
// and a numeric label y with the distance |y − y'| (Definitions 8–9; as
// energy::dcor.test(x, y)). One column costs O(n log n) per permutation
// (a Fenwick-tree pass in the order of x, uninum.go); several columns O(n²)
// with the packed distance triangle. Rows with a NaN in x are left out;
// y must be finite.
func DCorTestNumeric(x [][]float64, y []float64, opt TestOptions) (TestResult, error) {
	return labelTest(StatDCor, x, Numeric(y), opt)
}

func statTest(stat Stat, x [][]float64, y []int32, k int, opt TestOptions) (TestResult, error) {
	if _, ok := checkXY(x, y, k); !ok {
		return TestResult{}, fmt.Errorf("dependence: %s test: need at least one column, equal lengths and labels in 0..%d", stat, k-1)
	}
	return labelTest(stat, x, Classes(y, k), opt)
}

func labelTest(stat Stat, x [][]float64, lab Label, opt TestOptions) (TestResult, error) {
	if !checkSet(x, lab.Len()) {
		return TestResult{}, fmt.Errorf("dependence: %s test: need at least one column of %d rows", stat, lab.Len())
	}
	if lab.IsNumeric() {
		if err := lab.check(lab.Len()); err != nil {
			return TestResult{}, err
		}
		if stat != StatDCor {
			return TestResult{}, errGCorNumeric
		}
	}
	o, err := opt.resolve()
	if err != nil {
		return TestResult{}, err
	}
	d := newData(x, lab, o)
	return d.test(stat, nil, adaptivePlan(o), o.Threads), nil
}

// errGCorNumeric refuses gCor_n for a numeric label.
var errGCorNumeric = errors.New("dependence: gCor_n is defined for a categorical label (Definition 12); a numeric label takes dcor")

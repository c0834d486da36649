package dependence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Two-sample energy tests (Székely and Rizzo, "Testing for equal
// distributions in high dimension", InterStat 2004; R energy::eqdist.e):
// the statistic of a reference sample X (n₀ rows) and a current sample Y
// (n₁ rows) is
//
//	E = n₀n₁/(n₀+n₁) · (2·mean|X−Y| − mean|X−X′| − mean|Y−Y′|),
//
// with the means over all n₀n₁, n₀² and n₁² pairs. With the sample as a
// two-class label it is a function of the within-class pair sums the
// dependence tests already permute (uni.go, pairs.go): with
// T = Σ_{i<j} d_ij over the pooled rows and W_c the pairs within sample c,
// Σ_{X,Y} d = T − W₀ − W₁, so a permutation of the sample labels costs
// O(n) for one sorted column and O(n²) over the packed distance triangle
// of several.

// EnergyOptions controls one energy test.
type EnergyOptions struct {
	// Test holds the permutation options (Seed, Threads, Perms, MaxPerms,
	// MaxRows, MaxCacheBytes). MaxRows bounds the pooled rows of a joint
	// test (a seeded subsample of each sample in proportion); one column
	// always uses every row.
	Test TestOptions
	// Threshold, when positive, runs the test sequentially at that
	// threshold (Besag–Clifford, SeqExceed): it stops as soon as p ≤
	// Threshold or p > Threshold is settled. Zero runs Test's fixed or
	// adaptive count.
	Threshold float64
	// ID names the test within its family: permutation i draws from a
	// stream derived from (Test.Seed, ID, i) alone.
	ID uint64
	// Directions, when positive, makes EnergyTestJoint test the
	// random-projection statistic Ẽ over that many seeded directions
	// (energyproj.go; Huang and Huo 2017) on every complete row, O(K·n)
	// per permutation, instead of the Euclidean statistic on at most
	// Test.MaxRows rows, O(n²) per permutation. Its Statistic is then Ẽ,
	// an unbiased estimate of eqdist.e's (EnergyStatJoint computes that).
	Directions int
	// MaxProjectedRows, when positive, bounds the pooled rows of the
	// projected test (Directions > 0), which holds about 8d + 12K bytes a
	// row: above it each sample is subsampled in proportion, seeded by
	// Test.Seed and ID as Test.MaxRows is. Zero tests every complete row.
	MaxProjectedRows int
	// Context, when set, stops the test: no permutation starts after it
	// is done, nor a pass of the statistic (a block of the Euclidean sums,
	// a direction of the projections), and the test returns an error
	// wrapping context.Cause instead of a result.
	Context context.Context
}

// stop is the test's stop check for runPerm (nil without a Context).
func (o EnergyOptions) stop() func() bool {
	if o.Context == nil {
		return nil
	}
	return func() bool { return o.Context.Err() != nil }
}

// stopped is the error of a test its Context stopped, else nil.
func (o EnergyOptions) stopped() error {
	if o.Context == nil || o.Context.Err() == nil {
		return nil
	}
	return fmt.Errorf("dependence: energy test stopped: %w", context.Cause(o.Context))
}

func (o EnergyOptions) plan() (TestOptions, permPlan, error) {
	t, err := o.Test.resolve()
	if err != nil {
		return t, permPlan{}, err
	}
	if o.Threshold < 0 || o.Threshold >= 1 || math.IsNaN(o.Threshold) {
		return t, permPlan{}, fmt.Errorf("dependence: energy test threshold %v outside [0, 1)", o.Threshold)
	}
	if o.Threshold > 0 {
		return t, seqPlan(o.Threshold, t), nil
	}
	return t, adaptivePlan(t), nil
}

var errEnergyEmpty = errors.New("dependence: energy test: both samples need at least one row")

// energyFromSums returns E from the pooled pair sum tot and the within
// sums w0, w1 (unordered pairs) of samples of n0 and n1 rows.
func energyFromSums(n0, n1 int, tot, w0, w1 float64) float64 {
	a, b := float64(n0), float64(n1)
	between := tot - w0 - w1
	return a * b / (a + b) * (2*between/(a*b) - 2*w0/(a*a) - 2*w1/(b*b))
}

// energyCmp is the permutation comparison value: E/(n₀n₁/N) divided by
// the mean pooled pair distance, dimensionless so that tieTol applies;
// NaN when every distance is 0.
func energyCmp(n0, n1 int, tot, w0, w1 float64) float64 {
	if !(tot > 0) {
		return math.NaN()
	}
	a, b := float64(n0), float64(n1)
	n := a + b
	return energyFromSums(n0, n1, tot, w0, w1) * n / (a * b) / (tot / (n * (n - 1) / 2))
}

// sortedPairSum returns Σ_{i<j} |v_i − v_j| of v sorted in place
// (the order statistics form of eq. 2.1: Σ_i (2i − n − 1)·v_(i)).
func sortedPairSum(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	var s float64
	for i, x := range v {
		s += float64(2*(i+1)-n-1) * x
	}
	return s
}

// pooled returns ref ++ cur with labels 0 and 1, NaN rows left out.
func pooled(ref, cur []float64) ([]float64, []int32, int, int) {
	x := make([]float64, 0, len(ref)+len(cur))
	y := make([]int32, 0, len(ref)+len(cur))
	var n [2]int
	for c, s := range [2][]float64{ref, cur} {
		for _, v := range s {
			if !math.IsNaN(v) {
				x = append(x, v)
				y = append(y, int32(c))
				n[c]++
			}
		}
	}
	return x, y, n[0], n[1]
}

// EnergyTest is the permutation test of equal distributions of one
// numeric column between ref and cur (NaN left out): the statistic in
// O(n log n) by sorting, each permutation O(n) (uniCol's sums of the
// sorted pooled column). Its Statistic is energy::eqdist.e's.
func EnergyTest(ref, cur []float64, opt EnergyOptions) (TestResult, error) {
	x, y, n0, n1 := pooled(ref, cur)
	if n0 == 0 || n1 == 0 {
		return TestResult{}, errEnergyEmpty
	}
	for _, v := range x {
		if math.IsInf(v, 0) {
			return TestResult{}, errors.New("dependence: energy test: infinite value")
		}
	}
	o, pl, err := opt.plan()
	if err != nil {
		return TestResult{}, err
	}
	// the reported statistic on the raw values, in float64
	s0 := make([]float64, 0, n0)
	s1 := make([]float64, 0, n1)
	for i, v := range x {
		if y[i] == 0 {
			s0 = append(s0, v)
		} else {
			s1 = append(s1, v)
		}
	}
	w0, w1 := sortedPairSum(s0), sortedPairSum(s1)
	tot := sortedPairSum(slices.Clone(x))
	exact := energyFromSums(n0, n1, tot, w0, w1)
	pr := &energyUni{u: newUniCol(x, y, 2, false), n0: n0, n1: n1, exact: exact}
	res, _ := runPerm(pr, streamKey(o.Seed, opt.ID), pl, o.Threads, opt.stop())
	if err := opt.stopped(); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

type energyUni struct {
	u      *uniCol
	n0, n1 int
	exact  float64
}

func (p *energyUni) rows() int { return len(p.u.v) }

func (p *energyUni) observed() (float64, float64) {
	s := newUniScratch(2)
	p.u.sumsGiven(p.u.lab, s)
	return energyCmp(p.n0, p.n1, p.u.pairs, s.p[0], s.p[1]), p.exact
}

func (p *energyUni) newWorker() permWorker {
	return &energyUniWorker{p: p, s: newUniScratch(2)}
}

type energyUniWorker struct {
	p *energyUni
	s *uniScratch
}

func (w *energyUniWorker) perm(stream uint64, idx int) float64 {
	b := below{r: newPermRNG(stream, idx)}
	w.p.u.sumsRandom(&b, w.s)
	return energyCmp(w.p.n0, w.p.n1, w.p.u.pairs, w.s.p[0], w.s.p[1])
}

// EnergyTestCat is EnergyTest for a categorical column with the 0/1
// distance (codes in 0..k−1, negative codes are missing and left out):
// E = n₀n₁/N · Σ_c (a_c/n₀ − b_c/n₁)², with a_c and b_c the counts of
// category c in ref and cur; each permutation is O(n + k).
func EnergyTestCat(ref, cur []int32, k int, opt EnergyOptions) (TestResult, error) {
	if k < 1 {
		return TestResult{}, fmt.Errorf("dependence: energy test: %d categories", k)
	}
	var codes []int32
	var n [2]int
	for c, s := range [2][]int32{ref, cur} {
		for _, v := range s {
			if v >= int32(k) {
				return TestResult{}, fmt.Errorf("dependence: energy test: category %d outside 0..%d", v, k-1)
			}
			if v >= 0 {
				codes = append(codes, v)
				n[c]++
			}
		}
	}
	if n[0] == 0 || n[1] == 0 {
		return TestResult{}, errEnergyEmpty
	}
	o, pl, err := opt.plan()
	if err != nil {
		return TestResult{}, err
	}
	p := &energyCat{codes: codes, k: k, n0: n[0], n1: n[1], tot: make([]int, k), obs1: make([]int, k)}
	for i, c := range codes {
		p.tot[c]++
		if i >= n[0] {
			p.obs1[c]++
		}
	}
	res, _ := runPerm(p, streamKey(o.Seed, opt.ID), pl, o.Threads, opt.stop())
	if err := opt.stopped(); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

type energyCat struct {
	codes     []int32 // ref's rows, then cur's
	k, n0, n1 int
	tot, obs1 []int // counts of each category pooled and in cur
}

func (p *energyCat) rows() int { return len(p.codes) }

// sum returns Σ_c (a_c/n₀ − b_c/n₁)² for cur's counts b.
func (p *energyCat) sum(b []int) float64 {
	a0, a1 := float64(p.n0), float64(p.n1)
	var s float64
	for c, t := range p.tot {
		d := float64(t-b[c])/a0 - float64(b[c])/a1
		s += d * d
	}
	return s
}

func (p *energyCat) observed() (float64, float64) {
	s := p.sum(p.obs1)
	a0, a1 := float64(p.n0), float64(p.n1)
	return s, a0 * a1 / (a0 + a1) * s
}

func (p *energyCat) newWorker() permWorker {
	return &energyCatWorker{p: p, b: make([]int, p.k)}
}

type energyCatWorker struct {
	p *energyCat
	b []int
}

// perm assigns n₁ of the pooled rows to cur by sequential selection
// sampling (as uniCol.sumsRandom) and counts their categories.
func (w *energyCatWorker) perm(stream uint64, idx int) float64 {
	p := w.p
	br := below{r: newPermRNG(stream, idx)}
	clear(w.b)
	n := len(p.codes)
	rem := p.n1
	for j, c := range p.codes {
		if rem == 0 {
			break
		}
		if int(br.n(uint32(n-j))) < rem {
			w.b[c]++
			rem--
		}
	}
	return p.sum(w.b)
}

// EnergyTestJoint is the permutation test of equal joint distributions of
// the columns ref[f] and cur[f] (same number of columns on both sides)
// with the Euclidean distance, as energy::eqdist.e on the raw matrix
// (with opt.Directions, the random-projection statistic instead):
// rows with a NaN in any column are left out; above Test.MaxRows pooled
// rows each sample is subsampled in proportion (seeded by Test.Seed and
// ID). The distances are summed once in float64 and kept as a packed
// float32 triangle (pairs.go) so that each permutation costs O(n²).
func EnergyTestJoint(ref, cur [][]float64, opt EnergyOptions) (TestResult, error) {
	if opt.Directions < 0 || opt.MaxProjectedRows < 0 {
		return TestResult{}, fmt.Errorf("dependence: energy test: %d directions, %d max projected rows (want ≥ 0)", opt.Directions, opt.MaxProjectedRows)
	}
	o, pl, err := opt.plan()
	if err != nil {
		return TestResult{}, err
	}
	if opt.Directions > 0 {
		return energyProjTest(ref, cur, opt, o, pl)
	}
	stream := streamKey(o.Seed, opt.ID)
	r0, r1, err := jointRows(ref, cur, o.MaxRows, stream)
	if err != nil {
		return TestResult{}, err
	}
	n0, n1 := len(r0), len(r1)
	x := make([][]float64, len(ref))
	for f := range x {
		col := make([]float64, 0, n0+n1)
		for _, i := range r0 {
			col = append(col, ref[f][i])
		}
		for _, i := range r1 {
			col = append(col, cur[f][i])
		}
		for _, v := range col {
			if math.IsInf(v, 0) {
				return TestResult{}, errors.New("dependence: energy test: infinite value")
			}
		}
		x[f] = col
	}
	y := make([]int32, n0+n1)
	for i := n0; i < len(y); i++ {
		y[i] = 1
	}
	sp := newSetProblem(x, y, 2, StatGCor, o.MaxCacheBytes, nil)
	pr := &energySet{sp: sp, n0: n0, n1: n1}
	if len(y) >= 2 {
		// the float64 sums of newSetProblem, back in the raw scale
		// (rescaled multiplies by a power of two, exactly)
		scale := rawScale(x, sp.x)
		pr.exact = energyFromSums(n0, n1, sp.ps.tot, sp.ps.within[0], sp.ps.within[1]) * scale
	}
	res, _ := runPerm(pr, stream, pl, o.Threads, opt.stop())
	if err := opt.stopped(); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

// energyRows returns the rows with no NaN in any column, nil when the
// columns differ in length.
func energyRows(cols [][]float64) []int {
	n := len(cols[0])
	for _, c := range cols {
		if len(c) != n {
			return nil
		}
	}
	rows := make([]int, 0, n)
next:
	for i := range n {
		for _, c := range cols {
			if math.IsNaN(c[i]) {
				continue next
			}
		}
		rows = append(rows, i)
	}
	return rows
}

// subsampleRows returns m of rows chosen uniformly (a partial
// Fisher–Yates from stream), in increasing order.
func subsampleRows(rows []int, m int, stream uint64) []int {
	rows = slices.Clone(rows)
	b := below{r: newPermRNG(stream, 0)}
	for i := 0; i < m; i++ {
		j := i + int(b.n(uint32(len(rows)-i)))
		rows[i], rows[j] = rows[j], rows[i]
	}
	rows = rows[:m]
	slices.Sort(rows)
	return rows
}

// rawScale returns raw/scaled for the first nonzero value (1 when none).
func rawScale(raw, scaled [][]float64) float64 {
	for f, c := range raw {
		for i, v := range c {
			if v != 0 {
				return v / scaled[f][i]
			}
		}
	}
	return 1
}

type energySet struct {
	sp     *setProblem
	n0, n1 int
	exact  float64
}

func (p *energySet) rows() int { return len(p.sp.y) }

func (p *energySet) observed() (float64, float64) {
	if len(p.sp.y) < 2 {
		return math.NaN(), p.exact
	}
	w := p.newWorker().(*energySetWorker)
	return w.eval(p.sp.y), p.exact
}

func (p *energySet) newWorker() permWorker {
	return &energySetWorker{p: p, w: p.sp.newWorker().(*setWorker)}
}

type energySetWorker struct {
	p *energySet
	w *setWorker
}

// eval fills the within-sample sums W through setWorker.eval (which also
// returns gCor_n, unused here) and turns them into the comparison value.
func (w *energySetWorker) eval(lab []int32) float64 {
	w.w.eval(lab)
	return energyCmp(w.p.n0, w.p.n1, w.p.sp.ps.tot, w.w.W[0], w.w.W[1])
}

func (w *energySetWorker) perm(stream uint64, idx int) float64 {
	copy(w.w.lab, w.p.sp.y)
	shuffle(w.w.lab, stream, idx)
	return w.eval(w.w.lab)
}

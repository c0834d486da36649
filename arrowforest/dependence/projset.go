package dependence

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Set tests by random projections (issue 30; Huang and Huo, "A
// statistically and numerically efficient independence test based on
// random projections and distance covariance", 2017, §2–3). For u uniform
// on the sphere S^{d−1}, |x − x'| = C_d·E_u|uᵀ(x − x')| (energyproj.go's
// projConst), so over K seeded directions u_k
//
//	a_K(x, x') = Σ_k |u_kᵀ(x − x')|
//
// is an estimate of the Euclidean distance of a set (up to C_d/K) and,
// given the directions, itself a distance of negative type (a sum of
// one-dimensional ones). The statistics of a set — gCov_n, dCov²_n of a
// class label, dCov²_n of a numeric label — are linear in the feature
// distances, so with a_K they are sums of K one-column statistics, each
// O(n log n) once (sort) and O(n) (classes, uni.go) or O(n log n)
// (numbers, a Fenwick pass of uninum.go) per permutation: O(K·n log n)
// where the exact statistic costs O(n²·d) and a 2·n² byte triangle.
//
// The test permutes the label with the directions fixed, so it is an
// exact permutation test of the a_K statistic whatever K (as
// energyproj.go). Its approximation (approxZ) needs the permutation
// variance of T = Σ_k T_k, 2·S_A·S_B/(n(n−3)) with S_A = ‖Σ_k Ã_k‖²
// (approx.go), whose cross terms ⟨Ã_k, Ã_l⟩ cost K² Fenwick passes. It
// takes instead the Cauchy–Schwarz bound S_A ≤ (Σ_k ‖Ã_k‖)², which needs
// only the K diagonal terms: z is then never above the z of the exact
// moments, so every tail of approx.go and spectral.go stays valid
// (conservative); under dependence z still grows like n, which is what a
// large n brings.
//
// The reported statistic is gCor_n with the projected Δ̂ (Σ_k gCov_k over
// Σ_k Δ̂_k, both unbiased for C_d/K times their Euclidean values), or
// dCor_n with Σ_k √(dVar²_k·dVar²_Y) in place of √(dVar²_a·dVar²_Y) (a
// lower bound of the projected dCor_n, by the same Cauchy–Schwarz step).

// projSetMinRows is the least number of set rows from which a search's
// set test uses projSetProblem instead of the exact O(n²·d) statistic
// (setProblem, setNumProblem). Chosen by measurement
// (BenchmarkProjSetCrossover: one 3-column test settled by the
// approximation, CPU per row on a shared 2-core AMD EPYC, K = 24): exact
// 11.1 µs against projected 9.7 µs at 4,000 rows, 21.3 against 6.9 at
// 8,000, 49.0 against 6.7 at 16,000 — the exact cost grows like n, the
// projected one stays flat. The bounded z of a projected test is 1.2–1.8
// times below the exact one on the same rows (projDirsPerCol), so at
// 4,000 rows, where the costs are equal, the exact test is the better
// one; from 8,000 rows the projected test does the same work for a third
// of the CPU, and the exact test's triangle (2·n² bytes: 128 MB at 8,000
// rows, 5 GB at 50,000) outgrows what one worker should hold, against
// 24·K·n bytes (4.6 MB). A search tests sets on DefaultSetRows rows by
// default, so only a larger TestOptions.MaxRows (or 0, every row)
// reaches it.
const projSetMinRows = 8000

// projSetDirs bounds K, the number of directions of a projected set test
// (energyproj.go's default): a set of d columns takes min(projSetDirs,
// projDirsPerCol·d), cut so that the projections fit in
// TestOptions.MaxCacheBytes (projDirs).
const projSetDirs = 64

// projDirsPerCol is K per column of a set. Measured on XOR sets of 2 and 3
// columns at 20,000 rows (the label flipped on 40%), two seeds each: the
// bounded z was 28/22 (K = 6), 32/34 (12), 32/33 (24), 27/29 (48), 25/31
// (96) for 2 columns (exact statistic: 40), and 2.9/4.1, 4.0/3.4,
// 4.3/4.6, 4.2/3.8, 4.3/4.2 for 3 columns (exact: 7.9): past about 8·d
// directions more cost time and no power.
const projDirsPerCol = 8

// projSetMinDirs is the fewest directions a projected set test uses.
const projSetMinDirs = 8

// projBytesPerRow is what one direction holds per row: the sorted values
// and row sums (float64 each) and the row order (int32), with slack for
// the labels in sorted order.
const projBytesPerRow = 24

// projDirs returns K for a set of d columns and n rows (above).
func projDirs(d, n int, maxCache int64) int {
	k := int64(min(projSetDirs, projDirsPerCol*d))
	if n > 0 && maxCache > 0 {
		k = min(k, maxCache/(int64(n)*projBytesPerRow))
	}
	return int(max(k, projSetMinDirs))
}

// projSetProblem is a set test over K projections (above).
type projSetProblem struct {
	n    int
	x    [][]float64 // the set's columns (rescaled), for ratio
	dirs [][]float64
	ord  [][]int32 // per direction: the row at each sorted position
	// classes
	stat Stat
	k    int
	y    []int32
	cnt  []int
	cols []*uniCol // per direction, with row sums (forDCor) always
	// numbers
	yv    []float64 // the label (row order)
	yrank []int32   // y rank of each row
	nums  []*uniNum // per direction; ys and rb shared
	// norm makes the comparison value dimensionless (permutation invariant)
	norm  float64
	exact float64
}

// newProjSetProblem prepares the projected test of the columns x (no NaN)
// against lab with K directions drawn from stream.
func newProjSetProblem(x [][]float64, lab Label, stat Stat, dirsK int, stream uint64) *projSetProblem {
	x = rescaled(x)
	n := lab.Len()
	d := len(x)
	p := &projSetProblem{n: n, x: x, stat: stat}
	if n < 2 {
		p.exact = math.NaN()
		return p
	}
	g := sphereDirs{rng: rand.New(rand.NewPCG(stream, stream^0x70726f6a)), d: d} // "proj"
	// ny: the label side of a numeric label, shared by every direction
	var ny *uniNum
	if lab.IsNumeric() {
		p.yv = lab.Values
		ny = &uniNum{}
		var yo []int
		var sbb float64
		ny.ys, yo, ny.rb, sbb = sortedRowSums(rescaled([][]float64{lab.Values})[0])
		p.yrank = make([]int32, n)
		for q, r := range yo {
			p.yrank[r] = int32(q)
		}
		tb, rbb := sumSq(ny.rb)
		ny.s = numSums{n: n, tb: tb, sbb: sbb, rbb: rbb}
	} else {
		p.y, p.k, p.cnt = lab.Y, lab.K, classCounts(lab.Y, lab.K)
	}
	type pos struct {
		v float64
		r int32
	}
	ps := make([]pos, n)
	for range dirsK {
		u := g.next()
		p.dirs = append(p.dirs, u)
		var mean float64
		for i := range ps {
			var s float64
			for f, c := range x {
				s += c[i] * u[f]
			}
			ps[i] = pos{s, int32(i)}
			mean += s
		}
		mean /= float64(n)
		slices.SortFunc(ps, func(a, b pos) int { return cmp.Compare(a.v, b.v) })
		o := make([]int32, n)
		for j, q := range ps {
			o[j] = q.r
		}
		p.ord = append(p.ord, o)
		if ny != nil {
			xs := make([]float64, n)
			var s1, s2 float64
			for j, q := range ps {
				xs[j] = q.v - mean
				s1 += xs[j]
				s2 += xs[j] * xs[j]
			}
			un := &uniNum{xs: xs, ra: rowSumsSorted(xs), ys: ny.ys, rb: ny.rb, s: ny.s}
			un.s.ta, un.s.raa = sumSq(un.ra)
			un.s.saa = 2*float64(n)*s2 - 2*s1*s1
			p.nums = append(p.nums, un)
		} else {
			sp := make([]sortedPair, n)
			for j, q := range ps {
				sp[j] = sortedPair{q.v - mean, lab.Y[q.r]}
			}
			p.cols = append(p.cols, newUniColSorted(sp, p.cnt, true))
		}
	}
	p.norm = p.normaliser()
	w := p.newWorker().(*projSetWorker)
	p.exact = p.reported(w.evalRows(w.identity()))
	return p
}

// normaliser returns the permutation-invariant scale of Σ_k AB_k
// (Σ_k √(AA_k·BB)) or of Σ_k gCov_k (Σ_k Δ̂_k).
func (p *projSetProblem) normaliser() float64 {
	var s float64
	fn := float64(p.n)
	if p.nums != nil {
		for _, u := range p.nums {
			aa := u.s.saa - 2*u.s.raa/fn + u.s.ta*u.s.ta/(fn*fn)
			bb := u.s.sbb - 2*u.s.rbb/fn + u.s.tb*u.s.tb/(fn*fn)
			s += math.Sqrt(max(0, aa*bb))
		}
		return s
	}
	for _, u := range p.cols {
		if p.stat == StatDCor {
			T := 2 * u.pairs
			aa := u.a2 - 2*u.r2/fn + T*T/(fn*fn)
			s += math.Sqrt(max(0, aa*classSbb(p.n, p.cnt)))
		} else {
			s += u.pairs / (0.5 * fn * (fn - 1))
		}
	}
	return s
}

// classSbb is Σ B_kl² of the 0/1 class distance, double centred.
func classSbb(n int, cnt []int) float64 {
	fn := float64(n)
	var sumNc2, sumRb2 float64
	for _, nc := range cnt {
		f := float64(nc)
		sumNc2 += f * f
		sumRb2 += f * (fn - f) * (fn - f)
	}
	tb := fn*fn - sumNc2
	return tb - 2*sumRb2/fn + tb*tb/(fn*fn)
}

// reported turns the comparison value into the reported statistic: gCor_n
// as it is, dCor_n as its square root (0 when negative).
func (p *projSetProblem) reported(v float64) float64 {
	if p.nums == nil && p.stat != StatDCor {
		return v
	}
	if !(v > 0) {
		return 0
	}
	return math.Sqrt(v)
}

func (p *projSetProblem) rows() int { return p.n }

func (p *projSetProblem) observed() (float64, float64) {
	if p.n < 2 {
		return math.NaN(), math.NaN()
	}
	w := p.newWorker().(*projSetWorker)
	return w.evalRows(w.identity()), p.exact
}

func (p *projSetProblem) exactStat() float64 { return p.exact }

func (p *projSetProblem) newWorker() permWorker {
	w := &projSetWorker{p: p, perm32: make([]int32, p.n), pos: make([]int32, p.n)}
	if p.nums != nil {
		w.fen = make([][4]float64, p.n+1)
	} else {
		w.sc = newUniScratch(p.k)
		w.lab = make([]int32, p.n)
	}
	return w
}

// projSetWorker evaluates permutations of one projected set test.
type projSetWorker struct {
	p      *projSetProblem
	perm32 []int32 // classes: the label of each row; numbers: the row whose label a row takes
	pos    []int32 // labels (or y ranks) in one direction's sorted order
	lab    []int32
	sc     *uniScratch
	fen    [][4]float64
}

// identity sets perm32 to the observed labels (classes) or rows
// (numbers) and returns it.
func (w *projSetWorker) identity() []int32 {
	if w.p.nums != nil {
		for i := range w.perm32 {
			w.perm32[i] = int32(i)
		}
	} else {
		copy(w.perm32, w.p.y)
	}
	return w.perm32
}

func (w *projSetWorker) perm(stream uint64, idx int) float64 {
	shuffle(w.identity(), stream, idx)
	return w.evalRows(w.perm32)
}

// evalRows returns the comparison value for perm (classes: the label of
// each row; numbers: the row whose label each row takes).
func (w *projSetWorker) evalRows(perm []int32) float64 {
	var t float64
	for k := range w.p.ord {
		t += w.direction(k, perm)
	}
	return t / w.p.norm
}

// direction returns direction k's V-centred cross sum AB_k for perm, or
// gCov_k for gCor.
func (w *projSetWorker) direction(k int, perm []int32) float64 {
	p := w.p
	o := p.ord[k]
	fn := float64(p.n)
	if p.nums != nil {
		for j, r := range o {
			w.pos[j] = p.yrank[perm[r]]
		}
		u := p.nums[k]
		sab, rab := u.crossRanks(w.pos, w.fen)
		return sab - 2*rab/fn + u.s.ta*u.s.tb/(fn*fn)
	}
	for j, r := range o {
		w.pos[j] = perm[r]
	}
	u := p.cols[k]
	u.sumsGiven(w.pos, w.sc)
	if p.stat != StatDCor {
		g, _ := giniFromSums(p.n, u.cnt, u.pairs, w.sc.p)
		return g
	}
	T := 2 * u.pairs
	var sab float64
	for c, nc := range u.cnt {
		f := float64(nc)
		sab -= 2*w.sc.p[c] - 2*f*w.sc.r[c]/fn + f*f*T/(fn*fn)
	}
	return sab
}

// approxZ is approx.go's z with the bound S_A ≤ (Σ_k √S_A,k)² (above).
func (p *projSetProblem) approxZ() float64 {
	n := p.n
	if n < 4 {
		return math.NaN()
	}
	w := p.newWorker().(*projSetWorker)
	perm := w.identity()
	var T, rootA, SB float64
	for k := range p.ord {
		var s numSums
		var sab, rab float64
		if p.nums != nil {
			u := p.nums[k]
			for j, r := range p.ord[k] {
				w.pos[j] = p.yrank[perm[r]]
			}
			s = u.s
			sab, rab = u.crossRanks(w.pos, w.fen)
		} else {
			u := p.cols[k]
			for j, r := range p.ord[k] {
				w.pos[j] = perm[r]
			}
			u.sumsGiven(w.pos, w.sc)
			rc := w.sc.r
			s = numSums{n: n, ta: u.rtot, saa: u.a2, raa: u.r2}
			classSums(n, u.cnt, &s)
			sab, rab = classCross(n, u.cnt, u.rtot, w.sc.p, rc)
		}
		t, sa, sb := s.uCentredParts(sab, rab)
		T += t
		rootA += math.Sqrt(max(0, sa))
		SB = sb
	}
	v := 2 * rootA * rootA * SB / (float64(n) * float64(n-3))
	if !(v > 0) {
		return math.NaN()
	}
	return T / math.Sqrt(v)
}

// uCentredParts returns approx.go's T, S_A and S_B (uCentredZ's sums).
func (s *numSums) uCentredParts(sab, rab float64) (T, SA, SB float64) {
	n := float64(s.n)
	k := 1 / ((n - 1) * (n - 2))
	T = sab - 2*rab/(n-2) + s.ta*s.tb*k
	SA = s.saa - 2*s.raa/(n-2) + s.ta*s.ta*k
	SB = s.sbb - 2*s.rbb/(n-2) + s.tb*s.tb*k
	return T, SA, SB
}

// ratio is spectral.go's ρ of the distance a_K on stride rows, times the
// label's.
func (p *projSetProblem) ratio() float64 {
	x, dirs := p.x, p.dirs
	idx := strideRows(p.n)
	rho := specRatio(idx, func(i, j int) float64 {
		var s float64
		for _, u := range dirs {
			var v float64
			for f, c := range x {
				v += (c[i] - c[j]) * u[f]
			}
			s += math.Abs(v)
		}
		return s
	})
	if p.nums != nil {
		y := p.yv
		return rho * specRatio(idx, func(i, j int) float64 { return math.Abs(y[i] - y[j]) })
	}
	return rho * classRatio(p.cnt)
}

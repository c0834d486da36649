package dependence

import (
	"cmp"
	"math"
	"slices"
)

// Permutation tests of dCor_n against a numeric label y with the distance
// b_kl = |y_k − y_l| (Definitions 8–9). With A and B the double-centred
// distance matrices,
//
//	Σ A_kl B_kl = Σ a_kl b_kl − (2/n) Σ_k a_k· b_k· + a·· b··/n²,
//
// and a permutation π of the labels changes only Σ a_kl b_π(k)π(l) and
// Σ_k a_k· b_π(k)·: the row sums of a and b, their totals and Σ a², Σ b²
// are invariant. dcorParts finishes Definition 9 from those sums.
type numSums struct {
	n                  int
	ta, tb             float64 // a··, b··
	saa, sbb, raa, rbb float64 // Σ a², Σ b², Σ_k a_k·², Σ_k b_k·²
}

func (s *numSums) dcor(sab, rab float64) float64 {
	fn := float64(s.n)
	AB := sab - 2*rab/fn + s.ta*s.tb/(fn*fn)
	AA := s.saa - 2*s.raa/fn + s.ta*s.ta/(fn*fn)
	BB := s.sbb - 2*s.rbb/fn + s.tb*s.tb/(fn*fn)
	return dcorFromV(AB, AA, BB)
}

// sortedRowSums returns v sorted (centred at its mean), the order (the
// row of each sorted position), the row sums Σ_l |v_k − v_l| in sorted
// order and Σ_kl (v_k − v_l)² = 2nΣv² − 2(Σv)².
func sortedRowSums(v []float64) (vs []float64, ord []int, rs []float64, sq float64) {
	n := len(v)
	var mean float64
	for _, x := range v {
		mean += x
	}
	mean /= float64(n)
	ord = make([]int, n)
	for i := range ord {
		ord[i] = i
	}
	slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	vs = make([]float64, n)
	var s1, s2 float64
	for i, j := range ord {
		vs[i] = v[j] - mean
		s1 += vs[i]
		s2 += vs[i] * vs[i]
	}
	return vs, ord, rowSumsSorted(vs), 2*float64(n)*s2 - 2*s1*s1
}

func sumSq(v []float64) (t, sq float64) {
	for _, x := range v {
		t += x
		sq += x * x
	}
	return t, sq
}

// uniNum is one numeric column and a numeric label prepared for
// permutations of the label. Positions run in the order of x; the label
// of position j is the y-sorted value ys[π(j)], so a permutation is an
// arrangement π of the y ranks over the x order and Σ a_kl b_kl comes from
// one Fenwick-tree pass (crossRanks) in O(n log n).
type uniNum struct {
	xs  []float64 // x in increasing order, centred
	ra  []float64 // a row sums in that order
	ys  []float64 // y in increasing order, centred
	rb  []float64 // b row sums in y order
	obs []int32   // the observed π: y rank of the row at x position j
	s   numSums
}

func newUniNum(x, y []float64) *uniNum {
	x = rescaled([][]float64{x})[0]
	y = rescaled([][]float64{y})[0]
	u := &uniNum{}
	var xo, yo []int
	var saa, sbb float64
	u.xs, xo, u.ra, saa = sortedRowSums(x)
	u.ys, yo, u.rb, sbb = sortedRowSums(y)
	n := len(x)
	yrank := make([]int32, n)
	for q, row := range yo {
		yrank[row] = int32(q)
	}
	u.obs = make([]int32, n)
	for j, row := range xo {
		u.obs[j] = yrank[row]
	}
	ta, raa := sumSq(u.ra)
	tb, rbb := sumSq(u.rb)
	u.s = numSums{n: n, ta: ta, tb: tb, saa: saa, sbb: sbb, raa: raa, rbb: rbb}
	return u
}

// crossRanks returns Σ_kl |x_k − x_l||y_k − y_l| and Σ_k a_k· b_k· for the
// arrangement pi (pi[j] the y rank at x position j), with fen a scratch of
// n+1 nodes. For j in x order and every earlier i (x_i ≤ x_j),
// (x_j − x_i)|y_j − y_i| = ±(x_j y_j − x_j y_i − x_i y_j + x_i y_i), + for
// y_i ≤ y_j; the tree over y ranks holds the count and the sums of x, y
// and x·y of the positions passed (Huo and Székely, 2016).
func (u *uniNum) crossRanks(pi []int32, fen [][4]float64) (sab, rab float64) {
	n := len(u.xs)
	clear(fen)
	pi = pi[:n]
	ra, rb, ys := u.ra[:n], u.rb, u.ys
	var C, SX, SY, SXY, total float64
	for j, xj := range u.xs {
		q := int(pi[j])
		yj := ys[q]
		rab += ra[j] * rb[q]
		var c, sx, sy, sxy float64
		for r := q + 1; r > 0; r &= r - 1 {
			f := &fen[r]
			c += f[0]
			sx += f[1]
			sy += f[2]
			sxy += f[3]
		}
		xy := xj * yj
		lo := xy*c - xj*sy - yj*sx + sxy
		hi := xy*(C-c) - xj*(SY-sy) - yj*(SX-sx) + (SXY - sxy)
		total += lo - hi
		for r := q + 1; r <= n; r += r & -r {
			f := &fen[r]
			f[0]++
			f[1] += xj
			f[2] += yj
			f[3] += xy
		}
		C++
		SX += xj
		SY += yj
		SXY += xy
	}
	return 2 * total, rab
}

type uniNumProblem struct {
	u     *uniNum
	exact float64
}

func newUniNumProblem(x, y []float64) *uniNumProblem {
	return &uniNumProblem{u: newUniNum(x, y), exact: DCorNum([][]float64{x}, [][]float64{y})}
}

func (p *uniNumProblem) rows() int { return len(p.u.xs) }

func (p *uniNumProblem) observed() (float64, float64) {
	if len(p.u.xs) < 2 {
		return math.NaN(), math.NaN()
	}
	w := p.newWorker().(*uniNumWorker)
	return w.eval(p.u.obs), p.exact
}

func (p *uniNumProblem) newWorker() permWorker {
	n := len(p.u.xs)
	return &uniNumWorker{u: p.u, pi: make([]int32, n), fen: make([][4]float64, n+1)}
}

type uniNumWorker struct {
	u   *uniNum
	pi  []int32
	fen [][4]float64
}

func (w *uniNumWorker) eval(pi []int32) float64 {
	sab, rab := w.u.crossRanks(pi, w.fen)
	return w.u.s.dcor(sab, rab)
}

// perm draws permutation idx of the y ranks by a Fisher–Yates shuffle.
func (w *uniNumWorker) perm(stream uint64, idx int) float64 {
	for i := range w.pi {
		w.pi[i] = int32(i)
	}
	shuffle(w.pi, stream, idx)
	return w.eval(w.pi)
}

// --- a set of columns and a numeric label ---

// setNumProblem permutes a numeric label against a set of columns: the
// distances d_ij of the set come from the packed float32 triangle (or are
// recomputed per permutation over MaxCacheBytes), the label distances
// |y_π(i) − y_π(j)| are formed on the fly, so a permutation costs one
// pass over the triangle.
type setNumProblem struct {
	x     [][]float64
	y     []float64 // the label, centred
	ra    []float64 // a row sums
	rb    []float64 // b row sums, in row order
	s     numSums
	tri   []float32
	exact float64
	lazy  lazyTri
}

// preparePerms builds the triangle a lazy problem left out.
func (p *setNumProblem) preparePerms() {
	if p.lazy.pending {
		p.lazy.pending = false
		p.tri = p.lazy.fill(p.x, len(p.y))
		p.lazy.pre = nil
	}
}

func newSetNumProblem(x [][]float64, y []float64, maxCache int64, buf *[]float32) *setNumProblem {
	return newSetNumProblemLazy(x, y, maxCache, buf, false)
}

// newSetNumProblemLazy is newSetNumProblem that, when lazy, leaves the
// triangle to preparePerms (see newSetProblemLazy).
func newSetNumProblemLazy(x [][]float64, y []float64, maxCache int64, buf *[]float32, lazy bool) *setNumProblem {
	return newSetNumProblemPre(x, y, maxCache, buf, lazy, nil)
}

// newSetNumProblemPre is newSetNumProblemLazy with x's distances from
// the prefix triangle pre when it is non-nil (newSetProblemPre).
func newSetNumProblemPre(x [][]float64, y []float64, maxCache int64, buf *[]float32, lazy bool, pre []float64) *setNumProblem {
	n := len(y)
	p := &setNumProblem{}
	if n < 2 {
		p.exact = math.NaN()
		return p
	}
	p.exact = DCorNum(x, [][]float64{y})
	x = rescaled(x)
	y = rescaled([][]float64{y})[0]
	p.x = x
	ys, ord, rbs, sbb := sortedRowSums(y)
	p.y = make([]float64, n)
	p.rb = make([]float64, n)
	for q, row := range ord {
		p.y[row] = ys[q]
		p.rb[row] = rbs[q]
	}
	if lazy {
		p.lazy = lazyTri{maxCache: maxCache, buf: buf, pending: true, pre: pre}
	} else {
		p.tri = triBuffer(n, maxCache, buf)
	}
	ps := pairPassPre(x, pre, make([]int32, n), 1, true, p.tri)
	p.ra = ps.row
	_, raa := sumSq(p.ra)
	tb, rbb := sumSq(p.rb)
	p.s = numSums{n: n, ta: 2 * ps.tot, tb: tb, saa: 2 * ps.sq, sbb: sbb, raa: raa, rbb: rbb}
	return p
}

func (p *setNumProblem) rows() int { return len(p.y) }

func (p *setNumProblem) observed() (float64, float64) {
	if len(p.y) < 2 {
		return math.NaN(), math.NaN()
	}
	w := p.newWorker().(*setNumWorker)
	for i := range w.pi {
		w.pi[i] = int32(i)
	}
	return w.eval(), p.exact
}

func (p *setNumProblem) newWorker() permWorker {
	n := len(p.y)
	w := &setNumWorker{p: p, pi: make([]int32, n), yp: make([]float32, n)}
	if p.tri == nil {
		w.d = make([]float64, n)
		w.yp64 = make([]float64, n)
	}
	return w
}

type setNumWorker struct {
	p    *setNumProblem
	pi   []int32
	yp   []float32
	yp64 []float64
	d    []float64
}

func (w *setNumWorker) perm(stream uint64, idx int) float64 {
	for i := range w.pi {
		w.pi[i] = int32(i)
	}
	shuffle(w.pi, stream, idx)
	return w.eval()
}

// eval returns dCor_n for the labels y_π(i).
func (w *setNumWorker) eval() float64 {
	return w.p.s.dcor(w.sums())
}

// sums returns Σ_{i≠j} a_ij |y_π(i) − y_π(j)| and Σ_i a_i· b_π(i)·.
func (w *setNumWorker) sums() (sab, rab float64) {
	p := w.p
	for i, q := range w.pi {
		w.yp[i] = float32(p.y[q])
		rab += p.ra[i] * p.rb[q]
	}
	off := 0
	if p.tri == nil {
		for i, q := range w.pi {
			w.yp64[i] = p.y[q]
		}
	}
	for i := 1; i < len(w.pi); i++ {
		if p.tri != nil {
			sab += dotAbs(p.tri[off:off+i], w.yp[:i], w.yp[i])
		} else {
			d := w.d[:i]
			distRow(p.x, i, d)
			sab += dotAbs64(d, w.yp64[:i], w.yp64[i])
		}
		off += i
	}
	return 2 * sab, rab
}

// dotAbs returns Σ t_j |y_j − yi| in float64 for float32 distances.
func dotAbs(t, y []float32, yi float32) float64 {
	y = y[:len(t)]
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(t); j += 4 {
		s0 += float64(t[j] * abs32(y[j]-yi))
		s1 += float64(t[j+1] * abs32(y[j+1]-yi))
		s2 += float64(t[j+2] * abs32(y[j+2]-yi))
		s3 += float64(t[j+3] * abs32(y[j+3]-yi))
	}
	for ; j < len(t); j++ {
		s0 += float64(t[j] * abs32(y[j]-yi))
	}
	return (s0 + s1) + (s2 + s3)
}

func dotAbs64(t, y []float64, yi float64) float64 {
	y = y[:len(t)]
	var s0, s1 float64
	j := 0
	for ; j+2 <= len(t); j += 2 {
		s0 += t[j] * math.Abs(y[j]-yi)
		s1 += t[j+1] * math.Abs(y[j+1]-yi)
	}
	for ; j < len(t); j++ {
		s0 += t[j] * math.Abs(y[j]-yi)
	}
	return s0 + s1
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

package forest

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/forestd/forestd/arrowforest/frame"
)

// outOfBag computes the OOB estimates in one parallel pass over row
// blocks. For each row, only the trees that did not draw it contribute.
//
// Classification (dissertation §1.6): the OOB posterior is the mean of the
// leaf class frequencies (its argmax gives the OOB error); Q(x, j) is the
// share of OOB hard votes for class j; the margin estimate is
// mr = Q(x, y) − max_{j≠y} Q(x, j) (eq. 1.25) and strength s is its mean;
// Var(mr) = mean(mr²) − s² (eq. 1.27); for each tree, p1 and p2 are the
// shares of its OOB rows it assigns to y and to ĵ = argmax_{j≠y} Q(x, j),
// sd = (p1 + p2 − (p1 − p2)²)^½ (eq. 1.28), and the correlation is
// ρ̄ = Var(mr) / (mean sd)² (eq. 1.26).
//
// Regression: Error is the OOB mean squared error and R2 = 1 − MSE/Var(y);
// with q outputs, Error is the mean over outputs of their OOB mean squared
// errors and R2 the mean of their R² (scikit-learn's oob_score_, whose
// r2_score averages the outputs uniformly).
func outOfBag(c *treeWalk, fr *frame.Frame, inbag []bitset, threads int) *OOB {
	n, T, K, Q := fr.NRows, len(c.trees), c.k, c.q
	// per-row results, written by exactly one block each
	hasOOB := make([]bool, n)
	wrong := make([]bool, n)
	margin := make([]float64, n)
	var sqerr []float64 // per row and output (regression)
	if K == 0 {
		sqerr = make([]float64, n*Q)
	}
	// per-worker per-tree counts, merged after (integers: order-free)
	var mu sync.Mutex
	p1 := make([]int64, T)
	p2 := make([]int64, T)
	nt := make([]int64, T)

	// Only with more than two classes does a tree's p2 need the row's ĵ,
	// known after all the trees: the block keeps each tree's class of each
	// row (slots) until then. With two, ĵ is the class other than y.
	slotted := K > 2
	perTree := 0
	if slotted {
		perTree = T
	}
	bs := c.oobBlock
	if bs == 0 {
		bs = c.oobBlockRows(n, threads, perTree)
	}
	splits := c.codeSplits(fr.Cols) // walk the codes (codewalk.go), or nil
	// block scores rows r0..r1 from their row-major values x, or their
	// codes xc when the pass walks the codes
	block := func(r0, r1 int, x []float32, xc []uint8, acc []float64) {
		m := r1 - r0
		if splits != nil {
			c.bins.RowMajor(r0, r1, xc)
		} else {
			c.transpose(fr.Cols, r0, r1, x)
		}
		stride := c.stride
		clear(acc[:m*stride])
		votes := make([]int32, m*max(K, 1))
		noob := make([]int32, m)
		var slots []int32 // a row's leaf class in tree t (slotted), -1 in bag
		if slotted {
			slots = make([]int32, T*m)
		}
		lp1 := make([]int64, T)
		lp2 := make([]int64, T)
		lnt := make([]int64, T)
		rowBuf := make([]int32, m) // tree t's out-of-bag rows of the block
		leaves := make([]int32, m)
		var nodes []axisNode // axisLeaves' copy of a tree
		for t := range c.trees {
			in := inbag[t]
			// without a branch on the bootstrap, which goes either way by
			// chance: every row is written and only an out-of-bag one kept;
			// every slot is -1 until its out-of-bag class is written
			nr := 0
			for i := 0; i < m; i++ {
				r := uint(r0 + i)
				rowBuf[nr] = int32(i)
				nr += int(in[r>>6]>>(r&63)&1 ^ 1)
			}
			if slotted {
				for i := range m {
					slots[t*m+i] = -1
				}
			}
			rows := rowBuf[:nr]
			if splits != nil {
				c.codeLeaves(t, splits[t], xc, rows, leaves, &nodes)
			} else {
				c.leaves(t, x, rows, leaves, &nodes)
			}
			for q, i32 := range rows {
				i, s := int(i32), leaves[q]
				noob[i]++
				c.addLeaf(acc[i*stride:(i+1)*stride], t, s)
				if K > 0 {
					h := c.leafClass(t, s)
					votes[i*K+int(h)]++
					switch {
					case slotted:
						slots[t*m+i] = h
					case h == fr.Y[r0+i]:
						lnt[t]++
						lp1[t]++
					default: // K = 2: h is ĵ
						lnt[t]++
						lp2[t]++
					}
				}
			}
		}
		jhat := make([]int32, m)
		for i := 0; i < m; i++ {
			if noob[i] == 0 {
				continue
			}
			r := r0 + i
			hasOOB[r] = true
			a := acc[i*stride : (i+1)*stride]
			if K == 0 {
				for o, v := range a {
					d := v/float64(noob[i]) - fr.YReg[r*Q+o]
					sqerr[r*Q+o] = d * d
				}
				continue
			}
			best := argmax(a)
			y := int(fr.Y[r])
			wrong[r] = best != y
			jh, jv := -1, int32(-1)
			for q := 0; q < K; q++ {
				if q != y && votes[i*K+q] > jv {
					jh, jv = q, votes[i*K+q]
				}
			}
			jhat[i] = int32(jh)
			if jh >= 0 {
				margin[r] = float64(votes[i*K+y]-jv) / float64(noob[i])
			} else { // a single class: the margin is the vote share for y
				margin[r] = float64(votes[i*K+y]) / float64(noob[i])
			}
		}
		if K == 0 {
			return
		}
		for t := 0; slotted && t < T; t++ {
			for i := 0; i < m; i++ {
				h := slots[t*m+i]
				if h < 0 {
					continue
				}
				lnt[t]++
				if h == fr.Y[r0+i] {
					lp1[t]++
				} else if h == jhat[i] {
					lp2[t]++
				}
			}
		}
		mu.Lock()
		for t := 0; t < T; t++ {
			p1[t] += lp1[t]
			p2[t] += lp2[t]
			nt[t] += lnt[t]
		}
		mu.Unlock()
	}
	if splits != nil {
		forBlocks(n, threads, bs, c.p, c.stride, true, func(r0, r1 int, xc []uint8, acc []float64) { block(r0, r1, nil, xc, acc) })
	} else {
		forBlocks(n, threads, bs, c.p, c.stride, true, func(r0, r1 int, x []float32, acc []float64) { block(r0, r1, x, nil, acc) })
	}

	o := &OOB{}
	if K == 0 {
		return oobRegression(o, hasOOB, sqerr, fr.YReg, Q)
	}
	var sumErr, sumM, sumM2 float64
	for r := 0; r < n; r++ {
		if !hasOOB[r] {
			continue
		}
		o.Rows++
		if wrong[r] {
			sumErr++
		}
		sumM += margin[r]
		sumM2 += margin[r] * margin[r]
	}
	if o.Rows == 0 {
		return o
	}
	rows := float64(o.Rows)
	o.Error = sumErr / rows
	s := sumM / rows
	varMr := sumM2/rows - s*s
	var sdSum float64
	var sdN int
	for t := 0; t < T; t++ {
		if nt[t] == 0 {
			continue
		}
		a := float64(p1[t]) / float64(nt[t])
		b := float64(p2[t]) / float64(nt[t])
		sdSum += math.Sqrt(math.Max(a+b-(a-b)*(a-b), 0))
		sdN++
	}
	o.Strength = s
	if sdN > 0 {
		sd := sdSum / float64(sdN)
		if sd > 0 {
			o.Correlation = varMr / (sd * sd)
		}
	}
	return o
}

// oobRegression fills o from the squared errors of the rows with OOB
// trees (q per row): Error is the mean over the q outputs of their mean
// squared errors, R2 the mean over outputs of 1 − MSE_o/Var(y_o) (an
// output with no variance counts 0).
func oobRegression(o *OOB, hasOOB []bool, sqerr, y []float64, q int) *OOB {
	sumErr := make([]float64, q)
	sumY := make([]float64, q)
	sumY2 := make([]float64, q)
	for r, ok := range hasOOB {
		if !ok {
			continue
		}
		o.Rows++
		for k := 0; k < q; k++ {
			v := y[r*q+k]
			sumErr[k] += sqerr[r*q+k]
			sumY[k] += v
			sumY2[k] += v * v
		}
	}
	if o.Rows == 0 {
		return o
	}
	rows := float64(o.Rows)
	for k := 0; k < q; k++ {
		mse := sumErr[k] / rows
		o.Error += mse / float64(q)
		mean := sumY[k] / rows
		if v := sumY2[k]/rows - mean*mean; v > 0 {
			o.R2 += (1 - mse/v) / float64(q)
		}
	}
	return o
}

// permutationImportance is Breiman's OOB permutation importance: for each
// tree and each feature its atoms use, the feature's values are permuted
// among the tree's OOB rows and the increase in the tree's OOB error
// (misclassification rate, or mean squared error for regression, averaged
// over the outputs of a multi-output forest) is
// recorded; the importance is the mean increase over all trees (features
// a tree does not use contribute 0 for it). Values are not normalised.
func permutationImportance(c *treeWalk, fr *frame.Frame, inbag []bitset, seed uint64, threads int) []float64 {
	T, p := len(c.trees), c.p
	per := make([][]float64, T)
	var wg sync.WaitGroup
	next := make(chan int)
	if threads < 1 {
		threads = 1
	}
	for w := 0; w < min(threads, T); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x, col []float32
			var rows []int32
			for t := range next {
				per[t] = c.permTree(t, fr, inbag[t], seed, &x, &col, &rows)
			}
		}()
	}
	for t := 0; t < T; t++ {
		next <- t
	}
	close(next)
	wg.Wait()
	out := make([]float64, p)
	for _, v := range per {
		for j, d := range v {
			out[j] += d
		}
	}
	for j := range out {
		out[j] /= float64(T)
	}
	return out
}

func (c *treeWalk) permTree(t int, fr *frame.Frame, in bitset, seed uint64, xb, colb *[]float32, rowb *[]int32) []float64 {
	p := c.p
	rows := (*rowb)[:0]
	for i := 0; i < fr.NRows; i++ {
		if !in.has(i) {
			rows = append(rows, int32(i))
		}
	}
	*rowb = rows
	imp := make([]float64, p)
	m := len(rows)
	if m == 0 {
		return imp
	}
	if cap(*xb) < m*p {
		*xb = make([]float32, m*p)
	}
	x := (*xb)[:m*p]
	for j, col := range fr.Cols {
		if col == nil { // released (TrainOptions.DropColumns): the bins' stand-ins
			lut := c.standIns(j)
			codes := c.bins.Codes[j]
			for i, r := range rows {
				x[i*p+j] = lut[codes[r]]
			}
			continue
		}
		for i, r := range rows {
			if c.rank != nil {
				x[i*p+j] = c.rank.Apply(j, col[r])
			} else {
				x[i*p+j] = col[r]
			}
		}
	}
	loss := func() float64 {
		var l float64
		for i, r := range rows {
			s := c.leaf(t, x[i*p:(i+1)*p])
			if c.k > 0 {
				if c.leafClass(t, s) != fr.Y[r] {
					l++
				}
			} else {
				q := c.q
				for o := 0; o < q; o++ {
					d := float64(c.leafValue(t, s, o)) - fr.YReg[int(r)*q+o]
					l += d * d
				}
			}
		}
		if c.k == 0 {
			l /= float64(c.q)
		}
		return l / float64(m)
	}
	base := loss()
	used := c.usedFeatures(t)
	rng := treeRNG(seed^0x5851f42d4c957f2d, t)
	if cap(*colb) < m {
		*colb = make([]float32, m)
	}
	saved := (*colb)[:m]
	for j := 0; j < p; j++ {
		if !used[j] {
			continue
		}
		for i := 0; i < m; i++ {
			saved[i] = x[i*p+j]
		}
		for i := m - 1; i > 0; i-- {
			k := rng.IntN(i + 1)
			x[i*p+j], x[k*p+j] = x[k*p+j], x[i*p+j]
		}
		imp[j] = loss() - base
		for i := 0; i < m; i++ {
			x[i*p+j] = saved[i]
		}
	}
	return imp
}

// tuneScore is what the hyperparameter search (tune.go) knows of one
// candidate forest of T trees; see oobScore.
type tuneScore struct {
	// Error is the out-of-bag error extrapolated to an infinite forest:
	// the misclassification rate (classification) or the mean squared
	// error, averaged over outputs (regression). Lower is better.
	Error float64
	// Brier is the out-of-bag Brier score of the class probabilities
	// extrapolated to an infinite forest (classification; the regression
	// MSE again for regression): the search's tie-break.
	Brier float64
	// OOBError is the plain out-of-bag error of the T trees (OOB.Error).
	OOBError float64
	// Rows is the number of rows the extrapolated estimates average over.
	Rows int
	// PerRow holds each training row's term of Error's mean (NaN for a
	// row it does not average over): candidates scored at the same tree
	// count average over the same rows (their trees share bootstrap
	// samples), so their per-row differences are paired.
	PerRow []float64
}

// tuneHalves is the number of random partitions of a candidate's trees
// into two halves whose out-of-bag errors oobScore extrapolates from.
const tuneHalves = 4

// oobScore scores the forest c of T trees for the hyperparameter search
// (tune.go) on its out-of-bag rows: the error the same settings would
// have with infinitely many trees, estimated from the T trees, so that
// forests of few trees compare as the large forests they begin.
//
// Squared errors have an exact correction. For a row with T_i ≥ 2
// out-of-bag trees whose predictions v_t (class-probability vectors, or
// the q outputs) have mean v̄, E‖v̄ − y‖² = ‖v∞ − y‖² + σ²/T_i, where σ² is
// the variance over trees; the sample variance s² = Σ‖v_t − v̄‖²/(T_i − 1)
// is unbiased for σ², so ‖v̄ − y‖² − s²/T_i is an unbiased estimate of the
// infinite forest's squared error on that row. Brier is its mean for the
// one-hot label (the Brier score); for regression it is the mean squared
// error (per output, averaged over outputs) and Error equals it.
//
// The misclassification rate has no unbiased correction; its expectation
// approaches the infinite forest's as e_T = e∞ + c/T (expanding the error
// of a soft vote of T trees about rows whose infinite-forest posterior is
// tied, the symmetric first-order terms cancel and the next is O(1/T)).
// With e_k the out-of-bag error of a random half of k of the trees,
// Richardson extrapolation gives e∞ ≈ (T·e_T − k·e_k)/(T − k); Error
// averages it over both halves of tuneHalves random partitions of the
// trees (drawn from seed and T), which lowers its variance, and is
// clamped at 0 (an error-free forest whose halves err would otherwise
// extrapolate below 0 and beat one whose halves do not). The
// extrapolated estimates average over the same rows: those with at least
// two out-of-bag trees (and, for classification, at least one in every
// half). The sums run in row order, so the result does not depend on
// threads.
func oobScore(c *Compiled, fr *frame.Frame, inbag []bitset, seed uint64, threads int) tuneScore {
	n, K, Q, T := fr.NRows, c.k, c.q, len(c.roots)
	stride := c.stride
	const H = 2 * tuneHalves // half-forests
	// side[t] has bit h set when tree t is in the second half of
	// partition h (even-indexed halves are the first, odd the second)
	side := make([]uint8, T)
	half := make([]int, H) // trees per half-forest
	rng := rand.New(rand.NewPCG(seed^0x7475_6e65, uint64(T)))
	for h := 0; h < tuneHalves; h++ {
		perm := rng.Perm(T)
		for j, t := range perm {
			if j >= T/2 {
				side[t] |= 1 << h
			}
		}
		half[2*h], half[2*h+1] = T/2, T-T/2
	}
	// per row results, each written by the block that holds the row
	noob := make([]int32, n)
	okHalves := make([]bool, n)
	sqErr := make([]float64, n) // ‖v̄ − y‖² (per output mean for regression)
	corr := make([]float64, n)  // s²/T_i, likewise
	wrong := make([]bool, n)    // the T-tree forest errs (classification)
	wrongH := make([]uint16, n) // bit h: half-forest h errs (classification)
	// the sums and half-forest sums are (1+H)·stride words per row; the
	// block keeps to a quarter of blockRows' bound, as it always has
	c.forBlocks(n, threads, blockRows(n, threads, c.p, 0, 8*(1+H)*stride), func(r0, r1 int, x []float32, acc []float64) {
		c.transpose(fr.Cols, r0, r1, x)
		m := r1 - r0
		sum := acc[:m*stride]
		clear(sum)
		sq := make([]float64, m)
		var hsum []float64 // half-forest sums and counts (classification)
		var hcnt []int32
		if K > 0 {
			hsum, hcnt = make([]float64, m*H*stride), make([]int32, m*H)
		}
		for t, root := range c.roots {
			in := inbag[t]
			for i := 0; i < m; i++ {
				if in.has(r0 + i) {
					continue
				}
				s := c.leaf(root, x[i*c.p:(i+1)*c.p])
				noob[r0+i]++
				idx, lv := c.leafValues(s)
				a := sum[i*stride : (i+1)*stride]
				for e, v := range lv {
					a[idx[e]] += float64(v)
					sq[i] += float64(v) * float64(v)
				}
				if K == 0 {
					continue
				}
				for p := 0; p < tuneHalves; p++ {
					h := 2*p + int(side[t]>>p&1)
					hcnt[i*H+h]++
					ha := hsum[(i*H+h)*stride : (i*H+h+1)*stride]
					for e, v := range lv {
						ha[idx[e]] += float64(v)
					}
				}
			}
		}
		for i := 0; i < m; i++ {
			r := r0 + i
			ti := float64(noob[r])
			if ti == 0 {
				continue
			}
			a := sum[i*stride : (i+1)*stride]
			var se, norm float64
			for q := range a {
				mean := a[q] / ti
				y := 0.0
				if K > 0 && q == int(fr.Y[r]) {
					y = 1
				} else if K == 0 {
					y = fr.YReg[r*Q+q]
				}
				se += (mean - y) * (mean - y)
				norm += mean * mean
			}
			if K == 0 {
				se /= float64(Q)
			}
			sqErr[r] = se
			if ti >= 2 {
				corr[r] = max(sq[i]-ti*norm, 0) / (ti - 1) / ti
				if K == 0 {
					corr[r] /= float64(Q)
				}
			}
			if K == 0 {
				okHalves[r] = true
				continue
			}
			y := int(fr.Y[r])
			wrong[r] = argmax(a) != y
			okHalves[r] = true
			for h := 0; h < H; h++ {
				if hcnt[i*H+h] == 0 {
					okHalves[r] = false
					break
				}
				if argmax(hsum[(i*H+h)*stride:(i*H+h+1)*stride]) != y {
					wrongH[r] |= 1 << h
				}
			}
		}
	})
	var sc tuneScore
	sc.PerRow = make([]float64, n)
	var errRows int
	var sumBrier, sumErr float64
	sumHalf := make([]float64, H)
	for r := 0; r < n; r++ {
		if noob[r] == 0 {
			sc.PerRow[r] = math.NaN()
			continue
		}
		errRows++
		if K > 0 {
			if wrong[r] {
				sc.OOBError++
			}
		} else {
			sc.OOBError += sqErr[r]
		}
		if noob[r] < 2 || !okHalves[r] {
			sc.PerRow[r] = math.NaN()
			continue
		}
		sc.Rows++
		sumBrier += sqErr[r] - corr[r]
		if K == 0 {
			sc.PerRow[r] = sqErr[r] - corr[r]
			continue
		}
		var wT float64
		if wrong[r] {
			sumErr++
			wT = 1
		}
		tt := float64(T)
		for h := 0; h < H; h++ {
			var wh float64
			if wrongH[r]>>h&1 != 0 {
				sumHalf[h]++
				wh = 1
			}
			k := float64(half[h])
			sc.PerRow[r] += (tt*wT - k*wh) / (tt - k) / H
		}
	}
	if errRows > 0 {
		sc.OOBError /= float64(errRows)
	}
	if sc.Rows == 0 {
		return sc
	}
	rows := float64(sc.Rows)
	sc.Brier = sumBrier / rows
	if K == 0 {
		sc.Error = sc.Brier
		return sc
	}
	eT := sumErr / rows
	for h := 0; h < H; h++ {
		k := float64(half[h])
		tt := float64(T)
		sc.Error += (tt*eT - k*sumHalf[h]/rows) / (tt - k) / H
	}
	sc.Error = max(sc.Error, 0) // an error rate is not negative
	return sc
}

// argmax returns the index of the largest value (the first on ties).
func argmax(v []float64) int {
	best := 0
	for q := range v {
		if v[q] > v[best] {
			best = q
		}
	}
	return best
}

// oobBlockRows is the out-of-bag pass's block of rows: blockRows' block
// (perTree int32 a row and tree for the slots), or more rows where the rf
// trees are large beside it. A block copies each rf tree into axisNodes
// (axisLeaves), a cost of the tree's nodes, so fixed blocks make the
// copies grow as n²: at ten million rows a tree's copy is 10.5 MB and the
// copies cost five times the walk. Where a tree's copy outweighs the
// block's rows (x, 4p bytes a row; p in codeLeaves' codes), a block
// takes up to half a tree's nodes in rows, its buffers within two bytes a
// node of the forest, about a tenth of the trees' own memory. Below that
// the copy is the cheaper cost: at a million rows blocks of twice the rows
// spilled x from the cache and made the walk 1.4× slower.
func (w *treeWalk) oobBlockRows(n, threads, perTree int) int {
	b := blockRows(n, threads, w.p, perTree, w.stride+w.k)
	nodes, trees := 0, 0
	for t, tr := range w.trees {
		if w.axis[t] {
			nodes += len(tr.Left)
			trees++
		}
	}
	if trees == 0 || perTree > 0 || 16*nodes/trees <= 4*w.p*b {
		return b
	}
	threads = max(threads, 1)
	rowBytes := 4*w.p + 8*w.stride + 4*w.k + 16 // x, acc, votes, noob and three row lists
	want := min(nodes/trees/2, n/threads, 2*nodes/threads/rowBytes)
	if want <= b {
		return b
	}
	return equalBlocks(n, threads, want)
}

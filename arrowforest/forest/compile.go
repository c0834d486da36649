package forest

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// cnode is one node of the compiled layout (12 bytes). Trees are stored in
// preorder, so the left child of node i is i+1 and only the right child is
// stored; right < 0 marks a leaf whose value slot is -1-right. feat ≥ 0 is
// an axis node: bits 0–29 the feature, bit 30 set when missing values go
// left. feat < 0 is an oblique node: u = -1-feat, atom slot u>>1, missing
// values left when u&1 == 1.
type cnode struct {
	thr   float32
	feat  int32
	right int32
}

const (
	missBit  = 1 << 30
	featMask = missBit - 1
)

// Compiled is a forest flattened for scoring (ARCHITECTURE.md, Performance techniques): one node array for
// all trees, atoms of oblique nodes apart, leaf values in a table: dense
// (K probabilities per leaf, or q values for regression with q outputs)
// or, for classification with many classes, sparse (leafLayout).
type Compiled struct {
	p, k, q int
	nodes   []cnode // nil when axis covers the forest and it came from CompileCompact
	roots   []int32
	atomOff []int32 // per oblique slot: start in atomIdx/atomW, len+1
	atomIdx []int32
	atomW   []float32
	leafVal []float32 // dense leaves: stride values per leaf slot
	// sparse leaves (classification with many classes, leafLayout): slot
	// s holds the probabilities leafW[leafOff[s]:leafOff[s+1]] of the
	// classes leafIdx[leafOff[s]:leafOff[s+1]]; the others are 0
	leafOff []int32
	leafIdx []int32
	leafW   []float32
	iota    []int32 // 0, 1, …, stride−1: the indexes of a dense leaf's values
	stride  int
	rank    *RankMap
	targets []string  // Forest.Targets (multi-output regression)
	axis    *axisWalk // branch-free layout when every node is an axis split
	scratch sync.Pool // *scratch buffers reused across Predict calls
}

// Compile flattens f, which must satisfy Forest.Validate: model.DecodeBytes,
// Train and Tune return such forests, and Validate is not repeated here
// (ARCHITECTURE.md, Formats: one validation per load). Compile checks as
// it goes only what its own walk needs to stay within bounds and
// terminate, so an invalid forest is an error, never a panic.
func Compile(f *Forest) (*Compiled, error) { return compile(f, sparseAuto) }

// compile is Compile with the leaf layout mode (sparseAuto, sparseNever or
// sparseAlways; see layout).
func compile(f *Forest, mode int) (*Compiled, error) {
	if f == nil || len(f.Trees) == 0 {
		return nil, fmt.Errorf("forest: no trees to compile")
	}
	if f.Kind == KindDRF { // its leaves hold no predictions: see drf.go
		return nil, fmt.Errorf("forest: a drf forest predicts multivariate responses through manifold.NewPredictor, not Compile")
	}
	c, err := newCompiled(f)
	if err != nil {
		return nil, err
	}
	for ti, t := range f.Trees {
		if _, _, err := c.inBounds(t); err != nil {
			return nil, fmt.Errorf("forest: tree %d: %w (see Forest.Validate)", ti, err)
		}
	}
	cp, err := ToCompact(f)
	if err != nil {
		return nil, err
	}
	c.build(cp, mode)
	return c, nil
}

// CompileCompact builds the scoring layout straight from a forest's
// compact layout (model format 5), without trees: f is the forest's
// header (Trees nil; every other field as decoded), and this is its one
// validation (ARCHITECTURE.md, Formats): the header as Validate checks
// it and the nodes and lists as Compact.Trees would, in one pass over
// each. It keeps c's arrays.
func CompileCompact(f *Forest, cp *Compact) (*Compiled, error) {
	if f == nil || f.Trees != nil || f.Kind == KindDRF {
		return nil, fmt.Errorf("forest: CompileCompact takes the header of a forest that is not drf, without trees")
	}
	trees, named, err := cp.check(f)
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	if err := f.validateHeader(trees, named); err != nil {
		return nil, err
	}
	c, err := newCompiled(f)
	if err != nil {
		return nil, err
	}
	if c.layoutLists(cp, cp.Leaves, sparseAuto); c.k == 0 && c.q == 1 {
		c.leafVal = make([]float32, 0, len(cp.Split)/2+1)
	}
	if w := compactAxisWalk(c, cp); w != nil {
		// axis splits only: the branch-free layout alone (nodes stays
		// nil: only blockPlain and leaf read it, and only without axis)
		c.axis, c.roots = w, w.roots
		return c, nil
	}
	c.leafVal = c.leafVal[:0]
	c.build(cp, sparseAuto)
	return c, nil
}

// newCompiled is the empty Compiled of f's header.
func newCompiled(f *Forest) (*Compiled, error) {
	c := &Compiled{p: len(f.Features), k: f.NumClasses(), q: f.NumOutputs(), atomOff: []int32{0}, rank: f.Rank, targets: f.Targets}
	if (c.k > 0) != (f.Task == frame.TaskClassification) || (c.k > 0 && c.q != 1) {
		return nil, fmt.Errorf("forest: %s forest with %d classes and %d outputs (Validate)", f.Task, c.k, c.q)
	}
	if f.Rank != nil {
		if err := f.Rank.Validate(c.p); err != nil {
			return nil, fmt.Errorf("forest: %w", err)
		}
	}
	c.stride = max(c.k, 1)
	if c.k == 0 {
		c.stride = c.q
	}
	return c, nil
}

// build lays out the checked compact forest cp for scoring: one cnode
// per node with its right child, the atoms, and the leaf table, one slot
// per distinct leaf list (or per leaf of a single-output regression
// forest, whose values are the nodes').
func (c *Compiled) build(cp *Compact, mode int) {
	n := len(cp.Split)
	c.nodes = make([]cnode, n)
	single := c.k == 0 && c.q == 1
	leaves := cp.Leaves
	if single {
		for _, s := range cp.Split {
			if uint32(s)>>30 == 0b10 {
				leaves++
			}
		}
	}
	c.layoutLists(cp, leaves, mode)
	slot := int32(0)
	for i, s := range cp.Split {
		u := uint32(s)
		switch u >> 30 {
		case 0b00, 0b01:
			f := int32(u & compactFeatureMask)
			if u&compactMiss != 0 {
				f |= missBit
			}
			c.nodes[i] = cnode{thr: cp.Value[i], feat: f}
		case 0b10:
			if single {
				c.leafVal = append(c.leafVal, cp.Value[i])
				c.nodes[i] = cnode{right: -1 - slot}
				slot++
				continue
			}
			c.nodes[i] = cnode{right: -1 - int32(u&compactFeatureMask)}
		default:
			miss := int32(0)
			if u&compactObliqueMiss != 0 {
				miss = 1
			}
			c.nodes[i] = cnode{thr: cp.Value[i], feat: -1 - (int32(u&compactAtomMask)<<1 | miss)}
		}
	}
	for l := cp.Leaves; l < len(cp.Off)-1; l++ {
		e0, e1 := cp.Off[l], cp.Off[l+1]
		c.atomIdx = append(c.atomIdx, cp.Key[e0:e1]...)
		c.atomW = append(c.atomW, cp.Val[e0:e1]...)
		c.atomOff = append(c.atomOff, int32(len(c.atomIdx)))
	}
	cp.walkTrees(func(s, _ int) error { //nolint:errcheck // cp is checked
		c.roots = append(c.roots, int32(s))
		return nil
	}, func(i, r int) { c.nodes[i].right = int32(r) })
	c.axis = newAxisWalk(c)
}

// inBounds checks what compiling and walking t read: array lengths,
// offsets within their arrays, children after their node (so a walk
// ends), features and classes in range, q values per regression leaf. It
// is the part of tree.Validate that memory safety needs, made in the
// walk that compiles t; the rest (a tree, not a graph; distributions;
// finite values) is Validate's, made once per load.
func (c *Compiled) inBounds(t *tree.Tree) (leaves, entries int, err error) {
	n := len(t.Left)
	if n == 0 || len(t.Right) != n || len(t.Threshold) != n || len(t.MissingLeft) != n ||
		len(t.AtomStart) != n+1 || len(t.LeafStart) != n+1 || len(t.AtomWeight) != len(t.AtomFeature) ||
		(c.k > 0 && len(t.LeafClass) != len(t.LeafValue)) {
		return 0, 0, fmt.Errorf("arrays of inconsistent lengths")
	}
	if t.AtomStart[0] != 0 || t.LeafStart[0] != 0 || int(t.AtomStart[n]) != len(t.AtomFeature) || int(t.LeafStart[n]) != len(t.LeafValue) {
		return 0, 0, fmt.Errorf("offsets do not span their arrays")
	}
	for i := 0; i < n; i++ {
		a0, a1, l0, l1 := t.AtomStart[i], t.AtomStart[i+1], t.LeafStart[i], t.LeafStart[i+1]
		if a1 < a0 || l1 < l0 {
			return 0, 0, fmt.Errorf("node %d has decreasing offsets", i)
		}
		if t.Left[i] < 0 {
			if l1 == l0 || (c.k == 0 && int(l1-l0) != c.q) {
				return 0, 0, fmt.Errorf("leaf %d has %d values", i, l1-l0)
			}
			leaves, entries = leaves+1, entries+int(l1-l0)
			if c.k > 0 {
				for _, k := range t.LeafClass[l0:l1] {
					if k < 0 || int(k) >= c.k {
						return 0, 0, fmt.Errorf("leaf %d names class %d outside 0..%d", i, k, c.k-1)
					}
				}
			}
			continue
		}
		if r := t.Right[i]; a1 == a0 || int(r) <= i+1 || int(r) >= n {
			return 0, 0, fmt.Errorf("node %d has no atom or right child %d outside %d..%d", i, r, i+2, n-1)
		}
		for _, j := range t.AtomFeature[a0:a1] {
			if j < 0 || int(j) >= c.p {
				return 0, 0, fmt.Errorf("node %d uses feature %d outside 0..%d", i, j, c.p-1)
			}
		}
	}
	return leaves, entries, nil
}

// Leaf layouts (leafLayout): sparseAuto chooses, sparseNever and
// sparseAlways force one (tests and benchmarks compare them).
const (
	sparseAuto = iota
	sparseNever
	sparseAlways
)

// sparseMinClasses and sparseGain decide the leaf layout: a
// classification forest keeps its leaves sparse when it has at least
// sparseMinClasses classes and the dense table would be more than
// sparseGain times the sparse one. A dense leaf costs 4 bytes per class
// and adds every class to the row's sums; a sparse one costs 8 bytes per
// class it holds (index and probability) and adds only those, so the
// dense table of a forest with as many classes as rows grows with the
// square of the rows (3,000 rows of 3,000 classes, 50 trees: 7 GB
// allocated compiling the dense table, 0.1 GB sparse). Measured
// (BenchmarkPredictClasses): with 26 classes the two layouts score at the
// same speed, with 1,000 the sparse one is several times faster; below
// sparseMinClasses dense is kept, the layout every forest had before.
const (
	sparseMinClasses = 16
	sparseGain       = 4
)

// layoutLists fills the leaf tables from cp's leaf lists and chooses
// dense or sparse storage (mode: sparseAuto, sparseNever or
// sparseAlways; sparse is for classification only); a single-output
// regression forest gets room for leaves values, which build appends.
func (c *Compiled) layoutLists(cp *Compact, leaves, mode int) {
	if c.k == 0 && c.q == 1 {
		c.leafVal = make([]float32, 0, leaves)
		c.iota = []int32{0}
		return
	}
	entries := int(cp.Off[cp.Leaves])
	sparse := c.k > 0 && (mode == sparseAlways ||
		mode == sparseAuto && c.k >= sparseMinClasses && 4*leaves*c.k > sparseGain*(8*entries+4*leaves))
	if sparse {
		c.leafOff = append([]int32(nil), cp.Off[:cp.Leaves+1]...)
		c.leafIdx = append([]int32(nil), cp.Key[:entries]...)
		c.leafW = append([]float32(nil), cp.Val[:entries]...)
		return
	}
	c.leafVal = make([]float32, leaves*c.stride)
	c.iota = make([]int32, c.stride)
	for j := range c.iota {
		c.iota[j] = int32(j)
	}
	for l := 0; l < cp.Leaves; l++ {
		vals := c.leafVal[l*c.stride : (l+1)*c.stride]
		for e := cp.Off[l]; e < cp.Off[l+1]; e++ {
			vals[cp.Key[e]] = cp.Val[e]
		}
	}
}

// leafValues returns the values of leaf slot and the accumulator indexes
// they add to: all stride of a dense leaf, or the classes a sparse leaf
// holds.
func (c *Compiled) leafValues(slot int32) ([]int32, []float32) {
	if c.leafOff != nil {
		a, b := c.leafOff[slot], c.leafOff[slot+1]
		return c.leafIdx[a:b], c.leafW[a:b]
	}
	return c.iota, c.leafVal[int(slot)*c.stride : int(slot+1)*c.stride]
}

// leaf returns the leaf slot reached by the row-major row x (len p).
//
// One row walks to its leaf before the next starts: measured against a
// level-synchronous walk over the block and against branch-free walks of
// 8-row groups (BenchmarkVariants, kept in the history), this plain walk
// was fastest on this machine — the branch predictor and out-of-order core
// already overlap the next row's first loads.
func (c *Compiled) leaf(root int32, x []float32) int32 {
	return -1 - c.nodes[c.leafNode(root, x)].right
}

// leafNode is leaf's node rather than its slot (distinct leaves may share
// a slot: their values).
func (c *Compiled) leafNode(root int32, x []float32) int32 {
	nodes := c.nodes
	i := root
	for {
		n := &nodes[i]
		if n.right < 0 {
			return i
		}
		if f := n.feat; f >= 0 {
			v := x[f&featMask]
			if v <= n.thr || (v != v && f&missBit != 0) {
				i++
			} else {
				i = n.right
			}
			continue
		}
		u := -1 - n.feat
		v := c.project(u>>1, x)
		if v <= n.thr || (v != v && u&1 != 0) {
			i++
		} else {
			i = n.right
		}
	}
}

// blockRows returns how many rows one worker scores per pass over the
// trees. Each tree walks the whole block before the next tree starts, so
// the larger the block, the more rows reuse a tree's nodes while they are
// in cache: on trunk (100 trees of ~9,000 nodes) CPU time per row fell from
// 10.7 µs at 256 rows to 7.1 µs at 32,768 (BenchmarkBlockRows, the plain
// walk). The axis walk's key rows (4·p bytes a row) must also stay near
// the cache: capped at 16,384 rows instead of 65,536, forestd eval of 100k
// Trunk rows took 0.19 s instead of 0.26 s on 2 threads and 0.28 instead
// of 0.33 on one (medians of 8, 2026-11-28, AMD EPYC). The block is capped
// at 16,384 rows and so a worker's two row-major
// buffers stay within 16 MiB each, so perTree·rows ≤ 2^21 when the
// caller keeps per-tree state (OOB), and so perRow·rows ≤ 2^23 for the
// caller's per-row state in 8-byte words (the accumulator's stride and
// what else it keeps per row and class): 64 MiB, which binds only for
// many classes (10,000 classes made the OOB pass's accumulators 1.2 GB on
// 10,000 rows); blocks are equal and their number a multiple of the
// threads.
func blockRows(n, threads, p, perTree, perRow int) int {
	if n <= 0 {
		// no rows: one block size that scores nothing (a zero-row batch is
		// a valid input, never a division by zero)
		return 1
	}
	b := n / max(threads, 1)
	b = min(b, 16384, (16<<20)/(4*max(p, 1)))
	if perTree > 0 {
		b = min(b, (1<<21)/perTree)
	}
	if perRow > 0 {
		b = min(b, (1<<23)/perRow)
	}
	return equalBlocks(n, threads, max(b, 64))
}

// equalBlocks turns blocks of at most b rows into equal blocks, as many as
// a multiple of the threads, so no worker is left with one block more
// than the others.
func equalBlocks(n, threads, b int) int {
	t := max(threads, 1)
	nb := (n + b - 1) / b
	nb = (nb + t - 1) / t * t
	return max((n+nb-1)/nb, 1)
}

// transpose copies rows [r0, r1) of the column-major cols into x row-major,
// through the rank map when the forest has one.
func (c *Compiled) transpose(cols [][]float32, r0, r1 int, x []float32) {
	transpose(cols, c.rank, r0, r1, x)
}

// transpose is Compiled.transpose with the rank map rank (nil: none).
func transpose(cols [][]float32, rank *RankMap, r0, r1 int, x []float32) {
	p := len(cols)
	if rank != nil {
		for j, col := range cols {
			for i, val := range col[r0:r1] {
				x[i*p+j] = rank.Apply(j, val)
			}
		}
		return
	}
	for j, col := range cols {
		v := col[r0:r1]
		for i, val := range v {
			x[i*p+j] = val
		}
	}
}

// Prediction holds batch predictions: Class and Prob (K per row) for
// classification, Value for regression (q per row, row-major, for a
// forest with q outputs: Value[i*q+o] is output o of row i).
type Prediction struct {
	Class []int32
	Prob  []float32
	Value []float64
}

// Predict scores every row of fr, whose columns must be the forest's
// features in order, using up to threads goroutines over row blocks. The
// result does not depend on threads. A classification forest's Prob holds
// every row's K probabilities (rows×K float32): PredictBlocks scores
// without holding them.
func (c *Compiled) Predict(fr *frame.Frame, threads int) (*Prediction, error) {
	if fr.P() != c.p {
		return nil, fmt.Errorf("forest: frame has %d features, model needs %d", fr.P(), c.p)
	}
	n := fr.NRows
	out := &Prediction{}
	if c.k > 0 {
		out.Class = make([]int32, n)
		out.Prob = make([]float32, n*c.k)
	} else {
		out.Value = make([]float64, n*c.q)
	}
	c.predictBlocks(fr, threads, out, nil)
	return out, nil
}

// BlockFunc receives one finished block of PredictBlocks: rows [r0, r1)
// of the frame, their classes (class[i] is row r0+i's) and probabilities
// (prob[i*K+j] is row r0+i's probability of class j), exactly the values
// Predict's Class and Prob hold for those rows. The slices are the
// worker's buffers, reused for its next block once the function returns:
// it copies what it keeps. It is called from up to threads goroutines at
// once, each with other rows, in no particular order of the blocks.
type BlockFunc func(r0, r1 int, class []int32, prob []float32)

// PredictBlocks scores every row of fr like Predict and hands each block of
// rows to fn as a worker finishes it, so that a caller which keeps less
// than every class's probability (the most probable classes of each row,
// or the class alone) never holds the rows×K probability matrix: the
// memory is the workers' blocks (BlockBytes) plus what fn keeps. Where
// the blocks start depends on threads; the values fn receives for a row
// do not. A forest without classes (regression) is an error: Predict
// scores it.
func (c *Compiled) PredictBlocks(fr *frame.Frame, threads int, fn BlockFunc) error {
	if c.k == 0 {
		return fmt.Errorf("forest: a regression forest has no class probabilities to hand over by block: use Predict")
	}
	if fr.P() != c.p {
		return fmt.Errorf("forest: frame has %d features, model needs %d", fr.P(), c.p)
	}
	c.predictBlocks(fr, threads, nil, fn)
	return nil
}

// BlockBytes is the memory the workers of Predict (byBlock false) or
// PredictBlocks (byBlock true) hold for their blocks of rows while they
// score n rows on threads goroutines: each worker's sums (8 bytes per
// class or output and row of its block), its row-major copies of the
// block's features and scratch, and with byBlock the block's classes and
// probabilities (4 bytes per class and row) that PredictBlocks hands
// over. It grows with n only up to one block per worker (blockRows: at
// most 2^23 sums per block, or 64 rows), so for many classes it is what
// scoring holds beside what it keeps of the predictions; it does not
// count Predict's result.
func (c *Compiled) BlockBytes(n, threads int, byBlock bool) int64 {
	if n <= 0 {
		return 0
	}
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	bs := blockRows(n, threads, c.p, 0, c.stride)
	workers := int64(min(threads, (n+bs-1)/bs))
	row := 8*c.stride + 8 + 4 // sums, sort keys, tree-0 leaves
	if c.axis != nil {
		row += 2*4*c.axis.stride + 4 // key rows and their reordered copy, leaf slots
	} else {
		row += 2 * 4 * c.p // the row-major block and its reordered copy
	}
	if byBlock {
		row += 4 + 4*c.k
	}
	return workers * int64(bs) * int64(row)
}

// predictBlocks scores fr's rows block by block on up to threads workers.
// With full, each block's classes and probabilities (or values) are
// written into full's rows; without it, into the worker's block buffers,
// which fn then receives.
func (c *Compiled) predictBlocks(fr *frame.Frame, threads int, full *Prediction, fn BlockFunc) {
	n := fr.NRows
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	bs := blockRows(n, threads, c.p, 0, c.stride)
	c.forBlocksBuf(n, threads, bs, c.axis == nil, func(r0, r1 int, x []float32, acc []float64) {
		sc := c.getScratch(bs)
		defer c.scratch.Put(sc)
		m := r1 - r0
		stride := c.stride
		var keys []uint64
		if c.axis != nil {
			keys = c.blockAxis(fr.Cols, r0, r1, sc, acc)
		} else {
			keys = c.blockPlain(fr.Cols, r0, r1, x, sc, acc)
		}
		var class []int32
		var prob []float32
		var value []float64
		switch {
		case full == nil:
			class, prob = sc.block(m, c.k)
		case c.k > 0:
			class, prob = full.Class[r0:r1], full.Prob[r0*c.k:r1*c.k]
		default:
			value = full.Value[r0*stride : r1*stride]
		}
		inv := 1 / float64(len(c.roots))
		for q, k := range keys[:m] {
			r := int(uint32(k)) // row in block
			a := acc[q*stride : (q+1)*stride]
			if c.k == 0 {
				for o, v := range a {
					value[r*stride+o] = v * inv
				}
				continue
			}
			best := 0
			for j, v := range a {
				prob[r*c.k+j] = float32(v * inv)
				if v > a[best] {
					best = j
				}
			}
			class[r] = int32(best)
		}
		if fn != nil {
			fn(r0, r1, class, prob)
		}
	})
}

// MultiOutput is a model that predicts q named values per row: a
// multi-output regression forest (Compiled of a forest with Targets) or a
// distance random forest (manifold.Predictor). Scoring writes one column
// per target (schemas.MultiPredictions).
type MultiOutput interface {
	// Targets names the q outputs, in order.
	Targets() []string
	// PredictValues predicts every row of fr: rows×q values, row-major.
	PredictValues(fr *frame.Frame, threads int) ([]float64, error)
}

// IsMultiOutput reports whether f predicts several values per row (a
// multi-output regression forest or a drf forest): such a model is scored
// through a MultiOutput.
func IsMultiOutput(f *Forest) bool { return f.Targets != nil || f.Kind == KindDRF }

// Targets names the outputs of a multi-output regression forest (nil for
// one output).
func (c *Compiled) Targets() []string { return c.targets }

// PredictValues is Predict's Value: rows×q for a forest with q outputs.
// With classes it is an error.
func (c *Compiled) PredictValues(fr *frame.Frame, threads int) ([]float64, error) {
	if c.k > 0 {
		return nil, fmt.Errorf("forest: a classification forest predicts classes, not values")
	}
	pred, err := c.Predict(fr, threads)
	if err != nil {
		return nil, err
	}
	return pred.Value, nil
}

// scratch is one worker's buffers for a block of Predict.
type scratch struct {
	y     []float32 // the block's rows, reordered (plain walk)
	kx    []uint32  // the block's key rows (axis walk)
	ky    []uint32  // the key rows, reordered
	keys  []uint64  // tree-0 leaf << 32 | row in block
	s0    []int32
	slots []int32
	class []int32   // the block's classes (PredictBlocks)
	prob  []float32 // and probabilities, K per row
}

// block returns the scratch's class and probability buffers for m rows of
// k classes, allocated on first use (Predict writes into its result).
func (sc *scratch) block(m, k int) ([]int32, []float32) {
	if cap(sc.class) < m {
		sc.class = make([]int32, m)
	}
	if cap(sc.prob) < m*k {
		sc.prob = make([]float32, m*k)
	}
	return sc.class[:m], sc.prob[:m*k]
}

// getScratch returns buffers for blocks of up to bs rows, reusing those of
// earlier calls (a daemon scores one small batch per message) when they
// are large enough.
func (c *Compiled) getScratch(bs int) *scratch {
	if sc, ok := c.scratch.Get().(*scratch); ok && len(sc.keys) >= bs {
		return sc
	}
	return c.newScratch(bs)
}

func (c *Compiled) newScratch(bs int) *scratch {
	sc := &scratch{keys: make([]uint64, bs), s0: make([]int32, bs)}
	if c.axis != nil {
		sc.kx = make([]uint32, bs*c.axis.stride)
		sc.ky = make([]uint32, bs*c.axis.stride)
		sc.slots = make([]int32, bs)
	} else {
		sc.y = make([]float32, bs*c.p)
	}
	return sc
}

// sortByLeaf orders the block's rows by the leaf node they reach in
// tree 0 (s0; nodes, not slots, which distinct leaves share): rows that share a leaf there tend to share paths in the other
// trees too, so scoring them consecutively reuses the same deep nodes from
// L1 (about 10% less CPU per row on trunk). It returns the sorted keys
// (tree-0 leaf << 32 | row in block).
func sortByLeaf(s0 []int32, keys []uint64) []uint64 {
	for i, s := range s0 {
		keys[i] = uint64(s)<<32 | uint64(i)
	}
	slices.Sort(keys[:len(s0)])
	return keys[:len(s0)]
}

// reorderRows copies the rows of x (stride s) into y in the order of the
// sorted keys (row in block in the low 32 bits).
func reorderRows[T any](y, x []T, keys []uint64, s int) {
	for q, k := range keys {
		i := int(uint32(k))
		copy(y[q*s:(q+1)*s], x[i*s:(i+1)*s])
	}
}

// addTree0 clears the accumulator of the sorted rows and adds each row's
// tree-0 leaf (s0, indexed by row in block).
func (c *Compiled) addTree0(acc []float64, keys []uint64, s0 []int32) {
	clear(acc[:len(keys)*c.stride])
	for q, k := range keys {
		c.addLeaf(acc[q*c.stride:(q+1)*c.stride], s0[uint32(k)])
	}
}

// addLeaf adds leaf slot's values to the accumulator a.
func (c *Compiled) addLeaf(a []float64, slot int32) {
	if c.leafOff != nil {
		e0, e1 := c.leafOff[slot], c.leafOff[slot+1]
		for e, j := range c.leafIdx[e0:e1] {
			a[j] += float64(c.leafW[int(e0)+e])
		}
		return
	}
	lv := c.leafVal[int(slot)*c.stride : int(slot+1)*c.stride]
	for j, v := range lv {
		a[j] += float64(v)
	}
}

// blockPlain scores rows [r0, r1) with Compiled.leaf into acc (indexed by
// position in the returned sorted order). Every row sums its trees in tree
// order, so results do not depend on the order.
func (c *Compiled) blockPlain(cols [][]float32, r0, r1 int, x []float32, sc *scratch, acc []float64) []uint64 {
	c.transpose(cols, r0, r1, x)
	m := r1 - r0
	p, stride := c.p, c.stride
	for i := 0; i < m; i++ {
		sc.s0[i] = c.leafNode(c.roots[0], x[i*p:(i+1)*p])
	}
	keys := sortByLeaf(sc.s0[:m], sc.keys)
	for i, n := range sc.s0[:m] {
		sc.s0[i] = -1 - c.nodes[n].right
	}
	y := sc.y[:m*p]
	reorderRows(y, x, keys, p)
	c.addTree0(acc, keys, sc.s0)
	for _, root := range c.roots[1:] {
		for q := 0; q < m; q++ {
			c.addLeaf(acc[q*stride:(q+1)*stride], c.leaf(root, y[q*p:(q+1)*p]))
		}
	}
	return keys
}

// blockAxis is blockPlain on the branch-free axis layout (axiswalk.go).
func (c *Compiled) blockAxis(cols [][]float32, r0, r1 int, sc *scratch, acc []float64) []uint64 {
	w := c.axis
	m, s, stride := r1-r0, w.stride, c.stride
	x := sc.kx[:m*s]
	w.keys(cols, c.rank, r0, r1, x)
	w.leafNodes(c.roots[0], x, m, sc.s0)
	keys := sortByLeaf(sc.s0[:m], sc.keys)
	w.slots(sc.s0[:m])
	y := sc.ky[:m*s]
	reorderRows(y, x, keys, s)
	c.addTree0(acc, keys, sc.s0)
	slots := sc.slots[:m]
	for _, root := range c.roots[1:] {
		w.leaves(root, y, m, slots)
		for q, slot := range slots {
			c.addLeaf(acc[q*stride:(q+1)*stride], slot)
		}
	}
	return keys
}

// forBlocks runs fn over row blocks on up to threads workers, each with its
// own row-major block buffer and accumulator.
func (c *Compiled) forBlocks(n, threads, blockRows int, fn func(r0, r1 int, x []float32, acc []float64)) {
	c.forBlocksBuf(n, threads, blockRows, true, fn)
}

// forBlocksBuf is forBlocks; without rowBuf fn gets no row-major buffer
// (x is nil) because it keeps its own.
func (c *Compiled) forBlocksBuf(n, threads, blockRows int, rowBuf bool, fn func(r0, r1 int, x []float32, acc []float64)) {
	forBlocks(n, threads, blockRows, c.p, c.stride, rowBuf, fn)
}

// forBlocks is Compiled.forBlocksBuf for rows of p features and
// accumulators of stride words per row; the rows are float32 values, or
// bin codes (the out-of-bag pass of a forest grown on them, codewalk.go).
func forBlocks[X float32 | uint8](n, threads, blockRows, p, stride int, rowBuf bool, fn func(r0, r1 int, x []X, acc []float64)) {
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	if n <= 0 {
		return
	}
	nb := (n + blockRows - 1) / blockRows
	threads = min(threads, max(nb, 1))
	var wg sync.WaitGroup
	next := make(chan int, threads)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x []X
			if rowBuf {
				x = make([]X, blockRows*max(p, 1))
			}
			acc := make([]float64, blockRows*stride)
			for b := range next {
				r0 := b * blockRows
				fn(r0, min(r0+blockRows, n), x, acc)
			}
		}()
	}
	for b := 0; b < nb; b++ {
		next <- b
	}
	close(next)
	wg.Wait()
}

// validateTargets checks the target names of a multi-output regression
// forest: none or at least two, non-empty, distinct and valid UTF-8, and
// not on a drf forest (which names its targets in DRF.Targets).
func (f *Forest) validateTargets() error {
	if f.Targets == nil {
		return nil
	}
	if len(f.Targets) < 2 {
		return fmt.Errorf("forest: %d named targets; a multi-output forest has two or more", len(f.Targets))
	}
	if f.Kind == KindDRF {
		return fmt.Errorf("forest: a drf forest names its targets in its dRF part")
	}
	seen := make(map[string]bool, len(f.Targets))
	for _, t := range f.Targets {
		if t == "" || !utf8.ValidString(t) || seen[t] {
			return fmt.Errorf("forest: target name %q is empty, repeated or not UTF-8", t)
		}
		seen[t] = true
	}
	return nil
}

// NumTrees is the number of trees.
func (c *Compiled) NumTrees() int { return len(c.roots) }

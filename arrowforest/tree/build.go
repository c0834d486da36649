package tree

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/forestd/forestd/arrowforest/projection"
)

// Data is the read-only training input shared by every tree of a forest.
type Data struct {
	// Cols are the p feature columns, NaN = missing. With Bins set they
	// may be nil: the builder then sees only the bin codes (codes-only
	// mode, see Builder), every atom must be an axis atom of weight 1, and
	// every threshold is a bin edge (Binned.Upper).
	Cols [][]float32
	Y    []int32 // class per row (classification)
	K    int     // number of classes (0 for regression)
	// YReg is the regression target: one per row, or, with Outputs
	// q ≥ 2, q per row in row-major order (YReg[i*q+o] is output o of
	// row i; multi.go).
	YReg []float64
	// Outputs is the number of regression targets q; 0 and 1 both mean one.
	Outputs int
	// Bins, when non-nil, enables the binned (histogram) split search
	// for axis atoms; nil means exact (sorted) search everywhere.
	Bins *Binned
	// Dist, with Criterion Distance, holds the squared response
	// distances that dRF splits on (K = 0, YReg unused).
	Dist *Distances
}

// Rows returns the number of rows.
func (d *Data) Rows() int {
	if len(d.Cols) > 0 {
		return len(d.Cols[0])
	}
	if d.Bins != nil && len(d.Bins.Codes) > 0 {
		return len(d.Bins.Codes[0])
	}
	if d.Y != nil {
		return len(d.Y)
	}
	return len(d.YReg) / d.outputs()
}

// features returns p, the number of feature columns.
func (d *Data) features() int {
	if d.codesOnly() {
		return len(d.Bins.Codes)
	}
	return len(d.Cols)
}

// value is atom (idx, wts) at row r: project's float32 sum, or in
// codes-only mode the stand-in value of the row's bin (Binned.Value),
// which every threshold of the tree routes as the raw value.
func (d *Data) value(idx []int32, wts []float32, r int32) float32 {
	if d.codesOnly() {
		return d.Bins.Value(int(idx[0]), d.Bins.Codes[idx[0]][r])
	}
	return project(d.Cols, idx, wts, r)
}

// codesOnly reports whether the builder sees the bin codes alone (Cols
// nil, Bins set).
func (d *Data) codesOnly() bool { return d.Cols == nil && d.Bins != nil }

// outputs is q, the number of regression targets (1 for classification).
func (d *Data) outputs() int { return max(d.Outputs, 1) }

// Config holds the growth limits of one tree.
type Config struct {
	Criterion Criterion
	// MinLeaf is the minimum in-bag weight (bootstrap multiplicity sum)
	// of a leaf; at least 1.
	MinLeaf float64
	// MinSplit is the minimum in-bag weight of a node that may be split
	// (scikit-learn's min_samples_split; ranger's min.node.size + 1).
	MinSplit float64
	// MaxDepth limits depth (root = 0); 0 means unlimited.
	MaxDepth int
}

// Validate checks the configuration against the data.
func (c Config) Validate(d *Data) error {
	if c.MinLeaf < 1 {
		return fmt.Errorf("tree: min leaf %v must be at least 1", c.MinLeaf)
	}
	if c.MaxDepth < 0 {
		return fmt.Errorf("tree: max depth %d is negative", c.MaxDepth)
	}
	if d.K > 0 && c.Criterion == MSE {
		return fmt.Errorf("tree: criterion mse needs a regression target")
	}
	if (c.Criterion == Distance) != (d.Dist != nil) {
		return fmt.Errorf("tree: criterion distance goes with response distances and only with them")
	}
	if d.Dist != nil {
		if d.K > 0 {
			return fmt.Errorf("tree: criterion distance needs a response, not classes")
		}
		return d.Dist.Validate(d.Rows())
	}
	if d.K == 0 && c.Criterion != MSE {
		return fmt.Errorf("tree: criterion %s needs classes", c.Criterion)
	}
	if d.Outputs < 0 || (d.Outputs > 1 && (d.K > 0 || len(d.YReg)%d.Outputs != 0)) {
		return fmt.Errorf("tree: %d outputs for %d target values (regression only)", d.Outputs, len(d.YReg))
	}
	if d.codesOnly() && d.Dist != nil {
		return fmt.Errorf("tree: criterion distance needs the feature columns, not only their bin codes")
	}
	if (len(d.Cols) > 0 || d.codesOnly()) && d.K == 0 && len(d.YReg) != d.Rows()*d.outputs() {
		return fmt.Errorf("tree: %d target values for %d rows and %d outputs", len(d.YReg), d.Rows(), d.outputs())
	}
	return nil
}

// Builder grows trees on one Data. It owns all scratch memory of one worker
// and is not safe for concurrent use; give each worker its own Builder.
//
// In codes-only mode (Data.Cols nil) a node too small for a histogram
// sorts its rows by bin code instead of by value, so every split of every
// node falls on a bin edge — the histogram split search of LightGBM and
// XGBoost's hist method — and the float32 columns need not be kept while
// the trees grow (issue 31: a million rows × 50 features are 200 MB of
// float32 and 50 MB of codes). Both searches meet the same candidate
// boundaries, so which one a node uses changes no split of a
// classification tree.
type Builder struct {
	d   *Data
	cfg Config
	smp projection.Sampler

	// node-aligned arrays, partitioned in place as the tree grows
	idx []int32
	w   []float64
	y   []int32
	yr  []float64 // q per row
	q   int       // regression outputs (1 for classification)

	cand  projection.Candidates
	nsmp  projection.NodeSampler // smp, when it looks at node data
	view  projection.Node
	hist  []float64 // binned class counts (or w, wy pairs for regression)
	miss  []float64
	total []float64
	// present lists the classes with weight in the current node,
	// ascending, when the builder tracks them (sparse: labels of at least
	// sparseClasses classes); total and miss are then 0 outside it, and
	// per-node work is proportional to the node's classes, not to all
	present []int32
	sparse  bool
	acc     classAcc
	racc    regAcc
	keys    []uint64
	tmpKeys []uint64
	proj    []float32 // projected values of the node's rows (projectNode)
	leaf    []float64
	// multi-output regression scratch (multi.go), q or q+1 values each
	macc                       multiAcc
	msum, mtot, mmiss, leafTmp []float64

	// distance criterion scratch (see distance.go)
	dtot, dmr, dtotNM []float64
	dmiss, dlr        []int32
	dlw               []float64

	// one-pass histograms of the node's binned candidates (histpass.go)
	hslot []int32   // per candidate: its histogram's slot, or −1
	hfeat []int32   // per slot: the feature
	hbuf  []float64 // per slot: histSlotBins bins of the class counts or (w, w·y)
	hocc  []uint64  // per slot: 4 words of occupied bins, in small nodes
	hn    [2]float64

	codes bool // codes-only mode (Data.codesOnly)
	// plainScan makes two-class Gini scans use classAcc, not gini2
	// (tests compare the two)
	plainScan bool
	err       error // an atom codes-only mode cannot search (Grow returns it)

	t    *Tree
	grow Tree      // the growing tree's arrays, reused from tree to tree (Grow)
	imp  []float64 // impurity decrease per feature for the current tree
	work int64     // the current tree's split-search work (Work)
}

// Work returns the split-search work of the tree last grown, in units of
// one row's multiply-add: for every candidate atom searched at a node of n
// rows, n·(nnz + ⌈log₂ n⌉ + 5) for the sorted search (projecting the rows
// over the atom's nnz features, sorting and scanning them) and 6·n +
// bins·classes for a histogram scan. The constants were fitted to the CPU
// time of MORF, SPORF and RF forests of several settings (arrowforest/
// forest/tune.go: tuneBudget); the model tracks it to about ±25% across
// settings of one kind on one data set. Work depends only on the tree's
// sample and random stream, not on the machine or the threads, so the
// hyperparameter search can bound its cost deterministically.
func (b *Builder) Work() int64 { return b.work }

// NewBuilder returns a builder drawing atoms from smp (owned by the builder).
func NewBuilder(d *Data, cfg Config, smp projection.Sampler) (*Builder, error) {
	if err := cfg.Validate(d); err != nil {
		return nil, err
	}
	b := &Builder{d: d, cfg: cfg, smp: smp, codes: d.codesOnly()}
	if ns, ok := smp.(projection.NodeSampler); ok {
		if b.codes {
			return nil, fmt.Errorf("tree: a sampler that looks at the node's values needs the feature columns, not only their bin codes")
		}
		b.nsmp = ns
	}
	k := d.K
	if k == 0 {
		k = 2
	}
	b.q = d.outputs()
	if b.q > 1 {
		k = max(k, b.q+1)
		b.macc.init(b.q)
		b.msum, b.mtot = make([]float64, b.q), make([]float64, b.q)
		b.mmiss, b.leafTmp = make([]float64, b.q+1), make([]float64, b.q)
	}
	b.hist = make([]float64, (MaxBins+1)*k)
	b.miss = make([]float64, k)
	b.total = make([]float64, k)
	b.leaf = make([]float64, k)
	b.acc.init(cfg.Criterion, max(d.K, 1))
	b.sparse = d.K >= sparseClasses
	return b, nil
}

// sparseClasses is the number of classes from which a builder tracks the
// classes present in each node (Builder.present) instead of scanning every
// class at every node and candidate: with as many classes as a deep
// node's rows or more, the scans dominated training (20,000 rows of 1,000
// classes: 78% of the CPU in classAcc.reset and classBase). The trees are
// the same to the bit either way (TestSparseClassesSameTrees); below it
// the plain scans are as fast.
const sparseClasses = 16

// clearClasses zeroes v (total or miss) for the next node or candidate:
// only the present classes' entries when the builder tracks them.
func (b *Builder) clearClasses(v []float64) {
	if !b.sparse {
		clear(v)
		return
	}
	for _, k := range b.present {
		v[k] = 0
	}
}

// resetAcc resets the class accumulator to the node's counts (total) with
// the current candidate's missing part (miss).
func (b *Builder) resetAcc() {
	if b.sparse {
		b.acc.resetOn(b.total, b.miss, b.present)
		return
	}
	b.acc.reset(b.total, b.miss)
}

// classes returns the node's classes for classAcc.resetOn and classBase:
// nil (every class) unless the builder tracks them.
func (b *Builder) classes() []int32 {
	if !b.sparse {
		return nil
	}
	return b.present
}

// split is the best split found at a node.
type split struct {
	ok       bool
	atom     int // index into cand
	thr      float32
	missLeft bool
	proxy    float64
	// binned: thr is Upper[feature][bin] of a histogram search, so the
	// rows going left are those of code ≤ bin (Binned: the same rows)
	binned bool
	bin    uint8
}

type frameItem struct {
	parent     int32 // -1 for the root
	left       bool  // whether this is the parent's left child
	start, end int32
	depth      int32
}

// Grow grows one tree on the in-bag rows with their weights (bootstrap
// multiplicities), drawing candidate atoms with rng. It returns the tree
// and the weighted impurity decrease credited to each feature (an atom's
// decrease is shared among its features in proportion to |weight|).
func (b *Builder) Grow(rng *rand.Rand, rows []int32, weights []float64) (*Tree, []float64, error) {
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("tree: no in-bag rows")
	}
	if len(rows) != len(weights) {
		return nil, nil, fmt.Errorf("tree: %d rows but %d weights", len(rows), len(weights))
	}
	n := len(rows)
	b.idx = append(b.idx[:0], rows...)
	b.w = append(b.w[:0], weights...)
	if b.d.K > 0 {
		b.y = b.y[:0]
		for _, r := range rows {
			b.y = append(b.y, b.d.Y[r])
		}
	} else if b.d.Dist == nil {
		b.yr = b.yr[:0]
		q := b.q
		for _, r := range rows {
			b.yr = append(b.yr, b.d.YReg[int(r)*q:int(r)*q+q]...)
		}
	}
	g := &b.grow
	*g = Tree{Left: g.Left[:0], Right: g.Right[:0], Threshold: g.Threshold[:0], MissingLeft: g.MissingLeft[:0],
		Count: g.Count[:0], AtomStart: append(g.AtomStart[:0], 0), AtomFeature: g.AtomFeature[:0],
		AtomWeight: g.AtomWeight[:0], LeafStart: append(g.LeafStart[:0], 0), LeafClass: g.LeafClass[:0],
		LeafValue: g.LeafValue[:0]}
	b.t = g
	b.imp = make([]float64, b.d.features())
	b.work = 0
	b.err = nil
	stack := []frameItem{{-1, false, 0, int32(n), 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		id := b.newNode()
		if it.parent >= 0 {
			if it.left {
				b.t.Left[it.parent] = id
			} else {
				b.t.Right[it.parent] = id
			}
		}
		if mid, ok := b.node(rng, id, it); ok {
			// right pushed first so the left subtree is numbered next:
			// preorder ids, left child = parent + 1.
			stack = append(stack,
				frameItem{id, false, int32(mid), it.end, it.depth + 1},
				frameItem{id, true, it.start, int32(mid), it.depth + 1})
		}
	}
	b.t = nil
	if b.err != nil {
		return nil, nil, b.err
	}
	return g.exact(), b.imp, nil
}

// exact returns a copy of t whose arrays are exactly as long as their
// contents: a tree grows by appends, whose spare capacity (up to as much
// again) a forest of millions of nodes would otherwise keep for its
// lifetime; the growing arrays stay with the Builder for the next tree.
func (t *Tree) exact() *Tree {
	return &Tree{
		Left: exactCopy(t.Left), Right: exactCopy(t.Right), Threshold: exactCopy(t.Threshold),
		MissingLeft: exactCopy(t.MissingLeft), Count: exactCopy(t.Count),
		AtomStart: exactCopy(t.AtomStart), AtomFeature: exactCopy(t.AtomFeature), AtomWeight: exactCopy(t.AtomWeight),
		LeafStart: exactCopy(t.LeafStart), LeafClass: exactCopy(t.LeafClass), LeafValue: exactCopy(t.LeafValue),
	}
}

// exactCopy copies s into a new slice of capacity len(s), nil when s is
// empty, as an array nothing was appended to was before (a regression
// tree's LeafClass, a stump's atoms).
func exactCopy[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

func (b *Builder) newNode() int32 {
	t := b.t
	t.Left = append(t.Left, -1)
	t.Right = append(t.Right, -1)
	t.Threshold = append(t.Threshold, 0)
	t.MissingLeft = append(t.MissingLeft, false)
	t.Count = append(t.Count, 0)
	return int32(len(t.Left) - 1)
}

// node finishes node id: it becomes a leaf, or it is split and the
// boundary between its left and right rows is returned. Ids are allocated
// in preorder as nodes are popped, so nodes finish in id order and their
// atom and leaf entries are appended in id order.
func (b *Builder) node(rng *rand.Rand, id int32, it frameItem) (mid int, ok bool) {
	s, e := int(it.start), int(it.end)
	t := b.t
	// node statistics
	var wsum float64
	pure := true
	var base float64
	if b.d.Dist != nil {
		// dRF: a leaf stores P(S)/(2N_w²), the node's mean squared
		// distance to its responses' Fréchet mean when d is Euclidean.
		var pairs float64
		wsum, base, pairs = b.distNode(s, e)
		pure = pairs == 0
		b.leaf[0] = pairs / (2 * wsum * wsum)
	} else if b.d.K > 0 {
		b.clearClasses(b.total)
		nz := 0
		if b.sparse {
			b.present = b.present[:0]
			for k := s; k < e; k++ {
				c := b.y[k]
				if b.total[c] == 0 && b.w[k] > 0 {
					b.present = append(b.present, c)
				}
				b.total[c] += b.w[k]
				wsum += b.w[k]
			}
			slices.Sort(b.present)
			nz = len(b.present)
		} else {
			for k := s; k < e; k++ {
				b.total[b.y[k]] += b.w[k]
				wsum += b.w[k]
			}
			for _, c := range b.total {
				if c > 0 {
					nz++
				}
			}
		}
		pure = nz <= 1
		base = classBase(b.cfg.Criterion, b.total, b.classes())
	} else if b.q > 1 {
		wsum, base, pure = b.multiNode(s, e)
	} else {
		var sum float64
		first := b.yr[s]
		for k := s; k < e; k++ {
			wsum += b.w[k]
			sum += b.w[k] * b.yr[k]
			if b.yr[k] != first {
				pure = false
			}
		}
		base = sum * sum / wsum
		b.leaf[0] = sum / wsum
	}
	t.Count[id] = float32(wsum)

	canSplit := !pure && wsum >= 2*b.cfg.MinLeaf && wsum >= b.cfg.MinSplit && e-s >= 2 &&
		(b.cfg.MaxDepth == 0 || int(it.depth) < b.cfg.MaxDepth)
	var best split
	if canSplit {
		best = b.findSplit(rng, s, e)
	}
	if !best.ok {
		b.finishLeaf(s, e, wsum)
		return 0, false
	}
	idx, wts := b.cand.Atom(best.atom)
	gain := best.proxy - base
	if gain > 0 {
		var wabs float64
		for _, x := range wts {
			wabs += math.Abs(float64(x))
		}
		for q, j := range idx {
			b.imp[j] += gain * math.Abs(float64(wts[q])) / wabs
		}
	}
	mid = b.partition(s, e, idx, wts, best)
	if mid == s || mid == e { // cannot happen for a valid split; stay safe
		b.finishLeaf(s, e, wsum)
		return 0, false
	}
	t.Threshold[id] = best.thr
	t.MissingLeft[id] = best.missLeft
	t.AtomFeature = append(t.AtomFeature, idx...)
	t.AtomWeight = append(t.AtomWeight, wts...)
	t.AtomStart = append(t.AtomStart, int32(len(t.AtomFeature)))
	t.LeafStart = append(t.LeafStart, int32(len(t.LeafValue)))
	t.Left[id] = 0 // marks "internal" until the children are numbered
	return mid, true
}

func (b *Builder) finishLeaf(s, e int, wsum float64) {
	t := b.t
	if b.d.K > 0 && b.sparse {
		for _, k := range b.present {
			t.LeafClass = append(t.LeafClass, k)
			t.LeafValue = append(t.LeafValue, b.total[k]/wsum)
		}
	} else if b.d.K > 0 {
		for k, c := range b.total {
			if c > 0 {
				t.LeafClass = append(t.LeafClass, int32(k))
				t.LeafValue = append(t.LeafValue, c/wsum)
			}
		}
	} else {
		t.LeafValue = append(t.LeafValue, b.leaf[:b.q]...)
	}
	t.AtomStart = append(t.AtomStart, int32(len(t.AtomFeature)))
	t.LeafStart = append(t.LeafStart, int32(len(t.LeafValue)))
}

// findSplit draws the node's candidate atoms and returns the best split.
func (b *Builder) findSplit(rng *rand.Rand, s, e int) split {
	b.cand.Reset()
	if b.nsmp != nil {
		b.view = projection.Node{Cols: b.d.Cols, Rows: b.idx[s:e], W: b.w[s:e], K: b.d.K}
		if b.d.K > 0 {
			b.view.Y = b.y[s:e]
		}
		b.nsmp.SampleNode(rng, &b.cand, &b.view)
	} else {
		b.smp.Sample(rng, &b.cand)
	}
	var best split
	n := e - s
	sortWork := int64(n*(bits.Len(uint(n))+5) + 48)
	pass := b.buildHists(s, e)
	for a := 0; a < b.cand.Len(); a++ {
		var sp split
		if _, axis := b.cand.IsAxis(a); b.codes && !axis {
			idx, _ := b.cand.Atom(a)
			b.err = fmt.Errorf("tree: an oblique atom on features %v needs the feature columns, not only their bin codes", idx)
			return split{}
		}
		if b.d.Dist != nil {
			idx, wts := b.cand.Atom(a)
			b.work += sortWork + int64(n*len(idx))
			sp = b.searchDistance(idx, wts, s, e)
		} else if j, axis := b.cand.IsAxis(a); axis && b.d.Bins != nil && b.useHist(int(j), n) {
			b.work += int64(6*n + 48 + b.d.Bins.NBins(int(j))*max(b.d.K, 2, b.q+1))
			switch {
			case b.q > 1:
				sp = b.searchBinnedMulti(int(j), s, e)
			case pass && b.hslot[a] >= 0:
				sp = b.scanSlot(int(j), int(b.hslot[a]))
			default:
				sp = b.searchBinned(int(j), s, e)
			}
		} else {
			idx, wts := b.cand.Atom(a)
			b.work += sortWork + int64(n*len(idx))
			if b.q > 1 {
				sp = b.searchSortedMulti(idx, wts, s, e)
			} else {
				sp = b.searchSorted(idx, wts, s, e)
			}
		}
		if sp.ok && (!best.ok || sp.proxy > best.proxy) {
			best = sp
			best.atom = a
		}
	}
	return best
}

// useHist decides between histogram and sort for one axis atom from the
// cost of each: n + bins·classes (bins·(q+1) for q outputs) against about
// 2·n·log2 n comparisons.
func (b *Builder) useHist(j, n int) bool {
	k := max(b.d.K, 2)
	if b.q > 1 {
		k = b.q + 1
	}
	return n+b.d.Bins.NBins(j)*k <= 2*n*bits.Len(uint(n))
}

// searchBinned scans the histogram of pre-binned feature j over the node.
func (b *Builder) searchBinned(j, s, e int) split {
	codes := b.d.Bins.Codes[j]
	nb := b.d.Bins.NBins(j)
	if nb < 2 {
		return split{}
	}
	if b.d.K > 0 {
		K := b.d.K
		h := b.hist[:nb*K]
		clear(h)
		b.clearClasses(b.miss)
		for k := s; k < e; k++ {
			c := codes[b.idx[k]]
			if c == MissingCode {
				b.miss[b.y[k]] += b.w[k]
				continue
			}
			h[int(c)*K+int(b.y[k])] += b.w[k]
		}
		return b.scanClasses(j, h, nil)
	}
	// regression: pairs (w, w·y) per bin
	h := b.hist[:2*nb]
	clear(h)
	var n, sum, nm, sm float64
	for k := s; k < e; k++ {
		w := b.w[k]
		wy := w * b.yr[k]
		n += w
		sum += wy
		c := codes[b.idx[k]]
		if c == MissingCode {
			nm += w
			sm += wy
			continue
		}
		h[2*int(c)] += w
		h[2*int(c)+1] += wy
	}
	return b.scanReg(j, h, n, sum, nm, sm, nil)
}

// scanClasses scans the class histogram h (nb bins of K counts) of
// feature j, with the missing rows' counts in b.miss. occ, when non-nil,
// marks the bins holding rows (bit b of occ[b/64]); the others are
// skipped, which changes nothing: an empty bin moves no weight.
func (b *Builder) scanClasses(j int, h []float64, occ []uint64) split {
	if b.useGini2() {
		return b.scanGini2(j, h, occ)
	}
	var best split
	K := b.d.K
	nb := len(h) / K
	upper := b.d.Bins.Upper[j]
	b.resetAcc()
	if occ == nil {
		for bin := 0; bin < nb-1; bin++ {
			if b.classBin(bin, h, upper, &best) {
				break
			}
		}
		return best
	}
	for wi, word := range occ {
		for word != 0 {
			bin := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if bin >= nb-1 || b.classBin(bin, h, upper, &best) {
				return best
			}
		}
	}
	return best
}

// classBin moves bin's counts to the left and scores the split after it
// into best; it reports whether the scan is over (no weight right).
func (b *Builder) classBin(bin int, h []float64, upper []float32, best *split) (stop bool) {
	K := b.d.K
	a := &b.acc
	moved := false
	for k, c := range h[bin*K : bin*K+K] {
		if c != 0 {
			a.move(int32(k), c)
			moved = true
		}
	}
	if !moved || a.nR == 0 {
		return a.nR == 0
	}
	if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
		*best = split{ok: true, thr: upper[bin], missLeft: ml, proxy: p, binned: true, bin: uint8(bin)}
	}
	return false
}

// scanReg scans the regression histogram h (nb bins of (w, w·y)) of
// feature j; n and sum are the node's weight and weighted sum, nm and sm
// their missing part. occ is scanClasses's.
func (b *Builder) scanReg(j int, h []float64, n, sum, nm, sm float64, occ []uint64) split {
	var best split
	nb := len(h) / 2
	upper := b.d.Bins.Upper[j]
	b.racc.reset(n, sum, nm, sm)
	if occ == nil {
		for bin := 0; bin < nb-1; bin++ {
			if b.regBin(bin, h, upper, &best) {
				break
			}
		}
		return best
	}
	for wi, word := range occ {
		for word != 0 {
			bin := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if bin >= nb-1 || b.regBin(bin, h, upper, &best) {
				return best
			}
		}
	}
	return best
}

// regBin is classBin for regression.
func (b *Builder) regBin(bin int, h []float64, upper []float32, best *split) (stop bool) {
	if h[2*bin] == 0 {
		return false
	}
	a := &b.racc
	a.move(h[2*bin], h[2*bin+1])
	if a.nR <= 0 {
		return true
	}
	if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
		*best = split{ok: true, thr: upper[bin], missLeft: ml, proxy: p, binned: true, bin: uint8(bin)}
	}
	return false
}

// project evaluates atom (idx, wts) for row r in float32, in atom order —
// the same arithmetic scoring uses, so thresholds agree bit for bit.
func project(cols [][]float32, idx []int32, wts []float32, r int32) float32 {
	if len(idx) == 1 {
		return cols[idx[0]][r] * wts[0]
	}
	var v float32
	for q, j := range idx {
		v += cols[j][r] * wts[q]
	}
	return v
}

// projectNode evaluates atom (idx, wts) for the node's rows s..e into
// b.proj (position k−s holds row b.idx[k]) with project's arithmetic: each
// row's value is the same float32 sum in atom order, accumulated one
// feature at a time over all the rows, so that each pass reads one column
// (a wide MORF patch otherwise touches a different column per term of
// every row).
func (b *Builder) projectNode(idx []int32, wts []float32, s, e int) []float32 {
	m := e - s
	if cap(b.proj) < m {
		b.proj = make([]float32, m, max(m, len(b.idx)))
	}
	vals, rows := b.proj[:m], b.idx[s:e]
	if b.codes { // an axis atom of weight 1 (findSplit): the bin codes
		codes, stride := b.codesOf(int(idx[0]), s, e)
		nan := float32(math.NaN())
		for i, r := range rows {
			c := codes[int(r)*stride]
			if c == MissingCode {
				vals[i] = nan
			} else {
				vals[i] = float32(c)
			}
		}
		return vals
	}
	if len(idx) == 1 {
		col, w := b.d.Cols[idx[0]], wts[0]
		for i, r := range rows {
			vals[i] = col[r] * w
		}
		return vals
	}
	clear(vals)
	for q, j := range idx {
		col, w := b.d.Cols[j], wts[q]
		for i, r := range rows {
			vals[i] += col[r] * w
		}
	}
	return vals
}

// searchSorted sorts the node's projected values and scans every boundary
// between distinct values (exact search).
func (b *Builder) searchSorted(idx []int32, wts []float32, s, e int) split {
	keys := b.keys[:0]
	var best split
	var n, sum, nm, sm float64
	if b.d.K > 0 {
		b.clearClasses(b.miss)
	}
	vals := b.projectNode(idx, wts, s, e)
	for k := s; k < e; k++ {
		v := vals[k-s]
		if b.d.K == 0 {
			w := b.w[k]
			wy := w * b.yr[k]
			n += w
			sum += wy
			if v != v {
				nm += w
				sm += wy
				continue
			}
		} else if v != v {
			b.miss[b.y[k]] += b.w[k]
			continue
		}
		keys = append(keys, packKey(v, int32(k)))
	}
	keys = b.sortKeys(keys)
	if len(keys) < 2 || keyValue(keys[0]) == keyValue(keys[len(keys)-1]) {
		return best
	}
	if b.useGini2() {
		return b.sortedGini2(idx, keys)
	}
	if b.d.K > 0 {
		a := &b.acc
		b.resetAcc()
		for q := 0; q < len(keys)-1; q++ {
			k := keyPos(keys[q])
			a.move(b.y[k], b.w[k])
			v, next := keyValue(keys[q]), keyValue(keys[q+1])
			if v == next {
				continue
			}
			if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
				best = split{ok: true, thr: b.cut(idx, v, next), missLeft: ml, proxy: p}
			}
		}
		return best
	}
	a := &b.racc
	a.reset(n, sum, nm, sm)
	for q := 0; q < len(keys)-1; q++ {
		k := keyPos(keys[q])
		a.move(b.w[k], b.w[k]*b.yr[k])
		v, next := keyValue(keys[q]), keyValue(keys[q+1])
		if v == next {
			continue
		}
		if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
			best = split{ok: true, thr: b.cut(idx, v, next), missLeft: ml, proxy: p}
		}
	}
	return best
}

// cut is the threshold between consecutive distinct sorted values v <
// next of atom idx: their midpoint, or in codes-only mode (where the
// values are bin codes) the upper edge of v's bin.
func (b *Builder) cut(idx []int32, v, next float32) float32 {
	if b.codes {
		return b.d.Bins.Upper[idx[0]][int(v)]
	}
	return Midpoint(v, next)
}

// sortKeys radix-sorts the node's keys (built in b.keys), keeping both
// buffers for the next search; fewer than two keys are returned as they are.
func (b *Builder) sortKeys(keys []uint64) []uint64 {
	if len(keys) < 2 {
		b.keys = keys
		return keys
	}
	if cap(b.tmpKeys) < len(keys) {
		b.tmpKeys = make([]uint64, cap(keys))
	}
	sorted := sortKeys(keys, b.tmpKeys)
	if &sorted[0] != &keys[0] { // radix sort finished in the scratch buffer
		b.keys, b.tmpKeys = b.tmpKeys, keys
	} else {
		b.keys = keys
	}
	return sorted
}

// packed sort keys: the float32 value mapped to an unsigned integer with
// the same order (sign bit flipped for positives, all bits for negatives)
// in the high half, the row position in the low half. Sorting the uint64s
// natively orders by value, ties by position — deterministic and without
// a comparison callback.
func packKey(v float32, k int32) uint64 {
	b := math.Float32bits(v)
	if b>>31 != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return uint64(b)<<32 | uint64(uint32(k))
}

func keyValue(u uint64) float32 {
	b := uint32(u >> 32)
	if b>>31 != 0 {
		b &^= 1 << 31
	} else {
		b = ^b
	}
	return math.Float32frombits(b)
}

func keyPos(u uint64) int32 { return int32(uint32(u)) }

// partition reorders the node's rows so that rows going left come first
// and returns the boundary. A split on a bin edge (a histogram search, or
// any split in codes-only mode) reads the feature's uint8 codes, a
// quarter of its float32 column, which select the same rows (Binned).
func (b *Builder) partition(s, e int, idx []int32, wts []float32, sp split) int {
	if b.codes || sp.binned {
		j := int(idx[0])
		bin := sp.bin
		if !sp.binned {
			bin = b.d.Bins.binOf(j, sp.thr)
		}
		codes, stride := b.codesOf(j, s, e)
		return b.partitionCodes(s, e, codes, stride, bin, sp.missLeft)
	}
	cols, thr, missLeft := b.d.Cols, sp.thr, sp.missLeft
	i, j := s, e-1
	goesLeft := func(k int) bool {
		v := project(cols, idx, wts, b.idx[k])
		if v != v {
			return missLeft
		}
		return v <= thr
	}
	for i <= j {
		if goesLeft(i) {
			i++
			continue
		}
		for j > i && !goesLeft(j) {
			j--
		}
		if j <= i {
			break
		}
		b.swap(i, j)
		i++
		j--
	}
	return i
}

// rowPartition is the node size below which a node reads a feature's
// codes from the row-major copy (Binned.rows), whose lines its histogram
// pass, or its parent's, has just read, rather than from the feature's
// column, whose lines it has not: at a million rows a node of 128–1,023
// rows partitions in 5.6 instead of 8.9 ns a row; above about a thousand
// rows the column, a byte a row, is the cheaper read.
const rowPartition = 1024

// codesOf returns where node [s, e) reads feature j's codes: row r's code
// is codes[r·stride], in the row-major copy below rowPartition rows, else
// in the feature's column.
func (b *Builder) codesOf(j, s, e int) (codes []uint8, stride int) {
	if bins := b.d.Bins; bins.rows != nil && e-s < rowPartition {
		return bins.rows[j:], len(bins.Codes)
	}
	return b.d.Bins.Codes[j], 1
}

// partitionCodes is partition for a split at code ≤ bin (missing rows,
// MissingCode, go left with missLeft), with the same swaps, reading row
// r's code at codes[r·stride]: a column (stride 1) or the row-major copy.
// On a column it prefetches the codes of the rows prefetchAhead ahead of
// either end (a deep node's rows scatter over the column, a megabyte at a
// million rows).
func (b *Builder) partitionCodes(s, e int, codes []uint8, stride int, bin uint8, missLeft bool) int {
	i, j := s, e-1
	rows := b.idx
	// the codes of rows[s:pf] and rows[pb:e] have been prefetched (a
	// small node's rows, read by its histogram pass, are in cache)
	pf, pb := s, e
	if stride > 1 {
		pf = e
	}
	for i <= j {
		if pf < i+prefetchAhead && pf < pb {
			q := min(pf+prefetchChunk, pb)
			prefetchRows(codes, rows[pf:q], 1)
			pf = q
		}
		if c := codes[int(rows[i])*stride]; c <= bin || (missLeft && c == MissingCode) {
			i++
			continue
		}
		for j > i {
			if pb > j-prefetchAhead && pb > pf {
				q := max(pb-prefetchChunk, pf)
				prefetchRows(codes, rows[q:pb], 1)
				pb = q
			}
			if c := codes[int(rows[j])*stride]; c <= bin || (missLeft && c == MissingCode) {
				break
			}
			j--
		}
		if j <= i {
			break
		}
		b.swap(i, j)
		i++
		j--
	}
	return i
}

func (b *Builder) swap(i, j int) {
	b.idx[i], b.idx[j] = b.idx[j], b.idx[i]
	b.w[i], b.w[j] = b.w[j], b.w[i]
	if b.d.K > 0 {
		b.y[i], b.y[j] = b.y[j], b.y[i]
	} else if b.d.Dist == nil {
		if q := b.q; q > 1 {
			for o := 0; o < q; o++ {
				b.yr[i*q+o], b.yr[j*q+o] = b.yr[j*q+o], b.yr[i*q+o]
			}
			return
		}
		b.yr[i], b.yr[j] = b.yr[j], b.yr[i]
	}
}

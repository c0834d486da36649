package forest

import (
	"github.com/forestd/forestd/arrowforest/tree"
)

// treeWalk scores rows on a forest's trees as grown, for the out-of-bag
// passes of training (oob.go): it needs no compiled copy of the forest
// (Compile), which on a million rows is as large again as the trees
// (issue 31: memory that follows the data). It reaches the same leaf as
// Compiled.leaf for every row — the same comparisons, an oblique atom's
// projection summed in float32 in atom order as Compiled.project — and
// adds the same float32-rounded leaf values in the same order, so the
// estimates are the same bits (TestTreeWalkSameOOB).
type treeWalk struct {
	trees           []*tree.Tree
	p, k, q, stride int
	rank            *RankMap
	// bins, when set, stand in for the feature columns a training run
	// released (TrainOptions.DropColumns, nil in fr.Cols): trees grown on
	// the codes alone split at bin edges, so a bin's stand-in value
	// (tree.Binned.Value) reaches the leaf its raw values reach.
	bins *tree.Binned
	// axis marks the trees whose every split is one feature of weight 1
	// (rf's): leaves walks them with axisStep.
	axis []bool
	// oobBlock, when set (tests), is the rows of a block of the
	// out-of-bag pass instead of oobBlockRows'.
	oobBlock int
}

// standIns is the stand-in value of each code of feature j.
func (w *treeWalk) standIns(j int) *[256]float32 {
	var lut [256]float32
	for c := range lut {
		lut[c] = w.bins.Value(j, uint8(c))
	}
	return &lut
}

// transpose writes rows r0..r1 of cols row-major into x as transpose
// does, taking a released (nil) column's values from w.bins.
func (w *treeWalk) transpose(cols [][]float32, r0, r1 int, x []float32) {
	p := len(cols)
	for j, col := range cols {
		if col != nil {
			continue
		}
		lut := w.standIns(j)
		for i, c := range w.bins.Codes[j][r0:r1] {
			x[i*p+j] = lut[c]
		}
	}
	if w.bins == nil || w.rank != nil {
		transpose(cols, w.rank, r0, r1, x)
		return
	}
	for j, col := range cols {
		if col == nil {
			continue
		}
		for i, val := range col[r0:r1] {
			x[i*p+j] = val
		}
	}
}

// newTreeWalk returns the walk of f's trees.
func newTreeWalk(f *Forest) *treeWalk {
	w := &treeWalk{trees: f.Trees, p: len(f.Features), k: f.NumClasses(), q: f.NumOutputs(), rank: f.Rank}
	w.stride = max(w.k, 1)
	if w.k == 0 {
		w.stride = w.q
	}
	w.axis = make([]bool, len(f.Trees))
	for t, tr := range f.Trees {
		w.axis[t] = axisTree(tr)
	}
	return w
}

// axisTree reports whether every split of tr is one feature of weight 1.
func axisTree(tr *tree.Tree) bool {
	for i, l := range tr.Left {
		a0 := tr.AtomStart[i]
		if l >= 0 && (tr.AtomStart[i+1]-a0 != 1 || tr.AtomWeight[a0] != 1) {
			return false
		}
	}
	return true
}

// leaf returns the leaf node of tree t that the row-major row x reaches.
func (w *treeWalk) leaf(t int, x []float32) int32 {
	tr := w.trees[t]
	i := int32(0)
	for tr.Left[i] >= 0 {
		i = oobStep(tr, i, x)
	}
	return i
}

// leaves writes to out[q] the leaf of tree t that row rows[q] of the
// row-major block x (p values a row) reaches, as leaf does. It walks four
// rows at once, one step of each in turn: a large tree's nodes are
// scattered beyond the caches, and the four walks' loads, independent of
// each other, wait for memory together instead of one after another
// (issue 31: the out-of-bag walk was 12 % of the CPU of 1M-row training).
func (w *treeWalk) leaves(t int, x []float32, rows, out []int32, buf *[]axisNode) {
	if w.axis[t] {
		w.axisLeaves(t, x, rows, out, buf)
		return
	}
	w.leaves4(t, x, rows, out)
}

// leaves4 is leaves for any tree, four rows at once with oobStep.
func (w *treeWalk) leaves4(t int, x []float32, rows, out []int32) {
	tr := w.trees[t]
	p := w.p
	q := 0
	for ; q+4 <= len(rows); q += 4 {
		x0, x1 := x[int(rows[q])*p:][:p], x[int(rows[q+1])*p:][:p]
		x2, x3 := x[int(rows[q+2])*p:][:p], x[int(rows[q+3])*p:][:p]
		var i0, i1, i2, i3 int32
		for {
			more := false
			if tr.Left[i0] >= 0 {
				i0, more = oobStep(tr, i0, x0), true
			}
			if tr.Left[i1] >= 0 {
				i1, more = oobStep(tr, i1, x1), true
			}
			if tr.Left[i2] >= 0 {
				i2, more = oobStep(tr, i2, x2), true
			}
			if tr.Left[i3] >= 0 {
				i3, more = oobStep(tr, i3, x3), true
			}
			if !more {
				break
			}
		}
		out[q], out[q+1], out[q+2], out[q+3] = i0, i1, i2, i3
	}
	for ; q < len(rows); q++ {
		out[q] = w.leaf(t, x[int(rows[q])*p:][:p])
	}
}

// axisNode is an axis split of a tree as axisLeaves walks it, in 16
// bytes: the feature (−1 at a leaf, −2 where the threshold is NaN), the
// threshold's orderKey (codeLeaves: the split's bin) and the children.
// One load reaches what the tree's five arrays give oobStep.
type axisNode struct {
	f, key, l, r int32
}

// axisLeaves is leaves for a tree whose splits are single features of
// weight 1 (axisTree). It copies the tree into nodes (a worker's buffer,
// grown as needed) as axisNodes, so that each step of a walk waits for
// one node load and one value load instead of oobStep's chain of four,
// and walks eight rows at once.
func (w *treeWalk) axisLeaves(t int, x []float32, rows, out []int32, buf *[]axisNode) {
	tr := w.trees[t]
	nodes := nodeBuf(buf, len(tr.Left))
	for i, l := range tr.Left {
		nd := axisNode{f: -1, l: l, r: tr.Right[i]}
		if l >= 0 {
			thr := tr.Threshold[i]
			nd.f, nd.key = tr.AtomFeature[tr.AtomStart[i]], int32(orderKey(thr)^1<<31)
			if thr != thr {
				nd.f = -2
			}
		}
		nodes[i] = nd
	}
	step := func(i int32, xr []float32) int32 {
		nd := nodes[i]
		if nd.f >= 0 {
			if v := xr[nd.f]; v == v {
				right := int32((int64(nd.key) - int64(int32(orderKey(v)^1<<31))) >> 63)
				return nd.l ^ (nd.l^nd.r)&right
			}
		}
		return axisStep(tr, i, xr) // a NaN value or threshold
	}
	p := w.p
	q := 0
	for ; q+8 <= len(rows); q += 8 {
		var xs [8][]float32
		var is [8]int32
		for k := range xs {
			xs[k] = x[int(rows[q+k])*p:][:p]
		}
		for {
			more := false
			for k := range is {
				if i := is[k]; nodes[i].f != -1 {
					is[k], more = step(i, xs[k]), true
				}
			}
			if !more {
				break
			}
		}
		copy(out[q:q+8], is[:])
	}
	for ; q < len(rows); q++ {
		xr := x[int(rows[q])*p:][:p]
		i := int32(0)
		for nodes[i].f != -1 {
			i = step(i, xr)
		}
		out[q] = i
	}
}

// nodeBuf returns nn nodes of a worker's buffer, grown as needed.
func nodeBuf(buf *[]axisNode, nn int) []axisNode {
	if cap(*buf) < nn {
		*buf = make([]axisNode, nn)
	}
	return (*buf)[:nn]
}

// axisStep is oobStep at a node whose split is one feature of weight 1.
func axisStep(tr *tree.Tree, i int32, x []float32) int32 {
	return child(tr, i, x[tr.AtomFeature[tr.AtomStart[i]]])
}

// oobStep returns the child of internal node i of tr that row x goes to.
func oobStep(tr *tree.Tree, i int32, x []float32) int32 {
	a0, a1 := tr.AtomStart[i], tr.AtomStart[i+1]
	var v float32
	if a1-a0 == 1 && tr.AtomWeight[a0] == 1 {
		v = x[tr.AtomFeature[a0]]
	} else {
		for q := a0; q < a1; q++ {
			v += x[tr.AtomFeature[q]] * tr.AtomWeight[q]
		}
	}
	return child(tr, i, v)
}

// child returns the child of internal node i of tr that the projected
// value v goes to. It is selected without a branch on the comparison,
// which goes either way by chance: v ≤ threshold as the sign of the
// difference of their orderKeys (axiswalk.go); a NaN, rare, branches to
// the comparison itself.
func child(tr *tree.Tree, i int32, v float32) int32 {
	l, r, thr := tr.Left[i], tr.Right[i], tr.Threshold[i]
	right := int32((int64(orderKey(thr)) - int64(orderKey(v))) >> 63)
	next := l ^ (l^r)&right
	if v != v || thr != thr {
		next = r
		if v <= thr || (v != v && tr.MissingLeft[i]) {
			next = l
		}
	}
	return next
}

// addLeaf adds leaf node i of tree t to the accumulator a as
// Compiled.addLeaf adds its slot: each value rounded to float32, added
// in entry order (a dense slot's other entries add 0, which changes no
// sum).
func (w *treeWalk) addLeaf(a []float64, t int, i int32) {
	tr := w.trees[t]
	l0, l1 := tr.LeafStart[i], tr.LeafStart[i+1]
	if w.k > 0 {
		for e := l0; e < l1; e++ {
			a[tr.LeafClass[e]] += float64(float32(tr.LeafValue[e]))
		}
		return
	}
	for e := l0; e < l1; e++ {
		a[e-l0] += float64(float32(tr.LeafValue[e]))
	}
}

// leafClass is leaf node i of tree t's majority class, the first of the
// largest probability (Compiled.addLeafValues).
func (w *treeWalk) leafClass(t int, i int32) int32 {
	tr := w.trees[t]
	bestC, bestV := int32(0), -1.0
	for e := tr.LeafStart[i]; e < tr.LeafStart[i+1]; e++ {
		if tr.LeafValue[e] > bestV {
			bestC, bestV = tr.LeafClass[e], tr.LeafValue[e]
		}
	}
	return bestC
}

// leafValue is output o of regression leaf node i of tree t, rounded to
// float32 as the compiled leaf table holds it.
func (w *treeWalk) leafValue(t int, i int32, o int) float32 {
	tr := w.trees[t]
	return float32(tr.LeafValue[int(tr.LeafStart[i])+o])
}

// usedFeatures marks the features that appear in tree t's atoms.
func (w *treeWalk) usedFeatures(t int) []bool {
	used := make([]bool, w.p)
	tr := w.trees[t]
	for i, l := range tr.Left {
		if l < 0 {
			continue
		}
		for _, j := range tr.AtomFeature[tr.AtomStart[i]:tr.AtomStart[i+1]] {
			used[j] = true
		}
	}
	return used
}

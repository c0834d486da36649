package forest

import (
	"math"
	"slices"

	"github.com/forestd/forestd/arrowforest/tree"
)

// codeSplits returns, when the out-of-bag pass can walk the rows' bin
// codes instead of their values, each tree's split bins: a byte a node,
// the bin whose upper edge is the node's threshold (0 at a leaf). That is
// so when training released every column (TrainOptions.DropColumns) and
// every tree is an axis tree whose thresholds are finite bin edges, as rf
// grown on the codes alone: a row's code c then goes left exactly where
// its stand-in value, tree.Binned.Value, does, since the edges increase
// and the top bin's stand-in, +Inf, exceeds every finite edge. A row's
// codes are a byte a feature where its stand-ins are four, so a block of
// a million-row pass spills less of the caches the walk needs for the
// trees. It returns nil when any of this fails.
func (w *treeWalk) codeSplits(cols [][]float32) [][]uint8 {
	if w.bins == nil || w.rank != nil || len(w.bins.Codes) != w.p {
		return nil
	}
	for _, col := range cols {
		if col != nil {
			return nil
		}
	}
	out := make([][]uint8, len(w.trees))
	for t, tr := range w.trees {
		if !w.axis[t] {
			return nil
		}
		bins := make([]uint8, len(tr.Left))
		for i, l := range tr.Left {
			if l < 0 {
				continue
			}
			thr := tr.Threshold[i]
			if math.IsInf(float64(thr), 0) || thr != thr {
				return nil
			}
			b, ok := slices.BinarySearch(w.bins.Upper[tr.AtomFeature[tr.AtomStart[i]]], thr)
			if !ok || b > math.MaxUint8 {
				return nil
			}
			bins[i] = uint8(b)
		}
		out[t] = bins
	}
	return out
}

// codeLeaves is axisLeaves on the rows' bin codes (row-major, p a row)
// for a tree whose split bins are bins (codeSplits): a node's test is
// code ≤ bin, and a missing code goes where the node's MissingLeft sends
// it. It reaches the leaves axisLeaves reaches on the codes' stand-in
// values (TestCodeWalkSameOOB). It walks eight rows at once as
// axisLeaves does, with its own copy of that loop: the step inlines only
// where it is called directly (one loop taking it as a function value,
// generic over the row's type, made 1M training 3.5–4 % slower).
func (w *treeWalk) codeLeaves(t int, bins []uint8, x []uint8, rows, out []int32, buf *[]axisNode) {
	tr := w.trees[t]
	nodes := nodeBuf(buf, len(tr.Left))
	for i, l := range tr.Left {
		nd := axisNode{f: -1, l: l, r: tr.Right[i]}
		if l >= 0 {
			nd.f, nd.key = tr.AtomFeature[tr.AtomStart[i]], int32(bins[i])
		}
		nodes[i] = nd
	}
	step := func(i int32, xr []uint8) int32 {
		nd := nodes[i]
		c := xr[nd.f]
		if c == tree.MissingCode {
			if tr.MissingLeft[i] {
				return nd.l
			}
			return nd.r
		}
		right := (nd.key - int32(c)) >> 31 // −1 where c > bin
		return nd.l ^ (nd.l^nd.r)&right
	}
	p := w.p
	q := 0
	for ; q+8 <= len(rows); q += 8 {
		var xs [8][]uint8
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

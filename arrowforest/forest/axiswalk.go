package forest

import (
	"math"
)

// axisWalk is the branch-free scoring layout of a forest whose nodes are
// all axis splits (Breiman RF, LFS, RerF(r) after its rank map; ARCHITECTURE.md, Performance techniques).
//
// Rows are scored as order keys: every float32 becomes a uint32 whose
// unsigned order is the float order (orderKey), so a node's test is one
// integer comparison that the compiler turns into SETcc, and the child
// index is selected arithmetically instead of by a branch. Eight rows walk
// one tree in lock step (walk8): their loads are independent, so the core
// overlaps eight chains of node and feature loads where a branchy walk of
// one row waits on each load and mispredicts about half of the turns. On
// trunk (100 trees of ~9,000 nodes, average depth 15.6) this cut CPU time
// per row by about 40% against Compiled.leaf (BenchmarkWalk, 2026-11-21).
//
// Missing values keep the trained direction without a second comparison:
// in the key row NaN is the largest key (it fails every "key ≤ threshold"
// and goes right), and each feature that has a node sending missing values
// left gets a second key column in which NaN is the smallest key (0), so
// those nodes read that column and send NaN left. Leaves point to
// themselves and read a sentinel column whose key (MaxUint32) exceeds their
// threshold, which holds the leaf's slot (below 2^30), so a row that
// reached its leaf stays there while the others of its group go on, and
// the slot is read from the node itself.
//
// A node is 8 bytes: the threshold key and one word holding the key
// column in its top linkColBits bits and the right child's distance in
// the others (0 at leaves), so a tree of ~9,000 nodes is 72 KB and more of its
// levels stay in L1 and L2 than at 12 bytes a node (BenchmarkWalk,
// 2026-11-28: about 15% less CPU per row on trunk).
type axisWalk struct {
	nodes  []anode
	roots  []int32
	p      int     // input features
	stride int     // key columns per row: p, the NaN-low copies, the sentinel
	lowOf  []int32 // for key columns p..stride-2: the feature copied NaN-low
}

// anode is one node of axisWalk (8 bytes, preorder: left child i+1).
type anode struct {
	thr  uint32 // orderKey of the threshold; the leaf slot at leaves
	link uint32 // key column << linkDistBits | right child − node (0 at leaves: the sentinel column)
}

// The split of anode.link. The split is fixed, so the walk shifts and
// masks by constants (a split chosen per forest, by a shift held in a
// register, measured no faster than 12-byte nodes): a forest with more
// than 1,024 key columns or a tree of more than 4M nodes is scored by
// Compiled.leaf instead.
const (
	linkDistBits = 22
	linkDistMask = 1<<linkDistBits - 1
	maxKeyCols   = 1 << (32 - linkDistBits)
)

// link packs node i's right child and key column, or reports false when
// the distance does not fit.
func link(i, right, col int32) (uint32, bool) {
	d := uint32(right - i)
	if d > linkDistMask {
		return 0, false
	}
	return uint32(col)<<linkDistBits | d, true
}

// orderKey maps v to a uint32 with the same order as float comparison:
// −0 and +0 share a key, and every NaN maps to MaxUint32, above +Inf.
// The sign is applied without a branch (a negative value's bits are
// inverted, a positive value's sign bit is set): on data of both signs a
// branch on it is mispredicted every other value.
func orderKey(v float32) uint32 {
	b := math.Float32bits(v)
	k := b ^ (uint32(int32(b)>>31) | 1<<31)
	if k == 1<<31-1 { // −0 → the key of +0
		k = 1 << 31
	}
	if v != v {
		k = math.MaxUint32
	}
	return k
}

// newAxisWalk builds the layout from c, or returns nil when c has an
// oblique node, a NaN threshold, more than maxKeyCols key columns or a
// tree too large for anode.link (scored by Compiled.leaf instead).
func newAxisWalk(c *Compiled) *axisWalk {
	if len(c.atomOff) > 1 {
		return nil
	}
	w := &axisWalk{p: c.p, roots: c.roots, nodes: make([]anode, len(c.nodes))}
	low := make([]int32, c.p) // feature → its NaN-low column, or 0
	for _, n := range c.nodes {
		if n.right >= 0 && n.feat&missBit != 0 && low[n.feat&featMask] == 0 {
			f := n.feat & featMask
			low[f] = int32(c.p + len(w.lowOf))
			w.lowOf = append(w.lowOf, f)
		}
	}
	w.stride = c.p + len(w.lowOf) + 1
	if w.stride > maxKeyCols {
		return nil
	}
	sentinel := uint32(w.stride-1) << linkDistBits
	for i, n := range c.nodes {
		if n.right < 0 {
			w.nodes[i] = anode{thr: uint32(-1 - n.right), link: sentinel}
			continue
		}
		if n.thr != n.thr {
			return nil
		}
		f := n.feat & featMask
		col := f
		if n.feat&missBit != 0 {
			col = low[f]
		}
		l, ok := link(int32(i), n.right, col)
		if !ok {
			return nil
		}
		w.nodes[i] = anode{thr: orderKey(n.thr), link: l}
	}
	return w
}

// keyTile is the rows keys converts at a time: their key rows (64 ·
// stride keys: 13 KB on trunk) stay in L1 while every column is written
// into them, where a whole block's column-by-column pass touches a new
// cache line at every value.
const keyTile = 64

// keys writes rows [r0, r1) of the column-major cols into x as key rows of
// w.stride columns, through the rank map when there is one.
func (w *axisWalk) keys(cols [][]float32, rank *RankMap, r0, r1 int, x []uint32) {
	s := w.stride
	for t0 := r0; t0 < r1; t0 += keyTile {
		t1 := min(t0+keyTile, r1)
		xt := x[(t0-r0)*s : (t1-r0)*s]
		for j, col := range cols {
			if rank != nil {
				for i, v := range col[t0:t1] {
					xt[i*s+j] = orderKey(rank.Apply(j, v))
				}
				continue
			}
			for i, v := range col[t0:t1] {
				xt[i*s+j] = orderKey(v)
			}
		}
	}
	for q, f := range w.lowOf {
		for i := range r1 - r0 {
			k := x[i*s+int(f)]
			if k == math.MaxUint32 {
				k = 0
			}
			x[i*s+w.p+q] = k
		}
	}
	for i := range r1 - r0 {
		x[i*s+s-1] = math.MaxUint32
	}
}

// step moves from node i one level down for the key row starting at o.
func step(nodes []anode, i int32, x []uint32, o int32) int32 {
	n := nodes[i]
	d := int32(n.link & linkDistMask) // right child − i; 0 at leaves
	var g int32
	if x[o+int32(n.link>>linkDistBits)] <= n.thr {
		g = 1
	}
	return i + d + (1-d)&(-g) // g == 1: left child i+1
}

// walk8Go walks the eight consecutive key rows of x (8·stride keys) through
// the tree at root and writes their leaf nodes to out[:8]. It is unrolled
// by hand: eight independent chains, two levels per exit test (measured:
// 8 rows beat 4, 6, 12 and 16 on trunk; see BenchmarkWalk). It is walk8
// where there is no assembly kernel (axiswalk_amd64.s), and the reference
// the kernel is tested against (TestWalk8Kernel).
func (w *axisWalk) walk8Go(root int32, x []uint32, out []int32) {
	nodes := w.nodes
	p := int32(w.stride)
	_ = x[8*p-1]
	i0, i1, i2, i3, i4, i5, i6, i7 := root, root, root, root, root, root, root, root
	for {
		j0 := step(nodes, i0, x, 0)
		j1 := step(nodes, i1, x, p)
		j2 := step(nodes, i2, x, 2*p)
		j3 := step(nodes, i3, x, 3*p)
		j4 := step(nodes, i4, x, 4*p)
		j5 := step(nodes, i5, x, 5*p)
		j6 := step(nodes, i6, x, 6*p)
		j7 := step(nodes, i7, x, 7*p)
		k0 := step(nodes, j0, x, 0)
		k1 := step(nodes, j1, x, p)
		k2 := step(nodes, j2, x, 2*p)
		k3 := step(nodes, j3, x, 3*p)
		k4 := step(nodes, j4, x, 4*p)
		k5 := step(nodes, j5, x, 5*p)
		k6 := step(nodes, j6, x, 6*p)
		k7 := step(nodes, j7, x, 7*p)
		if (k0^i0)|(k1^i1)|(k2^i2)|(k3^i3)|(k4^i4)|(k5^i5)|(k6^i6)|(k7^i7) == 0 {
			break
		}
		i0, i1, i2, i3, i4, i5, i6, i7 = k0, k1, k2, k3, k4, k5, k6, k7
	}
	_ = out[7]
	out[0], out[1], out[2], out[3] = i0, i1, i2, i3
	out[4], out[5], out[6], out[7] = i4, i5, i6, i7
}

// leaves writes the leaf slots of the m key rows of x in the tree at root
// to out[:m].
func (w *axisWalk) leaves(root int32, x []uint32, m int, out []int32) {
	w.leafNodes(root, x, m, out)
	w.slots(out[:m])
}

// slots turns leaf nodes into their leaf slots, in place.
func (w *axisWalk) slots(nodes []int32) {
	for q, i := range nodes {
		nodes[q] = int32(w.nodes[i].thr)
	}
}

// leafNodes writes the leaf nodes (not slots: distinct leaves may share
// a slot, their values) of the m key rows of x in the tree at root to
// out[:m].
func (w *axisWalk) leafNodes(root int32, x []uint32, m int, out []int32) {
	s := w.stride
	q := 0
	for ; q+8 <= m; q += 8 {
		w.walk8(root, x[q*s:(q+8)*s], out[q:q+8])
	}
	for ; q < m; q++ {
		i := root
		for {
			j := step(w.nodes, i, x, int32(q*s))
			if j == i {
				break
			}
			i = j
		}
		out[q] = i
	}
}

// compactAxisWalk builds the layout straight from a checked compact
// forest cp, in one pass over its nodes with a stack for the right
// children (CompileCompact: no cnode array beside it), with c's leaf
// slots (a single-output regression leaf's value is appended to
// c.leafVal). It returns nil, and leaves c untouched, when cp has an
// oblique node, a NaN threshold, more than maxKeyCols key columns or a
// tree too large for anode.link.
func compactAxisWalk(c *Compiled, cp *Compact) *axisWalk {
	if len(cp.Off)-1 > cp.Leaves {
		return nil // atoms: oblique nodes
	}
	w := &axisWalk{p: c.p}
	low := make([]int32, c.p) // feature → its NaN-low column, or 0
	for i, s := range cp.Split {
		u := uint32(s)
		if u>>31 != 0 {
			continue
		}
		if v := cp.Value[i]; v != v {
			return nil
		}
		if f := u & compactFeatureMask; u&compactMiss != 0 && low[f] == 0 {
			low[f] = int32(c.p + len(w.lowOf))
			w.lowOf = append(w.lowOf, int32(f))
		}
	}
	w.stride = c.p + len(w.lowOf) + 1
	if w.stride > maxKeyCols {
		return nil
	}
	sentinel := uint32(w.stride-1) << linkDistBits
	single := c.k == 0 && c.q == 1
	vals := len(c.leafVal)
	w.nodes = make([]anode, len(cp.Split))
	stack := make([]int32, 0, 64)
	slot := uint32(0)
	start := int32(0)
	for i, s := range cp.Split {
		u := uint32(s)
		if u>>31 == 0 {
			f := int32(u & compactFeatureMask)
			col := f
			if u&compactMiss != 0 {
				col = low[f]
			}
			w.nodes[i] = anode{thr: orderKey(cp.Value[i]), link: uint32(col) << linkDistBits}
			stack = append(stack, int32(i))
			continue
		}
		ref := u & compactFeatureMask
		if single {
			c.leafVal = append(c.leafVal, cp.Value[i])
			ref = slot
			slot++
		}
		w.nodes[i] = anode{thr: ref, link: sentinel}
		if len(stack) == 0 {
			w.roots = append(w.roots, start)
			start = int32(i) + 1
			continue
		}
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		l, ok := link(p, int32(i)+1, int32(w.nodes[p].link>>linkDistBits))
		if !ok {
			c.leafVal = c.leafVal[:vals]
			return nil
		}
		w.nodes[p].link = l
	}
	return w
}

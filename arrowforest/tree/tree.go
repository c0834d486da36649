// Package tree owns one decision tree: its struct-of-arrays storage, the
// split search over projection atoms (exact sorted and binned histogram
// modes), the impurity criteria (Gini, entropy, MSE, and the dRF distance
// criterion of distance.go) and the learnt default direction for missing
// values.
package tree

import (
	"fmt"
	"math"
)

// Tree is a fitted binary tree in struct-of-arrays form. Node 0 is the root.
//
// A row goes left at internal node i when a·x ≤ Threshold[i], where the atom
// a has features AtomFeature[AtomStart[i]:AtomStart[i+1]] with weights
// AtomWeight over the same range. If the projection is NaN (a missing value
// in any feature of the atom) the row goes left when MissingLeft[i].
//
// Node i is a leaf when Left[i] < 0. Its prediction is the value entries
// [LeafStart[i], LeafStart[i+1]): for classification the pairs
// (LeafClass[e], LeafValue[e]) list the non-zero in-bag class frequencies of
// the leaf (they sum to 1); for regression there is one entry, LeafValue[e],
// the mean in-bag target, or q entries, the means of the q outputs in
// order, for a multi-output tree (multi.go); LeafClass is then empty.
type Tree struct {
	Left        []int32
	Right       []int32
	Threshold   []float32
	MissingLeft []bool
	// Count is the in-bag weight (bootstrap multiplicity sum) at each node.
	Count []float32

	AtomStart   []int32 // len NumNodes()+1
	AtomFeature []int32
	AtomWeight  []float32

	LeafStart []int32 // len NumNodes()+1
	LeafClass []int32
	LeafValue []float64
}

// NumNodes is the number of nodes, leaves included.
func (t *Tree) NumNodes() int { return len(t.Left) }

// IsLeaf reports whether node i is a leaf.
func (t *Tree) IsLeaf(i int) bool { return t.Left[i] < 0 }

// NumLeaves counts the leaves.
func (t *Tree) NumLeaves() int {
	n := 0
	for _, l := range t.Left {
		if l < 0 {
			n++
		}
	}
	return n
}

// Depth returns the length of the longest root-to-leaf path (0 for a stump).
func (t *Tree) Depth() int {
	if t.NumNodes() == 0 {
		return 0
	}
	type item struct{ node, depth int32 }
	stack := []item{{0, 0}}
	max := int32(0)
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > max {
			max = it.depth
		}
		if l := t.Left[it.node]; l >= 0 {
			stack = append(stack, item{l, it.depth + 1}, item{t.Right[it.node], it.depth + 1})
		}
	}
	return int(max)
}

// InvalidError is an invariant of Validate that a tree breaks: Node is the
// node at fault (-1 for the tree as a whole) and Reason says what is wrong,
// naming the values. Its text carries no package prefix: callers say which
// tree ("forest: tree 3: node 7 has two parents, 2 and 5").
type InvalidError struct {
	Node   int
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Node < 0 {
		return e.Reason
	}
	return fmt.Sprintf("node %d %s", e.Node, e.Reason)
}

func invalid(node int, format string, a ...any) error {
	return &InvalidError{Node: node, Reason: fmt.Sprintf(format, a...)}
}

// DistributionTolerance is how far from 1 the frequencies of a
// classification leaf may sum: the builder writes count/total for each
// class (finishLeaf, Reestimate), whose float64 sum is 1 within a few
// units in the last place per class.
const DistributionTolerance = 1e-6

// Validate checks the invariants a decoder or a builder must guarantee,
// and is their one statement (ARCHITECTURE.md, Formats):
//   - consistent lengths and offsets;
//   - a tree, not a graph: every child in range and after its parent (so
//     traversal terminates), and every node but the root the child of
//     exactly one node (so no two paths reach a node: a "ladder" whose
//     node i has children i+1 and i+2 has exponentially many paths);
//   - atom features within 0..p-1, internal nodes with an atom and no
//     leaf entries, leaves with entries and no atom;
//   - classification leaves (k > 0): increasing classes within 0..k-1
//     whose frequencies are finite, non-negative and sum to 1 within
//     DistributionTolerance; regression leaves (k = 0): q finite values.
//
// Errors are *InvalidError. Validate never panics, whatever the tree
// holds, and takes O(nodes + entries) time and 4 bytes per node.
func (t *Tree) Validate(p, k int) error { return t.ValidateOutputs(p, k, 1) }

// ValidateOutputs is Validate for a regression tree (k = 0) whose leaves
// hold q values each.
func (t *Tree) ValidateOutputs(p, k, q int) error {
	if q < 1 || (k > 0 && q != 1) {
		return invalid(-1, "has %d outputs with %d classes", q, k)
	}
	n := len(t.Left)
	if n == 0 {
		return invalid(-1, "has no nodes")
	}
	if len(t.Right) != n || len(t.Threshold) != n || len(t.MissingLeft) != n || len(t.Count) != n {
		return invalid(-1, "has node arrays of unequal lengths")
	}
	if len(t.AtomStart) != n+1 || len(t.LeafStart) != n+1 {
		return invalid(-1, "has offset arrays without %d entries", n+1)
	}
	if t.AtomStart[0] != 0 || t.LeafStart[0] != 0 {
		return invalid(-1, "has offsets that do not start at 0")
	}
	if int(t.AtomStart[n]) != len(t.AtomFeature) || len(t.AtomFeature) != len(t.AtomWeight) {
		return invalid(-1, "has atom arrays inconsistent with their offsets")
	}
	if int(t.LeafStart[n]) != len(t.LeafValue) {
		return invalid(-1, "has leaf arrays inconsistent with their offsets")
	}
	if k > 0 && len(t.LeafClass) != len(t.LeafValue) {
		return invalid(-1, "has leaf classes and values of different lengths")
	}
	// offsets must be non-decreasing everywhere before any is used
	for i := 0; i < n; i++ {
		if t.AtomStart[i+1] < t.AtomStart[i] || t.LeafStart[i+1] < t.LeafStart[i] {
			return invalid(i, "has decreasing offsets")
		}
	}
	// parent[j] is j's parent + 1 (0: none yet), so a second parent is
	// seen when it arrives
	parent := make([]int32, n)
	for i := 0; i < n; i++ {
		a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
		l0, l1 := t.LeafStart[i], t.LeafStart[i+1]
		if t.Left[i] < 0 {
			if a1 != a0 {
				return invalid(i, "is a leaf with an atom")
			}
			if l1 == l0 || (k == 0 && int(l1-l0) != q) {
				return invalid(i, "is a leaf with %d value entries", l1-l0)
			}
			if err := t.checkLeaf(i, k); err != nil {
				return err
			}
			continue
		}
		if l1 != l0 {
			return invalid(i, "is an internal node with leaf values")
		}
		if a1 == a0 {
			return invalid(i, "is an internal node with an empty atom")
		}
		for e := a0; e < a1; e++ {
			if t.AtomFeature[e] < 0 || int(t.AtomFeature[e]) >= p {
				return invalid(i, "uses feature %d outside 0..%d", t.AtomFeature[e], p-1)
			}
		}
		l, r := t.Left[i], t.Right[i]
		if int(l) <= i || int(r) <= i || int(l) >= n || int(r) >= n || l == r {
			return invalid(i, "has invalid children %d, %d", l, r)
		}
		for _, c := range [2]int32{l, r} {
			if parent[c] != 0 {
				return invalid(int(c), "has two parents, %d and %d: the nodes form a graph, not a tree", parent[c]-1, i)
			}
			parent[c] = int32(i) + 1
		}
	}
	for j := 1; j < n; j++ {
		if parent[j] == 0 {
			return invalid(j, "is the child of no node")
		}
	}
	return nil
}

// checkLeaf checks the entries of leaf i: for classification (k > 0)
// classes in range and increasing (as the builder writes them, so none
// twice) with a frequency distribution, for regression finite values.
func (t *Tree) checkLeaf(i, k int) error {
	l0, l1 := t.LeafStart[i], t.LeafStart[i+1]
	if k == 0 {
		for e := l0; e < l1; e++ {
			if v := t.LeafValue[e]; math.IsNaN(v) || math.IsInf(v, 0) {
				return invalid(i, "is a leaf with value %v", v)
			}
		}
		return nil
	}
	sum := 0.0
	for e := l0; e < l1; e++ {
		c, v := t.LeafClass[e], t.LeafValue[e]
		if c < 0 || int(c) >= k {
			return invalid(i, "is a leaf naming class %d outside 0..%d", c, k-1)
		}
		if e > l0 && c <= t.LeafClass[e-1] {
			return invalid(i, "is a leaf naming class %d after class %d: classes must increase", c, t.LeafClass[e-1])
		}
		if !(v >= 0 && v <= 1) {
			return invalid(i, "is a leaf with frequency %v for class %d, outside 0..1", v, c)
		}
		sum += v
	}
	if math.Abs(sum-1) > DistributionTolerance {
		return invalid(i, "is a leaf whose class frequencies sum to %v, not 1", sum)
	}
	return nil
}

// Package tree owns one decision tree: its struct-of-arrays storage, the
// split search over projection atoms (exact sorted and binned histogram
// modes), the impurity criteria (Gini, entropy, MSE, and the dRF distance
// criterion of distance.go) and the learnt default direction for missing
// values.
package tree

import "fmt"

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

// Validate checks the structural invariants a decoder or a builder must
// guarantee: consistent lengths, children in range and after their parent
// (so traversal terminates), leaf entries well formed, atom features
// within 0..p-1 and class indices within 0..k-1 (k = 0 for regression,
// whose leaves hold one value).
func (t *Tree) Validate(p, k int) error { return t.ValidateOutputs(p, k, 1) }

// ValidateOutputs is Validate for a regression tree (k = 0) whose leaves
// hold q values each.
func (t *Tree) ValidateOutputs(p, k, q int) error {
	if q < 1 || (k > 0 && q != 1) {
		return fmt.Errorf("tree: %d outputs with %d classes", q, k)
	}
	n := len(t.Left)
	if n == 0 {
		return fmt.Errorf("tree: no nodes")
	}
	if len(t.Right) != n || len(t.Threshold) != n || len(t.MissingLeft) != n || len(t.Count) != n {
		return fmt.Errorf("tree: node arrays have unequal lengths")
	}
	if len(t.AtomStart) != n+1 || len(t.LeafStart) != n+1 {
		return fmt.Errorf("tree: offset arrays must have %d entries", n+1)
	}
	if t.AtomStart[0] != 0 || t.LeafStart[0] != 0 {
		return fmt.Errorf("tree: offsets must start at 0")
	}
	if int(t.AtomStart[n]) != len(t.AtomFeature) || len(t.AtomFeature) != len(t.AtomWeight) {
		return fmt.Errorf("tree: atom arrays inconsistent with offsets")
	}
	if int(t.LeafStart[n]) != len(t.LeafValue) {
		return fmt.Errorf("tree: leaf arrays inconsistent with offsets")
	}
	if k > 0 && len(t.LeafClass) != len(t.LeafValue) {
		return fmt.Errorf("tree: leaf classes and values differ in length")
	}
	// offsets must be non-decreasing everywhere before any is used
	for i := 0; i < n; i++ {
		if t.AtomStart[i+1] < t.AtomStart[i] || t.LeafStart[i+1] < t.LeafStart[i] {
			return fmt.Errorf("tree: node %d has decreasing offsets", i)
		}
	}
	for i := 0; i < n; i++ {
		a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
		l0, l1 := t.LeafStart[i], t.LeafStart[i+1]
		if a1 < a0 || l1 < l0 {
			return fmt.Errorf("tree: node %d has decreasing offsets", i)
		}
		if t.Left[i] < 0 {
			if a1 != a0 {
				return fmt.Errorf("tree: leaf %d has an atom", i)
			}
			if l1 == l0 || (k == 0 && int(l1-l0) != q) {
				return fmt.Errorf("tree: leaf %d has %d value entries", i, l1-l0)
			}
			for e := l0; e < l1; e++ {
				if k > 0 && (t.LeafClass[e] < 0 || int(t.LeafClass[e]) >= k) {
					return fmt.Errorf("tree: leaf %d names class %d outside 0..%d", i, t.LeafClass[e], k-1)
				}
			}
			continue
		}
		if l1 != l0 {
			return fmt.Errorf("tree: internal node %d has leaf values", i)
		}
		if a1 == a0 {
			return fmt.Errorf("tree: internal node %d has an empty atom", i)
		}
		for e := a0; e < a1; e++ {
			if t.AtomFeature[e] < 0 || int(t.AtomFeature[e]) >= p {
				return fmt.Errorf("tree: node %d uses feature %d outside 0..%d", i, t.AtomFeature[e], p-1)
			}
		}
		l, r := t.Left[i], t.Right[i]
		if int(l) <= i || int(r) <= i || int(l) >= n || int(r) >= n || l == r {
			return fmt.Errorf("tree: node %d has invalid children %d, %d", i, l, r)
		}
	}
	return nil
}

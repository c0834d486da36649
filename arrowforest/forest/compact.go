package forest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/forestd/forestd/arrowforest/tree"
)

// Compact is a forest's trees in the compact node layout of model format 5
// (ARCHITECTURE.md, Formats; arrowforest/model/doc.go is its
// specification): 8 bytes a node, leaves' and atoms' values in lists
// apart, each distinct list stored once.
//
// Nodes are the trees in order, each in preorder (node 0 of a tree is
// its root, an internal node's left child is the next node and its right
// child the node after its left subtree), so a node stores no child at
// all: the structure follows from which nodes are leaves. Split[i] read
// as a uint32 u:
//
//	u < 2^31          axis split: feature u & (2^30−1), missing values go
//	                  left when bit 30 is set; Value[i] is the threshold
//	u >> 30 == 0b10   leaf: bits 0–29 its leaf list; a single-output
//	                  regression leaf has list 0 unused and its value in
//	                  Value[i]; any other leaf has Value[i] = 0
//	u >> 30 == 0b11   oblique split: bits 0–28 its atom list (counted
//	                  from the first atom list), missing values go left
//	                  when bit 29 is set; Value[i] is the threshold
//
// List l holds the pairs (Key[e], Val[e]) for e in Off[l]..Off[l+1]−1.
// Lists 0..Leaves−1 are leaf lists: (class, frequency) with increasing
// classes for classification, (output, value) for outputs 0..q−1 of a
// multi-output regression leaf; the rest are atoms: (feature, weight).
// Each kind of list appears in the order nodes first name it, so a
// forest has one Compact.
type Compact struct {
	Split  []int32
	Value  []float32
	Off    []int32
	Key    []int32
	Val    []float32
	Leaves int
}

const (
	compactFeatureMask = 1<<30 - 1
	compactMiss        = 1 << 30 // axis split: missing values go left
	compactLeaf        = 0b10 << 30
	compactOblique     = 0b11 << 30
	compactObliqueMiss = 1 << 29
	compactAtomMask    = 1<<29 - 1
)

// leafCode is the split code of a leaf with list ref.
func leafCode(ref uint32) int32 { return int32(compactLeaf | ref) }

// compactLists collects distinct lists in order of first use.
type compactLists struct {
	c    *Compact
	seen map[string]int32
	key  []byte
}

func (l *compactLists) add(keys []int32, weight func(int) float32) int32 {
	l.key = l.key[:0]
	for e, k := range keys {
		l.key = binary.LittleEndian.AppendUint32(l.key, uint32(k))
		l.key = binary.LittleEndian.AppendUint32(l.key, math.Float32bits(weight(e)))
	}
	if i, ok := l.seen[string(l.key)]; ok {
		return i
	}
	i := int32(len(l.c.Off) - 1)
	l.seen[string(l.key)] = i
	for e, k := range keys {
		l.c.Key = append(l.c.Key, k)
		l.c.Val = append(l.c.Val, weight(e))
	}
	l.c.Off = append(l.c.Off, int32(len(l.c.Key)))
	return i
}

// ToCompact lays out the trees of f, which must satisfy Forest.Validate
// and be in preorder (as Train grows them), in the compact layout. Leaf
// values become float32, the precision scoring has always summed them
// in (Compile), so a forest scores the same bits from either.
func ToCompact(f *Forest) (*Compact, error) {
	c := &Compact{Off: []int32{0}}
	k, q := f.NumClasses(), f.NumOutputs()
	nodes := 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
	}
	c.Split = make([]int32, 0, nodes)
	c.Value = make([]float32, 0, nodes)
	leaves := &compactLists{c: c, seen: map[string]int32{}}
	outputs := make([]int32, q) // a multi-output leaf's keys: 0..q−1
	for o := range outputs {
		outputs[o] = int32(o)
	}
	var atoms []struct{ t, i int }
	for ti, t := range f.Trees {
		if err := preorder(t); err != nil {
			return nil, fmt.Errorf("forest: tree %d: %w", ti, err)
		}
		for i := 0; i < t.NumNodes(); i++ {
			if t.IsLeaf(i) {
				l0, l1 := t.LeafStart[i], t.LeafStart[i+1]
				for _, v := range t.LeafValue[l0:l1] {
					if w := float32(v); math.IsInf(float64(w), 0) || math.IsNaN(float64(w)) {
						return nil, fmt.Errorf("forest: tree %d: leaf %d value %v is outside float32's range, the precision leaves are scored in", ti, i, v)
					}
				}
				if k == 0 && q == 1 {
					c.Split = append(c.Split, leafCode(0))
					c.Value = append(c.Value, float32(t.LeafValue[l0]))
					continue
				}
				keys := outputs
				if k > 0 {
					keys = t.LeafClass[l0:l1]
				}
				ref := leaves.add(keys, func(e int) float32 { return float32(t.LeafValue[int(l0)+e]) })
				if ref > compactFeatureMask {
					return nil, fmt.Errorf("forest: more than 2^30 distinct leaves")
				}
				c.Split = append(c.Split, leafCode(uint32(ref)))
				c.Value = append(c.Value, 0)
				continue
			}
			a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
			miss := t.MissingLeft[i]
			if a1-a0 == 1 && t.AtomWeight[a0] == 1 {
				ft := t.AtomFeature[a0]
				if ft < 0 || ft > compactFeatureMask {
					return nil, fmt.Errorf("forest: tree %d: feature index %d out of range", ti, ft)
				}
				if miss {
					ft |= compactMiss
				}
				c.Split = append(c.Split, ft)
			} else {
				atoms = append(atoms, struct{ t, i int }{ti, i})
				c.Split = append(c.Split, -1) // set below, once the leaf lists are all known
			}
			c.Value = append(c.Value, t.Threshold[i])
		}
	}
	c.Leaves = len(c.Off) - 1
	if len(atoms) > 0 {
		al := &compactLists{c: c, seen: map[string]int32{}}
		row := 0
		ai := 0
		for ti, t := range f.Trees {
			for i := 0; i < t.NumNodes(); i, row = i+1, row+1 {
				if ai == len(atoms) || atoms[ai].t != ti || atoms[ai].i != i {
					continue
				}
				ai++
				a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
				ref := al.add(t.AtomFeature[a0:a1], func(e int) float32 { return t.AtomWeight[int(a0)+e] }) - int32(c.Leaves)
				if ref > compactAtomMask {
					return nil, fmt.Errorf("forest: more than 2^29 distinct atoms")
				}
				u := uint32(compactOblique) | uint32(ref)
				if t.MissingLeft[i] {
					u |= compactObliqueMiss
				}
				c.Split[row] = int32(u)
			}
		}
	}
	return c, nil
}

// preorder checks that t is stored in preorder: each internal node's
// left child next to it and its right child after its left subtree.
func preorder(t *tree.Tree) error {
	n := t.NumNodes()
	var stack []int32
	for i := 0; i < n; i++ {
		if !t.IsLeaf(i) {
			if int(t.Left[i]) != i+1 {
				return fmt.Errorf("node %d is not in preorder", i)
			}
			stack = append(stack, int32(i))
			continue
		}
		if len(stack) == 0 {
			if i != n-1 {
				return fmt.Errorf("nodes after the tree ends at node %d", i)
			}
			return nil
		}
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if int(t.Right[p]) != i+1 {
			return fmt.Errorf("node %d is not in preorder", p)
		}
	}
	return fmt.Errorf("the tree does not end")
}

// walkTrees parses the node codes into trees: it calls tree(start, end)
// for each tree and right(i, r) for each internal node i with right child
// r (global node indexes). It fails when the codes do not close into
// whole trees.
func (c *Compact) walkTrees(tree func(start, end int) error, right func(i, r int)) error {
	n := len(c.Split)
	if len(c.Value) != n {
		return fmt.Errorf("%d node values for %d nodes", len(c.Value), n)
	}
	var stack []int32
	start := 0
	for i := 0; i < n; i++ {
		if uint32(c.Split[i])>>30 != 0b10 {
			stack = append(stack, int32(i))
			continue
		}
		if len(stack) == 0 {
			if err := tree(start, i+1); err != nil {
				return err
			}
			start = i + 1
			continue
		}
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		right(int(p), i+1)
	}
	if start != n {
		return fmt.Errorf("the last tree (from node %d) does not end", start)
	}
	return nil
}

// checkLists checks the lists against p features, k classes and q
// outputs: offsets, entries (Validate's rules for leaves and atoms), and
// that nodes name each kind of list in order of first use, every list
// once at least. named marks the classes the leaves name.
func (c *Compact) checkLists(p, k, q int, named []uint64) error {
	nl := len(c.Off) - 1
	if nl < 0 || c.Off[0] != 0 || c.Leaves < 0 || c.Leaves > nl || int(c.Off[nl]) != len(c.Key) || len(c.Key) != len(c.Val) {
		return fmt.Errorf("lists inconsistent with their offsets")
	}
	if k == 0 && q == 1 && c.Leaves != 0 {
		return fmt.Errorf("a single-output regression forest with %d leaf lists", c.Leaves)
	}
	for l := 0; l < nl; l++ {
		e0, e1 := c.Off[l], c.Off[l+1]
		if e1 <= e0 {
			return fmt.Errorf("list %d is empty or has decreasing offsets", l)
		}
		keys, vals := c.Key[e0:e1], c.Val[e0:e1]
		if l >= c.Leaves {
			for _, j := range keys {
				if j < 0 || int(j) >= p {
					return fmt.Errorf("atom %d uses feature %d outside 0..%d", l-c.Leaves, j, p-1)
				}
			}
			continue
		}
		if k == 0 {
			if len(keys) != q {
				return fmt.Errorf("leaf list %d has %d values for %d outputs", l, len(keys), q)
			}
			for o, v := range vals {
				if keys[o] != int32(o) || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("leaf list %d has output %d value %v", l, keys[o], v)
				}
			}
			continue
		}
		sum := 0.0
		for e, j := range keys {
			if j < 0 || int(j) >= k || (e > 0 && j <= keys[e-1]) {
				return fmt.Errorf("leaf list %d names class %d: classes must increase within 0..%d", l, j, k-1)
			}
			if v := vals[e]; !(v >= 0 && v <= 1) {
				return fmt.Errorf("leaf list %d has frequency %v, outside 0..1", l, v)
			}
			sum += float64(vals[e])
			named[j/64] |= 1 << (j % 64)
		}
		if math.Abs(sum-1) > tree.DistributionTolerance {
			return fmt.Errorf("leaf list %d has class frequencies that sum to %v, not 1", l, sum)
		}
	}
	return nil
}

// checkNodes checks each node's code against p features, the lists and
// the task (k classes, q outputs), and that nodes name lists in order of
// first use and every list.
func (c *Compact) checkNodes(p, k, q int) error {
	nextLeaf, nextAtom := uint32(0), uint32(0)
	atoms := uint32(len(c.Off) - 1 - c.Leaves)
	single := k == 0 && q == 1
	for i, s := range c.Split {
		u := uint32(s)
		switch u >> 30 {
		case 0b00, 0b01:
			if int(u&compactFeatureMask) >= p {
				return fmt.Errorf("node %d uses feature %d outside 0..%d", i, u&compactFeatureMask, p-1)
			}
		case 0b10:
			ref := u & compactFeatureMask
			if single {
				v := c.Value[i]
				if ref != 0 || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("leaf %d has list %d and value %v", i, ref, v)
				}
				continue
			}
			if ref > nextLeaf || ref >= uint32(c.Leaves) || math.Float32bits(c.Value[i]) != 0 {
				return fmt.Errorf("leaf %d names leaf list %d (lists 0..%d named so far, value %v)", i, ref, nextLeaf, c.Value[i])
			}
			if ref == nextLeaf {
				nextLeaf++
			}
		default:
			ref := u & compactAtomMask
			if ref > nextAtom || ref >= atoms {
				return fmt.Errorf("node %d names atom %d (atoms 0..%d named so far)", i, ref, nextAtom)
			}
			if ref == nextAtom {
				nextAtom++
			}
		}
	}
	if int(nextLeaf) != c.Leaves || nextAtom != atoms {
		return fmt.Errorf("%d of %d leaf lists and %d of %d atoms are named by no node", c.Leaves-int(nextLeaf), c.Leaves, atoms-nextAtom, atoms)
	}
	return nil
}

// Check checks c against f (the forest's header: features, classes,
// outputs) as Forest.Validate checks trees — whole trees, features and
// classes in range, leaf lists that are distributions or finite values
// — and returns the number of trees and the class-name bitmap Validate's
// class budget needs.
func (c *Compact) check(f *Forest) (trees int, named []uint64, err error) {
	p, k, q := len(f.Features), f.NumClasses(), f.NumOutputs()
	named = make([]uint64, (k+63)/64)
	if err := c.checkLists(p, k, q, named); err != nil {
		return 0, nil, err
	}
	if err := c.checkNodes(p, k, q); err != nil {
		return 0, nil, err
	}
	err = c.walkTrees(func(int, int) error { trees++; return nil }, func(int, int) {})
	return trees, named, err
}

// Trees rebuilds f's trees from c, checked (Check) against f's header;
// the forest returned is f with those trees, which satisfies Validate
// when f's header does. A node's in-bag count is not stored in the
// compact layout: Count is 0.
func (c *Compact) Trees(f *Forest) ([]*tree.Tree, error) {
	if _, _, err := c.check(f); err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	k, q := f.NumClasses(), f.NumOutputs()
	var trees []*tree.Tree
	err := c.walkTrees(func(s, e int) error {
		n := e - s
		t := &tree.Tree{Left: make([]int32, n), Right: make([]int32, n), Threshold: make([]float32, n),
			MissingLeft: make([]bool, n), Count: make([]float32, n), AtomStart: make([]int32, n+1), LeafStart: make([]int32, n+1)}
		for i := 0; i < n; i++ {
			u := uint32(c.Split[s+i])
			t.AtomStart[i+1], t.LeafStart[i+1] = t.AtomStart[i], t.LeafStart[i]
			switch u >> 30 {
			case 0b00, 0b01:
				t.Left[i], t.Threshold[i], t.MissingLeft[i] = int32(i+1), c.Value[s+i], u&compactMiss != 0
				t.AtomFeature = append(t.AtomFeature, int32(u&compactFeatureMask))
				t.AtomWeight = append(t.AtomWeight, 1)
				t.AtomStart[i+1]++
			case 0b10:
				t.Left[i], t.Right[i] = -1, -1
				if k == 0 && q == 1 {
					t.LeafValue = append(t.LeafValue, float64(c.Value[s+i]))
					t.LeafStart[i+1]++
					continue
				}
				l := u & compactFeatureMask
				e0, e1 := c.Off[l], c.Off[l+1]
				if k > 0 {
					t.LeafClass = append(t.LeafClass, c.Key[e0:e1]...)
				}
				for _, v := range c.Val[e0:e1] {
					t.LeafValue = append(t.LeafValue, float64(v))
				}
				t.LeafStart[i+1] += e1 - e0
			default:
				l := int(u&compactAtomMask) + c.Leaves
				e0, e1 := c.Off[l], c.Off[l+1]
				t.Left[i], t.Threshold[i], t.MissingLeft[i] = int32(i+1), c.Value[s+i], u&compactObliqueMiss != 0
				t.AtomFeature = append(t.AtomFeature, c.Key[e0:e1]...)
				t.AtomWeight = append(t.AtomWeight, c.Val[e0:e1]...)
				t.AtomStart[i+1] += e1 - e0
			}
		}
		t.AtomFeature, t.AtomWeight = slices.Clip(t.AtomFeature), slices.Clip(t.AtomWeight)
		t.LeafClass, t.LeafValue = slices.Clip(t.LeafClass), slices.Clip(t.LeafValue)
		trees = append(trees, t)
		return nil
	}, func(int, int) {})
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	// right children: a second walk now that every tree exists
	ti, base := 0, 0
	err = c.walkTrees(func(s, e int) error { ti++; base = e; return nil }, func(i, r int) {
		trees[ti].Right[i-base] = int32(r - base)
	})
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	return trees, nil
}

package model

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/tree"
)

// kind is the logical type of a node-table column. The numeric value is the
// type code used in the canonical serialization (see doc.go), so it must
// never change for an existing kind.
type kind uint8

const (
	kInt32   kind = 0x01
	kFloat32 kind = 0x02
	kFloat64 kind = 0x03
	kBool    kind = 0x04

	listFlag     kind = 0x10
	kListInt32        = listFlag | kInt32
	kListFloat32      = listFlag | kFloat32
	kListFloat64      = listFlag | kFloat64
)

func (k kind) isList() bool { return k&listFlag != 0 }

// elem is the element kind: kInt32, kFloat32, kFloat64 or kBool, so that a
// switch over it needs no default case. Kinds are never read from a file:
// every column's kind is a constant of nodeColumns (or of
// int32Column/float32Column), and TestColumnKinds checks that each is one of
// the four, so the panic is a bug in this package, not bad input.
func (k kind) elem() kind {
	switch e := k &^ listFlag; e {
	case kInt32, kFloat32, kFloat64, kBool:
		return e
	}
	panic(fmt.Sprintf("model: unknown column kind %#x", uint8(k)))
}

// width is the size in bytes of one (element) value in the canonical form
// and, except for bool, in Arrow.
func (k kind) width() int {
	switch k.elem() {
	case kInt32, kFloat32:
		return 4
	case kFloat64:
		return 8
	default: // kBool
		return 1
	}
}

func (k kind) arrowElem() arrow.DataType {
	switch k.elem() {
	case kInt32:
		return arrow.PrimitiveTypes.Int32
	case kFloat32:
		return arrow.PrimitiveTypes.Float32
	case kFloat64:
		return arrow.PrimitiveTypes.Float64
	default: // kBool
		return arrow.FixedWidthTypes.Boolean
	}
}

func (k kind) arrowType() arrow.DataType {
	if k.isList() {
		return arrow.ListOfNonNullable(k.arrowElem())
	}
	return k.arrowElem()
}

// matches reports whether an Arrow type read from a stream is acceptable
// for k. Nullability and list element names are not checked (nulls are
// rejected per array instead).
func (k kind) matches(dt arrow.DataType) bool {
	if k.isList() {
		lt, ok := dt.(*arrow.ListType)
		return ok && lt.Elem().ID() == k.arrowElem().ID()
	}
	return dt.ID() == k.arrowElem().ID()
}

// values holds the values of one column over some rows; only the slice
// matching the column's kind (its element kind for lists) is used.
type values struct {
	i32 []int32
	f32 []float32
	f64 []float64
	b   []bool
}

func (v *values) len(k kind) int {
	switch k.elem() {
	case kInt32:
		return len(v.i32)
	case kFloat32:
		return len(v.f32)
	case kFloat64:
		return len(v.f64)
	default:
		return len(v.b)
	}
}

// slice returns v[lo:hi] with the capacity clipped, so that appending to a
// decoded tree's slice never overwrites a neighbour. Empty results are nil.
func (v *values) slice(k kind, lo, hi int) values {
	if lo == hi {
		return values{}
	}
	switch k.elem() {
	case kInt32:
		return values{i32: v.i32[lo:hi:hi]}
	case kFloat32:
		return values{f32: v.f32[lo:hi:hi]}
	case kFloat64:
		return values{f64: v.f64[lo:hi:hi]}
	default:
		return values{b: v.b[lo:hi:hi]}
	}
}

// appendFrom appends src[lo:hi] to v.
func (v *values) appendFrom(k kind, src values, lo, hi int) {
	switch k.elem() {
	case kInt32:
		v.i32 = append(v.i32, src.i32[lo:hi]...)
	case kFloat32:
		v.f32 = append(v.f32, src.f32[lo:hi]...)
	case kFloat64:
		v.f64 = append(v.f64, src.f64[lo:hi]...)
	default:
		v.b = append(v.b, src.b[lo:hi]...)
	}
}

// treeCol is one column of one tree: one value per node for scalar kinds;
// for list kinds the elements of all nodes, node i owning
// vals[off[i]:off[i+1]] (len(off) = nodes+1, off[0] = 0).
type treeCol struct {
	values
	off []int32
}

// column describes one column of the node table: how to read it from a
// tree and how to store it back. nodeColumns is the single list of them;
// adding a per-node field to tree.Tree means adding one entry there.
type column struct {
	name string
	kind kind
	// fields names the tree.Tree fields this column carries (checked by a
	// test so that a new Tree field cannot be silently dropped).
	fields []string
	// get returns the column for tree ti (t = f.Trees[ti]). It may return
	// the tree's own slices; callers do not modify them.
	get func(ti int, t *tree.Tree) treeCol
	// set stores a decoded column into t (nil: nothing to store). The
	// decoder calls set for every column of a tree before validating it.
	set func(t *tree.Tree, c treeCol) error
}

// nodeColumns lists the node table in schema order. The decoder requires
// exactly these columns with these names and kinds; changing the list
// changes the format (bump FormatVersion unless only appending columns a
// reader of the old version would reject anyway).
var nodeColumns = []column{
	{name: "tree", kind: kInt32,
		get: func(ti int, t *tree.Tree) treeCol {
			v := make([]int32, t.NumNodes())
			for i := range v {
				v[i] = int32(ti)
			}
			return treeCol{values: values{i32: v}}
		}},
	{name: "node", kind: kInt32,
		get: func(_ int, t *tree.Tree) treeCol {
			v := make([]int32, t.NumNodes())
			for i := range v {
				v[i] = int32(i)
			}
			return treeCol{values: values{i32: v}}
		},
		set: func(_ *tree.Tree, c treeCol) error {
			for i, v := range c.i32 {
				if v != int32(i) {
					return fmt.Errorf("column node: row %d of the tree holds node %d", i, v)
				}
			}
			return nil
		}},
	int32Column("left", func(t *tree.Tree) *[]int32 { return &t.Left }, "Left"),
	int32Column("right", func(t *tree.Tree) *[]int32 { return &t.Right }, "Right"),
	float32Column("threshold", func(t *tree.Tree) *[]float32 { return &t.Threshold }, "Threshold"),
	{name: "missing_left", kind: kBool, fields: []string{"MissingLeft"},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values: values{b: t.MissingLeft}} },
		set: func(t *tree.Tree, c treeCol) error { t.MissingLeft = c.b; return nil }},
	float32Column("count", func(t *tree.Tree) *[]float32 { return &t.Count }, "Count"),
	{name: "atom_feature", kind: kListInt32, fields: []string{"AtomStart", "AtomFeature"},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values{i32: t.AtomFeature}, t.AtomStart} },
		set: func(t *tree.Tree, c treeCol) error {
			t.AtomFeature = c.i32
			return shareOffsets(&t.AtomStart, c.off, "atom_feature")
		}},
	{name: "atom_weight", kind: kListFloat32, fields: []string{"AtomStart", "AtomWeight"},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values{f32: t.AtomWeight}, t.AtomStart} },
		set: func(t *tree.Tree, c treeCol) error {
			t.AtomWeight = c.f32
			return shareOffsets(&t.AtomStart, c.off, "atom_weight")
		}},
	// Regression trees have no leaf classes: every leaf_class list is
	// empty, and LeafStart comes from leaf_value alone.
	{name: "leaf_class", kind: kListInt32, fields: []string{"LeafStart", "LeafClass"},
		get: func(_ int, t *tree.Tree) treeCol {
			if len(t.LeafClass) == 0 {
				return treeCol{off: make([]int32, t.NumNodes()+1)}
			}
			return treeCol{values{i32: t.LeafClass}, t.LeafStart}
		},
		set: func(t *tree.Tree, c treeCol) error {
			if len(c.i32) == 0 {
				t.LeafClass = nil
				return nil
			}
			t.LeafClass = c.i32
			return shareOffsets(&t.LeafStart, c.off, "leaf_class")
		}},
	{name: "leaf_value", kind: kListFloat64, fields: []string{"LeafStart", "LeafValue"},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values{f64: t.LeafValue}, t.LeafStart} },
		set: func(t *tree.Tree, c treeCol) error {
			t.LeafValue = c.f64
			return shareOffsets(&t.LeafStart, c.off, "leaf_value")
		}},
}

// treeColumn is the index of the "tree" column, which the decoder uses to
// split the table into trees.
const treeColumn = 0

func int32Column(name string, field func(*tree.Tree) *[]int32, fieldName string) column {
	return column{name: name, kind: kInt32, fields: []string{fieldName},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values: values{i32: *field(t)}} },
		set: func(t *tree.Tree, c treeCol) error { *field(t) = c.i32; return nil }}
}

func float32Column(name string, field func(*tree.Tree) *[]float32, fieldName string) column {
	return column{name: name, kind: kFloat32, fields: []string{fieldName},
		get: func(_ int, t *tree.Tree) treeCol { return treeCol{values: values{f32: *field(t)}} },
		set: func(t *tree.Tree, c treeCol) error { *field(t) = c.f32; return nil }}
}

// shareOffsets stores the offsets of a list column into a tree offsets
// field that several list columns share; the second one to arrive must
// agree with the first.
func shareOffsets(dst *[]int32, off []int32, name string) error {
	if *dst == nil {
		*dst = off
		return nil
	}
	if len(*dst) != len(off) {
		return fmt.Errorf("column %s: list lengths disagree with a sibling column", name)
	}
	for i, o := range off {
		if (*dst)[i] != o {
			return fmt.Errorf("column %s: node %d has a list length that disagrees with a sibling column", name, max(i-1, 0))
		}
	}
	return nil
}

// table is the node table in Go memory: every column over all rows. List
// columns keep int64 offsets (len rows+1, starting at 0) so that a large
// forest cannot overflow them.
type table struct {
	rows int
	spec []column // nodeColumns (format 1–4) or compactColumns (5)
	cols []tableCol
}

type tableCol struct {
	values
	off []int64
}

// flatten lays a validated forest out as the node table.
func flatten(f *forest.Forest) (*table, error) {
	rows := 0
	for _, t := range f.Trees {
		rows += t.NumNodes()
	}
	tab := &table{rows: rows, spec: nodeColumns, cols: make([]tableCol, len(nodeColumns))}
	for ci, c := range nodeColumns {
		tc := &tab.cols[ci]
		if c.kind.isList() {
			tc.off = make([]int64, 1, rows+1)
		}
		for ti, t := range f.Trees {
			n := t.NumNodes()
			col := c.get(ti, t)
			if !c.kind.isList() {
				if col.len(c.kind) != n {
					return nil, fmt.Errorf("tree %d: column %s has %d values for %d nodes", ti, c.name, col.len(c.kind), n)
				}
				tc.appendFrom(c.kind, col.values, 0, n)
				continue
			}
			if len(col.off) != n+1 || col.off[0] != 0 || int(col.off[n]) != col.len(c.kind) {
				return nil, fmt.Errorf("tree %d: column %s has inconsistent offsets", ti, c.name)
			}
			base := tc.off[len(tc.off)-1]
			for i := 1; i <= n; i++ {
				if col.off[i] < col.off[i-1] {
					return nil, fmt.Errorf("tree %d: column %s has decreasing offsets at node %d", ti, c.name, i-1)
				}
				tc.off = append(tc.off, base+int64(col.off[i]))
			}
			tc.appendFrom(c.kind, col.values, 0, col.len(c.kind))
		}
	}
	return tab, nil
}

// split cuts a decoded table into trees by the tree column and stores every
// column through column.set. It does not validate the trees.
func (tab *table) split() ([]*tree.Tree, error) {
	if tab.rows == 0 {
		return nil, fmt.Errorf("node table is empty")
	}
	ids := tab.cols[treeColumn].i32
	if ids[0] != 0 {
		return nil, fmt.Errorf("column tree: first row is tree %d, want 0", ids[0])
	}
	var trees []*tree.Tree
	lo := 0
	for r := 1; r <= tab.rows; r++ {
		if r < tab.rows && ids[r] == ids[r-1] {
			continue
		}
		if r < tab.rows && ids[r] != ids[r-1]+1 {
			return nil, fmt.Errorf("column tree: row %d jumps from tree %d to %d", r, ids[r-1], ids[r])
		}
		if r-lo > math.MaxInt32 {
			return nil, fmt.Errorf("tree %d has too many nodes", len(trees))
		}
		t, err := tab.tree(lo, r)
		if err != nil {
			return nil, fmt.Errorf("tree %d: %w", len(trees), err)
		}
		trees = append(trees, t)
		lo = r
	}
	return trees, nil
}

func (tab *table) tree(lo, hi int) (*tree.Tree, error) {
	t := &tree.Tree{}
	for ci, c := range nodeColumns {
		if c.set == nil {
			continue
		}
		tc := &tab.cols[ci]
		var col treeCol
		if !c.kind.isList() {
			col.values = tc.slice(c.kind, lo, hi)
		} else {
			e0, e1 := tc.off[lo], tc.off[hi]
			if e1-e0 > math.MaxInt32 {
				return nil, fmt.Errorf("column %s: too many list elements in one tree", c.name)
			}
			col.values = tc.slice(c.kind, int(e0), int(e1))
			col.off = make([]int32, hi-lo+1)
			for i := range col.off {
				col.off[i] = int32(tc.off[lo+i] - e0)
			}
		}
		if err := c.set(t, col); err != nil {
			return nil, err
		}
	}
	return t, nil
}

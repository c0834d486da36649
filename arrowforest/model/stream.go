package model

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/forest"
)

// forestRows is a forest's node table read from its trees a piece at a
// time (codec.Encode): the digest reads each column tree by tree and
// each record batch lays out only its own rows, so encoding holds one
// batch beside the trees instead of a copy of the whole table (issue 31:
// a million-row forest's table was as large as its trees again). The
// bytes are those of the whole table's encoding (TestStreamSameBytes).
type forestRows struct {
	f     *forest.Forest
	start []int // start[t] is tree t's first row; start[T] = rows
}

func newForestRows(f *forest.Forest) *forestRows {
	start := make([]int, len(f.Trees)+1)
	for t, tr := range f.Trees {
		start[t+1] = start[t] + tr.NumNodes()
	}
	return &forestRows{f: f, start: start}
}

func (fr *forestRows) rows() int { return fr.start[len(fr.f.Trees)] }

// column returns column ci of tree t, checked as flatten checks it.
func (fr *forestRows) column(ci, t int) (treeCol, error) {
	c := nodeColumns[ci]
	tr := fr.f.Trees[t]
	n := tr.NumNodes()
	col := c.get(t, tr)
	if !c.kind.isList() {
		if col.len(c.kind) != n {
			return treeCol{}, fmt.Errorf("tree %d: column %s has %d values for %d nodes", t, c.name, col.len(c.kind), n)
		}
		return col, nil
	}
	if len(col.off) != n+1 || col.off[0] != 0 || int(col.off[n]) != col.len(c.kind) {
		return treeCol{}, fmt.Errorf("tree %d: column %s has inconsistent offsets", t, c.name)
	}
	for i := 1; i <= n; i++ {
		if col.off[i] < col.off[i-1] {
			return treeCol{}, fmt.Errorf("tree %d: column %s has decreasing offsets at node %d", t, c.name, i-1)
		}
	}
	return col, nil
}

// check checks every column of every tree (what flatten refuses).
func (fr *forestRows) check() error {
	for ci := range nodeColumns {
		for t := range fr.f.Trees {
			if _, err := fr.column(ci, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// table lays rows [lo, hi) out as a node table of hi−lo rows.
func (fr *forestRows) table(lo, hi int) (*table, error) {
	tab := &table{rows: hi - lo, spec: nodeColumns, cols: make([]tableCol, len(nodeColumns))}
	for ci, c := range nodeColumns {
		tc := &tab.cols[ci]
		if c.kind.isList() {
			tc.off = make([]int64, 1, hi-lo+1)
		}
		for t := range fr.f.Trees {
			s, e := max(lo, fr.start[t]), min(hi, fr.start[t+1])
			if s >= e {
				continue
			}
			col, err := fr.column(ci, t)
			if err != nil {
				return nil, err
			}
			a, b := s-fr.start[t], e-fr.start[t] // nodes a..b-1 of tree t
			if !c.kind.isList() {
				tc.appendFrom(c.kind, col.values, a, b)
				continue
			}
			base := tc.off[len(tc.off)-1] - int64(col.off[a])
			for i := a + 1; i <= b; i++ {
				tc.off = append(tc.off, base+int64(col.off[i]))
			}
			tc.appendFrom(c.kind, col.values, int(col.off[a]), int(col.off[b]))
		}
	}
	return tab, nil
}

// listLen returns a function giving the number of elements of list
// column ci at row r, for r increasing from 0 (a cursor over the trees).
func (fr *forestRows) listLen(ci int) func(r int) (int64, error) {
	t, end := -1, 0
	var col treeCol
	return func(r int) (int64, error) {
		for r >= end {
			t++
			end = fr.start[t+1]
			var err error
			if col, err = fr.column(ci, t); err != nil {
				return 0, err
			}
		}
		i := r - fr.start[t]
		return int64(col.off[i+1] - col.off[i]), nil
	}
}

// digest is canonicalDigest of the whole table, read tree by tree.
func (fr *forestRows) digest(entries []metaEntry) (digest, error) {
	cw := newCanonWriter()
	canonicalHeader(cw, entries, fr.rows(), len(nodeColumns))
	for ci, c := range nodeColumns {
		cw.str(c.name)
		cw.u8(uint8(c.kind))
		if c.kind.isList() {
			for t := range fr.f.Trees {
				col, err := fr.column(ci, t)
				if err != nil {
					return digest{}, err
				}
				for i := 1; i < len(col.off); i++ {
					cw.u32(uint32(col.off[i] - col.off[i-1]))
				}
			}
		}
		for t := range fr.f.Trees {
			col, err := fr.column(ci, t)
			if err != nil {
				return digest{}, err
			}
			cw.values(c.kind, &col.values)
		}
	}
	return cw.sum(), nil
}

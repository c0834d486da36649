package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/forestd/forestd/arrowforest/forest"
)

// compactVersion is the first format version with the compact node
// table (forest.Compact; doc.go, "Node table").
const compactVersion = 5

// compactColumns is the node table of format 5: a split code and a value
// per row; the rows after forestd.nodes hold the lists.
var compactColumns = []column{
	{name: "split", kind: kInt32},
	{name: "value", kind: kFloat32},
}

// keyLayout is the metadata key of format 5 that counts the lists after
// the node rows.
const keyLayout = "forestd.layout"

// layout is forestd.layout: how many leaf lists, then atom lists, follow
// the nodes.
type layout struct {
	LeafLists int `json:"leaf_lists"`
	AtomLists int `json:"atom_lists"`
}

func decodeLayout(v string, st *decodeState) error {
	if st.version < compactVersion {
		return fmt.Errorf("format version %d has no %s", st.version, keyLayout)
	}
	var l layout
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return err
	}
	if b, _ := json.Marshal(l); string(b) != v || l.LeafLists < 0 || l.AtomLists < 0 {
		return fmt.Errorf("%q is not {\"leaf_lists\":L,\"atom_lists\":A} with counts 0 or more", v)
	}
	st.layout = &l
	return nil
}

// compactTable lays cp out as the format-5 node table: the nodes, then
// each list as a row (entries, 0) followed by its (key, value) rows.
func compactTable(cp *forest.Compact) *table {
	nl := len(cp.Off) - 1
	rows := len(cp.Split) + nl + len(cp.Key)
	split := make([]int32, 0, rows)
	value := make([]float32, 0, rows)
	split = append(split, cp.Split...)
	value = append(value, cp.Value...)
	for l := 0; l < nl; l++ {
		e0, e1 := cp.Off[l], cp.Off[l+1]
		split = append(split, e1-e0)
		value = append(value, 0)
		split = append(split, cp.Key[e0:e1]...)
		value = append(value, cp.Val[e0:e1]...)
	}
	return &table{rows: rows, spec: compactColumns, cols: []tableCol{{values: values{i32: split}}, {values: values{f32: value}}}}
}

// compact reads a decoded format-5 table back into a forest.Compact:
// nodes rows of nodes, then the lists l counts. It checks the framing
// only (forest.Compact's checks come after).
func (tab *table) compact(nodes int64, l layout) (*forest.Compact, error) {
	split, value := tab.cols[0].i32, tab.cols[1].f32
	if nodes > int64(tab.rows) {
		return nil, fmt.Errorf("%s is %d but the table has %d rows", keyNodes, nodes, tab.rows)
	}
	n := int(nodes)
	cp := &forest.Compact{Split: split[:n:n], Value: value[:n:n], Leaves: l.LeafLists}
	lists := l.LeafLists + l.AtomLists
	if lists > tab.rows-n {
		return nil, fmt.Errorf("%s names %d lists, more than the %d rows after the nodes", keyLayout, lists, tab.rows-n)
	}
	cp.Off = make([]int32, 1, lists+1)
	r := n
	for range lists {
		if r >= tab.rows {
			return nil, fmt.Errorf("the table ends at row %d before list %d", r, len(cp.Off)-1)
		}
		e := int(split[r])
		if e < 1 || math.Float32bits(value[r]) != 0 || e > tab.rows-r-1 {
			return nil, fmt.Errorf("row %d: list %d of %d entries (value %v) does not fit the table", r, len(cp.Off)-1, e, value[r])
		}
		cp.Key = append(cp.Key, split[r+1:r+1+e]...)
		cp.Val = append(cp.Val, value[r+1:r+1+e]...)
		cp.Off = append(cp.Off, int32(len(cp.Key)))
		r += 1 + e
	}
	if r != tab.rows {
		return nil, fmt.Errorf("%d rows after the last list", tab.rows-r)
	}
	return cp, nil
}

// encodeCompact is Encode in format 5 (forest f already validated).
func (c codec) encodeCompact(w io.Writer, f *forest.Forest, meta Meta) (Meta, error) {
	tab, entries, err := compactParts(f, meta)
	if err != nil {
		return Meta{}, fmt.Errorf("model: cannot encode forest: %w", err)
	}
	d := canonicalDigest(entries, tab)
	if meta.Reference != nil { // its own section, outside the digest (reference.go)
		v, err := encodeReference(meta.Reference, f, d.id)
		if err != nil {
			return Meta{}, fmt.Errorf("model: cannot encode forest: %s: %w", keyReference, err)
		}
		entries = append(entries[:len(entries):len(entries)], metaEntry{keyReference, v})
	}
	meta.ID, err = c.writeDigested(w, tab, d, entries)
	if err != nil {
		return Meta{}, fmt.Errorf("model: %w", err)
	}
	return meta, nil
}

// compactParts is f's format-5 node table and metadata entries.
func compactParts(f *forest.Forest, meta Meta) (*table, []metaEntry, error) {
	cp, err := forest.ToCompact(f)
	if err != nil {
		return nil, nil, err
	}
	entries, err := encodeMeta(f, meta, len(cp.Split))
	if err != nil {
		return nil, nil, err
	}
	for i := range entries {
		if entries[i].key == KeyFormatVersion {
			// a section added after format 5 raises formatVersionFor
			// (doc.go, Extending the format)
			entries[i].value = strconv.Itoa(max(compactVersion, formatVersionFor(f)))
		}
	}
	lb, err := json.Marshal(layout{LeafLists: cp.Leaves, AtomLists: len(cp.Off) - 1 - cp.Leaves})
	if err != nil {
		return nil, nil, err
	}
	return compactTable(cp), append(entries, metaEntry{keyLayout, string(lb)}), nil
}

// decodeCompact finishes decoding a format-5 table whose checksum and
// metadata are read: the lists framed (table.compact), then either the
// header compiled straight from the nodes (forest.CompileCompact, its one
// validation), or, without compile or for a drf forest, the trees
// rebuilt and the forest validated (forest.Validate).
func decodeCompact(tab *table, st *decodeState, compile bool) (*forest.Forest, *forest.Compiled, Meta, error) {
	if st.layout == nil {
		return nil, nil, Meta{}, corrupt("missing %s", keyLayout)
	}
	cp, err := tab.compact(st.nodes, *st.layout)
	if err != nil {
		return nil, nil, Meta{}, corrupt("%v", err)
	}
	if compile && st.f.Kind != forest.KindDRF {
		comp, err := forest.CompileCompact(st.f, cp)
		if err != nil {
			return nil, nil, Meta{}, wrapCorrupt(err)
		}
		if int64(comp.NumTrees()) != st.trees {
			return nil, nil, Meta{}, corrupt("node table has %d trees but %s is %d", comp.NumTrees(), keyTrees, st.trees)
		}
		return st.f, comp, st.meta, nil
	}
	trees, err := cp.Trees(st.f)
	if err != nil {
		return nil, nil, Meta{}, wrapCorrupt(err)
	}
	if int64(len(trees)) != st.trees {
		return nil, nil, Meta{}, corrupt("node table has %d trees but %s is %d", len(trees), keyTrees, st.trees)
	}
	st.f.Trees = trees
	if err := st.f.Validate(); err != nil {
		return nil, nil, Meta{}, wrapCorrupt(err)
	}
	return st.f, nil, st.meta, nil
}

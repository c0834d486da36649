package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

func fuzzSeeds(f *testing.F) {
	add := func(c codec, fo *forest.Forest, m Meta) {
		b, _, err := c.EncodeBytes(fo, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	add(codec{}, classForest(), Meta{Version: 1, CreatedBy: "fuzz"})
	add(codec{MaxBatchRows: 2}, classForest(), Meta{})
	add(codec{MaxBatchRows: 3}, regForest(), Meta{Version: 5})
	add(codec{MaxBatchRows: 16}, randomForest(1, 3, 21, 5, 3, 4), Meta{})
	add(codec{}, mappedForest(), Meta{Version: 2})
	add(codec{MaxBatchRows: 2}, multiForest(), Meta{Version: 3})
	add(codec{}, classForest(), Meta{Version: 4, Reference: testReference(classForest(), 7)}) // reference.go
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte("ARROW1\x00\x00"))
	// the shapes of issue 35 (validate_test.go): a ladder of shared
	// children, leaves that are no distribution, names twice, versions
	// out of range, classes no leaf names
	noEdit := func(*table, map[string]string) {}
	leafValue := func(v float64) func(*table, map[string]string) {
		return func(tab *table, _ map[string]string) { tab.cols[colIndex(f, "leaf_value")].f64[0] = v }
	}
	meta := func(key, v string) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) { md[key] = v }
	}
	f.Add(craft(f, ladderForest(50), noEdit))
	for _, e := range []func(*table, map[string]string){
		leafValue(math.NaN()), leafValue(math.Inf(1)), leafValue(-1e30),
		meta(keyFeatures, `["x0","colour","x0","x3"]`), meta(keyClasses, `["a","b","a"]`),
		meta(keyModelVersion, "-1"), meta(keyModelVersion, "9223372036854775807"), meta(keyModelVersion, "4611686018427387904"),
		meta(keyClasses, manyClasses(f, 4+forest.MaxUnnamedClasses)),
	} {
		f.Add(craft(f, classForest(), e))
	}
}

// FuzzDecode: Decode never panics, never leaks Arrow memory, allocates
// within a constant factor of its input, fails only with a sentinel error
// on one line (an input error), and a model it accepts is safe to
// traverse and survives re-encoding: decode(encode(g)) equals g with a
// stable ID. (The re-encoded ID may differ from the input's: a model
// written before forest.Params gained a field decodes fine and re-encodes
// with that field present — testdata/fuzz/FuzzDecode/2277ed8bf92c60c4 is
// such a model, found by the fuzzer.)
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(checkDecodeBytes)
}

// checkDecodeBytes is FuzzDecode's property for one input: no panic, no
// leaked Arrow memory, a one-line sentinel error, or a model that is safe
// to traverse and survives re-encoding unchanged.
func checkDecodeBytes(t *testing.T, data []byte) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	g, m, err := codec{Allocator: mem}.DecodeBytes(data)
	runtime.ReadMemStats(&ms)
	// memory bound: what Decode allocates (Go and Arrow alike) is a
	// constant factor of the input, whatever it claims
	if got, bound := ms.TotalAlloc-before, uint64(64*len(data)+8<<20); got > bound {
		t.Fatalf("decoding %d bytes allocated %d, over %d", len(data), got, bound)
	}
	mem.AssertSize(t, 0)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("error without sentinel: %v", err)
		}
		checkOneLine(t, err)
		return
	}
	walkAll(t, g)
	gh, comp, _, err := DecodeCompiled(data)
	if err != nil && !strings.Contains(err.Error(), "not in preorder") { // a format-4 tree Compile cannot lay out
		t.Fatalf("Decode accepts what DecodeCompiled refuses: %v", err)
	}
	if comp != nil {
		scoreRows(t, gh, comp)
	}
	b2, m2, err := EncodeBytes(g, m)
	if err != nil {
		t.Fatalf("decoded model does not re-encode: %v", err)
	}
	g3, m3, err := DecodeBytes(b2)
	if err != nil {
		t.Fatalf("re-encoded model does not decode: %v", err)
	}
	if !sameMeta(m3, m2) || !sameForest(g3, g) {
		t.Fatal("re-encoding changes the model")
	}
}

// FuzzStructure edits the node table of a valid model with arbitrary
// values and re-checksums it, so that the structural checks (which random
// bytes never reach past the checksum) are fuzzed: Decode must reject the
// result with ErrCorrupt or return a forest that is safe to traverse.
func FuzzStructure(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0, 99, 0, 0, 0})
	f.Add([]byte{7, 2, 0, 4, 0, 0, 0, 9, 1, 0, 0, 0, 0, 0})
	f.Add([]byte{10, 3, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, edits []byte) {
		fo := classForest()
		if len(edits) > 0 && edits[0]&0x80 != 0 {
			fo = regForest()
		}
		b := craft(t, fo, func(tab *table, _ map[string]string) { applyEdits(tab, edits) })
		g, _, err := DecodeBytes(b)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error without sentinel: %v", err)
			}
			checkOneLine(t, err)
			return
		}
		walkAll(t, g)
	})
}

// applyEdits interprets edits as 7-byte records (column, row, value u32):
// scalar columns get the value; list columns get it as an element value
// (even row byte) or move one row boundary (odd), keeping offsets
// monotone so the stream itself stays well formed.
func applyEdits(tab *table, edits []byte) {
	for ; len(edits) >= 7; edits = edits[7:] {
		ci := int(edits[0]) % len(nodeColumns)
		k := nodeColumns[ci].kind
		tc := &tab.cols[ci]
		v := binary.LittleEndian.Uint32(edits[3:])
		r := int(edits[1])
		if k.isList() && edits[2]&1 == 1 {
			i := 1 + r%tab.rows // an inner boundary 1..rows-1, or the end
			if i >= tab.rows {
				continue
			}
			tc.off[i] = min(max(int64(v)%(tc.off[tab.rows]+1), tc.off[i-1]), tc.off[i+1])
			continue
		}
		n := tc.len(k)
		if n == 0 {
			continue
		}
		r %= n
		switch k.elem() {
		case kInt32:
			tc.i32[r] = int32(v)
		case kFloat32:
			tc.f32[r] = math.Float32frombits(v)
		case kFloat64:
			tc.f64[r] = float64(int32(v))
		case kBool:
			tc.b[r] = v&1 == 1
		}
	}
}

// walkAll routes a few synthetic rows through every tree the way scoring
// does, touching every index the model stores; an invalid model that got
// through would panic here.
func walkAll(t *testing.T, f *forest.Forest) {
	p, k := len(f.Features), len(f.Classes)
	for _, x := range [][]float32{make([]float32, p), nanRow(p)} {
		for _, tr := range f.Trees {
			i := int32(0)
			for steps := 0; tr.Left[i] >= 0; steps++ {
				if steps > tr.NumNodes() {
					t.Fatal("traversal does not terminate")
				}
				var s float32
				for e := tr.AtomStart[i]; e < tr.AtomStart[i+1]; e++ {
					s += x[tr.AtomFeature[e]] * tr.AtomWeight[e]
				}
				left := s <= tr.Threshold[i]
				if s != s {
					left = tr.MissingLeft[i]
				}
				if left {
					i = tr.Left[i]
				} else {
					i = tr.Right[i]
				}
			}
			for e := tr.LeafStart[i]; e < tr.LeafStart[i+1]; e++ {
				_ = tr.LeafValue[e]
				if k > 0 && int(tr.LeafClass[e]) >= k {
					t.Fatal("class out of range")
				}
			}
		}
	}
	for _, v := range f.Importances {
		if len(v) != p {
			t.Fatal("importances length")
		}
	}
}

func nanRow(p int) []float32 {
	x := make([]float32, p)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}

// craft5 is craft for format 5: f's compact node table (compactTable)
// and metadata, edited, re-checksummed and written in batches of 3 rows.
func craft5(t testing.TB, f *forest.Forest, edit func(tab *table, md map[string]string)) []byte {
	t.Helper()
	cp, err := forest.ToCompact(f)
	if err != nil {
		t.Fatal(err)
	}
	tab := compactTable(cp)
	entries, err := encodeMeta(f, Meta{}, len(cp.Split))
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{keyLayout: fmt.Sprintf(`{"leaf_lists":%d,"atom_lists":%d}`, cp.Leaves, len(cp.Off)-1-cp.Leaves)}
	for _, e := range entries {
		md[e.key] = e.value
	}
	md[KeyFormatVersion] = "5"
	edit(tab, md)
	entries = entries[:0]
	for _, k := range metaKeys {
		if v, ok := md[k.key]; ok {
			entries = append(entries, metaEntry{k.key, v})
			delete(md, k.key)
		}
	}
	for k, v := range md {
		entries = append(entries, metaEntry{k, v})
	}
	var buf bytes.Buffer
	if _, err := (codec{MaxBatchRows: 3}).write(&buf, tab, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzCompact edits the format-5 node table of a valid model (7-byte
// records: column, row, row high bits, value u32) and its layout counts
// and re-checksums it, so that the checks behind the checksum are fuzzed:
// both Decode and DecodeCompiled must reject the result with a one-line
// sentinel error or return a model that is safe to score, and they must
// agree on which.
func FuzzCompact(f *testing.F) {
	f.Add([]byte{}, int8(0), int8(0))
	f.Add([]byte{0, 2, 0, 0xff, 0xff, 0xff, 0xff}, int8(0), int8(0))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0x80}, int8(1), int8(0))
	f.Add([]byte{1, 3, 0, 0, 0, 0xc0, 0x7f}, int8(0), int8(-1))
	f.Add([]byte{0x80, 9, 0, 5, 0, 0, 0}, int8(0), int8(0))
	f.Add([]byte{0x40, 4, 0, 1, 0, 0, 0xc0}, int8(0), int8(1))
	f.Fuzz(func(t *testing.T, edits []byte, dLeaf, dAtom int8) {
		var fo *forest.Forest
		switch {
		case len(edits) > 0 && edits[0]&0x80 != 0:
			fo = multiForest()
		case len(edits) > 0 && edits[0]&0x40 != 0:
			fo = randomForest(2, 2, 9, 4, 3, 3)
		default:
			fo = classForest()
		}
		b := craft5(t, fo, func(tab *table, md map[string]string) {
			var l layout
			if err := json.Unmarshal([]byte(md[keyLayout]), &l); err != nil {
				t.Fatal(err)
			}
			l.LeafLists += int(dLeaf)
			l.AtomLists += int(dAtom)
			md[keyLayout] = fmt.Sprintf(`{"leaf_lists":%d,"atom_lists":%d}`, l.LeafLists, l.AtomLists)
			for e := edits; len(e) >= 7; e = e[7:] {
				r := (int(e[1]) | int(e[2])<<8) % tab.rows
				v := binary.LittleEndian.Uint32(e[3:])
				if e[0]&1 == 0 {
					tab.cols[0].i32[r] = int32(v)
				} else {
					tab.cols[1].f32[r] = math.Float32frombits(v)
				}
			}
		})
		g, _, err := DecodeBytes(b)
		gh, comp, _, cerr := DecodeCompiled(b)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("Decode: %v; DecodeCompiled: %v", err, cerr)
		}
		if err != nil {
			for _, e := range []error{err, cerr} {
				if !isSentinel(e) {
					t.Fatalf("error without sentinel: %v", e)
				}
				checkOneLine(t, e)
			}
			return
		}
		walkAll(t, g)
		scoreRows(t, gh, comp)
	})
}

// scoreRows scores a row of zeros and a row of NaN with a compiled model:
// an invalid model that got through would panic or loop here.
func scoreRows(t *testing.T, f *forest.Forest, c *forest.Compiled) {
	p := len(f.Features)
	fr := &frame.Frame{NRows: 2}
	for j := 0; j < p; j++ {
		fr.Names = append(fr.Names, f.Features[j])
		fr.Cols = append(fr.Cols, []float32{0, float32(math.NaN())})
	}
	if _, err := c.Predict(fr, 1); err != nil {
		t.Fatal(err)
	}
}

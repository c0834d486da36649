package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

var hexID = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestRoundTrip(t *testing.T) {
	for name, f := range map[string]*forest.Forest{
		"classification": classForest(),
		"regression":     regForest(),
		"multi-output":   multiForest(),
		"random-class":   randomForest(3, 7, 41, 9, 4, 5),
		"random-reg":     randomForest(4, 5, 33, 3, 0, 2),
	} {
		t.Run(name, func(t *testing.T) {
			_, c := newChecked(t)
			in := Meta{Version: 42, CreatedBy: "forestd test", ID: "ignored"}
			b, m, err := c.EncodeBytes(f, in)
			if err != nil {
				t.Fatal(err)
			}
			if !hexID.MatchString(m.ID) || m.Version != 42 || m.CreatedBy != "forestd test" {
				t.Fatalf("encode meta = %+v", m)
			}
			g, gm, err := c.DecodeBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			if gm != m {
				t.Errorf("decoded meta %+v, want %+v", gm, m)
			}
			if !sameForest(g, f) {
				t.Errorf("decoded forest differs:\n got %+v\nwant %+v", g, f)
				for i := range f.Trees {
					if !reflect.DeepEqual(g.Trees[i], f.Trees[i]) {
						t.Errorf("tree %d:\n got %+v\nwant %+v", i, g.Trees[i], f.Trees[i])
					}
				}
			}
			// Decoded slices must not share spare capacity with the next tree.
			for _, tr := range g.Trees {
				if cap(tr.Left) != len(tr.Left) || cap(tr.AtomFeature) != len(tr.AtomFeature) {
					t.Fatal("decoded slices have spare capacity into shared memory")
				}
			}
		})
	}
}

func TestRoundTripNonFinite(t *testing.T) {
	_, c := newChecked(t)
	f := classForest()
	f.OOB = &forest.OOB{Rows: 3, Error: 0, Strength: math.Inf(1), Correlation: math.NaN(), R2: math.Inf(-1)}
	f.Importances = map[string][]float64{"permutation": {math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}}
	f.Params.SampleFraction = math.NaN()
	b, _ := mustEncode(t, c, f, Meta{})
	g, _, err := c.DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(g.Params.SampleFraction) {
		t.Errorf("SampleFraction = %v, want NaN", g.Params.SampleFraction)
	}
	g.Params.SampleFraction, f.Params.SampleFraction = 0, 0
	if !sameForest(g, f) {
		t.Errorf("got OOB %+v importances %v, want %+v %v", g.OOB, g.Importances, f.OOB, f.Importances)
	}
	if !math.Signbit(g.Importances["permutation"][3]) {
		t.Error("-0 importance lost its sign")
	}
}

func TestThreadsNotStored(t *testing.T) {
	f := regForest()
	b1, m1, _ := EncodeBytes(f, Meta{})
	f.Params.Threads = 16
	b2, m2, _ := EncodeBytes(f, Meta{})
	if !bytes.Equal(b1, b2) || m1.ID != m2.ID {
		t.Fatal("Params.Threads changes the encoding")
	}
	g, _, err := DecodeBytes(b2)
	if err != nil || g.Params.Threads != 0 {
		t.Fatalf("decode: %v, threads %d", err, g.Params.Threads)
	}
}

func TestDeterministic(t *testing.T) {
	f := randomForest(9, 10, 101, 6, 3, 3)
	b1, m1, err := EncodeBytes(f, Meta{Version: 1, CreatedBy: "x"})
	if err != nil {
		t.Fatal(err)
	}
	b2, m2, _ := EncodeBytes(randomForest(9, 10, 101, 6, 3, 3), Meta{Version: 1, CreatedBy: "x"})
	if !bytes.Equal(b1, b2) || m1 != m2 {
		t.Fatal("encoding the same forest twice gives different bytes")
	}
	// Batching changes the bytes but not the content hash.
	small := codec{MaxBatchRows: 7}
	b3, m3, err := small.EncodeBytes(f, Meta{Version: 1, CreatedBy: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(b1, b3) || m3.ID != m1.ID {
		t.Fatalf("batching: same bytes %v, ids %s vs %s", bytes.Equal(b1, b3), m3.ID, m1.ID)
	}
	if n, rows := countBatches(t, b3), tableRows(t, f); n != (rows+6)/7 {
		t.Errorf("%d batches with MaxBatchRows 7, want %d", n, (rows+6)/7)
	}
	g, gm, err := DecodeBytes(b3)
	if err != nil || gm.ID != m1.ID || !sameForest(g, f) {
		t.Fatalf("small batches do not round trip: %v", err)
	}
	// The ID depends on the version and on every value.
	_, m4, _ := EncodeBytes(f, Meta{Version: 2, CreatedBy: "x"})
	f.Trees[3].LeafValue[0] = math.Nextafter(f.Trees[3].LeafValue[0], 2)
	_, m5, _ := EncodeBytes(f, Meta{Version: 1, CreatedBy: "x"})
	if m4.ID == m1.ID || m5.ID == m1.ID {
		t.Fatal("model ID ignores content")
	}
}

func countBatches(t *testing.T, b []byte) int {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	n := 0
	for r.Next() {
		n++
	}
	return n
}

// TestBatchBytes checks that every record-batch message stays within
// MaxBatchBytes, for the default and for small bounds, on a forest with
// wide oblique atoms.
func TestBatchBytes(t *testing.T) {
	f := randomForest(5, 20, 2001, 50, 10, 40)
	for _, max := range []int{0, 16 << 10, 100 << 10} {
		c := codec{MaxBatchBytes: max}
		b, _ := mustEncode(t, c, f, Meta{})
		limit := max
		if limit == 0 {
			limit = defaultMaxBatchBytes
		}
		sizes := messageSizes(t, b)
		for i, s := range sizes[1:] { // sizes[0] is the schema
			if s > limit {
				t.Errorf("max %d: batch %d is %d bytes", max, i, s)
			}
		}
		if len(sizes) < 3 {
			t.Errorf("max %d: only %d messages", max, len(sizes))
		}
		if _, _, err := DecodeBytes(b); err != nil {
			t.Fatal(err)
		}
	}
}

// messageSizes returns the framed size of each IPC message (continuation,
// length, metadata, body) of a stream.
func messageSizes(t *testing.T, b []byte) []int {
	t.Helper()
	mr := &msgReader{r: bytes.NewReader(b), refs: 1}
	defer mr.Release()
	var sizes []int
	for {
		before := mr.read
		_, err := mr.Message()
		if err != nil {
			if !mr.eos {
				t.Fatal(err)
			}
			return sizes
		}
		sizes = append(sizes, int(mr.read-before))
	}
}

// TestTruncated decodes every strict prefix of a model.
func TestTruncated(t *testing.T) {
	_, c := newChecked(t)
	b, _ := mustEncode(t, codec{MaxBatchRows: 4}, classForest(), Meta{})
	boundaries := 0
	for n := 0; n < len(b); n++ {
		_, _, err := c.DecodeBytes(b[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix of %d/%d bytes: %v, want ErrTruncated", n, len(b), err)
		}
		checkOneLine(t, err)
		if strings.Contains(err.Error(), "without an end-of-stream marker") {
			boundaries++
		}
	}
	// Schema + batches of 4 rows: the prefixes ending after the schema
	// and after each batch but the last end exactly at a message boundary.
	if want := 1 + (tableRows(t, classForest())+3)/4 - 1 + 1; boundaries != want {
		t.Errorf("%d prefixes ended at a message boundary, want %d", boundaries, want)
	}
	_, _, err := c.DecodeBytes(nil)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "empty input") {
		t.Errorf("empty input: %v", err)
	}
}

// TestByteFlips flips every byte of a small model (xor 0xff, then xor
// 0x01). The contract:
//
//  1. Decode never panics, and either fails with one of the sentinel
//     errors (on one line) or returns a forest and meta deep-equal to the
//     original.
//  2. A flip in any byte that holds model content always fails: every
//     schema metadata key and value, and every value, offset and bitmap
//     buffer of every record batch (protectedRanges).
//
// The flips that decode to the identical model land in bytes that carry
// no model value: the zero padding after each Arrow buffer and after each
// flatbuffer, and flatbuffer bytes the reader ignores or that cannot change
// a value (the offset of an empty validity buffer, vtable inline sizes,
// field nullability flags, the element name "item" of list types). For the
// model used here that is 850 of 4456 bytes for xor 0xff, all outside the
// protected ranges.
func TestByteFlips(t *testing.T) {
	_, c := newChecked(t)
	f := classForest()
	b, m := mustEncode(t, codec{MaxBatchRows: 6}, f, Meta{Version: 3, CreatedBy: "flip"})
	protected := protectedRanges(t, b)
	var benign []int
	for _, mask := range []byte{0xff, 0x01} {
		for i := range b {
			bad := bytes.Clone(b)
			bad[i] ^= mask
			g, gm, err := c.DecodeBytes(bad)
			if err != nil {
				if !isSentinel(err) {
					t.Fatalf("flip %#x at %d: error without sentinel: %v", mask, i, err)
				}
				checkOneLine(t, err)
				continue
			}
			if gm != m || !sameForest(g, f) {
				t.Fatalf("flip %#x at %d decoded to a different model", mask, i)
			}
			if protected(i) {
				t.Fatalf("flip %#x at %d inside a value was not detected", mask, i)
			}
			if mask == 0xff {
				benign = append(benign, i)
			}
		}
	}
	t.Logf("%d bytes; %d flips (xor 0xff) decode to the identical model (padding / unread flatbuffer bytes)", len(b), len(benign))
}

// protectedRanges returns a predicate over byte offsets that is true for
// the bytes holding model values: the bytes of every schema metadata key
// and value, and every value, offset and bitmap buffer of every record
// batch. Buffer positions are computed from the IPC layout (each buffer
// padded to 8 bytes, in depth-first column order, empty validity buffers)
// and verified against the decoded arrays, so a wrong assumption fails the
// test rather than weakening it.
func protectedRanges(t *testing.T, b []byte) func(int) bool {
	t.Helper()
	var ranges [][2]int
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	starts := []int{0}
	for _, s := range messageSizes(t, b) {
		starts = append(starts, starts[len(starts)-1]+s)
	}
	// Schema strings, located as flatbuffer strings (length prefix) inside
	// the schema message.
	schemaMsg := b[:starts[1]]
	md := r.Schema().Metadata()
	strs := map[string]int{} // string → times it appears as a key or value
	for i, k := range md.Keys() {
		strs[k]++
		strs[md.Values()[i]]++
	}
	for s, n := range strs {
		needle := binary.LittleEndian.AppendUint32(nil, uint32(len(s)))
		needle = append(needle, s...)
		found := 0
		for at := 0; ; at++ {
			i := bytes.Index(schemaMsg[at:], needle)
			if i < 0 {
				break
			}
			at += i
			ranges = append(ranges, [2]int{at + 4, at + 4 + len(s)})
			found++
		}
		if found != n {
			t.Fatalf("metadata string %q found %d times, want %d", s, found, n)
		}
	}
	batch := 1
	for r.Next() {
		rec := r.Record()
		s := starts[batch]
		pos := s + 8 + int(binary.LittleEndian.Uint32(b[s+4:]))
		buf := func(want []byte) {
			if !bytes.Equal(b[pos:pos+len(want)], want) {
				t.Fatalf("batch %d: buffer not at byte %d", batch, pos)
			}
			ranges = append(ranges, [2]int{pos, pos + len(want)})
			pos += (len(want) + 7) &^ 7
		}
		for ci := range int(rec.NumCols()) {
			d := rec.Column(ci).Data()
			v := buffer(d, 1)
			if d.DataType().ID() == arrow.BOOL {
				v = v[:(d.Len()+7)/8]
			}
			buf(v)
			if len(d.Children()) == 1 {
				buf(buffer(d.Children()[0], 1))
			}
		}
		batch++
	}
	return func(i int) bool {
		for _, rg := range ranges {
			if i >= rg[0] && i < rg[1] {
				return true
			}
		}
		return false
	}
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrNotModel, ErrTruncated, ErrChecksum, ErrFutureVersion, ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func checkOneLine(t testing.TB, err error) {
	t.Helper()
	if strings.Contains(err.Error(), internalPanic) {
		t.Fatalf("decoder panicked: %v", err)
	}
	if strings.ContainsAny(err.Error(), "\r\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

// craft encodes f after letting edit change the table and the metadata;
// the checksum and ID are computed over the edited content, so only the
// structural checks can reject it.
func craft(t testing.TB, f *forest.Forest, edit func(tab *table, md map[string]string)) []byte {
	t.Helper()
	tab, err := flatten(f)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := encodeMeta(f, Meta{}, tab.rows)
	if err != nil {
		t.Fatal(err)
	}
	md := map[string]string{}
	for _, e := range entries {
		md[e.key] = e.value
	}
	edit(tab, md)
	entries = entries[:0]
	for _, k := range metaKeys {
		if v, ok := md[k.key]; ok {
			entries = append(entries, metaEntry{k.key, v})
			delete(md, k.key)
		}
	}
	for k, v := range md { // keys unknown to metaKeys
		entries = append(entries, metaEntry{k, v})
	}
	var buf bytes.Buffer
	if _, err := (codec{MaxBatchRows: 3}).write(&buf, tab, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFutureVersion(t *testing.T) {
	next := strconv.Itoa(FormatVersion + 1)
	b := craft(t, classForest(), func(_ *table, md map[string]string) {
		md[KeyFormatVersion] = next
		md["forestd.something_new"] = "x"
	})
	_, _, err := DecodeBytes(b)
	if !errors.Is(err, ErrFutureVersion) {
		t.Fatalf("got %v", err)
	}
	want := fmt.Sprintf("model format version %s is newer than this forestd supports (%d); upgrade forestd", next, FormatVersion)
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

// TestFormatVersionIsTheLowestThatHolds: Encode writes format 5 (the
// compact node table); the node table of formats 1–4 (encodeFormat4)
// stamps a forest without version-2 content as version 1 (old readers
// keep reading it), one with a mapping, derived inputs or dRF backscoring
// selection as 2, and a stream that claims 1 for such content is
// rejected.
func TestFormatVersionIsTheLowestThatHolds(t *testing.T) {
	f := classForest()
	b, _, err := EncodeBytes(f, Meta{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := metadata(t, b)[KeyFormatVersion]; v != "5" {
		t.Fatalf("Encode wrote format version %s, want 5", v)
	}
	var old bytes.Buffer
	if _, err := (codec{}).encodeFormat4(&old, f, Meta{Version: 1}); err != nil {
		t.Fatal(err)
	}
	if v := metadata(t, old.Bytes())[KeyFormatVersion]; v != "1" {
		t.Fatalf("plain forest written as format version %s, want 1", v)
	}
	if formatVersionFor(f) != 1 {
		t.Fatal("plain forest needs version 1")
	}
	for name, g := range map[string]*forest.Forest{"derived": derivedForest(), "mapping": mappedForest()} {
		if formatVersionFor(g) != 2 {
			t.Fatalf("a forest with %s needs version 2", name)
		}
		if _, _, err := DecodeBytes(craft(t, g, func(*table, map[string]string) {})); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, _, err := DecodeBytes(craft(t, g, func(_ *table, md map[string]string) { md[KeyFormatVersion] = "1" }))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "needs version 2") {
			t.Fatalf("%s claimed as version 1: got %v", name, err)
		}
	}
	f.DRF = &forest.DRF{SelectedBy: "loo"}
	if formatVersionFor(f) != 2 {
		t.Fatal("a dRF forest with selected backscoring needs version 2")
	}
	m := multiForest()
	if formatVersionFor(m) != 3 {
		t.Fatal("a multi-output forest needs version 3")
	}
	if formatVersionFor(regForest()) != 1 {
		t.Fatal("a single-output regression forest needs version 1")
	}
	_, _, err = DecodeBytes(craft(t, m, func(_ *table, md map[string]string) { md[KeyFormatVersion] = "2" }))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "needs version 3") {
		t.Fatalf("multi-output forest claimed as version 2: got %v", err)
	}
}

// TestMultiOutputCorrupt: crafted multi-output models with a valid
// checksum but inconsistent targets fail with ErrCorrupt and say why.
func TestMultiOutputCorrupt(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*table, map[string]string)
		want string
	}{
		"one target":       {func(_ *table, md map[string]string) { md[keyTargets] = `["y0"]` }, "two or more"},
		"repeated target":  {func(_ *table, md map[string]string) { md[keyTargets] = `["a","a","b"]` }, "repeated"},
		"null targets":     {func(_ *table, md map[string]string) { md[keyTargets] = `null` }, "not a JSON array"},
		"not JSON":         {func(_ *table, md map[string]string) { md[keyTargets] = `[y0` }, keyTargets},
		"too few values":   {func(_ *table, md map[string]string) { md[keyTargets] = `["a","b"]` }, "value entries"},
		"classes too":      {func(_ *table, md map[string]string) { md[keyClasses] = `["a","b"]` }, "classes"},
		"targets on class": {nil, "targets"},
	} {
		t.Run(name, func(t *testing.T) {
			var b []byte
			if c.edit == nil {
				f := classForest()
				b = craft(t, f, func(_ *table, md map[string]string) { md[keyTargets] = `["a","b"]`; md[KeyFormatVersion] = "3" })
			} else {
				b = craft(t, multiForest(), c.edit)
			}
			_, _, err := DecodeBytes(b)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrCorrupt mentioning %q", err, c.want)
			}
		})
	}
}

// TestCraftedStructure feeds models whose checksum is valid but whose
// content is nonsense; each must fail with ErrCorrupt, never panic.
func TestCraftedStructure(t *testing.T) {
	col := func(name string) int {
		for i, c := range nodeColumns {
			if c.name == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	cases := map[string]func(tab *table, md map[string]string){
		"child out of range":   func(tab *table, _ map[string]string) { tab.cols[col("left")].i32[0] = 99 },
		"child is parent":      func(tab *table, _ map[string]string) { tab.cols[col("right")].i32[2] = 2 },
		"negative child cycle": func(tab *table, _ map[string]string) { tab.cols[col("left")].i32[2] = 0 },
		"feature out of range": func(tab *table, _ map[string]string) { tab.cols[col("atom_feature")].i32[2] = 4 },
		"negative feature":     func(tab *table, _ map[string]string) { tab.cols[col("atom_feature")].i32[0] = -1 },
		"class out of range":   func(tab *table, _ map[string]string) { tab.cols[col("leaf_class")].i32[1] = 3 },
		"node ids":             func(tab *table, _ map[string]string) { tab.cols[col("node")].i32[1] = 0 },
		"tree ids jump":        func(tab *table, _ map[string]string) { tab.cols[col("tree")].i32[5] = 2 },
		"tree ids start":       func(tab *table, _ map[string]string) { tab.cols[col("tree")].i32[0] = 1 },
		"weights vs features": func(tab *table, _ map[string]string) {
			// Node 0 loses its weight, node 1 (a leaf) gets it.
			tab.cols[col("atom_weight")].off[1] = 0
		},
		"leaf without value": func(tab *table, _ map[string]string) {
			for _, name := range []string{"leaf_class", "leaf_value"} {
				c := &tab.cols[col(name)]
				c.off[2] = 0 // node 1 empty, node 2 (internal) holds two entries
			}
		},
		"trees count":         func(_ *table, md map[string]string) { md[keyTrees] = "4" },
		"nodes count":         func(_ *table, md map[string]string) { md[keyNodes] = "8" },
		"nodes not a number":  func(_ *table, md map[string]string) { md[keyNodes] = "many" },
		"levels length":       func(_ *table, md map[string]string) { md[keyLevels] = `[null]` },
		"importance length":   func(_ *table, md map[string]string) { md[keyImportances] = `{"impurity":[1,2]}` },
		"importance null":     func(_ *table, md map[string]string) { md[keyImportances] = `{"impurity":[1,null,3,4]}` },
		"importances not obj": func(_ *table, md map[string]string) { md[keyImportances] = `null` },
		"features not json":   func(_ *table, md map[string]string) { md[keyFeatures] = `["a",` },
		"fewer features":      func(_ *table, md map[string]string) { md[keyFeatures] = `["a"]` },
		"no classes":          func(_ *table, md map[string]string) { md[keyClasses] = `null` },
		"two classes":         func(_ *table, md map[string]string) { md[keyClasses] = `["a","b"]` },
		"regression classes":  func(_ *table, md map[string]string) { md[keyTask] = "regression" },
		"unknown task":        func(_ *table, md map[string]string) { md[keyTask] = "auto" },
		"empty kind":          func(_ *table, md map[string]string) { md[keyKind] = "" },
		"unknown kind":        func(_ *table, md map[string]string) { md[keyKind] = "xgboost" },
		"params not object":   func(_ *table, md map[string]string) { md[keyParams] = `[]` },
		"params bad type":     func(_ *table, md map[string]string) { md[keyParams] = `{"trees":"x"}` },
		"oob bad":             func(_ *table, md map[string]string) { md[keyOOB] = `{"error":"NaNx"}` },
		"model version":       func(_ *table, md map[string]string) { md[keyModelVersion] = "1.5" },
		"unknown key":         func(_ *table, md map[string]string) { md["forestd.extra"] = "1" },
		"missing key":         func(_ *table, md map[string]string) { delete(md, keyLabel) },
		"version zero":        func(_ *table, md map[string]string) { md[KeyFormatVersion] = "0" },
		"version text":        func(_ *table, md map[string]string) { md[KeyFormatVersion] = "one" },
		"bad utf8":            func(_ *table, md map[string]string) { md[keyLabel] = "\xff" },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			_, c := newChecked(t)
			b := craft(t, classForest(), edit)
			_, _, err := c.DecodeBytes(b)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			checkOneLine(t, err)
			t.Log(err)
		})
	}
	// A regression table given leaf classes.
	b := craft(t, regForest(), func(tab *table, _ map[string]string) {
		c := &tab.cols[col("leaf_class")]
		c.i32 = []int32{0, 0, 0}
		c.off = []int64{0, 0, 1, 2, 3}
	})
	if _, _, err := DecodeBytes(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("regression with classes: %v", err)
	}
	// Sanity: an unedited craft decodes.
	if _, _, err := DecodeBytes(craft(t, classForest(), func(*table, map[string]string) {})); err != nil {
		t.Fatal(err)
	}
}

func TestNotModel(t *testing.T) {
	// An ordinary Arrow stream.
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	bld.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := bld.NewRecord()
	var stream bytes.Buffer
	w := ipc.NewWriter(&stream, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fh, err := os.Create(filepath.Join(t.TempDir(), "x.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	fw, err := ipc.NewFileWriter(fh, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(rec)
	fw.Close()
	fh.Close()
	file, _ := os.ReadFile(fh.Name())
	rec.Release()
	bld.Release()

	wrongFormat := craft(t, regForest(), func(_ *table, md map[string]string) { md[KeyFormat] = "other" })
	onlyEOS := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	for name, b := range map[string][]byte{
		"arrow stream": stream.Bytes(),
		"arrow file":   file,
		"json":         []byte(`{"forest":"rf"}`),
		"format":       wrongFormat,
		"only eos":     onlyEOS,
	} {
		_, _, err := DecodeBytes(b)
		if !errors.Is(err, ErrNotModel) {
			t.Errorf("%s: %v, want ErrNotModel", name, err)
			continue
		}
		checkOneLine(t, err)
	}
}

func TestTrailingData(t *testing.T) {
	b, m := mustEncode(t, codec{}, regForest(), Meta{})
	if _, _, err := DecodeBytes(append(bytes.Clone(b), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	// Decode stops at the end-of-stream marker: two models back to back.
	r := bytes.NewReader(append(bytes.Clone(b), b...))
	for i := 0; i < 2; i++ {
		_, gm, err := codec{}.Decode(r)
		if err != nil || gm.ID != m.ID {
			t.Fatalf("model %d: %v", i, err)
		}
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes left", r.Len())
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	cases := map[string]func(f *forest.Forest){
		"no trees":        func(f *forest.Forest) { f.Trees = nil },
		"nil tree":        func(f *forest.Forest) { f.Trees[1] = nil },
		"auto task":       func(f *forest.Forest) { f.Task = frame.TaskAuto },
		"no classes":      func(f *forest.Forest) { f.Classes = nil },
		"levels":          func(f *forest.Forest) { f.Levels = f.Levels[:2] },
		"importances":     func(f *forest.Forest) { f.Importances["impurity"] = []float64{1} },
		"feature index":   func(f *forest.Forest) { f.Features = f.Features[:3] },
		"bad utf8":        func(f *forest.Forest) { f.Features[0] = "\xff" },
		"empty kind":      func(f *forest.Forest) { f.Kind = "" },
		"bad offsets":     func(f *forest.Forest) { f.Trees[0].AtomStart[1] = 9 },
		"weights":         func(f *forest.Forest) { f.Trees[0].AtomWeight = f.Trees[0].AtomWeight[:3] },
		"missing offsets": func(f *forest.Forest) { f.Trees[0].LeafStart = nil },
		"class range":     func(f *forest.Forest) { f.Trees[0].LeafClass[0] = 7 },
	}
	for name, edit := range cases {
		f := classForest()
		edit(f)
		var buf bytes.Buffer
		if _, err := (codec{}).Encode(&buf, f, Meta{}); err == nil || buf.Len() != 0 {
			t.Errorf("%s: err %v, wrote %d bytes", name, err, buf.Len())
		}
	}
	if _, err := (codec{}).Encode(&bytes.Buffer{}, regForest(), Meta{CreatedBy: "\xfe"}); err == nil {
		t.Error("invalid UTF-8 created-by accepted")
	}
}

func TestWriteReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.arrows")
	f := classForest()
	m, err := WriteFile(path, f, Meta{Version: 5, CreatedBy: "forestd dev"})
	if err != nil {
		t.Fatal(err)
	}
	g, gm, err := ReadFile(path)
	if err != nil || gm != m || !sameForest(g, f) {
		t.Fatalf("read back: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-3], 0o644)
	if _, _, err := ReadFile(path); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Fatalf("truncated file: %v", err)
	}
	os.WriteFile(path, append(b, 1), 0o644)
	if _, _, err := ReadFile(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing data: %v", err)
	}
	if _, err := WriteFile(filepath.Join(dir, "no", "such", "dir"), f, Meta{}); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestFieldsCovered fails when tree.Tree or forest.Forest gains a field
// that the encoding does not carry: extend nodeColumns or metaKeys.
func TestFieldsCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range nodeColumns {
		for _, f := range c.fields {
			covered[f] = true
		}
	}
	tt := reflect.TypeOf(tree.Tree{})
	for i := 0; i < tt.NumField(); i++ {
		if name := tt.Field(i).Name; tt.Field(i).IsExported() && !covered[name] {
			t.Errorf("tree.Tree.%s is not in any node-table column (extend nodeColumns)", name)
		}
	}
	covered = map[string]bool{}
	for _, k := range metaKeys {
		for _, f := range k.fields {
			covered[f] = true
		}
	}
	ft := reflect.TypeOf(forest.Forest{})
	for i := 0; i < ft.NumField(); i++ {
		if name := ft.Field(i).Name; ft.Field(i).IsExported() && !covered[name] {
			t.Errorf("forest.Forest.%s is not in any metadata key (extend metaKeys)", name)
		}
	}
}

// TestStructJSONFields sets every field of Params and OOB via reflection
// and checks that they survive, so new fields are covered automatically.
func TestStructJSONFields(t *testing.T) {
	for _, v := range []any{&forest.Params{}, &forest.OOB{}} {
		rv := reflect.ValueOf(v).Elem()
		for i := 0; i < rv.NumField(); i++ {
			fv := rv.Field(i)
			if _, ok := jsonFieldName(rv.Type().Field(i)); !ok {
				continue
			}
			switch fv.Kind() {
			case reflect.Int, reflect.Int64:
				fv.SetInt(int64(i + 3))
			case reflect.Uint64:
				fv.SetUint(math.MaxUint64 - uint64(i))
			case reflect.Float64:
				fv.SetFloat(float64(i) + 0.1)
			case reflect.String:
				fv.SetString("s" + rv.Type().Field(i).Name)
			case reflect.Bool:
				fv.SetBool(true)
			default:
				t.Fatalf("%s.%s: kind %s not exercised", rv.Type(), rv.Type().Field(i).Name, fv.Kind())
			}
		}
		s, err := marshalStruct(rv.Interface())
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(rv.Type())
		if err := unmarshalStruct(s, back.Interface()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), rv.Interface()) {
			t.Errorf("%s does not survive: %s", rv.Type(), s)
		}
	}
}

// TestReadableByArrow reads a model with the plain Arrow reader, as any
// Arrow tool would.
func TestReadableByArrow(t *testing.T) {
	b, m := mustEncode(t, codec{}, classForest(), Meta{Version: 9})
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	md := r.Schema().Metadata()
	if v, _ := md.GetValue(keyModelID); v != m.ID {
		t.Errorf("model_id %q", v)
	}
	if v, _ := md.GetValue(keyChecksum); !regexp.MustCompile(`^crc32c:[0-9a-f]{8}$`).MatchString(v) {
		t.Errorf("checksum %q", v)
	}
	rows := 0
	for r.Next() {
		rows += int(r.Record().NumRows())
	}
	if want := tableRows(t, classForest()); rows != want {
		t.Errorf("%d rows, want %d", rows, want)
	}
}

package model

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// sameMeta compares two Metas, their reference samples by value.
func sameMeta(a, b Meta) bool {
	if a.ID != b.ID || a.Version != b.Version || a.CreatedBy != b.CreatedBy {
		return false
	}
	if (a.Reference == nil) != (b.Reference == nil) {
		return false
	}
	return a.Reference == nil || sameRecord(a.Reference, b.Reference)
}

// sameRecord compares records by value, NaN equal to NaN.
func sameRecord(a, b arrow.Record) bool {
	return array.RecordApproxEqual(a, b, array.WithNaNsEqual(true), array.WithAbsTolerance(0))
}

// testFrame is a frame of f's source columns: n rows, a missing value
// every 7th row, a categorical column where f has levels.
func testFrame(f *forest.Forest, n int) *frame.Frame {
	names, levels := f.SourceColumns()
	fr := &frame.Frame{Names: names, NRows: n, Levels: levels, Cols: make([][]float32, len(names))}
	for j := range names {
		c := make([]float32, n)
		for i := range c {
			switch {
			case i%7 == 3:
				c[i] = float32(math.NaN())
			case j < len(levels) && levels[j] != nil:
				c[i] = float32(i % len(levels[j]))
			default:
				c[i] = float32(i*(j+1)) / 10
			}
		}
		fr.Cols[j] = c
	}
	return fr
}

func testReference(f *forest.Forest, rows int) arrow.Record {
	return SampleReference(testFrame(f, 50), f, rows, 1)
}

// TestReferenceRoundTrip: a model with a reference sample decodes with
// the same sample (numbers, NaN, categories, nulls), has the same ID as
// without it, and a model without one decodes with none.
func TestReferenceRoundTrip(t *testing.T) {
	f := classForest()
	ref := SampleReference(testFrame(f, 50), f, 20, 3)
	if ref == nil || ref.NumRows() != 20 || ref.NumCols() != 4 {
		t.Fatalf("sample: %v", ref)
	}
	if ref.Column(1).DataType().ID() != arrow.STRING || ref.Column(1).NullN() == 0 {
		t.Fatalf("categorical column %s with %d nulls", ref.Column(1).DataType(), ref.Column(1).NullN())
	}
	b, m, err := EncodeBytes(f, Meta{Version: 2, Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	_, plain, err := EncodeBytes(f, Meta{Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != plain.ID {
		t.Fatalf("the reference changed the model ID: %s vs %s", m.ID, plain.ID)
	}
	_, got, err := DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reference == nil || !sameRecord(got.Reference, ref) {
		t.Fatalf("reference after decoding: %v, want %v", got.Reference, ref)
	}
	b2, _, _ := EncodeBytes(f, Meta{Version: 2})
	if _, got, err := DecodeBytes(b2); err != nil || got.Reference != nil {
		t.Fatalf("a model without a reference: %v, %v", got.Reference, err)
	}
}

// TestSampleReference: bounded, seeded (same seed, same rows; another
// seed, other rows), rows kept in frame order, only source columns.
func TestSampleReference(t *testing.T) {
	f := regForest()
	fr := testFrame(f, 1000)
	fr.Names = append(fr.Names, "not_a_feature")
	fr.Cols = append(fr.Cols, make([]float32, 1000))
	a := SampleReference(fr, f, 100, 1)
	b := SampleReference(fr, f, 100, 1)
	c := SampleReference(fr, f, 100, 2)
	if a.NumRows() != 100 || a.NumCols() != 2 || !sameRecord(a, b) || sameRecord(a, c) {
		t.Fatalf("rows %d cols %d, same seed equal %v, other seed equal %v", a.NumRows(), a.NumCols(), sameRecord(a, b), sameRecord(a, c))
	}
	col := a.Column(1).(*array.Float64) // b = i*2/10: increasing in the row
	prev := -1.0
	for i := range col.Len() {
		if v := col.Value(i); !math.IsNaN(v) {
			if v <= prev {
				t.Fatalf("rows out of order at %d", i)
			}
			prev = v
		}
	}
	if all := SampleReference(fr, f, 5000, 1); all.NumRows() != 1000 {
		t.Fatalf("%d rows of 1000 with a bound of 5000", all.NumRows())
	}
	if SampleReference(fr, f, -1, 1) != nil {
		t.Fatal("a negative bound keeps a sample")
	}
}

// TestReferenceRefused: a damaged, foreign or malformed reference makes
// the model ErrCorrupt, naming the section.
func TestReferenceRefused(t *testing.T) {
	f := classForest()
	ref := testReference(f, 10)
	b, m, err := EncodeBytes(f, Meta{Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := EncodeBytes(f, Meta{Version: 9})
	good := referenceValue(t, b)
	if _, _, err := DecodeBytes(withReference(t, f, good)); err != nil {
		t.Fatalf("the unedited reference: %v", err)
	}
	for name, edit := range map[string]func(string) string{
		"crc":         func(v string) string { return strings.Replace(v, `"crc32c":"`, `"crc32c":"0`, 1)[:len(v)-2] + `"}` },
		"foreign":     func(v string) string { return strings.Replace(v, m.ID, other.ID, 1) },
		"unknown":     func(v string) string { return strings.Replace(v, `{"format"`, `{"extra":1,"format"`, 1) },
		"trailing":    func(v string) string { return v + "{}" },
		"column":      func(v string) string { return strings.Replace(v, `"name":"x0"`, `"name":"y"`, 1) },
		"rows":        func(v string) string { return strings.Replace(v, `"rows":10`, `"rows":11`, 1) },
		"format":      func(v string) string { return strings.Replace(v, referenceFormat, "forestd-reference/2", 1) },
		"not json":    func(string) string { return "{" },
		"no columns":  func(v string) string { return v[:strings.Index(v, `"columns"`)] + `"columns":[],"crc32c":"00000000"}` },
		"both values": func(v string) string { return strings.Replace(v, `"levels":`, `"values":"","levels":`, 1) },
	} {
		v := edit(good)
		if v == good {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		bad := withReference(t, f, v)
		_, _, err := DecodeBytes(bad)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), keyReference) {
			t.Errorf("%s: %v, want ErrCorrupt naming %s", name, err, keyReference)
		}
	}
	// a forged value with a recomputed CRC but a code out of range
	bad := strings.Replace(good, `"levels":["red","green"]`, `"levels":["red"]`, 1)
	if _, _, err := DecodeBytes(withReference(t, f, bad)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("codes beyond the levels: %v", err)
	}
}

// referenceValue returns keyReference's value in the model bytes b.
func referenceValue(t *testing.T, b []byte) string {
	t.Helper()
	s := string(b)
	i := strings.Index(s, `{"format":"`+referenceFormat)
	if i < 0 {
		t.Fatal("no reference in the model")
	}
	var rec referenceJSON
	for j := i + 1; j <= len(s); j++ {
		if s[j-1] == '}' && decodeStrict(s[i:j], &rec, "") == nil {
			return s[i:j]
		}
	}
	t.Fatal("reference value not found")
	return ""
}

// withReference writes forest f as a model of Meta{} (the model ID of
// TestReferenceRefused's model) whose reference value is v, the checksum
// computed without it as the encoder computes it.
func withReference(t *testing.T, f *forest.Forest, v string) []byte {
	t.Helper()
	tab, entries, err := compactParts(f, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	d := canonicalDigest(entries, tab)
	entries = append(entries, metaEntry{keyReference, v})
	var buf bytes.Buffer
	if _, err := (codec{}).writeDigested(&buf, tab, d, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReference: decodeReference never panics, and what it accepts
// encodes back to a value it accepts with the same content.
func FuzzReference(f *testing.F) {
	fo := classForest()
	const id = "abc"
	for _, rows := range []int{0, 1, 5} {
		ref := SampleReference(testFrame(fo, 8), fo, rows, 1)
		if ref == nil {
			continue
		}
		v, err := encodeReference(ref, fo, id)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Add(`{"format":"forestd-reference/1","model_id":"abc","rows":1,"columns":[{"name":"colour","levels":["a"],"codes":"AAAAAA=="}],"crc32c":"00000000"}`)
	f.Fuzz(func(t *testing.T, v string) {
		rec, err := decodeReference(v, fo, id)
		if err != nil {
			return
		}
		v2, err := encodeReference(rec, fo, id)
		if err != nil {
			t.Fatalf("an accepted reference does not re-encode: %v", err)
		}
		rec2, err := decodeReference(v2, fo, id)
		if err != nil || !sameRecord(rec, rec2) {
			t.Fatalf("re-encoding changes the reference: %v", err)
		}
	})
}

// TestSampleReferenceWide: a wide model keeps fewer rows, at most 1 MiB
// of values.
func TestSampleReferenceWide(t *testing.T) {
	names := make([]string, 1000)
	for j := range names {
		names[j] = "f" + strings.Repeat("x", j%3) + string(rune('a'+j%26)) + strings.Repeat("0", j/26)
	}
	f := &forest.Forest{Features: names}
	fr := &frame.Frame{Names: names, NRows: 3000, Cols: make([][]float32, len(names))}
	for j := range fr.Cols {
		fr.Cols[j] = make([]float32, 3000)
	}
	r := SampleReference(fr, f, 2000, 1)
	if r == nil || r.NumRows() != maxReferenceBytes/(4*1000) || r.NumCols() != 1000 {
		t.Fatalf("a 1,000-feature sample: %v rows", r.NumRows())
	}
}

package codec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// TestJSONRowsOnly: keys outside Only (and Require and Kinds) are skipped
// whatever their kind in each row, nested values included, but the JSON
// must still be valid; Skipped reports the skipped keys of the rows kept.
func TestJSONRowsOnly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	msgs := []struct {
		value string
		err   string // "" = accepted
	}{
		{`{"id": "a", "x": 1, "k": "p"}`, ""},
		{`{"id": 5, "x": 2, "k": "q", "deep": {"a": [1, {"b": null}], "c": "\u00e9"}}`, ""},
		{`{"id": true, "x": 3, "k": "r", "e": [], "o": {}}`, ""},
		{`{"id": [1,], "x": 4, "k": "s"}`, `column "id": invalid character ']' looking for beginning of value`},
		{`{"id": {"a" 1}, "x": 4, "k": "s"}`, `column "id": invalid character '1' after object key`},
		{`{"id": "a\qb", "x": 4, "k": "s"}`, `column "id": invalid character 'q' in string escape code`},
		{`{"id": 1, "x": 4, "k": "s", "bad": tru}`, `column "bad": invalid character`},
		{`{"gone": 1, "x": 4, "k": 5}`, `column "k": a number where earlier rows have a string`},
		{`{"x": 5, "k": "t", "id": 1, "id": 2}`, ""}, // a skipped key twice is not checked
		{`{"x": [5], "k": "t"}`, `nested objects`},   // a decoded column still rejects nesting
	}
	b := NewJSONRows(JSONOptions{Require: []string{"x"}, Kinds: map[string]Kind{"x": KindNumber}, Only: []string{"k"}, Single: true})
	for i, m := range msgs {
		if m.err == "" && !json.Valid([]byte(m.value)) {
			t.Fatalf("message %d is not valid JSON", i)
		}
		n, err := b.Append([]byte(m.value))
		switch {
		case m.err == "" && (err != nil || n != 1):
			t.Fatalf("message %d: %d rows, %v", i, n, err)
		case m.err != "" && (err == nil || !strings.Contains(err.Error(), m.err)):
			t.Fatalf("message %d: error %v, want %q", i, err, m.err)
		}
	}
	rec := b.Record(mem)
	defer rec.Release()
	var names []string
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name+":"+f.Type.String())
	}
	if got := strings.Join(names, ","); got != "x:float64,k:utf8" {
		t.Fatalf("schema %s", got)
	}
	if rec.NumRows() != 4 || rec.Column(1).(*array.String).Value(3) != "t" {
		t.Fatalf("record %v", rec)
	}
	for name, want := range map[string]bool{"id": true, "deep": true, "e": true, "o": true, "bad": false, "gone": false, "x": false, "k": false} {
		if got := b.Skipped(name); got != want {
			t.Errorf("Skipped(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestJSONRowsOnlyLines: rows of one value must agree on their decoded
// keys only.
func TestJSONRowsOnlyLines(t *testing.T) {
	b := NewJSONRows(JSONOptions{Only: []string{"a"}})
	if _, err := b.Append([]byte(`{"a": 1, "s": 1}` + "\n" + `{"a": 2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append([]byte(`{"a": 1}` + "\n" + `{"s": 2}`)); err == nil || !strings.Contains(err.Error(), `has no key "a"`) {
		t.Fatalf("row without a decoded key: %v", err)
	}
	if _, err := b.Append([]byte(`{"s": 1}`)); err != nil { // Only does not require
		t.Fatal(err)
	}
	if b.Rows() != 3 {
		t.Fatalf("%d rows", b.Rows())
	}
}

// TestJSONRowsAppendAllMajority: AppendAll gives each column without a
// kind the kind most values give it (ties: the first value's), so the odd
// value is the one in error even when it comes first. Nulls, values that
// do not read and columns fixed already (by Kinds or by earlier rows) do
// not vote; a value of several rows votes once.
func TestJSONRowsAppendAllMajority(t *testing.T) {
	cases := []struct {
		name   string
		opts   JSONOptions
		before string   // appended first, with Append
		values []string // then AppendAll
		errs   []string // per value: "" accepted, else part of the error
		after  string   // appended last: an error
	}{
		{name: "majority", values: []string{`{"id": "a"}`, `{"id": 1}`, `{"id": true}`, `{"id": 2}`},
			errs:  []string{`column "id": a string where most values of the batch have a number`, "", `column "id": a bool where most values`, ""},
			after: `{"id": "z"}`},
		{name: "tie number first", values: []string{`{"y": 5}`, `{"y": "u"}`},
			errs: []string{"", `a string where most values of the batch have a number`}},
		{name: "tie string first", values: []string{`{"y": "u"}`, `{"y": 5}`, `{"y": null}`},
			errs: []string{"", `a number where most values of the batch have a string`, ""}},
		{name: "no votes from nulls or bad values",
			values: []string{`{"a": "s"}`, `{"a": null}`, `{"a": null}`, `{"a": 1`, `{"a": 2} x`, `{"a": [3]}`, `{"a": 4}`},
			errs:   []string{"", "", "", "JSON", "JSON", "nested", "a number where most values of the batch have a string"}},
		{name: "pinned", opts: JSONOptions{Kinds: map[string]Kind{"f": KindNumber}},
			values: []string{`{"f": true}`, `{"f": "s"}`, `{"f": "t"}`},
			errs:   []string{"", `a string where a number is expected`, `a string where a number is expected`}},
		{name: "no boolean as a number", values: []string{`{"n": 1}`, `{"n": 2}`, `{"n": true}`},
			errs: []string{"", "", `a bool where most values of the batch have a number`}},
		{name: "one vote per value", values: []string{"{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}", `{"a": "s"}`, `{"a": "t"}`},
			errs: []string{`JSON row 0, column "a": a number where most values`, "", ""}},
		{name: "earlier rows decide", before: `{"a": "s"}`, values: []string{`{"a": 1}`, `{"a": 2}`},
			errs: []string{`a number where earlier rows have a string`, `a number where earlier rows have a string`}},
		{name: "skipped keys do not vote", opts: JSONOptions{Only: []string{"k"}},
			values: []string{`{"k": "a", "s": 1}`, `{"k": 1, "s": "x"}`, `{"k": 2, "s": "y"}`},
			errs:   []string{`column "k": a string where most values`, "", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := NewJSONRows(c.opts)
			if c.before != "" {
				if _, err := b.Append([]byte(c.before)); err != nil {
					t.Fatal(err)
				}
			}
			in := make([][]byte, len(c.values))
			for i, v := range c.values {
				in[i] = []byte(v)
			}
			errs := b.AppendAll(in)
			if len(errs) != len(in) {
				t.Fatalf("%d errors for %d values", len(errs), len(in))
			}
			for i, w := range c.errs {
				switch err := errs[i]; {
				case w == "" && err != nil:
					t.Errorf("value %d: %v", i, err)
				case w != "" && (err == nil || !strings.Contains(err.Error(), w)):
					t.Errorf("value %d: error %v, want %q", i, err, w)
				}
			}
			if c.after != "" {
				if _, err := b.Append([]byte(c.after)); err == nil {
					t.Errorf("%s accepted after AppendAll", c.after)
				}
			}
			rec := b.Record(mem)
			rec.Release()
		})
	}
}

// TestJSONRowsReset: a JSONRows reused after Reset gives the record a new
// one gives: no column, kind, skipped key or row of the batch before it
// (here a string column and an extra key the second batch lacks).
func TestJSONRowsReset(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opts := JSONOptions{Require: []string{"x"}, Kinds: map[string]Kind{"x": KindNumber}, Only: []string{"k"}}
	first := [][]byte{[]byte(`{"x": 1, "k": "a", "s": 1}`), []byte(`{"x": 2, "k": "b"}`), []byte(`{"x": "bad"}`)}
	second := [][]byte{[]byte(`{"k": 5, "x": 3}`), []byte(`{"x": null, "k": 6}`)}
	reused := NewJSONRows(opts)
	reused.AppendAll(first)
	reused.Record(mem).Release()
	reused.Reset()
	fresh := NewJSONRows(opts)
	for _, b := range []*JSONRows{reused, fresh} {
		for i, err := range b.AppendAll(second) {
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
		}
	}
	got, want := reused.Record(mem), fresh.Record(mem)
	defer got.Release()
	defer want.Release()
	if !array.RecordEqual(got, want) || !got.Schema().Equal(want.Schema()) {
		t.Fatalf("after Reset:\n%v\nnew:\n%v", got, want)
	}
	if reused.Skipped("s") || reused.Rows() != 2 {
		t.Fatalf("after Reset: skipped s %v, %d rows", reused.Skipped("s"), reused.Rows())
	}
}

// TestJSONNumbers: numbers read in the scanner's one pass (Clinger's fast
// path) or through strconv.ParseFloat equal strconv.ParseFloat's reading
// bit for bit, -0 included; random decimals of every length and exponent
// besides the edge cases.
func TestJSONNumbers(t *testing.T) {
	texts := []string{"0", "-0", "0.0", "-0.0", "0e5", "-0e-5", "1", "-1", "0.1", "0.3", "2.978199", "-0.76930517",
		"0.050672747", "123456789012345", "1234567890123456", "12345678901234567890", "9007199254740993",
		"1e22", "1e23", "1e-22", "1e-23", "4.9e-324", "1.7976931348623157e308", "2.2250738585072014e-308",
		"0.000000000000000000000000001", "100000000000000000000000", "1.5E+3", "1.5e-3", "3.4028235e38",
		"0.10000000000000000555", "123.456e-20"}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		f := r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		texts = append(texts, strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(float64(float32(f)), 'g', -1, 32),
			strconv.FormatFloat(f, 'f', r.IntN(20), 64), strconv.FormatFloat(f, 'e', r.IntN(17), 64))
	}
	for _, text := range texts {
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		b := NewJSONRows(JSONOptions{})
		if _, err := b.Append([]byte(`{"a":` + text + `}`)); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		rec := b.Record(memory.NewGoAllocator())
		got := rec.Column(0).(*array.Float64).Value(0)
		rec.Release()
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s read as %v (%x), strconv %v (%x)", text, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// checkSame fails unless appending values, one JSONRows without Only and
// one with Only and Check, gives the same error for each value, and the
// checked record's columns are the full record's columns of Only, the
// same arrays.
func checkSame(t *testing.T, only []string, values ...[]byte) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full := NewJSONRows(JSONOptions{})
	part := NewJSONRows(JSONOptions{Only: only, Check: true})
	for i, v := range values {
		_, errFull := full.Append(v)
		_, errPart := part.Append(v)
		if (errFull == nil) != (errPart == nil) || errFull != nil && errFull.Error() != errPart.Error() {
			t.Fatalf("value %d %q: without Only %v, with Only and Check %v", i, v, errFull, errPart)
		}
	}
	fr, pr := full.Record(mem), part.Record(mem)
	defer fr.Release()
	defer pr.Release()
	if fr.NumRows() != pr.NumRows() {
		t.Fatalf("%d rows without Only, %d with", fr.NumRows(), pr.NumRows())
	}
	var want []string
	for _, f := range fr.Schema().Fields() {
		if slices.Contains(only, f.Name) {
			want = append(want, f.Name)
		}
	}
	var got []string
	for j, f := range pr.Schema().Fields() {
		got = append(got, f.Name)
		ix := fr.Schema().FieldIndices(f.Name)
		if len(ix) != 1 || !array.Equal(fr.Column(ix[0]), pr.Column(j)) || !fr.Schema().Field(ix[0]).Equal(f) {
			t.Fatalf("column %q differs: %v, without Only %v", f.Name, pr.Column(j), fr.Column(ix[0]))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
}

// TestJSONRowsCheck: with Check, keys outside Only are refused as a
// JSONRows without Only refuses them — nested values, a kind other than
// the earlier rows', a key twice, a key row 0 lacks, a string that is not
// Unicode text — with the same error, and the values accepted make the
// columns of Only alone.
func TestJSONRowsCheck(t *testing.T) {
	only := []string{"x", "y"}
	checkSame(t, only, []byte(`{"x":1,"y":"a","id":"k1","n":2}`), []byte("{\"x\":2,\"y\":null,\"id\":\"k2\",\"n\":3}\n{\"x\":3,\"y\":\"b\",\"id\":null,\"n\":4}"))
	for _, bad := range []string{
		`{"x":1,"meta":{"a":1}}`,
		`{"x":1,"meta":[1]}`,
		"{\"x\":1,\"id\":\"a\"}\n{\"x\":2,\"id\":7}",
		`{"x":1,"id":1,"id":2}`,
		"{\"x\":1}\n{\"x\":2,\"id\":7}",
		"{\"x\":1,\"id\":7}\n{\"x\":2}",
		`{"x":1,"id":"\ud800"}`,
		"{\"x\":1,\"id\":\"\xff\"}",
		`{"x":1,"n":1e400}`,
		"{\"x\":1,\"b\":true}\n{\"x\":2,\"b\":0}",
	} {
		checkSame(t, only, []byte(`{"x":0,"y":"z","id":"k","n":1}`), []byte(bad), []byte(`{"x":5,"y":"q","id":"k","n":1}`))
	}
}

// FuzzJSONRowsCheck: a JSONRows with Only and Check accepts and refuses
// what one without Only does, with the same errors, and its record holds
// the same arrays for Only's columns (checkSame), for any value after a
// fixed first one.
func FuzzJSONRowsCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x","c":true,"d":null}`, `{}`, `{"a":[1]}`, "{\"a\":1,\"c\":2}\n{\"a\":2}", `{"c":{"x":1}}`,
		`{"a":1,"a":2}`, `{"c":"\ud800"}`, `{"c":1e400}`, `{"b":1}`, "{\"c\":1}\n{\"c\":\"s\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		checkSame(t, []string{"a", "b"}, []byte(`{"a":0,"b":"y","c":1}`), value)
	})
}

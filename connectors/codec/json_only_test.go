package codec

import (
	"encoding/json"
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

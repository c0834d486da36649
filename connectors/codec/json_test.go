package codec

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// TestJSONRowsBadMessagesAlone: the messages of a batch go into one record;
// each bad message is rejected with its reason and leaves no trace (no row,
// no column, no kind), whichever position it has, and the good ones keep
// their values.
func TestJSONRowsBadMessagesAlone(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	msgs := []struct {
		value string
		err   string // "" = accepted
	}{
		{`{"x1": "abc", "x2": 1}`, `column "x1": a string where a number is expected`}, // bad first row
		{`{"x1": 1.5, "x2": 2, "id": "a"}`, ""},
		{`{"x2": 3, "junk": 1}`, `no key "x1"`},
		{`not json`, `JSON: invalid character`},
		{`{"x1": 2, "x2": 4, "x3": true}`, ""},
		{`{"x1": 3, "x2": 5}` + "\n" + `{"x1": 4, "x2": 6}`, `more than one object`},
		{`{"x1": null, "x2": false, "x4": "new"}`, ""}, // null: a missing value; bool read as 0
		{`{"x1": 5, "x2": 6, "x3": 7}`, `column "x3": a number where earlier rows have a bool`},
		{`{"x1": 5, "x2": 6, "x1": 7}`, `duplicate key "x1"`},
		{`{"x1": 5, "x2": [6]}`, `nested objects`},
		{`{"x1": 5, "x2": 6, "id": "b", "x5": 1, "x4": 2}`, `column "x4": a number where earlier rows have a string`},
		{``, `no objects`},
	}
	b := NewJSONRows(JSONOptions{Require: []string{"x1", "x2"}, Kinds: map[string]Kind{"x1": KindNumber, "x2": KindNumber}, Single: true})
	for i, m := range msgs {
		n, err := b.Append([]byte(m.value))
		switch {
		case m.err == "" && (err != nil || n != 1):
			t.Fatalf("message %d: %d rows, %v", i, n, err)
		case m.err != "" && (err == nil || !strings.Contains(err.Error(), m.err)):
			t.Fatalf("message %d: error %v, want %q", i, err, m.err)
		case m.err != "" && n != 0:
			t.Fatalf("message %d: %d rows added on error", i, n)
		}
	}
	rec := b.Record(mem)
	defer rec.Release()
	var names []string
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name+":"+f.Type.String())
	}
	// no x5 (only in a rejected message), no junk
	if got := strings.Join(names, ","); got != "x1:float64,x2:float64,id:utf8,x3:bool,x4:utf8" {
		t.Fatalf("schema %s", got)
	}
	if rec.NumRows() != 3 {
		t.Fatalf("%d rows", rec.NumRows())
	}
	x1 := rec.Column(0).(*array.Float64)
	x2 := rec.Column(1).(*array.Float64)
	if x1.Value(0) != 1.5 || x1.Value(1) != 2 || !x1.IsNull(2) {
		t.Fatalf("x1 %v", x1)
	}
	if x2.Value(0) != 2 || x2.Value(1) != 4 || x2.Value(2) != 0 {
		t.Fatalf("x2 %v", x2)
	}
	id := rec.Column(2).(*array.String)
	if id.Value(0) != "a" || !id.IsNull(1) || !id.IsNull(2) {
		t.Fatalf("id %v", id)
	}
	if x3 := rec.Column(3).(*array.Boolean); !x3.IsNull(0) || !x3.Value(1) || !x3.IsNull(2) {
		t.Fatalf("x3 %v", x3)
	}
	if x4 := rec.Column(4).(*array.String); x4.Value(2) != "new" {
		t.Fatalf("x4 %v", x4)
	}
}

// TestJSONRowsUnpinnedFirstRowDecides: without Kinds the first row fixes a
// column's kind (DecodeJSON's rule), and a rolled-back row releases the
// kind it set.
func TestJSONRowsUnpinnedFirstRowDecides(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := NewJSONRows(JSONOptions{})
	if _, err := b.Append([]byte(`{"a": "s", "b": [1]}`)); err == nil {
		t.Fatal("nested array accepted")
	}
	// "a" was set to string by the rejected row; it must be free again
	if _, err := b.Append([]byte(`{"a": 1}` + "\n" + `{"a": 2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append([]byte(`{"a": "x"}`)); err == nil || !strings.Contains(err.Error(), "earlier rows have a number") {
		t.Fatalf("string after numbers: %v", err)
	}
	rec := b.Record(mem)
	defer rec.Release()
	if rec.NumRows() != 2 || rec.Schema().Field(0).Type.ID() != arrow.FLOAT64 || rec.NumCols() != 1 {
		t.Fatalf("record %v", rec)
	}
}

// FuzzJSONRowsStdlib checks the hand-written scanner against encoding/json
// on one value: whenever encoding/json reads it as one flat object of
// numbers, strings, booleans and nulls without duplicate keys, JSONRows
// accepts it with the same values; whenever encoding/json rejects it (or
// finds anything else), JSONRows rejects it too.
func FuzzJSONRowsStdlib(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x","c":true,"d":null}`, `{}`, ` {"a" : -0.5e+3 } `, `{"a":"\u00e9\n"}`,
		`{"a":01}`, `{"a":1.}`, `{"a":"` + "\x01" + `"}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":[1]}`, `{"a":1}{"b":2}`,
		`{"a":"\xff"}`, `{"a":"\ud800"}`, `{"a":"\ud83d\ude00\ufffd"}`, `{"a":"\udc00\ud800x"}`, "{\"a\":\"x\xff\"}", "{\"a\":\"\\n\xc3\"}", "{\"\xff\":1}", `{"a":1e400}`, `{"a":tru}`, `{"a":1,"a":2}`, `[]`, `{"a":-}`, `{"a":1e}`, `{"a":"\"} {`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		var ref map[string]any
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		stdOK := dec.Decode(&ref) == nil && ref != nil
		if stdOK {
			if _, err := dec.Token(); err != io.EOF {
				stdOK = false // more than one value
			}
		}
		if stdOK {
			for _, v := range ref {
				switch v := v.(type) {
				case map[string]any, []any:
					stdOK = false
				case json.Number:
					if _, err := strconv.ParseFloat(string(v), 64); err != nil {
						stdOK = false
					}
				}
			}
			if stdOK && duplicateKeys(value) {
				stdOK = false
			}
			if stdOK && !unicodeValues(value) {
				stdOK = false // the deliberate difference: encoding/json writes U+FFFD, JSONRows refuses
			}
		}
		b := NewJSONRows(JSONOptions{Single: true})
		n, err := b.Append(value)
		if stdOK != (err == nil) {
			t.Fatalf("%q: encoding/json ok=%v, JSONRows %d rows, %v", value, stdOK, n, err)
		}
		if err != nil {
			return
		}
		rec := b.Record(memory.NewGoAllocator())
		defer rec.Release()
		if int(rec.NumCols()) != len(ref) {
			t.Fatalf("%q: %d columns, encoding/json %d keys", value, rec.NumCols(), len(ref))
		}
		for j, fl := range rec.Schema().Fields() {
			want := ref[fl.Name]
			col := rec.Column(j)
			switch w := want.(type) {
			case nil:
				if !col.IsNull(0) {
					t.Fatalf("%q: %s not null", value, fl.Name)
				}
			case json.Number:
				x, _ := strconv.ParseFloat(string(w), 64)
				if g := col.(*array.Float64).Value(0); g != x && !(g != g && x != x) {
					t.Fatalf("%q: %s = %v, want %v", value, fl.Name, g, x)
				}
			case string:
				if g := col.(*array.String).Value(0); g != w {
					t.Fatalf("%q: %s = %q, want %q", value, fl.Name, g, w)
				}
			case bool:
				if g := col.(*array.Boolean).Value(0); g != w {
					t.Fatalf("%q: %s = %v, want %v", value, fl.Name, g, w)
				}
			}
		}
	})
}

// unicodeValues reports whether every string value of the top-level object
// in value is Unicode text, as JSONRows requires of a utf8 cell: UTF-8
// bytes, and no \u escape of a UTF-16 surrogate outside a pair (told by
// unicode/utf16, which also decodes a lone one to U+FFFD).
func unicodeValues(value []byte) bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(value, &raw) != nil {
		return true
	}
	for _, v := range raw {
		if len(v) == 0 || v[0] != '"' {
			continue
		}
		if !utf8.Valid(v) {
			return false
		}
		var units []uint16 // the escaped code units, in runs
		flush := func() bool {
			dec := utf16.Decode(units)
			n := 0
			for _, u := range units {
				if u == 0xfffd {
					n++
				}
			}
			units = units[:0]
			return strings.Count(string(dec), "\uFFFD") == n
		}
		for i := 1; i < len(v)-1; i++ {
			if v[i] == '\\' && v[i+1] == 'u' {
				u, _ := strconv.ParseUint(string(v[i+2:i+6]), 16, 16)
				units = append(units, uint16(u))
				i += 5
				continue
			}
			if !flush() {
				return false
			}
			if v[i] == '\\' {
				i++
			}
		}
		if !flush() {
			return false
		}
	}
	return true
}

// duplicateKeys reports whether the top-level object in value repeats a
// key (encoding/json keeps the last; JSONRows refuses).
func duplicateKeys(value []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(value))
	if _, err := dec.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if seen[k.(string)] {
			return true
		}
		seen[k.(string)] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

// TestJSONRowsKeepsStrings: a string value becomes its utf8 cell byte for
// byte; one that is not Unicode text (invalid UTF-8, an escaped lone
// surrogate), which encoding/json would turn into U+FFFD so that a kept
// key no longer matched the message's, refuses its message with a reason
// naming the column, while a skipped key's value is not read as a cell.
func TestJSONRowsKeepsStrings(t *testing.T) {
	for _, c := range []struct{ value, want, err string }{
		{`{"id":"café-1","x":1}`, "café-1", ""},
		{`{"id":"caf\u00e9 \ud83d\ude00 \ufffd \\ud800","x":1}`, "café 😀 \uFFFD \\ud800", ""},
		{"{\"id\":\"\uFFFD\",\"x\":1}", "\uFFFD", ""},
		{"{\"id\":\"a\xffb\",\"x\":1}", "", `JSON, column "id": string is not valid UTF-8 (byte 0xff at offset 1 of the string)`},
		{"{\"id\":\"a\\n\xc3\",\"x\":1}", "", `column "id": string is not valid UTF-8 (byte 0xc3 at offset 3`},
		{`{"id":"k\ud800","x":1}`, "", `JSON, column "id": string escapes a lone UTF-16 surrogate (\ud800 at offset 1 of the string)`},
		{`{"id":"\udc00\ud800","x":1}`, "", `lone UTF-16 surrogate (\udc00 at offset 0`},
		{`{"id":"\ud800\u0041","x":1}`, "", `lone UTF-16 surrogate (\ud800 at offset 0`},
		{"{\"id\":\"k\",\"x\":1,\"note\":\"\xff\"}", "k", ""}, // skipped: not a cell
	} {
		b := NewJSONRows(JSONOptions{Single: true, Only: []string{"id", "x"}})
		_, err := b.Append([]byte(c.value))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.value, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.value, err)
		}
		rec := b.Record(memory.NewGoAllocator())
		if got := rec.Column(0).(*array.String).Value(0); got != c.want {
			t.Errorf("%q: id %q, want %q", c.value, got, c.want)
		}
		rec.Release()
	}
}

package codec

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

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
		`{"a":"\xff"}`, `{"a":1e400}`, `{"a":tru}`, `{"a":1,"a":2}`, `[]`, `{"a":-}`, `{"a":1e}`, `{"a":"\"} {`} {
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

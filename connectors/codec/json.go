package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Kind is the JSON kind of a column's values.
type Kind uint8

// JSON kinds. A column takes the kind of its first non-null value unless
// JSONOptions.Kinds fixes it.
const (
	KindNull   Kind = iota // no value yet: null everywhere so far
	KindNumber             // float64 column
	KindString             // utf8 column
	KindBool               // bool column
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindBool:
		return "bool"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// JSONOptions configure a JSONRows.
type JSONOptions struct {
	// Require names keys every object must have, e.g. the columns a model
	// reads: an object without one is an error naming it. A null value
	// counts as present (a missing value, NaN to a forest).
	Require []string
	// Kinds fixes the kind of the named columns before any row is read, so
	// that a value of another kind is an error in the row that holds it
	// whichever row comes first (without it the first row decides, and a
	// bad first row would make every good row after it an error). A
	// boolean in a KindNumber column is read as 1 or 0, as forestd reads a
	// boolean feature. KindNull entries are ignored.
	Kinds map[string]Kind
	// Single requires each appended value to hold exactly one object (one
	// message, one row).
	Single bool
}

// JSONRows decodes JSON objects, from one value or from many (the messages
// of a batch), into the rows of one Arrow record. Each Append adds all the
// rows of its value or, on an error, none of them, so that one bad message
// is rejected alone while the others still make the record. Columns appear
// in the order of Require, then of Kinds' other keys (sorted), then as
// their keys first appear; a key missing from a row is null there.
// Numbers become float64, strings utf8, booleans bool; a column that is
// null everywhere is float64. A JSONRows is not safe for concurrent use.
type JSONRows struct {
	opts    JSONOptions
	cols    []*jsonColumn
	index   map[string]int
	require []int // column of each required key
	rows    int
	size    int // bytes appended, for the sparsity bound
}

type jsonColumn struct {
	name   string
	kind   Kind // first non-null kind, or the fixed kind
	pinned bool // kind fixed by JSONOptions.Kinds
	last   int  // last row that has the key (null or not); -1 before
	// the non-null cells: row index and value (only the slice of the
	// column's kind is used), so that sparse rows cost nothing per column
	rows []int32
	num  []float64
	str  []string
	bol  []bool
}

// NewJSONRows returns an empty JSONRows.
func NewJSONRows(opts JSONOptions) *JSONRows {
	b := &JSONRows{opts: opts, index: map[string]int{}}
	for _, name := range opts.Require {
		b.require = append(b.require, b.column(name))
	}
	names := make([]string, 0, len(opts.Kinds))
	for name, k := range opts.Kinds {
		if k != KindNull {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c := b.cols[b.column(name)]
		c.kind, c.pinned = opts.Kinds[name], true
	}
	return b
}

// column returns the index of the column named name, adding it.
func (b *JSONRows) column(name string) int {
	if ci, ok := b.index[name]; ok {
		return ci
	}
	b.index[name] = len(b.cols)
	b.cols = append(b.cols, &jsonColumn{name: name, last: -1})
	return len(b.cols) - 1
}

// Rows is the number of rows appended so far.
func (b *JSONRows) Rows() int { return b.rows }

// maxJSONCells bounds rows × columns of the decoded record relative to the
// bytes decoded, so that sparse rows (many keys, each in few rows) cannot
// amplify a small message into a huge record.
func maxJSONCells(n int) int { return max(1<<20, 8*n) }

// Append decodes the objects of value — one, or a sequence separated by
// whitespace (JSON lines) — and appends a row per object. It returns the
// rows added. A value of another kind than its column's (e.g. a string in
// a numeric column), a nested object or array, a duplicate key, a missing
// required key, anything but objects at the top level, or no object at
// all is an error naming the row (counted from 0 within value) and column;
// then nothing of value is appended.
func (b *JSONRows) Append(value []byte) (int, error) {
	start, ncols := b.rows, len(b.cols)
	if err := b.append(value, start); err != nil {
		b.rollback(start, ncols)
		return 0, err
	}
	b.size += len(value)
	return b.rows - start, nil
}

func (b *JSONRows) append(value []byte, start int) error {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(value, []byte("\xef\xbb\xbf"))))
	dec.UseNumber()
	cellLimit := maxJSONCells(b.size + len(value))
	for {
		row := b.rows - start // within value, for errors
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("JSON row %d: %w", row, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return fmt.Errorf("JSON row %d: expected an object, found %v", row, tokenString(tok))
		}
		if b.opts.Single && row == 1 {
			return errors.New("JSON: more than one object in the value; one object is one row here")
		}
		if b.rows == maxJSONRows {
			return fmt.Errorf("JSON: more than %d rows", maxJSONRows)
		}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("JSON row %d: %w", row, err)
			}
			key, ok := kt.(string)
			if !ok {
				return fmt.Errorf("JSON row %d: expected a key, found %v", row, tokenString(kt))
			}
			vt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("JSON row %d, column %q: %w", row, key, err)
			}
			ci, ok := b.index[key]
			if !ok {
				if len(b.cols) == maxJSONColumns {
					return fmt.Errorf("JSON: more than %d columns", maxJSONColumns)
				}
				ci = b.column(key)
			}
			if err := b.cols[ci].append(vt, b.rows, row); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing '}'
			return fmt.Errorf("JSON row %d: %w", row, err)
		}
		for _, ci := range b.require {
			if b.cols[ci].last != b.rows {
				return fmt.Errorf("JSON row %d: no key %q", row, b.cols[ci].name)
			}
		}
		b.rows++
		if b.rows*max(len(b.cols), 1) > cellLimit {
			return fmt.Errorf("JSON: %d rows × %d columns is too sparse for %d bytes", b.rows, len(b.cols), b.size+len(value))
		}
	}
	if b.rows == start {
		return errors.New("JSON: no objects in the value")
	}
	return nil
}

// rollback removes the rows from start on and the columns from ncols on.
func (b *JSONRows) rollback(start, ncols int) {
	for _, c := range b.cols[ncols:] {
		delete(b.index, c.name)
	}
	b.cols = b.cols[:ncols]
	for _, c := range b.cols {
		k := len(c.rows)
		for k > 0 && int(c.rows[k-1]) >= start {
			k--
		}
		if k < len(c.rows) {
			c.rows = c.rows[:k]
			switch c.kind {
			case KindNumber:
				c.num = c.num[:k]
			case KindString:
				c.str = c.str[:k]
			case KindBool:
				c.bol = c.bol[:k]
			}
		}
		if k == 0 && !c.pinned {
			c.kind = KindNull
		}
		if c.last >= start {
			c.last = -1
		}
	}
	b.rows = start
}

// DecodeJSON decodes JSON objects — one, or a sequence separated by
// whitespace (JSON lines) — into one record with a row per object (a
// JSONRows without options, see Append for the errors).
func DecodeJSON(value []byte, mem memory.Allocator) (arrow.Record, error) {
	b := NewJSONRows(JSONOptions{})
	if _, err := b.Append(value); err != nil {
		return nil, err
	}
	return b.Record(mem), nil
}

func tokenString(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", t)
}

// append adds the value t of the column at builder row at (row within the
// value, for errors).
func (c *jsonColumn) append(t json.Token, at, row int) error {
	if c.last == at {
		return fmt.Errorf("JSON row %d: duplicate key %q", row, c.name)
	}
	c.last = at
	var k Kind
	switch t.(type) {
	case nil:
		return nil // stays null
	case json.Number:
		k = KindNumber
	case string:
		k = KindString
	case bool:
		k = KindBool
	case json.Delim:
		return fmt.Errorf("JSON row %d, column %q: nested objects and arrays are not supported (one flat object per row)", row, c.name)
	default:
		return fmt.Errorf("JSON row %d, column %q: unexpected token", row, c.name)
	}
	switch {
	case c.kind == KindNull:
		c.kind = k
	case c.pinned && c.kind == KindNumber && k == KindBool:
		k = KindNumber
		v := 0.0
		if t.(bool) {
			v = 1
		}
		t = v
	case c.kind != k && c.pinned:
		return fmt.Errorf("JSON row %d, column %q: a %s where a %s is expected", row, c.name, k, c.kind)
	case c.kind != k:
		return fmt.Errorf("JSON row %d, column %q: a %s where earlier rows have a %s", row, c.name, k, c.kind)
	}
	switch v := t.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return fmt.Errorf("JSON row %d, column %q: number %s out of range", row, c.name, v)
		}
		c.num = append(c.num, f)
	case float64:
		c.num = append(c.num, v)
	case string:
		c.str = append(c.str, v)
	case bool:
		c.bol = append(c.bol, v)
	}
	c.rows = append(c.rows, int32(at))
	return nil
}

// Record builds the record of every row appended so far (no rows: a
// record without rows). The caller releases it; b is unchanged.
func (b *JSONRows) Record(mem memory.Allocator) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rows := b.rows
	fields := make([]arrow.Field, len(b.cols))
	arrs := make([]arrow.Array, len(b.cols))
	for j, c := range b.cols {
		var bld array.Builder
		// pad appends nulls up to row i
		next := 0
		pad := func(i int) {
			if i > next {
				bld.AppendNulls(i - next)
			}
			next = i + 1
		}
		switch c.kind {
		case KindString:
			sb := array.NewStringBuilder(mem)
			bld = sb
			for k, i := range c.rows {
				pad(int(i))
				sb.Append(c.str[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String, Nullable: true}
		case KindBool:
			bb := array.NewBooleanBuilder(mem)
			bld = bb
			for k, i := range c.rows {
				pad(int(i))
				bb.Append(c.bol[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
		default:
			fb := array.NewFloat64Builder(mem)
			bld = fb
			fb.Reserve(rows)
			for k, i := range c.rows {
				pad(int(i))
				fb.UnsafeAppend(c.num[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
		}
		if rows > next {
			bld.AppendNulls(rows - next)
		}
		arrs[j] = bld.NewArray()
		bld.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

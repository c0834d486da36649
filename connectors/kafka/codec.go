package kafka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/pipeline"
)

// HeaderContentType is the header naming a message value's format
// (DESIGN.md §4: "the content type travels in a header").
const HeaderContentType = "content-type"

// Content types of message values.
const (
	ContentTypeArrow  = "application/vnd.apache.arrow.stream"
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

// Output formats (--output-format).
const (
	FormatArrow = "arrow"
	FormatJSON  = "json"
)

// Limits of the JSON decoder, so that a hostile message cannot make it
// allocate without bound (the broker's message size bounds the rest).
const (
	maxJSONColumns = 1 << 14
	maxJSONRows    = 1 << 22
)

// normalizeContentType maps a content-type header to one of the
// ContentType constants, accepting common aliases and parameters
// ("application/json; charset=utf-8"). An unknown type is an error.
func normalizeContentType(ct string) (string, error) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(ct))
	}
	switch mt {
	case ContentTypeArrow, "application/vnd.apache.arrow.file", "application/x-apache-arrow-stream", "application/arrow", "arrow":
		return ContentTypeArrow, nil
	case ContentTypeJSON, "text/json", "json":
		return ContentTypeJSON, nil
	case ContentTypeNDJSON, "application/jsonl", "application/json-lines", "application/x-jsonlines", "application/jsonlines", "jsonl", "ndjson":
		return ContentTypeNDJSON, nil
	}
	return "", fmt.Errorf("unsupported content-type %q (use %s, %s or %s)", ct, ContentTypeArrow, ContentTypeJSON, ContentTypeNDJSON)
}

// Sniff tells the format of a value that came without a content-type
// header. It recognises an Arrow IPC stream by its continuation marker
// 0xFFFFFFFF, an Arrow IPC file by its "ARROW1" magic, and JSON by a first
// non-blank character '{'; anything else is an error rather than a guess.
func Sniff(value []byte) (string, error) {
	if len(value) >= 8 && bytes.Equal(value[:4], []byte{0xff, 0xff, 0xff, 0xff}) {
		return ContentTypeArrow, nil
	}
	if len(value) >= 6 && string(value[:6]) == "ARROW1" {
		return ContentTypeArrow, nil
	}
	v := bytes.TrimPrefix(value, []byte("\xef\xbb\xbf"))
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) > 0 && v[0] == '{' {
		return ContentTypeJSON, nil
	}
	head := value
	if len(head) > 16 {
		head = head[:16]
	}
	if len(value) == 0 {
		return "", errors.New("empty message value and no content-type header")
	}
	return "", fmt.Errorf("no content-type header, and the value is neither an Arrow IPC stream (0xFFFFFFFF marker) nor JSON (a '{'); first bytes %x", head)
}

// Decode turns a message value into Arrow records: an Arrow IPC stream
// (or file), or JSON objects (one per row; one object, or several separated
// by newlines — JSON lines). contentType is the header value; empty means
// sniff. The caller releases the records. Every error is about the input.
func Decode(value []byte, contentType string, mem memory.Allocator) (*arrow.Schema, []arrow.Record, error) {
	var ct string
	var err error
	if contentType == "" {
		ct, err = Sniff(value)
	} else {
		ct, err = normalizeContentType(contentType)
	}
	if err != nil {
		return nil, nil, err
	}
	switch ct {
	case ContentTypeArrow:
		schema, recs, err := files.ReadIPCBytes("message", value, files.ReadOptions{Mem: mem})
		if err != nil {
			return nil, nil, err
		}
		if len(recs) == 0 {
			// a schema-only stream is a valid message without rows, as a
			// zero-row batch is: one empty record of its schema
			recs = []arrow.Record{emptyRecord(mem, schema)}
		}
		return schema, recs, nil
	default:
		rec, err := DecodeJSON(value, mem)
		if err != nil {
			return nil, nil, err
		}
		return rec.Schema(), []arrow.Record{rec}, nil
	}
}

type jsonKind uint8

const (
	kindNull jsonKind = iota
	kindNumber
	kindString
	kindBool
)

func (k jsonKind) String() string {
	return [...]string{"null", "number", "string", "bool"}[k]
}

type jsonColumn struct {
	name string
	kind jsonKind // first non-null kind
	last int      // last row in which the key appeared
	// the non-null cells: row index and value (only the slice of the
	// column's kind is used), so that null cells cost nothing
	rows []int32
	num  []float64
	str  []string
	bol  []bool
}

// maxJSONCells bounds rows × columns of the decoded record relative to the
// message size, so that a small message cannot amplify into a huge record.
func maxJSONCells(n int) int { return max(1<<20, 8*n) }

// DecodeJSON decodes JSON objects — one, or a sequence separated by
// whitespace (JSON lines) — into one record with a row per object. Columns
// appear in the order of the first object's keys. Every object must carry
// the same keys: a missing value is written as null (it becomes a null, and
// NaN where a model reads the column). A key missing from some objects is
// an error, as a message without that column at all would be for a model
// that needs it, so that a message's meaning does not depend on how its
// rows were split into messages. Numbers become float64, strings utf8,
// booleans bool; a column that is null everywhere is float64. A value of a
// different kind than the column's earlier values (e.g. a string in a
// numeric column), a nested object or array, a duplicate key, or anything
// but objects at the top level is an error naming the row and column.
func DecodeJSON(value []byte, mem memory.Allocator) (arrow.Record, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(value, []byte("\xef\xbb\xbf"))))
	dec.UseNumber()
	var cols []*jsonColumn
	index := map[string]int{}
	rows := 0
	cellLimit := maxJSONCells(len(value))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("JSON row %d: %w", rows, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, fmt.Errorf("JSON row %d: expected an object, found %v", rows, tokenString(tok))
		}
		if rows == maxJSONRows {
			return nil, fmt.Errorf("JSON: more than %d rows in one message", maxJSONRows)
		}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("JSON row %d: %w", rows, err)
			}
			key, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("JSON row %d: expected a key, found %v", rows, tokenString(kt))
			}
			vt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("JSON row %d, column %q: %w", rows, key, err)
			}
			ci, ok := index[key]
			if !ok {
				if rows > 0 {
					return nil, fmt.Errorf("JSON row %d has key %q, which row 0 lacks (every row of a message carries the same keys; write null for a missing value)", rows, key)
				}
				if len(cols) == maxJSONColumns {
					return nil, fmt.Errorf("JSON: more than %d columns", maxJSONColumns)
				}
				ci = len(cols)
				index[key] = ci
				cols = append(cols, &jsonColumn{name: key, last: -1})
			}
			c := cols[ci]
			if c.last == rows {
				return nil, fmt.Errorf("JSON row %d: duplicate key %q", rows, key)
			}
			c.last = rows
			if err := c.append(vt, rows); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing '}'
			return nil, fmt.Errorf("JSON row %d: %w", rows, err)
		}
		for _, c := range cols {
			if c.last != rows {
				return nil, fmt.Errorf("JSON row %d has no key %q, which row 0 has (every row of a message carries the same keys; write null for a missing value)", rows, c.name)
			}
		}
		rows++
		if rows*max(len(cols), 1) > cellLimit {
			return nil, fmt.Errorf("JSON: %d rows × %d columns is too sparse for a %d-byte message", rows, len(cols), len(value))
		}
	}
	if rows == 0 {
		return nil, errors.New("JSON: no objects in the message")
	}
	return buildJSONRecord(cols, rows, mem), nil
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

func (c *jsonColumn) append(t json.Token, row int) error {
	var k jsonKind
	switch t.(type) {
	case nil:
		return nil // stays null
	case json.Number:
		k = kindNumber
	case string:
		k = kindString
	case bool:
		k = kindBool
	case json.Delim:
		return fmt.Errorf("JSON row %d, column %q: nested objects and arrays are not supported (one flat object per row)", row, c.name)
	default:
		return fmt.Errorf("JSON row %d, column %q: unexpected token", row, c.name)
	}
	if c.kind == kindNull {
		c.kind = k
	} else if c.kind != k {
		return fmt.Errorf("JSON row %d, column %q: a %s where earlier rows have a %s", row, c.name, k, c.kind)
	}
	switch v := t.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return fmt.Errorf("JSON row %d, column %q: number %s out of range", row, c.name, v)
		}
		c.num = append(c.num, f)
	case string:
		c.str = append(c.str, v)
	case bool:
		c.bol = append(c.bol, v)
	}
	c.rows = append(c.rows, int32(row))
	return nil
}

func buildJSONRecord(cols []*jsonColumn, rows int, mem memory.Allocator) arrow.Record {
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for j, c := range cols {
		var b array.Builder
		// appendNulls pads with nulls up to row i
		next := 0
		pad := func(i int) {
			if i > next {
				b.AppendNulls(i - next)
			}
			next = i + 1
		}
		switch c.kind {
		case kindString:
			sb := array.NewStringBuilder(mem)
			b = sb
			for k, i := range c.rows {
				pad(int(i))
				sb.Append(c.str[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.BinaryTypes.String, Nullable: true}
		case kindBool:
			bb := array.NewBooleanBuilder(mem)
			b = bb
			for k, i := range c.rows {
				pad(int(i))
				bb.Append(c.bol[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
		default:
			fb := array.NewFloat64Builder(mem)
			b = fb
			fb.Reserve(rows)
			for k, i := range c.rows {
				pad(int(i))
				fb.UnsafeAppend(c.num[k])
			}
			fields[j] = arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
		}
		if rows > next {
			b.AppendNulls(rows - next)
		}
		arrs[j] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// EncodeArrow writes rec as one Arrow IPC stream (schema, one record
// batch, end-of-stream marker).
func EncodeArrow(rec arrow.Record, mem memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, fmt.Errorf("kafka: encoding Arrow IPC: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("kafka: encoding Arrow IPC: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeJSON writes rec as JSON lines: one object per row, keys in schema
// order, a trailing newline after each. Nulls, NaN and infinities are null.
// Supported column types: booleans, integers, floats, strings, binary
// (base64) and dictionaries of those.
func EncodeJSON(rec arrow.Record) ([]byte, error) {
	schema := rec.Schema()
	keys := make([][]byte, rec.NumCols())
	for j, f := range schema.Fields() {
		k, _ := json.Marshal(f.Name)
		keys[j] = k
	}
	var buf bytes.Buffer
	buf.Grow(int(rec.NumRows()) * int(rec.NumCols()) * 12)
	scratch := make([]byte, 0, 64)
	for i := 0; i < int(rec.NumRows()); i++ {
		buf.WriteByte('{')
		for j := 0; j < int(rec.NumCols()); j++ {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.Write(keys[j])
			buf.WriteByte(':')
			var err error
			scratch, err = appendJSONValue(scratch[:0], rec.Column(j), i)
			if err != nil {
				return nil, fmt.Errorf("kafka: column %s: %w", schema.Field(j).Name, err)
			}
			buf.Write(scratch)
		}
		buf.WriteString("}\n")
	}
	return buf.Bytes(), nil
}

func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendJSONValue(b []byte, a arrow.Array, i int) ([]byte, error) {
	if a.IsNull(i) {
		return append(b, "null"...), nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, c.Value(i)), nil
	case *array.Int8:
		return strconv.AppendInt(b, int64(c.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(b, int64(c.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(b, int64(c.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(b, c.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(c.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(c.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(c.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(b, c.Value(i), 10), nil
	case *array.Float16:
		return appendFloat(b, float64(c.Value(i).Float32()), 32), nil
	case *array.Float32:
		return appendFloat(b, float64(c.Value(i)), 32), nil
	case *array.Float64:
		return appendFloat(b, c.Value(i), 64), nil
	case *array.String:
		return appendJSONString(b, c.Value(i)), nil
	case *array.LargeString:
		return appendJSONString(b, c.Value(i)), nil
	case *array.Binary:
		q, _ := json.Marshal(c.Value(i))
		return append(b, q...), nil
	case *array.Dictionary:
		return appendJSONValue(b, c.Dictionary(), c.GetValueIndex(i))
	}
	return b, fmt.Errorf("type %s cannot be written as JSON", a.DataType())
}

func appendJSONString(b []byte, s string) []byte {
	if utf8.ValidString(s) && !needsEscape(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			return true
		}
	}
	return false
}

// ContentTypeOf returns the value of a message's content-type header, the
// key matched without regard to case ("Content-Type" as HTTP writes it, or
// "content-type"); the last such header wins, and "" means none.
func ContentTypeOf(headers []pipeline.Header) string {
	for i := len(headers) - 1; i >= 0; i-- {
		if strings.EqualFold(headers[i].Key, HeaderContentType) {
			return string(headers[i].Value)
		}
	}
	return ""
}

// Errors for values with nothing to decode. kafka-go hands both a null
// value and an empty one over as a nil slice; GroupSource tells them apart
// and delivers a null value as nil and an empty one as an empty non-nil
// slice.
var (
	errTombstone  = errors.New("tombstone: the message has a null value (a deletion marker), no rows to decode")
	errEmptyValue = errors.New("empty value: the message has a value of 0 bytes, no rows to decode")
)

// NewDecoder returns the pipeline decoder for Kafka messages: the value's
// format comes from its content-type header (ContentTypeOf), else it is
// sniffed (Decode). A tombstone (null value) and an empty value are
// refused with different reasons.
func NewDecoder(mem memory.Allocator) pipeline.Decoder {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return func(env *pipeline.Envelope) (*pipeline.Batch, error) {
		switch {
		case env.Value == nil:
			return nil, errTombstone
		case len(env.Value) == 0:
			return nil, errEmptyValue
		}
		schema, recs, err := Decode(env.Value, ContentTypeOf(env.Headers), mem)
		if err != nil {
			return nil, err
		}
		return &pipeline.Batch{Env: env, Schema: schema, Records: recs}, nil
	}
}

// emptyRecord is a record of schema with no rows.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecord()
}

package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/internal/ipcread"
)

// Content types of message values.
const (
	ContentTypeArrow  = "application/vnd.apache.arrow.stream"
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
)

// Limits of the JSON decoder, so that a hostile message cannot make it
// allocate without bound (the transport's message size bounds the rest).
const (
	maxJSONColumns = 1 << 14
	maxJSONRows    = 1 << 22
)

// NormalizeContentType maps a content-type header to one of the
// ContentType constants, accepting common aliases and parameters
// ("application/json; charset=utf-8"). An unknown type is an error.
func NormalizeContentType(ct string) (string, error) {
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
		ct, err = NormalizeContentType(contentType)
	}
	if err != nil {
		return nil, nil, err
	}
	switch ct {
	case ContentTypeArrow:
		schema, recs, err := ipcread.ReadBytes("message", value, mem)
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

// EncodeArrow writes rec as one Arrow IPC stream (schema, one record
// batch, end-of-stream marker).
func EncodeArrow(rec arrow.Record, mem memory.Allocator) ([]byte, error) {
	return EncodeArrowStream(rec.Schema(), []arrow.Record{rec}, mem)
}

// EncodeArrowStream writes recs, which have schema, as one Arrow IPC
// stream (schema, a record batch per record, end-of-stream marker).
func EncodeArrowStream(schema *arrow.Schema, recs []arrow.Record, mem memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			w.Close()
			return nil, fmt.Errorf("codec: encoding Arrow IPC: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("codec: encoding Arrow IPC: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeJSON writes rec as JSON lines: one object per row, keys in schema
// order, a trailing newline after each. Nulls, NaN and infinities are null.
// Supported column types: booleans, integers, floats, strings, binary
// (base64) and dictionaries of those.
func EncodeJSON(rec arrow.Record) ([]byte, error) {
	e := NewJSONMembers(rec)
	buf := make([]byte, 0, int(rec.NumRows())*(int(rec.NumCols())*12+2))
	for i := 0; i < int(rec.NumRows()); i++ {
		buf = append(buf, '{')
		var err error
		if buf, err = e.Append(buf, i); err != nil {
			return nil, err
		}
		buf = append(buf, "}\n"...)
	}
	return buf, nil
}

// JSONMembers writes the rows of a record as the members of JSON objects
// (`"key":value,...`, keys in schema order, without the braces), for a
// writer that adds them to objects of its own (forestd_score merges them
// into each message's bytes) or writes them as objects (EncodeJSON).
type JSONMembers struct {
	rec  arrow.Record
	keys [][]byte // `"name":` of each column
}

// NewJSONMembers returns the JSONMembers of rec (which it does not retain:
// the caller keeps rec alive while it appends).
func NewJSONMembers(rec arrow.Record) *JSONMembers {
	e := &JSONMembers{rec: rec, keys: make([][]byte, rec.NumCols())}
	for j, f := range rec.Schema().Fields() {
		k, _ := json.Marshal(f.Name)
		e.keys[j] = append(k, ':')
	}
	return e
}

// Append appends the members of row i to dst, values as EncodeJSON writes
// them; an error names a column of a type JSON cannot hold.
func (e *JSONMembers) Append(dst []byte, i int) ([]byte, error) {
	for j, k := range e.keys {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, k...)
		var err error
		if dst, err = appendJSONValue(dst, e.rec.Column(j), i); err != nil {
			return nil, fmt.Errorf("codec: column %s: %w", e.rec.Schema().Field(j).Name, err)
		}
	}
	return dst, nil
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

// emptyRecord is a record of schema with no rows.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecord()
}

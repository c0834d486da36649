package benthos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/connectors/codec"
)

// batchParts sorts the messages of a batch by format: the JSON messages,
// whose objects go into one record, and the Arrow IPC messages, each
// decoded into its own records. A message that is neither, or whose bytes
// cannot be read, gets its error.
type batchParts struct {
	json  []int // indices of JSON messages
	arrow []int // indices of Arrow IPC messages
	bytes [][]byte
}

func splitBatch(proc string, batch service.MessageBatch, errored func(*service.Message, error)) batchParts {
	p := batchParts{bytes: make([][]byte, len(batch))}
	for i, msg := range batch {
		b, err := msg.AsBytes()
		if err != nil {
			errored(msg, fmt.Errorf("%s: %w", proc, err))
			continue
		}
		ct, err := codec.Sniff(b)
		if err != nil {
			errored(msg, fmt.Errorf("%s: %w", proc, err))
			continue
		}
		p.bytes[i] = b
		if ct == codec.ContentTypeArrow {
			p.arrow = append(p.arrow, i)
		} else {
			p.json = append(p.json, i)
		}
	}
	return p
}

// oneLine makes err's text one line, as a dead letter's reason must be.
func oneLine(err error) error {
	s := err.Error()
	if !strings.ContainsAny(s, "\r\n") {
		return err
	}
	return errors.New(strings.Join(strings.Fields(s), " "))
}

// featureKinds fixes the JSON kind of every column a model or mapping
// reads: a number (booleans read as 1 or 0), or a string for a categorical
// feature with levels.
func featureKinds(names []string, levels [][]string) map[string]codec.Kind {
	k := make(map[string]codec.Kind, len(names))
	for j, n := range names {
		if levels != nil && levels[j] != nil {
			k[n] = codec.KindString
		} else {
			k[n] = codec.KindNumber
		}
	}
	return k
}

// jsonLines encodes rec as JSON lines and returns one object per row.
func jsonLines(rec arrow.Record) ([][]byte, error) {
	js, err := codec.EncodeJSON(rec)
	if err != nil {
		return nil, err
	}
	lines := make([][]byte, 0, rec.NumRows())
	for len(js) > 0 {
		i := bytes.IndexByte(js, '\n')
		if i < 0 {
			i = len(js)
		}
		lines = append(lines, js[:i])
		js = js[min(i+1, len(js)):]
	}
	if len(lines) != int(rec.NumRows()) {
		return nil, fmt.Errorf("encoding %d rows gave %d JSON lines", rec.NumRows(), len(lines))
	}
	return lines, nil
}

// dropColumns returns rec without the named columns (shared arrays).
func dropColumns(rec arrow.Record, names ...string) arrow.Record {
	var fields []arrow.Field
	var cols []arrow.Array
	for j, f := range rec.Schema().Fields() {
		drop := false
		for _, n := range names {
			drop = drop || f.Name == n
		}
		if !drop {
			fields, cols = append(fields, f), append(cols, rec.Column(j))
		}
	}
	md := rec.Schema().Metadata()
	return array.NewRecord(arrow.NewSchema(fields, &md), cols, rec.NumRows())
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// mergeObject adds the members of obj (a flat JSON object, `{...}`) to the
// JSON object orig: at its root when field is empty, else as the object
// under the key field. It works on the bytes, so the message's own members
// keep their text exactly; it reports false when orig is not one object
// (the caller then goes through Benthos' structured form).
func mergeObject(orig, obj []byte, field string) ([]byte, bool) {
	if len(obj) < 2 {
		return nil, false
	}
	var key []byte
	if field != "" {
		key, _ = json.Marshal(field)
	}
	out, ok, _ := appendMerged(nil, orig, key, func(dst []byte) ([]byte, error) {
		return append(dst, obj[1:len(obj)-1]...), nil
	})
	return out, ok
}

// appendMerged appends to dst the JSON object orig with the members that
// members appends (`"k":v,...`, without braces) added: at its root when
// key is empty, else as the object under key (its JSON text). orig's own
// members keep their text byte for byte. It reports false, appending
// nothing, when orig is not one object, and returns members' error.
func appendMerged(dst, orig, key []byte, members func([]byte) ([]byte, error)) ([]byte, bool, error) {
	end := len(orig)
	for end > 0 && isSpace(orig[end-1]) {
		end--
	}
	if end == 0 || orig[end-1] != '}' {
		return dst, false, nil
	}
	closing := end - 1
	j := closing - 1
	for j >= 0 && isSpace(orig[j]) {
		j--
	}
	if j < 0 {
		return dst, false, nil
	}
	start := len(dst)
	dst = append(dst, orig[:closing]...)
	if orig[j] != '{' {
		dst = append(dst, ',')
	}
	if len(key) > 0 {
		dst = append(dst, key...)
		dst = append(dst, ":{"...)
	}
	dst, err := members(dst)
	if err != nil {
		return dst[:start], true, err
	}
	if len(key) > 0 {
		dst = append(dst, '}')
	}
	return append(dst, '}'), true, nil
}

// mergeStructured is mergeObject through Benthos' structured form, for a
// message whose members clash with the ones added (they are replaced).
func mergeStructured(msg *service.Message, obj []byte, field string) error {
	v, err := msg.AsStructuredMut()
	if err != nil {
		return err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return errors.New("the message is not a JSON object")
	}
	var add map[string]any
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if err := dec.Decode(&add); err != nil {
		return err
	}
	if field != "" {
		root[field] = add
	} else {
		for k, v := range add {
			root[k] = v
		}
	}
	msg.SetStructuredMut(root)
	return nil
}

// encodeArrow writes recs as one Arrow IPC stream.
func encodeArrow(recs []arrow.Record, mem memory.Allocator) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("no records to encode")
	}
	return codec.EncodeArrowStream(recs[0].Schema(), recs, mem)
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
}

// jsonRecord decodes the batch's JSON messages into one record, each
// message validated on its own (codec.JSONRows): a message that does not
// fit gets its error and adds no row. A column whose kind opts do not fix
// takes the kind most of the messages give it (JSONRows.AppendAll), so
// that an odd message is errored rather than every message after it. It
// returns the record (nil when no message fits; the caller releases it),
// the indices of the messages in it, and fail, which errors all of those
// together (for a failure that concerns the whole record) and returns 0
// rows.
func (p batchParts) jsonRecord(proc string, batch service.MessageBatch, opts codec.JSONOptions, mem memory.Allocator, errored func(*service.Message, error)) (arrow.Record, []int, func(error) int) {
	return p.jsonRows(proc, batch, codec.NewJSONRows(opts), mem, errored)
}

// jsonRows is jsonRecord into jr (a new or Reset JSONRows), for a caller
// that reuses it batch after batch.
func (p batchParts) jsonRows(proc string, batch service.MessageBatch, jr *codec.JSONRows, mem memory.Allocator, errored func(*service.Message, error)) (arrow.Record, []int, func(error) int) {
	values := make([][]byte, len(p.json))
	for k, i := range p.json {
		values[k] = p.bytes[i]
	}
	ok := make([]int, 0, len(p.json))
	for k, err := range jr.AppendAll(values) {
		i := p.json[k]
		if err != nil {
			errored(batch[i], fmt.Errorf("%s: %w", proc, err))
			continue
		}
		ok = append(ok, i)
	}
	fail := func(err error) int {
		for _, i := range ok {
			errored(batch[i], fmt.Errorf("%s: %w", proc, err))
		}
		return 0
	}
	if len(ok) == 0 {
		return nil, nil, fail
	}
	return jr.Record(mem), ok, fail
}

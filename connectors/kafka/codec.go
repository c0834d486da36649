package kafka

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/pipeline"
)

// HeaderContentType is the header naming a message value's format
// (DESIGN.md §4: "the content type travels in a header").
const HeaderContentType = "content-type"

// Content types of message values (the codec package's).
const (
	ContentTypeArrow  = codec.ContentTypeArrow
	ContentTypeJSON   = codec.ContentTypeJSON
	ContentTypeNDJSON = codec.ContentTypeNDJSON
)

// Output formats (--output-format).
const (
	FormatArrow = "arrow"
	FormatJSON  = "json"
)

// The message codecs live in connectors/codec, shared with the Redpanda
// Connect processors; these forward to them for the daemon's callers.

// Sniff is codec.Sniff: the format of a value without a content-type
// header, by unambiguous markers only.
func Sniff(value []byte) (string, error) { return codec.Sniff(value) }

// Decode is codec.Decode: a message value (Arrow IPC stream or file, JSON
// objects or JSON lines) into Arrow records; contentType empty means sniff.
func Decode(value []byte, contentType string, mem memory.Allocator) (*arrow.Schema, []arrow.Record, error) {
	return codec.Decode(value, contentType, mem)
}

// DecodeJSON is codec.DecodeJSON: JSON objects into one record.
func DecodeJSON(value []byte, mem memory.Allocator) (arrow.Record, error) {
	return codec.DecodeJSON(value, mem)
}

// EncodeArrow is codec.EncodeArrow: one record as an Arrow IPC stream.
func EncodeArrow(rec arrow.Record, mem memory.Allocator) ([]byte, error) {
	return codec.EncodeArrow(rec, mem)
}

// EncodeJSON is codec.EncodeJSON: one record as JSON lines.
func EncodeJSON(rec arrow.Record) ([]byte, error) { return codec.EncodeJSON(rec) }

// NewDecoder returns the pipeline decoder for Kafka messages: the value's
// format comes from its content-type header, else it is sniffed (Decode).
func NewDecoder(mem memory.Allocator) pipeline.Decoder {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return func(env *pipeline.Envelope) (*pipeline.Batch, error) {
		ct, _ := env.Header(HeaderContentType)
		schema, recs, err := Decode(env.Value, string(ct), mem)
		if err != nil {
			return nil, err
		}
		return &pipeline.Batch{Env: env, Schema: schema, Records: recs}, nil
	}
}

package kafka

import (
	"errors"
	"strings"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/pipeline"
)

// HeaderContentType is the header naming a message value's format
// (ARCHITECTURE.md, Formats: "the content type travels in a header").
const HeaderContentType = "content-type"

// Output formats (--output-format). FormatAuto encodes each record output
// as its content-type header asks (a stage answering a message sets the
// message's own, Batch.ContentType), and as Arrow IPC when it has none.
const (
	FormatAuto  = "auto"
	FormatArrow = "arrow"
	FormatJSON  = "json"
)

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
// format comes from its content-type header (contentTypeOf), else it is
// sniffed (codec.Decode). A tombstone (null value) and an empty value are
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
		ct := ContentTypeOf(env.Headers)
		var err error
		if ct == "" {
			ct, err = codec.Sniff(env.Value)
		} else {
			ct, err = codec.NormalizeContentType(ct)
		}
		if err != nil {
			return nil, err
		}
		schema, recs, err := codec.Decode(env.Value, ct, mem)
		if err != nil {
			return nil, err
		}
		return &pipeline.Batch{Env: env, Schema: schema, Records: recs, ContentType: ct}, nil
	}
}

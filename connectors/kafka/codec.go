package kafka

import (
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/pipeline"
)

// HeaderContentType is the header naming a message value's format
// (ARCHITECTURE.md, Formats: "the content type travels in a header").
const HeaderContentType = "content-type"

// Output formats (--output-format).
const (
	FormatArrow = "arrow"
	FormatJSON  = "json"
)

// NewDecoder returns the pipeline decoder for Kafka messages: the value's
// format comes from its content-type header, else it is sniffed
// (codec.Decode).
func NewDecoder(mem memory.Allocator) pipeline.Decoder {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return func(env *pipeline.Envelope) (*pipeline.Batch, error) {
		ct, _ := env.Header(HeaderContentType)
		schema, recs, err := codec.Decode(env.Value, string(ct), mem)
		if err != nil {
			return nil, err
		}
		return &pipeline.Batch{Env: env, Schema: schema, Records: recs}, nil
	}
}

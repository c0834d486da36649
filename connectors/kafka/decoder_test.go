package kafka

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/pipeline"
)

// TestDecoderHeaderCase (reliability issue, item 8): the content-type
// header is found whatever the case of its key. Here the header names an
// unsupported type for a value that would sniff as JSON: a header that is
// not found would let the value decode.
func TestDecoderHeaderCase(t *testing.T) {
	dec := NewDecoder(memory.DefaultAllocator)
	for _, key := range []string{"content-type", "Content-Type", "CONTENT-TYPE"} {
		env := &pipeline.Envelope{Value: []byte(`{"a": 1}`), Headers: []pipeline.Header{{Key: key, Value: []byte("text/csv")}}}
		b, err := dec(env)
		if err == nil {
			b.Release()
			t.Fatalf("header %q ignored: the value was sniffed", key)
		}
		if !strings.Contains(err.Error(), `unsupported content-type "text/csv"`) {
			t.Fatalf("header %q: %v", key, err)
		}
	}
	env := &pipeline.Envelope{Value: []byte(`{"a": 1}`), Headers: []pipeline.Header{{Key: "Content-Type", Value: []byte("Application/JSON; charset=utf-8")}}}
	b, err := dec(env)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
}

// TestDecoderTombstoneAndEmpty (reliability issue, item 8): a tombstone
// (null value) and an empty value are refused with different reasons.
func TestDecoderTombstoneAndEmpty(t *testing.T) {
	dec := NewDecoder(memory.DefaultAllocator)
	ct := []pipeline.Header{{Key: HeaderContentType, Value: []byte(codec.ContentTypeJSON)}}
	_, errNull := dec(&pipeline.Envelope{Value: nil, Headers: ct})
	_, errEmpty := dec(&pipeline.Envelope{Value: []byte{}, Headers: ct})
	if errNull == nil || !strings.Contains(errNull.Error(), "tombstone") {
		t.Fatalf("null value: %v", errNull)
	}
	if errEmpty == nil || !strings.Contains(errEmpty.Error(), "empty value") {
		t.Fatalf("empty value: %v", errEmpty)
	}
}

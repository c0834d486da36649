package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
)

// Header is a message header (Kafka headers are ordered key/value pairs).
type Header struct {
	Key   string
	Value []byte
}

// Header keys the runtime writes on dead letters.
const (
	HeaderDLQReason       = "forestd-dlq-reason"
	HeaderDLQStage        = "forestd-dlq-stage"
	HeaderSourceTopic     = "forestd-source-topic"
	HeaderSourcePartition = "forestd-source-partition"
	HeaderSourceOffset    = "forestd-source-offset"
)

// maxReasonBytes bounds the reason header of a dead letter.
const maxReasonBytes = 2048

// Envelope is one source message travelling through the runtime.
type Envelope struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	// Time is the message's timestamp (zero when unknown); the end-to-end
	// latency metric measures from it.
	Time time.Time
	// Ack, when set, is completed once every output derived from the
	// message has been acknowledged by the sink.
	Ack *Ack
	// Pinned is set when the message is submitted, by its route's Pin hook:
	// the score route pins the model current at that moment, so that the
	// messages of a partition, submitted in offset order, are scored by
	// non-decreasing model versions however the workers interleave.
	Pinned any
}

// Source is the message's coordinates as "topic/partition/offset", the
// source column of everything derived from it (ARCHITECTURE.md, Formats).
func (e *Envelope) Source() string {
	return e.Topic + "/" + strconv.FormatInt(int64(e.Partition), 10) + "/" + strconv.FormatInt(e.Offset, 10)
}

// Header returns the value of the last header named key.
func (e *Envelope) Header(key string) ([]byte, bool) {
	for i := len(e.Headers) - 1; i >= 0; i-- {
		if e.Headers[i].Key == key {
			return e.Headers[i].Value, true
		}
	}
	return nil, false
}

// Batch is the decoded content of one message: Arrow records sharing a
// schema. The runtime owns the records of the batches it passes to stages and
// releases them after the stage chain ends; a stage that keeps a record past
// Process must Retain it.
type Batch struct {
	Env     *Envelope
	Schema  *arrow.Schema
	Records []arrow.Record
}

// Rows is the number of rows in the batch.
func (b *Batch) Rows() int64 {
	var n int64
	for _, r := range b.Records {
		n += r.NumRows()
	}
	return n
}

// Release releases the batch's records.
func (b *Batch) Release() {
	for _, r := range b.Records {
		r.Release()
	}
	b.Records = nil
}

// Output is one thing to deliver to a sink stream: an Arrow record, which
// the sink encodes, or raw bytes (a dead letter carries the original
// message). The runtime releases Record after the sink's Write returns.
type Output struct {
	// Stream is the logical destination ("predictions", "dlq", ...), which
	// the sink maps onto a topic.
	Stream  string
	Key     []byte
	Headers []Header
	Record  arrow.Record
	Raw     []byte
}

// Rows is the number of rows the output carries (0 for raw payloads).
func (o *Output) Rows() int64 {
	if o.Record == nil {
		return 0
	}
	return o.Record.NumRows()
}

// ErrBadInput marks a problem with the input itself (undecodable bytes, a
// schema without the model's features, a wrong-typed column): retrying cannot
// help, so the message is quarantined in the dead-letter stream with the
// reason in its headers (ARCHITECTURE.md, The daemon's promises).
var ErrBadInput = errors.New("bad input")

// ErrPermanent marks a sink failure that retrying cannot fix (e.g. an output
// larger than the broker accepts); the runtime replaces the message's outputs
// with a dead letter.
var ErrPermanent = errors.New("permanent failure")

// ErrInternal marks a stage or decoder that panicked: the runtime recovers
// the panic at the stage boundary and quarantines the message with the
// reason "internal error: …" (never retried: the same input would panic
// again), so that no input can stop the daemon or stall its partition.
var ErrInternal = errors.New("internal error")

// BadInput wraps err as ErrBadInput.
func BadInput(err error) error {
	if err == nil || errors.Is(err, ErrBadInput) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrBadInput, err)
}

// Decoder turns a message into a batch. Any error it returns quarantines the
// message (a decoder error is always about the input).
type Decoder func(env *Envelope) (*Batch, error)

// Stage is one operator step of a route (score, train, analyze, select).
type Stage interface {
	// Name labels metrics, logs and dead letters.
	Name() string
	// Process handles one batch and returns the outputs to deliver and the
	// batch for the next stage of the route (nil ends the route; returning
	// in itself passes it on unchanged). Records of a new next batch and of
	// outputs become the runtime's, which releases them. An error wrapping
	// ErrBadInput quarantines the message; any other error is retried with
	// backoff until it succeeds or the runtime stops.
	Process(ctx context.Context, in *Batch) (outs []Output, next *Batch, err error)
}

// Sink delivers outputs. Write returns nil only when the destination has
// acknowledged every output (for Kafka: acks=all); an error wrapping
// ErrPermanent is not retried.
type Sink interface {
	Write(ctx context.Context, outs []Output) error
}

// Route sends the messages of one source topic through stages in order.
type Route struct {
	Topic  string
	Stages []Stage
	// Pin, when set, is called as each message is submitted and its result
	// stored in Envelope.Pinned.
	Pin func() any
}

// DeadLetter builds the dead-letter output for env: the original key, value
// and headers, plus the reason, the stage that refused it and the source
// coordinates as headers.
func DeadLetter(stream string, env *Envelope, stage string, reason error) Output {
	msg := reason.Error()
	if len(msg) > maxReasonBytes {
		msg = msg[:maxReasonBytes]
	}
	hs := make([]Header, 0, len(env.Headers)+5)
	for _, h := range env.Headers {
		switch h.Key {
		case HeaderDLQReason, HeaderDLQStage, HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset:
			continue // a re-quarantined message keeps only the latest reason
		}
		hs = append(hs, h)
	}
	hs = append(hs,
		Header{HeaderDLQReason, []byte(msg)},
		Header{HeaderDLQStage, []byte(stage)},
		Header{HeaderSourceTopic, []byte(env.Topic)},
		Header{HeaderSourcePartition, []byte(strconv.FormatInt(int64(env.Partition), 10))},
		Header{HeaderSourceOffset, []byte(strconv.FormatInt(env.Offset, 10))},
	)
	return Output{Stream: stream, Key: env.Key, Headers: hs, Raw: env.Value}
}

package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// Header keys of a dead letter trimmed to fit the dead-letter topic's
// message limit (FitDeadLetter).
const (
	// HeaderDLQTrimmed lists what was cut, e.g. "value" or
	// "value,headers,key".
	HeaderDLQTrimmed = "forestd-dlq-trimmed"
	// HeaderDLQOriginalBytes is the size of the original value in bytes.
	HeaderDLQOriginalBytes = "forestd-dlq-original-bytes"
	// HeaderDLQValueSHA256 is the hex SHA-256 of the original value.
	HeaderDLQValueSHA256 = "forestd-dlq-value-sha256"
)

// maxReasonBytes bounds the reason header of a dead letter.
const maxReasonBytes = 2048

// deadLetterOverhead is what FitDeadLetter reserves beyond the key, the
// value and the headers' keys and values for the framing of one record in
// its own record batch (a 61-byte batch header, the record's varints and
// one length per header).
const deadLetterOverhead = 512

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
	if i := lastHeader(e.Headers, key); i >= 0 {
		return e.Headers[i].Value, true
	}
	return nil, false
}

// lastHeader returns the index of the last header named key, or -1.
func lastHeader(hs []Header, key string) int {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return i
		}
	}
	return -1
}

// Batch is the decoded content of one message: Arrow records sharing a
// schema. The runtime owns the records of the batches it passes to stages and
// releases them after the stage chain ends; a stage that keeps a record past
// Process must Retain it.
type Batch struct {
	Env     *Envelope
	Schema  *arrow.Schema
	Records []arrow.Record
	// ContentType is the format the decoder read the value in, as the
	// transport names it (a MIME type for Kafka; empty: not said), so that
	// a stage can answer a message in its own format.
	ContentType string
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

// IsDeadLetter reports whether o is a dead letter of the given stream: a
// raw payload (the message as it came) on the dead-letter stream.
func (o *Output) IsDeadLetter(stream string) bool {
	return o.Stream == stream && o.Record == nil
}

// header returns the value of the last header named key.
func (o *Output) header(key string) ([]byte, bool) {
	if i := lastHeader(o.Headers, key); i >= 0 {
		return o.Headers[i].Value, true
	}
	return nil, false
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
		case HeaderDLQReason, HeaderDLQStage, HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset,
			HeaderDLQTrimmed, HeaderDLQOriginalBytes, HeaderDLQValueSHA256:
			continue // a re-quarantined message keeps only the latest reason and description
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

// deadLetterSize is the size a raw output counts against a message limit:
// key, value, the headers' keys and values, and deadLetterOverhead.
func deadLetterSize(o Output) int {
	n := len(o.Key) + len(o.Raw) + deadLetterOverhead
	for _, h := range o.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// ownHeader reports whether a dead letter's header was written by forestd
// (reason, stage, source coordinates, trimming) rather than copied from the
// original message.
func ownHeader(k string) bool {
	return strings.HasPrefix(k, "forestd-dlq-") || strings.HasPrefix(k, "forestd-source-")
}

// FitDeadLetter returns the dead letter o cut to count at most limit bytes
// (key, value, the headers' keys and values, and 512 bytes for the
// record's framing), so that it fits the dead-letter topic's message limit
// and its offset can commit. It cuts, in this order and only as far as
// needed: the value (keeping its first bytes), the headers copied from the
// original message, the key, and the reason. A cut letter carries
// HeaderDLQTrimmed (what was cut), HeaderDLQOriginalBytes and
// HeaderDLQValueSHA256 (of the original value), so that the original can be
// told apart and matched with the source message at its source coordinates;
// fitting a fitted letter again (to a smaller limit) keeps those. trimmed
// reports whether anything was cut; the error says that even the letter's
// own headers exceed limit. An empty but non-nil value stays non-nil.
func FitDeadLetter(o Output, limit int) (fitted Output, trimmed bool, err error) {
	if deadLetterSize(o) <= limit {
		return o, false, nil
	}
	f := Output{Stream: o.Stream, Key: o.Key, Raw: o.Raw, Headers: append([]Header(nil), o.Headers...)}
	cut := map[string]bool{}
	described := false
	for _, h := range f.Headers {
		switch h.Key {
		case HeaderDLQOriginalBytes:
			described = true
		case HeaderDLQTrimmed:
			for _, c := range strings.Split(string(h.Value), ",") {
				cut[c] = true
			}
		}
	}
	if !described {
		sum := sha256.Sum256(o.Raw)
		f.Headers = append(f.Headers,
			Header{HeaderDLQOriginalBytes, []byte(strconv.Itoa(len(o.Raw)))},
			Header{HeaderDLQValueSHA256, []byte(hex.EncodeToString(sum[:]))},
			Header{HeaderDLQTrimmed, nil})
	}
	// size the trimmed header for its longest value, so that writing the
	// final one never grows the letter
	const longest = "value,headers,key,reason"
	setHeader(&f, HeaderDLQTrimmed, []byte(longest))
	over := func() int { return deadLetterSize(f) - limit }
	// the value: keep its first bytes
	if over() > 0 && len(f.Raw) > 0 {
		f.Raw = f.Raw[:max(len(f.Raw)-over(), 0)]
		cut["value"] = true
	}
	// the headers copied from the original message
	if over() > 0 {
		own := f.Headers[:0:0]
		for _, h := range f.Headers {
			if ownHeader(h.Key) {
				own = append(own, h)
			}
		}
		if len(own) < len(f.Headers) {
			f.Headers = own
			cut["headers"] = true
		}
	}
	// the key, then the reason
	if over() > 0 && len(f.Key) > 0 {
		f.Key = f.Key[:max(len(f.Key)-over(), 0)]
		cut["key"] = true
	}
	if over() > 0 {
		for i, h := range f.Headers {
			if h.Key == HeaderDLQReason && len(h.Value) > 0 {
				f.Headers[i].Value = h.Value[:max(len(h.Value)-over(), 0)]
				cut["reason"] = true
			}
		}
	}
	if over() > 0 {
		return o, false, fmt.Errorf("a dead letter needs %d bytes for its own headers, above the %d-byte limit", deadLetterSize(f), limit)
	}
	var names []string
	for _, c := range []string{"value", "headers", "key", "reason"} {
		if cut[c] {
			names = append(names, c)
		}
	}
	setHeader(&f, HeaderDLQTrimmed, []byte(strings.Join(names, ",")))
	return f, true, nil
}

// setHeader sets the value of the last header named key.
func setHeader(o *Output, key string, v []byte) {
	if i := lastHeader(o.Headers, key); i >= 0 {
		o.Headers[i].Value = v
	}
}

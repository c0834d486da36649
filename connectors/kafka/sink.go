package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/pipeline"
)

// headerPart marks one part of an output record that was split to fit the
// broker's message limit: "i/n".
const headerPart = "forestd-part"

// DefaultMaxMessageBytes is the default bound on one produced message,
// Kafka's default message.max.bytes (1 MiB) minus room for batch framing.
const DefaultMaxMessageBytes = 1000000

// SinkOptions configure a producer sink.
type SinkOptions struct {
	Client ClientOptions
	// Topics maps output streams to topics; an output whose stream is not
	// mapped is a permanent error.
	Topics map[string]string
	// Format of record outputs: "arrow" (Arrow IPC stream, default),
	// "json" (JSON lines) or "auto" (FormatAuto: as each output's
	// content-type header asks, Arrow IPC when it has none).
	Format string
	// MaxMessageBytes bounds one message value; a record that encodes larger
	// is split by rows into several messages (default DefaultMaxMessageBytes).
	MaxMessageBytes int
	// Linger is how long the producer waits to batch messages (default 2 ms).
	Linger time.Duration
	// WriteTimeout bounds one produce request (default 10 s).
	WriteTimeout time.Duration
	// DeadLetterStream is the output stream of dead letters (default
	// pipeline.DefaultDeadLetterStream).
	DeadLetterStream string
	// MaxDeadLetterBytes bounds one dead letter as pipeline.FitDeadLetter
	// counts it (default MaxMessageBytes, at least 4096): a larger one is cut to fit
	// (pipeline.FitDeadLetter) so that it can always be stored and its
	// offset commit. When the dead-letter topic refuses a letter as too
	// large anyway (its max.message.bytes is smaller), the letter is cut
	// to half the size and tried again, down to its headers alone.
	MaxDeadLetterBytes int
	Mem                memory.Allocator
	Logger             *slog.Logger
	// Metrics, when set, counts trimmed dead letters.
	Metrics *pipeline.Metrics
}

// Sink produces outputs with acks=all: Write returns only when every
// in-sync replica has the messages.
type Sink struct {
	opts SinkOptions
	w    *kafkago.Writer
	c    *client
}

// NewSink checks the options and creates the producer (no connection is
// made until the first write).
func NewSink(opts SinkOptions) (*Sink, error) {
	c, err := opts.Client.build()
	if err != nil {
		return nil, err
	}
	switch opts.Format {
	case "":
		opts.Format = FormatArrow
	case FormatAuto, FormatArrow, FormatJSON:
	default:
		return nil, fmt.Errorf("kafka: output format %q is not auto, arrow or json", opts.Format)
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxMessageBytes < 1024 {
		return nil, fmt.Errorf("kafka: max message bytes %d is below 1024", opts.MaxMessageBytes)
	}
	if opts.DeadLetterStream == "" {
		opts.DeadLetterStream = pipeline.DefaultDeadLetterStream
	}
	if opts.MaxDeadLetterBytes == 0 {
		opts.MaxDeadLetterBytes = max(opts.MaxMessageBytes, minDeadLetterBytes)
	}
	if opts.MaxDeadLetterBytes < minDeadLetterBytes {
		return nil, fmt.Errorf("kafka: max dead-letter bytes %d is below %d", opts.MaxDeadLetterBytes, minDeadLetterBytes)
	}
	if opts.Linger == 0 {
		opts.Linger = 2 * time.Millisecond
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Linger < 0 || opts.WriteTimeout < 0 {
		return nil, errors.New("kafka: negative sink timeout")
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(c.brokers...),
		Balancer:     &kafkago.Hash{},
		RequiredAcks: kafkago.RequireAll,
		MaxAttempts:  3, WriteBackoffMin: 50 * time.Millisecond, WriteBackoffMax: 500 * time.Millisecond,
		BatchSize: 1000, BatchBytes: int64(max(opts.MaxMessageBytes, opts.MaxDeadLetterBytes)) + 64<<10, BatchTimeout: opts.Linger,
		WriteTimeout: opts.WriteTimeout, ReadTimeout: opts.WriteTimeout,
		Transport: c.transport,
		ErrorLogger: kafkago.LoggerFunc(func(f string, a ...any) {
			opts.Logger.Debug(fmt.Sprintf(f, a...), "component", "producer")
		}),
	}
	return &Sink{opts: opts, w: w, c: c}, nil
}

// format is the encoding of one record output: the sink's Format, or
// under FormatAuto the one its content-type header names (JSON and JSON
// lines as JSON lines; none, Arrow or an unknown type as Arrow IPC).
func (s *Sink) format(o *pipeline.Output) string {
	if s.opts.Format != FormatAuto {
		return s.opts.Format
	}
	ct, err := codec.NormalizeContentType(ContentTypeOf(o.Headers))
	if err == nil && (ct == codec.ContentTypeJSON || ct == codec.ContentTypeNDJSON) {
		return FormatJSON
	}
	return FormatArrow
}

// contentType is the content type of records encoded in format.
func contentType(format string) string {
	if format == FormatJSON {
		return codec.ContentTypeNDJSON
	}
	return codec.ContentTypeArrow
}

// encode encodes one record in format.
func (s *Sink) encode(rec arrow.Record, format string) ([]byte, error) {
	if format == FormatJSON {
		return codec.EncodeJSON(rec)
	}
	return codec.EncodeArrow(rec, s.opts.Mem)
}

// encodeFitting encodes rec, splitting it by rows into parts that each fit
// MaxMessageBytes.
func (s *Sink) encodeFitting(rec arrow.Record, format string) ([][]byte, error) {
	b, err := s.encode(rec, format)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", pipeline.ErrPermanent, err)
	}
	if len(b) <= s.opts.MaxMessageBytes {
		return [][]byte{b}, nil
	}
	n := rec.NumRows()
	if n <= 1 {
		return nil, fmt.Errorf("%w: one output row encodes to %d bytes, above the %d-byte message limit", pipeline.ErrPermanent, len(b), s.opts.MaxMessageBytes)
	}
	var out [][]byte
	for _, r := range [][2]int64{{0, n / 2}, {n / 2, n}} {
		part := rec.NewSlice(r[0], r[1])
		bs, err := s.encodeFitting(part, format)
		part.Release()
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}

// minDeadLetterBytes is the smallest dead-letter limit: room for a dead
// letter's own headers (a reason of up to 2 KiB, the source coordinates and
// the trimming description) and the 512 bytes of framing
// pipeline.FitDeadLetter counts.
const minDeadLetterBytes = 4096

// Write produces outs and waits for acks=all. Outputs that fail are
// reported in a pipeline.PartialWriteError so that only they are retried;
// an output that cannot be produced at all (no topic for its stream, a row
// larger than the message limit, a message the topic refuses as too large)
// is a pipeline.ErrPermanent error. Dead letters are cut to fit (see
// SinkOptions.MaxDeadLetterBytes).
func (s *Sink) Write(ctx context.Context, outs []pipeline.Output) error {
	limit := s.opts.MaxDeadLetterBytes
	for {
		fitted, trimmed, err := s.fitDeadLetters(outs, limit)
		if err != nil {
			return err
		}
		err = s.write(ctx, fitted)
		if err == nil && trimmed > 0 && s.opts.Metrics != nil {
			s.opts.Metrics.DeadLettersTrimmed.Add(float64(trimmed))
		}
		if err == nil || !tooLarge(err) || !s.hasDeadLetter(outs) || limit <= minDeadLetterBytes {
			return err
		}
		limit = max(limit/2, minDeadLetterBytes)
		s.opts.Logger.Warn("the dead-letter topic refused a dead letter as too large; cutting it smaller",
			"stream", s.opts.DeadLetterStream, "limit", limit, "err", err)
	}
}

func (s *Sink) hasDeadLetter(outs []pipeline.Output) bool {
	for i := range outs {
		if outs[i].IsDeadLetter(s.opts.DeadLetterStream) {
			return true
		}
	}
	return false
}

// fitDeadLetters returns outs with every dead letter fitted to limit (a
// copy when one changes) and the number cut.
func (s *Sink) fitDeadLetters(outs []pipeline.Output, limit int) ([]pipeline.Output, int, error) {
	out, n := outs, 0
	for i := range outs {
		if !outs[i].IsDeadLetter(s.opts.DeadLetterStream) {
			continue
		}
		f, trimmed, err := pipeline.FitDeadLetter(outs[i], limit)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", pipeline.ErrPermanent, err)
		}
		if !trimmed {
			continue
		}
		if n == 0 {
			out = append([]pipeline.Output(nil), outs...)
		}
		out[i] = f
		n++
	}
	return out, n, nil
}

// tooLarge reports whether err says a message is larger than the producer
// or the topic accepts.
func tooLarge(err error) bool {
	var local kafkago.MessageTooLargeError
	return errors.As(err, &local) || errors.Is(err, kafkago.MessageSizeTooLarge) || errors.Is(err, kafkago.RecordListTooLarge)
}

func (s *Sink) write(ctx context.Context, outs []pipeline.Output) error {
	var msgs []kafkago.Message
	var owner []int // message → output index
	for i := range outs {
		o := &outs[i]
		topic, ok := s.opts.Topics[o.Stream]
		if !ok {
			return fmt.Errorf("%w: no topic for output stream %q", pipeline.ErrPermanent, o.Stream)
		}
		hs := make([]kafkago.Header, 0, len(o.Headers)+2)
		for _, h := range o.Headers {
			if o.Record != nil && strings.EqualFold(h.Key, HeaderContentType) {
				continue // a record's content type is the one it is encoded in, below
			}
			hs = append(hs, kafkago.Header{Key: h.Key, Value: h.Value})
		}
		if o.Record == nil {
			if o.Stream != s.opts.DeadLetterStream && len(o.Raw) > s.opts.MaxMessageBytes+64<<10 {
				return fmt.Errorf("%w: %d-byte payload for %s is above the message limit", pipeline.ErrPermanent, len(o.Raw), topic)
			}
			msgs = append(msgs, kafkago.Message{Topic: topic, Key: o.Key, Value: o.Raw, Headers: hs})
			owner = append(owner, i)
			continue
		}
		format := s.format(o)
		parts, err := s.encodeFitting(o.Record, format)
		if err != nil {
			return err
		}
		hs = append(hs, kafkago.Header{Key: HeaderContentType, Value: []byte(contentType(format))})
		for k, p := range parts {
			h := hs
			if len(parts) > 1 {
				h = append(append([]kafkago.Header(nil), hs...), kafkago.Header{Key: headerPart, Value: []byte(strconv.Itoa(k) + "/" + strconv.Itoa(len(parts)))})
			}
			msgs = append(msgs, kafkago.Message{Topic: topic, Key: o.Key, Value: p, Headers: h})
			owner = append(owner, i)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	err := s.w.WriteMessages(ctx, msgs...)
	if err == nil {
		return nil
	}
	var we kafkago.WriteErrors
	if errors.As(err, &we) && len(we) == len(msgs) {
		failed := map[int]bool{}
		var first error
		for k, e := range we {
			if e != nil {
				failed[owner[k]] = true
				if first == nil {
					first = e
				}
			}
		}
		if tooLarge(first) {
			return fmt.Errorf("%w: %w", pipeline.ErrPermanent, first)
		}
		pe := &pipeline.PartialWriteError{Err: first}
		for i := range outs {
			if failed[i] {
				pe.Failed = append(pe.Failed, i)
			}
		}
		return pe
	}
	if tooLarge(err) {
		return fmt.Errorf("%w: %w", pipeline.ErrPermanent, err)
	}
	return err
}

// Close flushes and closes the producer.
func (s *Sink) Close() error {
	err := s.w.Close()
	s.c.close()
	return err
}

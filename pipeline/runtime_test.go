package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var fastRetry = Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Multiplier: 2}

// intDecoder decodes a value "n" into a one-column record of n rows; any
// other value is undecodable.
func intDecoder(mem memory.Allocator) Decoder {
	return func(env *Envelope) (*Batch, error) {
		n, err := strconv.Atoi(string(env.Value))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("not a row count: %q", env.Value)
		}
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Append(int64(i))
		}
		col := b.NewArray()
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return &Batch{Env: env, Schema: schema, Records: []arrow.Record{array.NewRecord(schema, []arrow.Array{col}, int64(n))}}, nil
	}
}

// echoStage emits each input record to stream "out"; it fails with a bad
// input error on 0-row batches, and transiently `flaky` times in total.
type echoStage struct {
	flaky atomic.Int32
}

func (s *echoStage) Name() string { return "echo" }
func (s *echoStage) Process(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
	if s.flaky.Add(-1) >= 0 {
		return nil, nil, errors.New("transient")
	}
	if in.Rows() == 0 {
		return nil, nil, BadInput(errors.New("empty batch"))
	}
	var outs []Output
	for _, r := range in.Records {
		r.Retain()
		outs = append(outs, Output{Stream: "out", Key: []byte(in.Env.Source()), Record: r})
	}
	return outs, in, nil
}

// memSink records what it was asked to write; fail decides per call.
type memSink struct {
	mu    sync.Mutex
	got   []Output
	calls int
	fail  func(call int, outs []Output) error
}

func (s *memSink) Write(ctx context.Context, outs []Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		if err := s.fail(s.calls, outs); err != nil {
			return err
		}
	}
	for _, o := range outs {
		s.got = append(s.got, Output{Stream: o.Stream, Key: o.Key, Headers: o.Headers, Raw: o.Raw})
		if o.Record != nil {
			s.got[len(s.got)-1].Raw = []byte(strconv.FormatInt(o.Record.NumRows(), 10))
		}
	}
	return nil
}

func (s *memSink) outputs() []Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Output(nil), s.got...)
}

func newTestRuntime(t *testing.T, mem memory.Allocator, st Stage, sink Sink, opts Options) *Runtime {
	t.Helper()
	if opts.Retry == (Backoff{}) {
		opts.Retry = fastRetry
	}
	r, err := New(opts, intDecoder(mem), []Route{{Topic: "in", Stages: []Stage{st}}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// submitAll tracks and submits values as offsets 0.. of partition 0.
func submitAll(t *testing.T, ctx context.Context, r *Runtime, tr *Tracker, values ...string) {
	t.Helper()
	for i, v := range values {
		a, err := tr.Track(ctx, tp0, int64(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Submit(ctx, &Envelope{Topic: "in", Partition: 0, Offset: int64(i), Value: []byte(v), Ack: a,
			Headers: []Header{{"content-type", []byte("test")}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func header(o Output, k string) string {
	for _, h := range o.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

func TestRuntimeDeliversAndCommits(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sink := &memSink{}
	st := &echoStage{}
	st.flaky.Store(2) // two transient failures, retried
	r := newTestRuntime(t, mem, st, sink, Options{Workers: 3})
	ctx := context.Background()
	r.Start(ctx)
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	submitAll(t, ctx, r, tr, "3", "garbage", "0", "5")
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	wantCommit(t, tr, tp0, 4)
	outs := sink.outputs()
	byKey := map[string]Output{}
	dlq := map[string]Output{}
	for _, o := range outs {
		if o.Stream == "dlq" {
			dlq[header(o, HeaderSourceOffset)] = o
		} else {
			byKey[string(o.Key)] = o
		}
	}
	if len(byKey) != 2 || string(byKey["in/0/0"].Raw) != "3" || string(byKey["in/0/3"].Raw) != "5" {
		t.Fatalf("outputs %v", byKey)
	}
	if len(dlq) != 2 {
		t.Fatalf("dead letters %v", dlq)
	}
	d := dlq["1"]
	if string(d.Raw) != "garbage" || header(d, HeaderDLQStage) != "decode" || header(d, HeaderSourceTopic) != "in" ||
		header(d, HeaderSourcePartition) != "0" || header(d, "content-type") != "test" || header(d, HeaderDLQReason) == "" {
		t.Fatalf("decode dead letter %+v", d)
	}
	if d := dlq["2"]; header(d, HeaderDLQStage) != "echo" || header(d, HeaderDLQReason) != "bad input: empty batch" {
		t.Fatalf("stage dead letter reason %q stage %q", header(d, HeaderDLQReason), header(d, HeaderDLQStage))
	}
	m := r.Metrics()
	if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("decode")); v != 1 {
		t.Fatalf("decode dead letters metric %v", v)
	}
	if v := testutil.ToFloat64(m.RowsOut.WithLabelValues("out")); v != 8 {
		t.Fatalf("rows out %v", v)
	}
	if v := testutil.ToFloat64(m.Retries.WithLabelValues("echo")); v != 2 {
		t.Fatalf("stage retries %v", v)
	}
	if v := testutil.ToFloat64(m.InFlightBytes); v != 0 {
		t.Fatalf("in-flight bytes %v after drain", v)
	}
}

func TestRuntimeSinkRetriesOnlyFailedOutputs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var sizes []int
	sink := &memSink{fail: func(call int, outs []Output) error {
		sizes = append(sizes, len(outs))
		if call == 1 {
			return &PartialWriteError{Failed: []int{1}, Err: errors.New("leader not available")}
		}
		if call == 2 {
			return errors.New("broker down") // whole retry fails again
		}
		return nil
	}}
	two := &twoOutputs{}
	r, err := New(Options{Workers: 1, Retry: fastRetry}, intDecoder(mem), []Route{{Topic: "in", Stages: []Stage{two}}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 10)
	submitAll(t, context.Background(), r, tr, "2")
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fmt.Sprint(sizes) != "[2 1 1]" {
		t.Fatalf("write sizes %v, want [2 1 1] (only the failed output is retried)", sizes)
	}
	wantCommit(t, tr, tp0, 1)
}

type twoOutputs struct{}

func (twoOutputs) Name() string { return "two" }
func (twoOutputs) Process(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
	r := in.Records[0]
	r.Retain()
	r.Retain()
	return []Output{{Stream: "a", Record: r}, {Stream: "b", Record: r}}, nil, nil
}

func TestRuntimePermanentSinkFailureQuarantines(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sink := &memSink{fail: func(call int, outs []Output) error {
		if outs[0].Stream == "out" {
			return fmt.Errorf("%w: message too large", ErrPermanent)
		}
		return nil
	}}
	r := newTestRuntime(t, mem, &echoStage{}, sink, Options{Workers: 1})
	r.Start(context.Background())
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 10)
	submitAll(t, context.Background(), r, tr, "4")
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	outs := sink.outputs()
	if len(outs) != 1 || outs[0].Stream != "dlq" || header(outs[0], HeaderDLQStage) != "sink" {
		t.Fatalf("outputs %+v", outs)
	}
	wantCommit(t, tr, tp0, 1)
}

func TestRuntimeHardStopLeavesUncommitted(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sink := &memSink{fail: func(int, []Output) error { return errors.New("broker unreachable") }}
	r := newTestRuntime(t, mem, &echoStage{}, sink, Options{Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	r.Start(ctx)
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 10)
	submitAll(t, context.Background(), r, tr, "1", "2")
	time.Sleep(30 * time.Millisecond) // a few failed attempts
	cancel()
	r.Close()
	if c := tr.Committable(); c != nil {
		t.Fatalf("committable %v although nothing was delivered", c)
	}
	if p := tr.pendingOffsets()[tp0]; len(p) != 2 {
		t.Fatalf("pending %v", p)
	}
}

func TestRuntimeBackpressure(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	release := make(chan struct{})
	sink := &memSink{fail: func(int, []Output) error { <-release; return nil }}
	r := newTestRuntime(t, mem, &echoStage{}, sink, Options{Workers: 1, MaxInFlightBytes: 4})
	r.Start(context.Background())
	// "1000" is 4 bytes: the budget admits one such message at a time
	ctx := context.Background()
	if err := r.Submit(ctx, &Envelope{Topic: "in", Value: []byte("1000")}); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := r.Submit(short, &Envelope{Topic: "in", Offset: 1, Value: []byte("1000")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second submit over budget: %v", err)
	}
	if v := testutil.ToFloat64(r.Metrics().InFlightBytes); v != 4 {
		t.Fatalf("in-flight bytes %v, want 4", v)
	}
	close(release)
	if err := r.Submit(ctxTimeout(t, 5*time.Second), &Envelope{Topic: "in", Offset: 2, Value: []byte("1000")}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if n := len(sink.outputs()); n != 2 {
		t.Fatalf("%d outputs", n)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Multiplier: 2}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, w := range want {
		if d := b.delay(i, nil); d != w*time.Millisecond {
			t.Fatalf("delay %d = %v, want %v", i, d, w*time.Millisecond)
		}
	}
	b.MaxAttempts = 3
	calls := 0
	err := Backoff{Initial: time.Microsecond, Max: time.Microsecond, Multiplier: 1, MaxAttempts: 3}.Do(context.Background(), func() error { calls++; return errors.New("x") }, nil, nil)
	if err == nil || calls != 3 {
		t.Fatalf("calls %d err %v", calls, err)
	}
	calls = 0
	err = fastRetry.Do(context.Background(), func() error { calls++; return ErrBadInput }, func(e error) bool { return !errors.Is(e, ErrBadInput) }, nil)
	if !errors.Is(err, ErrBadInput) || calls != 1 {
		t.Fatalf("non-retryable: calls %d err %v", calls, err)
	}
	// stopped by its context: both errors wrapped, on one line
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	refused := errors.New("connection refused")
	err = fastRetry.Do(ctx, func() error { return refused }, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, refused) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("retry stopped by its context: %q", err)
	}
	for _, bad := range []Backoff{{Initial: -1}, {Initial: 2, Max: 1}, {Multiplier: 0.5}, {Jitter: 2}, {MaxAttempts: -1}} {
		if bad.Validate() == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestRuntimePin: the route's Pin runs at submission, in submission order,
// and its value reaches the stages.
func TestRuntimePin(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var n atomic.Int64
	seen := make(chan [2]int64, 10)
	st := stageFunc(func(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
		seen <- [2]int64{in.Env.Offset, in.Env.Pinned.(int64)}
		return nil, nil, nil
	})
	r, err := New(Options{Workers: 3, Retry: fastRetry}, intDecoder(mem),
		[]Route{{Topic: "in", Stages: []Stage{st}, Pin: func() any { return n.Add(1) }}}, &memSink{})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	for i := 0; i < 6; i++ {
		if err := r.Submit(context.Background(), &Envelope{Topic: "in", Offset: int64(i), Value: []byte("1")}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	close(seen)
	for s := range seen {
		if s[1] != s[0]+1 {
			t.Fatalf("offset %d pinned %d: pins must follow submission order", s[0], s[1])
		}
	}
}

type stageFunc func(ctx context.Context, in *Batch) ([]Output, *Batch, error)

func (f stageFunc) Name() string { return "func" }
func (f stageFunc) Process(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
	return f(ctx, in)
}

// TestRuntimeRecoversPanics (reliability issue, the poison-pill property): a
// stage or a decoder that panics on a message is recovered at the stage
// boundary; the message goes to the dead letters with the reason
// "internal error: …", is counted, is not retried, and its offset commits;
// the messages around it are delivered.
func TestRuntimeRecoversPanics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sink := &memSink{}
	calls := 0
	st := stageFunc(func(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
		calls++
		if in.Env.Offset == 1 {
			var counts []int
			counts[in.Env.Offset]++ // an index out of range: the kind of bug no test saw
		}
		return []Output{{Stream: "out", Key: []byte(in.Env.Source()), Raw: in.Env.Value}}, nil, nil
	})
	dec := func(env *Envelope) (*Batch, error) {
		if string(env.Value) == "panic" {
			panic(fmt.Sprintf("decoder bug at %d\nsecond line", env.Offset))
		}
		return intDecoder(mem)(env)
	}
	r, err := New(Options{Workers: 1, Retry: fastRetry}, dec, []Route{{Topic: "in", Stages: []Stage{st}}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.Start(ctx)
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	submitAll(t, ctx, r, tr, "3", "4", "panic", "5")
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	wantCommit(t, tr, tp0, 4)
	var reasons []string
	delivered := 0
	for _, o := range sink.outputs() {
		if o.Stream == "dlq" {
			reasons = append(reasons, header(o, HeaderDLQStage)+": "+header(o, HeaderDLQReason))
		} else {
			delivered++
		}
	}
	sort.Strings(reasons)
	want := []string{"decode: internal error: decoder bug at 2 second line", "func: internal error: runtime error: index out of range [1] with length 0"}
	if !slices.Equal(reasons, want) {
		t.Fatalf("dead letters %q, want %q", reasons, want)
	}
	if delivered != 2 || calls != 3 {
		t.Fatalf("%d delivered, the stage called %d times (a panic must not be retried)", delivered, calls)
	}
	if v := testutil.ToFloat64(r.Metrics().DeadLetters.WithLabelValues("func")); v != 1 {
		t.Fatalf("dead letters metric %v", v)
	}
}

// TestRuntimeOnDeadLetter: the observer sees every quarantined message with
// its coordinates, the stage and the reason; delivered messages are not
// reported.
func TestRuntimeOnDeadLetter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var mu sync.Mutex
	var seen []string
	r := newTestRuntime(t, mem, &echoStage{}, &memSink{}, Options{Workers: 1, OnDeadLetter: func(env *Envelope, stage string, err error) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %v", env.Source(), stage, err))
		mu.Unlock()
	}})
	ctx := context.Background()
	r.Start(ctx)
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	submitAll(t, ctx, r, tr, "3", "garbage", "0")
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	sort.Strings(seen)
	if len(seen) != 2 || !strings.HasPrefix(seen[0], "in/0/1 decode ") || seen[1] != "in/0/2 echo bad input: empty batch" {
		t.Fatalf("observed dead letters %q", seen)
	}
}

// blockStage holds every message until release is closed, then echoes it.
type blockStage struct {
	echoStage
	release chan struct{}
}

func (s *blockStage) Process(ctx context.Context, in *Batch) ([]Output, *Batch, error) {
	<-s.release
	return s.echoStage.Process(ctx, in)
}

// TestRuntimeSubmitAfterClose: Submit after Close, and a Submit waiting
// for a busy worker when Close comes, return ErrClosed (the message not
// taken); the first was a send on a closed channel.
func TestRuntimeSubmitAfterClose(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := &blockStage{release: make(chan struct{})}
	r := newTestRuntime(t, mem, st, &memSink{}, Options{Workers: 1})
	r.Start(context.Background())
	ctx := context.Background()
	// the worker holds the first message in its stage, the queue (one
	// slot a worker) the second
	for i := int64(0); i < 2; i++ {
		if err := r.Submit(ctx, &Envelope{Topic: "in", Offset: i, Value: []byte("1")}); err != nil {
			t.Fatal(err)
		}
	}
	waiting := make(chan error, 1)
	go func() { waiting <- r.Submit(ctx, &Envelope{Topic: "in", Offset: 2, Value: []byte("1")}) }()
	time.Sleep(20 * time.Millisecond) // the third Submit waits for room
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting Submit at Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Submit waiting for room stayed blocked through Close")
	}
	close(st.release)
	<-closed
	if err := r.Submit(ctx, &Envelope{Topic: "in", Offset: 3, Value: []byte("1")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if v := testutil.ToFloat64(r.Metrics().InFlightBytes); v != 0 {
		t.Fatalf("in-flight bytes %v after Close", v)
	}
}

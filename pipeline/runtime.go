package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
)

// DefaultDeadLetterStream is the output stream of quarantined messages.
const DefaultDeadLetterStream = "dlq"

// Options configure a Runtime. Zero values take the defaults noted.
type Options struct {
	// Workers process messages in parallel, per route (default GOMAXPROCS).
	Workers int
	// MaxInFlightBytes bounds the bytes of message values submitted and not
	// yet finished (default 64 MiB). Submit blocks while the budget is
	// spent: this is the backpressure that bounds memory under overload. A
	// single message larger than the budget is admitted alone.
	MaxInFlightBytes int64
	// Retry paces retries of failed stages and sink writes; the default
	// retries forever (until the runtime stops) from 50 ms up to 5 s.
	Retry Backoff
	// DeadLetterStream is the stream quarantined messages go to ("dlq").
	DeadLetterStream string
	Logger           *slog.Logger
	// Metrics, when nil, are created (see Runtime.Metrics).
	Metrics *Metrics
	// OnDeadLetter, when set, is called with every message the runtime
	// quarantines, the stage that refused it and why (e.g. for a status
	// page); it must not block.
	OnDeadLetter func(env *Envelope, stage string, reason error)
}

func (o *Options) resolve() error {
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Workers < 0 {
		return fmt.Errorf("pipeline: %d workers", o.Workers)
	}
	if o.MaxInFlightBytes == 0 {
		o.MaxInFlightBytes = 64 << 20
	}
	if o.MaxInFlightBytes < 0 {
		return fmt.Errorf("pipeline: max in-flight bytes %d < 0", o.MaxInFlightBytes)
	}
	if err := o.Retry.Validate(); err != nil {
		return err
	}
	if o.DeadLetterStream == "" {
		o.DeadLetterStream = DefaultDeadLetterStream
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	return nil
}

// Runtime runs messages through their route's stages to the sink, each
// route with its own pool of workers, so that one route waiting (scoring
// before the first model exists) never starves another (training, which
// makes that model). Sources hand it messages with Submit; it calls each
// message's Ack once its outputs (or its dead letter) are acknowledged.
type Runtime struct {
	opts       Options
	decode     Decoder
	routes     map[string][]Stage
	pins       map[string]func() any
	queues     map[string]chan *Envelope
	sink       Sink
	budget     *budget
	dlq        dlqGate
	wg         sync.WaitGroup
	deliveries sync.WaitGroup
	once       sync.Once
	start      sync.Once
	// closing is closed by Close before the queues; sending holds a read
	// lock that Close takes for writing before it closes them, so that no
	// Submit sends on a closed queue
	closing chan struct{}
	sending sync.RWMutex
}

// ErrClosed is Submit's error after Close.
var ErrClosed = errors.New("pipeline: runtime closed")

// New checks the options and returns a runtime; Start launches it.
func New(opts Options, decode Decoder, routes []Route, sink Sink) (*Runtime, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if decode == nil || sink == nil || len(routes) == 0 {
		return nil, errors.New("pipeline: a runtime needs a decoder, a sink and at least one route")
	}
	r := &Runtime{opts: opts, decode: decode, sink: sink, routes: map[string][]Stage{}, pins: map[string]func() any{},
		queues: map[string]chan *Envelope{}, budget: newBudget(opts.MaxInFlightBytes), dlq: newDLQGate(),
		closing: make(chan struct{})}
	for _, rt := range routes {
		if rt.Topic == "" {
			return nil, errors.New("pipeline: route without a topic")
		}
		if _, dup := r.routes[rt.Topic]; dup {
			return nil, fmt.Errorf("pipeline: two routes for topic %s", rt.Topic)
		}
		r.routes[rt.Topic] = rt.Stages
		if rt.Pin != nil {
			r.pins[rt.Topic] = rt.Pin
		}
		r.queues[rt.Topic] = make(chan *Envelope, opts.Workers)
	}
	return r, nil
}

// Metrics returns the runtime's metrics.
func (r *Runtime) Metrics() *Metrics { return r.opts.Metrics }

// Topics lists the source topics the runtime has routes for.
func (r *Runtime) Topics() []string {
	out := make([]string, 0, len(r.routes))
	for t := range r.routes {
		out = append(out, t)
	}
	return out
}

// Start launches the workers. Cancelling ctx is the hard stop: retries
// end, and messages not yet delivered are left unacknowledged (so they are
// not committed and will be read again). Graceful shutdown is: stop the
// sources (they drain their trackers), then Close.
func (r *Runtime) Start(ctx context.Context) {
	r.start.Do(func() {
		for _, q := range r.queues {
			for i := 0; i < r.opts.Workers; i++ {
				r.wg.Add(1)
				go func() {
					defer r.wg.Done()
					for env := range q {
						r.handle(ctx, env)
					}
				}()
			}
		}
	})
}

// Submit hands a message to the workers. It blocks while the in-flight byte
// budget is spent, every worker is busy or the dead-letter stream is
// unavailable (see Ready), until ctx is done or the runtime is closed;
// then it returns ctx's error or ErrClosed and the message was not taken
// (nothing will acknowledge it).
func (r *Runtime) Submit(ctx context.Context, env *Envelope) error {
	if err := r.dlq.wait(ctx); err != nil {
		return err
	}
	n := int64(len(env.Value))
	if err := r.budget.acquire(ctx, n); err != nil {
		return err
	}
	m := r.opts.Metrics
	m.InFlightBytes.Add(float64(n))
	m.InFlightMessages.Inc()
	if pin := r.pins[env.Topic]; pin != nil {
		env.Pinned = pin()
	}
	q, ok := r.queues[env.Topic]
	if !ok {
		q = r.anyQueue() // handle quarantines it: no route
	}
	r.sending.RLock()
	defer r.sending.RUnlock()
	select {
	case <-r.closing:
		r.finished(n)
		return ErrClosed
	default:
	}
	select {
	case q <- env:
		return nil
	case <-ctx.Done():
		r.finished(n)
		return ctx.Err()
	case <-r.closing:
		r.finished(n)
		return ErrClosed
	}
}

func (r *Runtime) finished(n int64) {
	r.budget.release(n)
	r.opts.Metrics.InFlightBytes.Sub(float64(n))
	r.opts.Metrics.InFlightMessages.Dec()
}

func (r *Runtime) anyQueue() chan *Envelope {
	for _, q := range r.queues {
		return q
	}
	return nil
}

// Close stops accepting messages (Submit then returns ErrClosed, also a
// Submit waiting for room) and waits for the workers to finish the ones
// submitted. Call it after every source has stopped submitting.
func (r *Runtime) Close() {
	r.once.Do(func() {
		close(r.closing)
		r.sending.Lock() // no Submit is sending any more
		for _, q := range r.queues {
			close(q)
		}
		r.sending.Unlock()
	})
	r.wg.Wait()
	r.deliveries.Wait()
}

// handle runs one message through decode, its stages and the sink.
func (r *Runtime) handle(ctx context.Context, env *Envelope) {
	m := r.opts.Metrics
	m.MessagesIn.WithLabelValues(env.Topic).Inc()
	outs := r.process(ctx, env)
	// Delivery waits for the broker's acknowledgement; it runs apart from
	// the worker so that the worker goes on computing meanwhile. Deliveries
	// are bounded by the in-flight byte budget (released when they end)
	// and by the source's uncommitted window.
	r.deliveries.Add(1)
	go func() {
		defer r.deliveries.Done()
		defer r.finished(int64(len(env.Value)))
		defer releaseOutputs(outs)
		if ctx.Err() != nil {
			return // hard stop: leave the message unacknowledged
		}
		if err := r.deliver(ctx, env, &outs); err != nil {
			if ctx.Err() == nil {
				r.opts.Logger.Error("delivery failed; message left uncommitted", "source", env.Source(), "err", err)
			}
			return
		}
		for i := range outs {
			m.RowsOut.WithLabelValues(outs[i].Stream).Add(float64(outs[i].Rows()))
			if outs[i].Stream == r.opts.DeadLetterStream {
				stage, _ := outs[i].header(HeaderDLQStage)
				m.DeadLetters.WithLabelValues(string(stage)).Inc()
			}
		}
		if !env.Time.IsZero() {
			m.EndToEnd.Observe(time.Since(env.Time).Seconds())
		}
		if env.Ack != nil {
			env.Ack.Done()
		}
	}()
}

// process decodes env and runs its route; a quarantined message yields its
// dead letter. It returns nil outputs when ctx ended first.
func (r *Runtime) process(ctx context.Context, env *Envelope) []Output {
	m := r.opts.Metrics
	stages, ok := r.routes[env.Topic]
	if !ok {
		return r.quarantine(env, "route", fmt.Errorf("no route for topic %s", env.Topic))
	}
	t0 := time.Now()
	var b *Batch
	err := recovered(func() (err error) { b, err = r.decode(env); return err })
	m.BatchLatency.WithLabelValues("decode").Observe(time.Since(t0).Seconds())
	if err != nil {
		return r.quarantine(env, "decode", err)
	}
	m.RowsIn.WithLabelValues(env.Topic).Add(float64(b.Rows()))
	owned := []*Batch{b}
	defer func() {
		for _, ob := range owned {
			ob.Release()
		}
	}()
	var outs []Output
	cur := b
	for _, st := range stages {
		var o []Output
		var next *Batch
		t0 := time.Now()
		err := r.opts.Retry.Do(ctx, func() error {
			err := recovered(func() (err error) { o, next, err = st.Process(ctx, cur); return err })
			if err != nil {
				releaseOutputs(o)
				if next != nil && next != cur {
					next.Release()
				}
				o, next = nil, nil
			}
			return err
		}, func(err error) bool {
			return !errors.Is(err, ErrBadInput) && !errors.Is(err, ErrInternal) && ctx.Err() == nil
		},
			func(attempt int, err error) {
				m.Retries.WithLabelValues(st.Name()).Inc()
				r.opts.Logger.Warn("stage failed; retrying", "stage", st.Name(), "source", env.Source(), "attempt", attempt+1, "err", err)
			})
		m.BatchLatency.WithLabelValues(st.Name()).Observe(time.Since(t0).Seconds())
		outs = append(outs, o...)
		if err != nil {
			releaseOutputs(outs)
			if ctx.Err() != nil {
				return nil
			}
			return r.quarantine(env, st.Name(), err)
		}
		if next == nil {
			break
		}
		if next != cur {
			owned = append(owned, next)
			cur = next
		}
	}
	return outs
}

// recovered runs fn, turning a panic into an ErrInternal error that names
// the panic's value (one line).
func recovered(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s", ErrInternal, strings.Join(strings.Fields(fmt.Sprint(p)), " "))
		}
	}()
	return fn()
}

// LogQuarantined is the message of the WARN record logged for every
// message that becomes a dead letter (a program that shows dead letters
// its own way, as forestd serve --demo does, can leave these out).
const LogQuarantined = "message quarantined"

// quarantine replaces a message's outputs with its dead letter (counted in
// forestd_dead_letters_total once the sink has acknowledged it).
func (r *Runtime) quarantine(env *Envelope, stage string, err error) []Output {
	r.opts.Logger.Warn(LogQuarantined, "stage", stage, "source", env.Source(), "reason", err)
	if r.opts.OnDeadLetter != nil {
		r.opts.OnDeadLetter(env, stage, err)
	}
	return []Output{DeadLetter(r.opts.DeadLetterStream, env, stage, err)}
}

// PartialWriteError is returned by a Sink that delivered some outputs but
// not others: Failed lists the indexes (into the outs passed to Write) to
// retry.
type PartialWriteError struct {
	Failed []int
	Err    error
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("%d outputs not delivered: %v", len(e.Failed), e.Err)
}
func (e *PartialWriteError) Unwrap() error { return e.Err }

// deliver writes outs with retries. Only outputs that failed are written
// again. A permanent failure replaces all of the message's outputs with its
// dead letter, which is written by deliverDeadLetter.
func (r *Runtime) deliver(ctx context.Context, env *Envelope, outs *[]Output) error {
	if len(*outs) == 0 {
		return nil
	}
	if r.deadLetter(*outs) {
		return r.deliverDeadLetter(ctx, env, *outs)
	}
	m := r.opts.Metrics
	write := func(all []Output) error {
		pending := all
		return r.opts.Retry.Do(ctx, func() error {
			t0 := time.Now()
			err := r.sink.Write(ctx, pending)
			m.SinkLatency.Observe(time.Since(t0).Seconds())
			var pe *PartialWriteError
			if errors.As(err, &pe) && !errors.Is(err, ErrPermanent) {
				left := make([]Output, 0, len(pe.Failed))
				for _, i := range pe.Failed {
					if i >= 0 && i < len(pending) {
						left = append(left, pending[i])
					}
				}
				if len(left) > 0 {
					pending = left
				}
			}
			return err
		}, func(err error) bool { return !errors.Is(err, ErrPermanent) && ctx.Err() == nil },
			func(attempt int, err error) {
				m.Retries.WithLabelValues("sink").Inc()
				r.opts.Logger.Warn("sink write failed; retrying", "source", env.Source(), "attempt", attempt+1, "err", err)
			})
	}
	err := write(*outs)
	if err == nil || !errors.Is(err, ErrPermanent) {
		return err
	}
	releaseOutputs(*outs)
	*outs = r.quarantine(env, "sink", err)
	return r.deliverDeadLetter(ctx, env, *outs)
}

// deadLetter reports whether outs is a message's dead letter.
func (r *Runtime) deadLetter(outs []Output) bool {
	return len(outs) == 1 && outs[0].IsDeadLetter(r.opts.DeadLetterStream)
}

// deliverDeadLetter writes a dead letter until the sink acknowledges it or
// ctx ends. Its offset must not commit before it is stored, and there is
// nowhere else to put it, so every failure — a permanent one too — is
// retried; meanwhile the runtime reports the dead-letter stream
// unavailable (Ready) and Submit pauses, so that consumption stops rather
// than piling up messages behind a dead letter that cannot be written.
// (The sink fits a letter to the topic's message limit; what remains is a
// dead-letter topic that is missing, refuses the writer, or is down.)
func (r *Runtime) deliverDeadLetter(ctx context.Context, env *Envelope, outs []Output) error {
	m := r.opts.Metrics
	retry := r.opts.Retry
	retry.MaxAttempts = 0 // until written or stopped: the letter has nowhere else to go
	return retry.Do(ctx, func() error {
		t0 := time.Now()
		err := r.sink.Write(ctx, outs)
		m.SinkLatency.Observe(time.Since(t0).Seconds())
		if err == nil {
			if down := r.dlq.up(); down > 0 {
				m.DeadLetterStreamDown.Set(0)
				r.opts.Logger.Info("dead-letter stream available again; consumption resumes", "stream", r.opts.DeadLetterStream,
					"unavailable_for", down.Round(time.Millisecond).String())
			}
			return nil
		}
		if ctx.Err() == nil && r.dlq.down(err) {
			m.DeadLetterStreamDown.Set(1)
			r.opts.Logger.Error("dead-letter stream unavailable: consumption paused until the dead letter is written",
				"stream", r.opts.DeadLetterStream, "source", env.Source(), "err", err)
		}
		return err
	}, func(error) bool { return ctx.Err() == nil },
		func(attempt int, err error) {
			m.Retries.WithLabelValues("dead-letter").Inc()
			r.opts.Logger.Debug("dead-letter write failed; retrying", "source", env.Source(), "attempt", attempt+1, "err", err)
		})
}

// Ready is nil unless the dead-letter stream is unavailable: a dead letter
// could not be written, intake is paused (Submit blocks) and the error says
// since when and why.
func (r *Runtime) Ready() error { return r.dlq.err() }

// dlqGate holds intake while dead letters cannot be written.
type dlqGate struct {
	mu    sync.Mutex
	cause error
	since time.Time
	open  chan struct{} // closed while the stream is available
}

func newDLQGate() dlqGate {
	ch := make(chan struct{})
	close(ch)
	return dlqGate{open: ch}
}

// down marks the stream unavailable with cause; it reports whether it was
// available until now.
func (g *dlqGate) down(cause error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.cause == nil
	g.cause = cause
	if was {
		g.since = time.Now()
		g.open = make(chan struct{})
	}
	return was
}

// up marks the stream available; it returns how long it was unavailable
// (0 if it was available).
func (g *dlqGate) up() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause == nil {
		return 0
	}
	g.cause = nil
	close(g.open)
	return max(time.Since(g.since), time.Nanosecond)
}

func (g *dlqGate) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause == nil {
		return nil
	}
	return fmt.Errorf("dead letters cannot be written for %v, consumption paused: %w", time.Since(g.since).Round(time.Second), g.cause)
}

// wait blocks while the stream is unavailable, until ctx is done.
func (g *dlqGate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func releaseOutputs(outs []Output) {
	for i := range outs {
		if outs[i].Record != nil {
			outs[i].Record.Release()
			outs[i].Record = nil
		}
	}
}

// budget is a byte semaphore.
type budget struct {
	mu      sync.Mutex
	max     int64
	used    int64
	changed chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max, changed: make(chan struct{})} }

func (b *budget) acquire(ctx context.Context, n int64) error {
	n = min(n, b.max)
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.max {
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
		b.mu.Lock()
	}
	b.used += n
	b.mu.Unlock()
	return nil
}

func (b *budget) release(n int64) {
	n = min(n, b.max)
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

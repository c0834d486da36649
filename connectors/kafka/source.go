package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/pipeline"
)

// Start offsets for partitions without a committed offset.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// SourceOptions configure a consumer-group source.
type SourceOptions struct {
	Client ClientOptions
	// Group is the consumer group ID (default "forestd").
	Group string
	// Topics are consumed by the group.
	Topics []string
	// StartOffset is where a partition without a committed offset starts:
	// "earliest" (default) or "latest".
	StartOffset string
	// SessionTimeout: a member silent for this long is dropped from the
	// group and its partitions reassigned (default 10 s).
	SessionTimeout time.Duration
	// HeartbeatInterval (default SessionTimeout/10).
	HeartbeatInterval time.Duration
	// RebalanceTimeout bounds how long the coordinator waits for members to
	// rejoin during a rebalance (default 2×SessionTimeout).
	RebalanceTimeout time.Duration
	// CommitInterval paces offset commits (default 200 ms).
	CommitInterval time.Duration
	// DrainTimeout bounds the wait for in-flight messages when a generation
	// ends or the source stops (default 10 s).
	DrainTimeout time.Duration
	// MaxUncommitted bounds the messages fetched but not yet committable
	// (default 1000): the uncommitted window, and so the duplicates after a
	// crash.
	MaxUncommitted int
	// MaxMessageBytes is the largest message fetched (default 8 MiB).
	MaxMessageBytes int
	// QueueCapacity bounds the messages each partition reader prefetches
	// (default 16).
	QueueCapacity int
	// MaxWait is the longest a fetch waits for new data (default 250 ms).
	MaxWait time.Duration
	// StallTimeout: a partition of the source's topics with messages
	// waiting and no commit by the group for this long is stalled, and
	// Ready reports it (default 60 s). See GroupSource.Ready.
	StallTimeout time.Duration
	Logger       *slog.Logger
	Metrics      *pipeline.Metrics
	// OnGeneration, when set, is called at the start of every generation
	// with its ID and partitions.
	OnGeneration func(gen int32, parts []pipeline.TopicPartition)
}

func (o *SourceOptions) resolve() (*client, error) {
	c, err := o.Client.build()
	if err != nil {
		return nil, err
	}
	if o.Group == "" {
		o.Group = "forestd"
	}
	if len(o.Topics) == 0 {
		return nil, errors.New("kafka: source without topics")
	}
	switch o.StartOffset {
	case "":
		o.StartOffset = StartEarliest
	case StartEarliest, StartLatest:
	default:
		return nil, fmt.Errorf("kafka: start offset %q is not earliest or latest", o.StartOffset)
	}
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d == 0 {
			*d = v
		}
		if *d < 0 {
			return fmt.Errorf("kafka: negative %s", name)
		}
		return nil
	}
	if err := def(&o.SessionTimeout, 10*time.Second, "session timeout"); err != nil {
		return nil, err
	}
	for _, e := range []error{
		def(&o.HeartbeatInterval, o.SessionTimeout/10, "heartbeat interval"),
		def(&o.RebalanceTimeout, 2*o.SessionTimeout, "rebalance timeout"),
		def(&o.CommitInterval, 200*time.Millisecond, "commit interval"),
		def(&o.DrainTimeout, 10*time.Second, "drain timeout"),
		def(&o.MaxWait, 250*time.Millisecond, "max wait"),
		def(&o.StallTimeout, time.Minute, "stall timeout"),
	} {
		if e != nil {
			return nil, e
		}
	}
	if o.HeartbeatInterval >= o.SessionTimeout {
		return nil, fmt.Errorf("kafka: heartbeat interval %v must be below the session timeout %v", o.HeartbeatInterval, o.SessionTimeout)
	}
	if o.MaxUncommitted == 0 {
		o.MaxUncommitted = 1000
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 8 << 20
	}
	if o.QueueCapacity == 0 {
		o.QueueCapacity = 16
	}
	if o.MaxUncommitted < 0 || o.MaxMessageBytes < 0 || o.QueueCapacity < 0 {
		return nil, errors.New("kafka: negative source limit")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Metrics == nil {
		o.Metrics = pipeline.NewMetrics()
	}
	return c, nil
}

// GroupSource consumes topics as a member of a consumer group and commits
// offsets only as far as its trackers allow (see the package comment).
type GroupSource struct {
	opts     SourceOptions
	c        *client
	progress *progress

	mu      sync.Mutex
	current *pipeline.Tracker
	joined  bool
}

// NewGroupSource checks the options; Run joins the group.
func NewGroupSource(opts SourceOptions) (*GroupSource, error) {
	c, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	s := &GroupSource{opts: opts, c: c}
	s.progress = newProgress(s)
	return s, nil
}

// Submit hands a message to the runtime (pipeline.Runtime.Submit). An
// error means the message was not taken (its Ack is then abandoned).
type Submit func(ctx context.Context, env *pipeline.Envelope) error

// holdsGeneration reports whether the source currently holds a generation.
func (s *GroupSource) holdsGeneration() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined
}

// Tracker is the tracker of the current generation (nil between
// generations).
func (s *GroupSource) Tracker() *pipeline.Tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Run consumes until ctx is done, then drains the current generation,
// commits and leaves the group. It returns nil on a clean stop.
func (s *GroupSource) Run(ctx context.Context, submit Submit) error {
	start := kafkago.FirstOffset
	if s.opts.StartOffset == StartLatest {
		start = kafkago.LastOffset
	}
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID: s.opts.Group, Brokers: s.c.brokers, Dialer: s.c.dialer, Topics: s.opts.Topics,
		SessionTimeout: s.opts.SessionTimeout, HeartbeatInterval: s.opts.HeartbeatInterval,
		RebalanceTimeout: s.opts.RebalanceTimeout, JoinGroupBackoff: time.Second,
		StartOffset: start, Timeout: 5 * time.Second,
		WatchPartitionChanges: true, PartitionWatchInterval: 5 * time.Second,
		ErrorLogger: kafkago.LoggerFunc(func(f string, a ...any) {
			s.opts.Logger.Debug(fmt.Sprintf(f, a...), "component", "consumer-group")
		}),
	})
	if err != nil {
		return fmt.Errorf("kafka: consumer group %s: %w", s.opts.Group, err)
	}
	defer closeGroup(cg, s.opts.Logger)
	defer s.c.close() // after the group: the lag reports use the transport
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() {
		defer close(pdone)
		s.progress.run(pctx)
	}()
	defer func() {
		pcancel()
		<-pdone
	}()
	lastErr := time.Time{}
	for {
		gen, err := cg.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if time.Since(lastErr) > 5*time.Second {
				s.opts.Logger.Warn("consumer group: waiting to join", "group", s.opts.Group, "err", err)
				lastErr = time.Now()
			}
			continue
		}
		s.runGeneration(ctx, gen, submit)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// closeGroup leaves the group; kafka-go may first complete a join round, so
// the wait is bounded.
func closeGroup(cg *kafkago.ConsumerGroup, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		cg.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		log.Warn("consumer group: leaving the group timed out; the coordinator will expire the member")
	}
}

// runGeneration consumes the generation's partitions until it ends or ctx
// is done, then drains, commits and revokes. It returns once the generation
// may end (kafka-go waits for functions started on the generation).
func (s *GroupSource) runGeneration(ctx context.Context, gen *kafkago.Generation, submit Submit) {
	starts := map[pipeline.TopicPartition]int64{}
	for topic, pas := range gen.Assignments {
		for _, pa := range pas {
			starts[pipeline.TopicPartition{Topic: topic, Partition: int32(pa.ID)}] = pa.Offset
		}
	}
	tr := pipeline.NewTracker(gen.ID, starts, s.opts.MaxUncommitted)
	m := s.opts.Metrics
	m.Generations.Inc()
	m.Partitions.Set(float64(len(starts)))
	parts := tr.Partitions()
	s.opts.Logger.Info("joined consumer group generation", "group", s.opts.Group, "generation", gen.ID,
		"member", gen.MemberID, "partitions", fmt.Sprint(parts))
	if s.opts.OnGeneration != nil {
		s.opts.OnGeneration(gen.ID, parts)
	}
	s.mu.Lock()
	s.current, s.joined = tr, true
	s.mu.Unlock()
	finished := make(chan struct{})
	gen.Start(func(gctx context.Context) {
		defer close(finished)
		fctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(gctx, cancel)
		defer stop()
		var wg sync.WaitGroup
		readers := make([]*partitionReader, 0, len(parts))
		for _, tp := range parts {
			pr := &partitionReader{src: s, tp: tp, start: starts[tp], tr: tr}
			pr.committed.Store(-1)
			readers = append(readers, pr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				pr.run(fctx, submit)
			}()
		}
		commit := func(reason string) {
			offs := tr.Committable()
			if len(offs) == 0 {
				return
			}
			req := map[string]map[int]int64{}
			for tp, o := range offs {
				if req[tp.Topic] == nil {
					req[tp.Topic] = map[int]int64{}
				}
				req[tp.Topic][int(tp.Partition)] = o
			}
			if err := gen.CommitOffsets(req); err != nil {
				m.CommitErrors.Inc()
				s.opts.Logger.Warn("offset commit failed", "generation", gen.ID, "reason", reason, "err", err)
				return
			}
			tr.MarkCommitted(offs)
			m.Commits.Inc()
			for tp, o := range offs {
				for _, pr := range readers {
					if pr.tp == tp {
						pr.committed.Store(o)
					}
				}
			}
		}
		tick := time.NewTicker(s.opts.CommitInterval)
		defer tick.Stop()
	loop:
		for {
			select {
			case <-fctx.Done():
				break loop
			case <-tick.C:
				commit("interval")
				m.Uncommitted.Set(float64(tr.Outstanding()))
				for _, pr := range readers {
					pr.reportLag()
				}
			}
		}
		// The generation is ending (rebalance) or the source is stopping:
		// stop fetching, let the messages in flight finish, commit them.
		cancel()
		wg.Wait()
		dctx, dcancel := context.WithTimeout(context.Background(), s.opts.DrainTimeout)
		derr := tr.Drain(dctx)
		dcancel()
		commit("drain")
		pending := tr.Revoke()
		n := 0
		for _, p := range pending {
			n += len(p)
		}
		if derr != nil || n > 0 {
			s.opts.Logger.Warn("generation ended with messages in flight; they will be read again", "generation", gen.ID, "pending", n, "err", derr)
		}
		s.opts.Logger.Info("left consumer group generation", "group", s.opts.Group, "generation", gen.ID)
		m.Uncommitted.Set(0)
		m.Partitions.Set(0)
	})
	<-finished
	s.mu.Lock()
	s.current, s.joined = nil, false
	s.mu.Unlock()
}

// partitionReader fetches one partition for one generation.
type partitionReader struct {
	src       *GroupSource
	tp        pipeline.TopicPartition
	start     int64
	tr        *pipeline.Tracker
	mu        sync.Mutex
	r         *kafkago.Reader
	committed atomic.Int64 // last committed offset; -1 none yet
}

func (p *partitionReader) reportLag() {
	p.mu.Lock()
	r := p.r
	p.mu.Unlock()
	if r == nil {
		return
	}
	lag := r.Lag()
	if lag < 0 {
		return
	}
	hwm := r.Offset() + lag
	committed := p.committed.Load()
	if committed < 0 {
		if p.start < 0 {
			return
		}
		committed = p.start
	}
	p.src.opts.Metrics.CommitLag.WithLabelValues(p.tp.Topic, strconv.Itoa(int(p.tp.Partition))).Set(float64(max(hwm-committed, 0)))
}

func (p *partitionReader) run(ctx context.Context, submit Submit) {
	s := p.src
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: s.c.brokers, Dialer: s.c.dialer, Topic: p.tp.Topic, Partition: int(p.tp.Partition),
		QueueCapacity: s.opts.QueueCapacity, MinBytes: 1, MaxBytes: s.opts.MaxMessageBytes, MaxWait: s.opts.MaxWait,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second,
		ErrorLogger: kafkago.LoggerFunc(func(f string, a ...any) {
			s.opts.Logger.Debug(fmt.Sprintf(f, a...), "component", "reader", "partition", p.tp.String())
		}),
	})
	defer r.Close()
	start := p.start
	if start < 0 {
		start = kafkago.FirstOffset
		if s.opts.StartOffset == StartLatest {
			start = kafkago.LastOffset
		}
	}
	if err := r.SetOffset(start); err != nil {
		s.opts.Logger.Error("setting the start offset", "partition", p.tp.String(), "err", err)
		return
	}
	p.mu.Lock()
	p.r = r
	p.mu.Unlock()
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.opts.Logger.Warn("fetch failed; retrying", "partition", p.tp.String(), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		ack, err := p.tr.Track(ctx, p.tp, msg.Offset)
		if errors.Is(err, pipeline.ErrStale) {
			s.opts.Metrics.Stale.Inc()
			s.opts.Logger.Debug("refused a stale message", "partition", p.tp.String(), "offset", msg.Offset)
			continue
		}
		if err != nil {
			return // revoked, or stopping
		}
		value := msg.Value
		if len(value) == 0 {
			value = s.emptyOrNull(ctx, p.tp, msg.Offset)
		}
		env := &pipeline.Envelope{Topic: msg.Topic, Partition: int32(msg.Partition), Offset: msg.Offset,
			Key: msg.Key, Value: value, Time: msg.Time, Ack: ack}
		if len(msg.Headers) > 0 {
			env.Headers = make([]pipeline.Header, len(msg.Headers))
			for i, h := range msg.Headers {
				env.Headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
			}
		}
		if err := submit(ctx, env); err != nil {
			// stopping while the runtime pushed back: the message was
			// never handed over; it will be read again, and the drain
			// must not wait for it
			ack.Abandon()
			return
		}
	}
}

// emptyOrNull tells a null value (a tombstone) from an empty one, which
// kafka-go's Reader both returns as a nil slice: it fetches the message
// again at the protocol level, where a null value is a nil record value.
// It returns nil for a null value and an empty non-nil slice for an empty
// one; when the fetch fails it assumes null. Such values are rare (and
// only ever dead letters), so the second fetch costs nothing in practice.
func (s *GroupSource) emptyOrNull(ctx context.Context, tp pipeline.TopicPartition, offset int64) []byte {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl := &kafkago.Client{Addr: kafkago.TCP(s.c.brokers...), Transport: s.c.transport, Timeout: 10 * time.Second}
	resp, err := cl.Fetch(ctx, &kafkago.FetchRequest{Topic: tp.Topic, Partition: int(tp.Partition), Offset: offset,
		MinBytes: 1, MaxBytes: int64(s.opts.MaxMessageBytes), MaxWait: s.opts.MaxWait})
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil {
		s.opts.Logger.Debug("telling an empty value from a null one failed; taking it as null", "partition", tp.String(), "offset", offset, "err", err)
		return nil
	}
	for {
		r, err := resp.Records.ReadRecord()
		if err != nil {
			s.opts.Logger.Debug("telling an empty value from a null one: record not found; taking it as null", "partition", tp.String(), "offset", offset, "err", err)
			return nil
		}
		if r.Offset == offset {
			if r.Value == nil {
				return nil
			}
			return []byte{}
		}
		if r.Offset > offset {
			return nil
		}
	}
}

package kafka

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/pipeline"
)

// PartitionProgress is what the progress monitor knows of one partition
// of the source's topics, whoever in the group holds it.
type PartitionProgress struct {
	pipeline.TopicPartition
	// Unconsumed is the log end offset minus the group's committed offset
	// (without a commit: minus where consumption starts).
	Unconsumed int64
	// Idle is how long the committed offset has not moved while messages
	// were waiting (0 when nothing is waiting).
	Idle time.Duration
	// Held reports whether this member holds the partition.
	Held bool
}

// Stalled reports whether the partition has waiting messages and no commit
// for longer than after.
func (p PartitionProgress) Stalled(after time.Duration) bool {
	return p.Unconsumed > 0 && p.Idle > after
}

// progress watches the consumer group's progress on the source's topics
// from the broker's side: every interval it reads each partition's log
// start and end offsets and the group's committed offsets. A partition
// makes progress when its committed offset moves or nothing waits in it;
// it is stalled when messages wait and the committed offset has not moved
// for the stall timeout — a poisoned partition, a dead letter that cannot
// be written, a member that holds partitions without reading them. It
// looks at every partition, not only those this member holds, because a
// partition held by a dead member is stalled for the whole group.
type progress struct {
	s        *GroupSource
	interval time.Duration

	mu       sync.Mutex
	parts    map[pipeline.TopicPartition]*partProgress
	checked  time.Time // last successful check
	checkErr error
}

type partProgress struct {
	committed  int64 // -1 none
	base       int64 // where consumption starts without a commit (StartLatest: the end first seen)
	end        int64
	unconsumed int64
	since      time.Time // last progress
}

func newProgress(s *GroupSource) *progress {
	iv := min(s.opts.StallTimeout/4, 5*time.Second)
	return &progress{s: s, interval: max(iv, 50*time.Millisecond), parts: map[pipeline.TopicPartition]*partProgress{}}
}

func (p *progress) run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check reads the offsets once and updates the partitions' progress and
// the metrics.
func (p *progress) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ends, starts, committed, err := p.offsets(ctx)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.checkErr = err
		return
	}
	p.checked, p.checkErr = now, nil
	seen := map[pipeline.TopicPartition]bool{}
	for tp, end := range ends {
		seen[tp] = true
		pp := p.parts[tp]
		c, ok := committed[tp]
		if !ok {
			c = -1
		}
		if pp == nil {
			pp = &partProgress{committed: c, base: starts[tp], since: now}
			if p.s.opts.StartOffset == StartLatest {
				pp.base = end
			}
			p.parts[tp] = pp
		}
		from := pp.base
		if c >= 0 {
			from = c
		}
		pp.end, pp.unconsumed = end, max(end-from, 0)
		if c != pp.committed || pp.unconsumed == 0 {
			pp.since = now
		}
		pp.committed = c
	}
	for tp := range p.parts {
		if !seen[tp] {
			delete(p.parts, tp)
		}
	}
	stalled := map[string]int{}
	for _, t := range p.s.opts.Topics {
		stalled[t] = 0
	}
	for tp, pp := range p.parts {
		if pp.unconsumed > 0 && now.Sub(pp.since) > p.s.opts.StallTimeout {
			stalled[tp.Topic]++
		}
		p.s.opts.Metrics.GroupLag.WithLabelValues(tp.Topic, strconv.Itoa(int(tp.Partition))).Set(float64(pp.unconsumed))
	}
	for t, n := range stalled {
		p.s.opts.Metrics.StalledPartitions.WithLabelValues(t).Set(float64(n))
	}
}

// offsets reads, for every partition of the source's topics, the log end
// and start offsets and the group's committed offset (absent: none).
func (p *progress) offsets(ctx context.Context) (ends, starts, committed map[pipeline.TopicPartition]int64, err error) {
	s := p.s
	cl := &kafkago.Client{Addr: kafkago.TCP(s.c.brokers...), Transport: s.c.transport, Timeout: 10 * time.Second}
	meta, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: s.opts.Topics})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kafka: metadata: %w", err)
	}
	lreq := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	freq := &kafkago.OffsetFetchRequest{GroupID: s.opts.Group, Topics: map[string][]int{}}
	for _, t := range meta.Topics {
		if t.Error != nil {
			continue // not created yet
		}
		for _, pt := range t.Partitions {
			lreq.Topics[t.Name] = append(lreq.Topics[t.Name], kafkago.FirstOffsetOf(pt.ID), kafkago.LastOffsetOf(pt.ID))
			freq.Topics[t.Name] = append(freq.Topics[t.Name], pt.ID)
		}
	}
	ends, starts, committed = map[pipeline.TopicPartition]int64{}, map[pipeline.TopicPartition]int64{}, map[pipeline.TopicPartition]int64{}
	if len(lreq.Topics) == 0 {
		return ends, starts, committed, nil
	}
	lresp, err := cl.ListOffsets(ctx, lreq)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kafka: list offsets: %w", err)
	}
	for t, pos := range lresp.Topics {
		for _, po := range pos {
			if po.Error != nil {
				return nil, nil, nil, fmt.Errorf("kafka: offsets of %s/%d: %w", t, po.Partition, po.Error)
			}
			tp := pipeline.TopicPartition{Topic: t, Partition: int32(po.Partition)}
			ends[tp], starts[tp] = po.LastOffset, po.FirstOffset
		}
	}
	fresp, err := cl.OffsetFetch(ctx, freq)
	if err == nil && fresp.Error != nil {
		err = fresp.Error
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kafka: committed offsets of group %s: %w", s.opts.Group, err)
	}
	for t, ps := range fresp.Topics {
		for _, po := range ps {
			if po.Error == nil && po.CommittedOffset >= 0 {
				committed[pipeline.TopicPartition{Topic: t, Partition: int32(po.Partition)}] = po.CommittedOffset
			}
		}
	}
	return ends, starts, committed, nil
}

// stale is an error when no check has succeeded for longer than after.
func (p *progress) stale(after time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checkErr != nil && !p.checked.IsZero() && time.Since(p.checked) > after {
		return fmt.Errorf("the group's progress is unknown: no offsets read for %v: %w", time.Since(p.checked).Round(time.Second), p.checkErr)
	}
	return nil
}

// snapshot is the partitions' progress at the last check, sorted.
func (p *progress) snapshot(held map[pipeline.TopicPartition]bool) []PartitionProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	out := make([]PartitionProgress, 0, len(p.parts))
	for tp, pp := range p.parts {
		pr := PartitionProgress{TopicPartition: tp, Unconsumed: pp.unconsumed, Held: held[tp]}
		if pp.unconsumed > 0 {
			pr.Idle = now.Sub(pp.since)
		}
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Progress returns the progress of every partition of the source's topics
// as of the last check (every StallTimeout/4, at most 5 s), whoever holds
// it.
func (s *GroupSource) Progress() []PartitionProgress {
	held := map[pipeline.TopicPartition]bool{}
	if tr := s.Tracker(); tr != nil {
		for _, tp := range tr.Partitions() {
			held[tp] = true
		}
	}
	return s.progress.snapshot(held)
}

// Ready is nil when the source is in a consumer-group generation and the
// group makes progress: no partition of the source's topics has messages
// waiting with no commit for longer than SourceOptions.StallTimeout
// (whoever holds it), and the source holds a partition of every topic that
// has messages waiting. Otherwise the error says which partitions and why.
func (s *GroupSource) Ready() error {
	if !s.holdsGeneration() {
		return fmt.Errorf("not in a consumer-group generation")
	}
	if err := s.progress.stale(s.opts.StallTimeout); err != nil {
		return err
	}
	return readiness(s.Progress(), s.opts.Topics, s.opts.StallTimeout)
}

// readiness is Ready's verdict on the partitions' progress.
func readiness(parts []PartitionProgress, topics []string, stallTimeout time.Duration) error {
	var stalled []string
	waiting, holds := map[string]int64{}, map[string]bool{}
	for _, p := range parts {
		waiting[p.Topic] += p.Unconsumed
		holds[p.Topic] = holds[p.Topic] || p.Held
		if p.Stalled(stallTimeout) {
			who := "held by another member"
			if p.Held {
				who = "held by this daemon"
			}
			stalled = append(stalled, fmt.Sprintf("%s (%d messages waiting, no commit for %v, %s)", p.TopicPartition, p.Unconsumed, p.Idle.Round(time.Second), who))
		}
	}
	if len(stalled) > 0 {
		if len(stalled) > 4 {
			stalled = append(stalled[:4], fmt.Sprintf("and %d more", len(stalled)-4))
		}
		return fmt.Errorf("consumption stalled: %s", strings.Join(stalled, "; "))
	}
	var idle []string
	for _, t := range topics {
		if waiting[t] > 0 && !holds[t] {
			idle = append(idle, fmt.Sprintf("%s (%d messages waiting)", t, waiting[t]))
		}
	}
	if len(idle) > 0 {
		return fmt.Errorf("this daemon holds no partition of %s", strings.Join(idle, ", "))
	}
	return nil
}

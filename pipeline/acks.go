package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Errors a Tracker returns from Track.
var (
	// ErrRevoked: the tracker's generation has ended; the message must be
	// dropped (it will be read again by whoever owns the partition now).
	ErrRevoked = errors.New("pipeline: generation revoked")
	// ErrNotAssigned: the message's partition is not assigned to this
	// generation.
	ErrNotAssigned = errors.New("pipeline: partition not assigned to this generation")
	// ErrStale: the message's offset lies before the partition's start
	// offset or at or before an offset already tracked — a redelivery of a
	// message fetched earlier (e.g. under a previous generation).
	ErrStale = errors.New("pipeline: stale offset")
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Tracker tracks the messages one consumer-group generation has fetched and
// computes, per partition, the offset that may be committed: one past the
// highest offset such that it and every offset fetched before it in that
// partition are done. It also bounds the number of uncommitted messages:
// Track blocks while Limit messages are tracked but not yet committable, which
// is the backpressure that keeps a stuck message from letting the
// uncommitted window (and so the duplicates after a crash) grow without
// bound.
//
// All methods are safe for concurrent use.
type Tracker struct {
	mu          sync.Mutex
	gen         int32
	parts       map[TopicPartition]*partState
	outstanding int
	inflight    int // tracked messages neither done nor abandoned (Drain waits for them)
	limit       int
	revoked     bool
	changed     chan struct{} // closed and replaced whenever outstanding drops or the tracker is revoked
}

type partState struct {
	tp      TopicPartition
	start   int64 // first offset that may be tracked; < 0: any
	last    int64 // last offset tracked; -1 none
	entries []*Ack
	// next is the offset to commit (one past the last popped entry); -1
	// when nothing has been popped. committed is the last offset a commit
	// succeeded with (-1 none).
	next      int64
	committed int64
}

// Ack is the acknowledgement handle of one tracked message. It counts
// outstanding outputs like a sync.WaitGroup: it starts at 1 (the message
// itself); Add registers more outputs; the message is done when Done has been
// called once per unit. Calls after the tracker was revoked do nothing.
type Ack struct {
	t         *Tracker
	p         *partState
	offset    int64
	n         int // outstanding units, guarded by t.mu
	done      bool
	abandoned bool
}

// NewTracker returns a tracker for generation gen, owning the partitions in
// starts (partition → first offset the generation will fetch; a negative
// value, such as kafka-go's FirstOffset or LastOffset, accepts any first
// offset). limit bounds the tracked, not yet committable messages; limit < 1
// means 1.
func NewTracker(gen int32, starts map[TopicPartition]int64, limit int) *Tracker {
	if limit < 1 {
		limit = 1
	}
	t := &Tracker{gen: gen, parts: map[TopicPartition]*partState{}, limit: limit, changed: make(chan struct{})}
	for tp, s := range starts {
		t.parts[tp] = &partState{tp: tp, start: s, last: -1, next: -1, committed: -1}
	}
	return t
}

// Track registers a fetched message and returns its Ack. Offsets of one
// partition must be tracked in increasing order; a message at or before an
// offset already tracked, or before the partition's start offset, is refused
// with ErrStale, and a partition outside the generation with ErrNotAssigned.
// Track blocks while the tracker holds limit uncommitted messages, until one
// becomes committable, ctx is done (its error is returned) or the tracker is
// revoked (ErrRevoked).
func (t *Tracker) Track(ctx context.Context, tp TopicPartition, offset int64) (*Ack, error) {
	t.mu.Lock()
	for {
		if t.revoked {
			t.mu.Unlock()
			return nil, ErrRevoked
		}
		p, ok := t.parts[tp]
		if !ok {
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrNotAssigned, tp)
		}
		if offset < 0 || (p.start >= 0 && offset < p.start) || offset <= p.last {
			t.mu.Unlock()
			return nil, fmt.Errorf("%w: %s offset %d (start %d, last tracked %d)", ErrStale, tp, offset, p.start, p.last)
		}
		if t.outstanding < t.limit {
			a := &Ack{t: t, p: p, offset: offset, n: 1}
			p.entries = append(p.entries, a)
			p.last = offset
			t.outstanding++
			t.inflight++
			t.mu.Unlock()
			return a, nil
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
		t.mu.Lock()
	}
}

// Add registers delta more outstanding outputs (delta may be negative, like
// Done). It has no effect once the message is done or the tracker revoked.
func (a *Ack) Add(delta int) {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.done || a.abandoned || t.revoked {
		return
	}
	a.n += delta
	if a.n <= 0 {
		a.finish()
	}
}

// Done marks one outstanding unit complete.
func (a *Ack) Done() { a.Add(-1) }

// Abandon gives up a tracked message that will not be processed: the
// source fetched and tracked it, then stopped before handing it over (its
// context ended while the runtime pushed back). The message is never
// done, so no commit passes it and the partition's next owner reads it
// again; but Drain no longer waits for it — nothing would ever finish it,
// and the drain would last its whole timeout, long enough at a rebalance
// for the broker to evict the member. Later Add and Done calls do nothing.
func (a *Ack) Abandon() {
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.done || a.abandoned || t.revoked {
		return
	}
	a.abandoned = true
	t.inflight--
	t.signal()
}

// finish marks the message done and pops the partition's done prefix.
// t.mu is held.
func (a *Ack) finish() {
	a.done = true
	p, t := a.p, a.t
	t.inflight--
	i := 0
	for i < len(p.entries) && p.entries[i].done {
		p.next = p.entries[i].offset + 1
		i++
	}
	if i == 0 {
		t.signal() // Drain counts messages done, popped or not
		return
	}
	// drop the popped prefix, letting go of the popped acks
	n := copy(p.entries, p.entries[i:])
	clear(p.entries[n:])
	p.entries = p.entries[:n]
	t.outstanding -= i
	t.signal()
}

func (t *Tracker) signal() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Committable returns, for each partition whose committable offset moved
// past the last successful commit, the offset to commit. The result is nil
// after Revoke.
func (t *Tracker) Committable() map[TopicPartition]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.revoked {
		return nil
	}
	var out map[TopicPartition]int64
	for tp, p := range t.parts {
		if p.next > p.committed {
			if out == nil {
				out = map[TopicPartition]int64{}
			}
			out[tp] = p.next
		}
	}
	return out
}

// MarkCommitted records offsets as committed (a commit of them succeeded).
// Offsets never move backwards.
func (t *Tracker) MarkCommitted(offsets map[TopicPartition]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tp, o := range offsets {
		if p, ok := t.parts[tp]; ok && o > p.committed {
			p.committed = o
		}
	}
}

// Outstanding is the number of tracked messages not yet committable.
func (t *Tracker) Outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.outstanding
}

// pendingOffsets lists, per partition, the offsets tracked but not done, in order
// (for logs and tests).
func (t *Tracker) pendingOffsets() map[TopicPartition][]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[TopicPartition][]int64{}
	for tp, p := range t.parts {
		for _, a := range p.entries {
			if !a.done {
				out[tp] = append(out[tp], a.offset)
			}
		}
	}
	return out
}

// Partitions lists the partitions of the generation, sorted.
func (t *Tracker) Partitions() []TopicPartition {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TopicPartition, 0, len(t.parts))
	for tp := range t.parts {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Drain waits until every tracked message is done or abandoned (then
// everything before the first abandoned message of each partition is
// committable), ctx is done (its error is returned) or the tracker is
// revoked (ErrRevoked).
func (t *Tracker) Drain(ctx context.Context) error {
	t.mu.Lock()
	for {
		if t.revoked {
			t.mu.Unlock()
			return ErrRevoked
		}
		if t.inflight == 0 {
			t.mu.Unlock()
			return nil
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
		t.mu.Lock()
	}
}

// Revoke ends the generation: Track, Drain and Committable stop working, and
// Ack calls are ignored from now on. It returns the offsets that were
// pending (not done), which will be read again by the partition's next owner.
func (t *Tracker) Revoke() map[TopicPartition][]int64 {
	pending := t.pendingOffsets()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.revoked {
		return pending
	}
	t.revoked = true
	for _, p := range t.parts {
		clear(p.entries)
		p.entries = nil
	}
	t.outstanding, t.inflight = 0, 0
	t.signal()
	return pending
}

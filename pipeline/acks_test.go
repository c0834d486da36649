package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var tp0 = TopicPartition{Topic: "in", Partition: 0}
var tp1 = TopicPartition{Topic: "in", Partition: 1}

func mustTrack(t *testing.T, tr *Tracker, tp TopicPartition, off int64) *Ack {
	t.Helper()
	a, err := tr.Track(context.Background(), tp, off)
	if err != nil {
		t.Fatalf("Track(%v, %d): %v", tp, off, err)
	}
	return a
}

func wantCommit(t *testing.T, tr *Tracker, tp TopicPartition, want int64) {
	t.Helper()
	got, ok := tr.Committable()[tp]
	if want < 0 {
		if ok {
			t.Fatalf("%v: committable %d, want nothing", tp, got)
		}
		return
	}
	if !ok || got != want {
		t.Fatalf("%v: committable %d (present %v), want %d", tp, got, ok, want)
	}
}

func TestTrackerInOrder(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	acks := make([]*Ack, 5)
	for i := range acks {
		acks[i] = mustTrack(t, tr, tp0, int64(i))
	}
	wantCommit(t, tr, tp0, -1)
	acks[0].Done()
	wantCommit(t, tr, tp0, 1) // Kafka convention: the next offset to read
	acks[1].Done()
	acks[2].Done()
	wantCommit(t, tr, tp0, 3)
	if tr.Outstanding() != 2 {
		t.Fatalf("outstanding %d, want 2", tr.Outstanding())
	}
}

func TestTrackerOutOfOrderCompletion(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 10}, 100)
	a := []*Ack{mustTrack(t, tr, tp0, 10), mustTrack(t, tr, tp0, 11), mustTrack(t, tr, tp0, 12), mustTrack(t, tr, tp0, 13)}
	a[3].Done()
	a[1].Done()
	wantCommit(t, tr, tp0, -1) // 10 is not done: nothing may be committed
	a[2].Done()
	wantCommit(t, tr, tp0, -1)
	if p := tr.pendingOffsets()[tp0]; len(p) != 1 || p[0] != 10 {
		t.Fatalf("pending %v, want [10]", p)
	}
	a[0].Done()
	wantCommit(t, tr, tp0, 14)
	if tr.Outstanding() != 0 {
		t.Fatalf("outstanding %d", tr.Outstanding())
	}
}

func TestTrackerOffsetGaps(t *testing.T) {
	// compacted topics and transaction markers leave gaps between offsets:
	// contiguity is over the fetched sequence, not over integers.
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	a := mustTrack(t, tr, tp0, 3)
	b := mustTrack(t, tr, tp0, 9)
	c := mustTrack(t, tr, tp0, 20)
	b.Done()
	wantCommit(t, tr, tp0, -1)
	a.Done()
	wantCommit(t, tr, tp0, 10)
	c.Done()
	wantCommit(t, tr, tp0, 21)
}

func TestTrackerPartialFailure(t *testing.T) {
	// a message with three outputs: two acknowledged, one failed. It is not
	// done, so neither it nor anything after it may be committed.
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	m0 := mustTrack(t, tr, tp0, 0)
	m1 := mustTrack(t, tr, tp0, 1)
	m0.Add(2) // 3 outputs in total
	m0.Done()
	m0.Done()
	m1.Done()
	wantCommit(t, tr, tp0, -1)
	m0.Done() // the last output (e.g. its retry) is acknowledged
	wantCommit(t, tr, tp0, 2)
	// extra Done calls after completion change nothing
	m0.Done()
	m1.Done()
	wantCommit(t, tr, tp0, 2)
}

func TestTrackerPartitionsIndependent(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0, tp1: 0}, 100)
	a := mustTrack(t, tr, tp0, 0)
	b := mustTrack(t, tr, tp1, 0)
	c := mustTrack(t, tr, tp1, 1)
	c.Done()
	b.Done()
	wantCommit(t, tr, tp1, 2)
	wantCommit(t, tr, tp0, -1)
	a.Done()
	wantCommit(t, tr, tp0, 1)
}

func TestTrackerMarkCommitted(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	a := mustTrack(t, tr, tp0, 0)
	a.Done()
	c := tr.Committable()
	tr.MarkCommitted(c)
	wantCommit(t, tr, tp0, -1) // nothing new
	tr.MarkCommitted(map[TopicPartition]int64{tp0: 0})
	wantCommit(t, tr, tp0, -1) // commits never move back
	b := mustTrack(t, tr, tp0, 1)
	b.Done()
	wantCommit(t, tr, tp0, 2)
	// a failed commit leaves the offset committable for the next attempt
	wantCommit(t, tr, tp0, 2)
}

// TestTrackerRevocation is the scenario of kafka-go issues #1276/#1308:
// member A fetched offset 5 of a partition; a rebalance moves the partition
// to member B, which processes and commits up to 10; then A's slow worker
// finishes offset 5. A must not commit 6 (moving the group's offset back).
func TestTrackerRevocation(t *testing.T) {
	genA := NewTracker(1, map[TopicPartition]int64{tp0: 5}, 100)
	a5 := mustTrack(t, genA, tp0, 5)
	a6 := mustTrack(t, genA, tp0, 6)
	a6.Done()
	pending := genA.Revoke()
	if p := pending[tp0]; len(p) != 1 || p[0] != 5 {
		t.Fatalf("revoke reported pending %v, want [5]", p)
	}
	a5.Done()
	if c := genA.Committable(); c != nil {
		t.Fatalf("revoked generation offers commit %v", c)
	}
	if _, err := genA.Track(context.Background(), tp0, 7); !errors.Is(err, ErrRevoked) {
		t.Fatalf("Track after revoke: %v", err)
	}
	if err := genA.Drain(context.Background()); !errors.Is(err, ErrRevoked) {
		t.Fatalf("Drain after revoke: %v", err)
	}
	// The next generation starts at the committed offset (5, since A never
	// committed past it): message 5 is read again — a duplicate, not a loss.
	genB := NewTracker(2, map[TopicPartition]int64{tp0: 5}, 100)
	b5 := mustTrack(t, genB, tp0, 5)
	b5.Done()
	wantCommit(t, genB, tp0, 6)
}

// TestTrackerStaleRedelivery is kafka-go issue #1398: after a rebalance the
// reader may still hand out messages fetched before it, with offsets below
// the new generation's start (already committed) or repeating offsets
// already tracked. They must be refused, not processed and committed.
func TestTrackerStaleRedelivery(t *testing.T) {
	tr := NewTracker(3, map[TopicPartition]int64{tp0: 100}, 100)
	for _, off := range []int64{0, 50, 99, -1} {
		if _, err := tr.Track(context.Background(), tp0, off); !errors.Is(err, ErrStale) {
			t.Fatalf("offset %d below start: %v", off, err)
		}
	}
	a := mustTrack(t, tr, tp0, 100)
	if _, err := tr.Track(context.Background(), tp0, 100); !errors.Is(err, ErrStale) {
		t.Fatalf("repeated offset: %v", err)
	}
	mustTrack(t, tr, tp0, 101)
	if _, err := tr.Track(context.Background(), tp0, 100); !errors.Is(err, ErrStale) {
		t.Fatalf("offset going back: %v", err)
	}
	if _, err := tr.Track(context.Background(), TopicPartition{Topic: "in", Partition: 7}, 0); !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("foreign partition: %v", err)
	}
	a.Done()
	wantCommit(t, tr, tp0, 101)
}

func TestTrackerUnknownStart(t *testing.T) {
	// kafka-go reports FirstOffset (-2) for a partition without a commit
	tr := NewTracker(1, map[TopicPartition]int64{tp0: -2}, 10)
	a := mustTrack(t, tr, tp0, 42)
	a.Done()
	wantCommit(t, tr, tp0, 43)
}

func TestTrackerBackpressure(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 3)
	a0 := mustTrack(t, tr, tp0, 0)
	a1 := mustTrack(t, tr, tp0, 1)
	a2 := mustTrack(t, tr, tp0, 2)
	// A stuck message (0) keeps the window full even when later ones finish.
	a1.Done()
	a2.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tr.Track(ctx, tp0, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Track with a full window: %v, want deadline exceeded", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := tr.Track(context.Background(), tp0, 3)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Track returned (%v) while the window was full", err)
	case <-time.After(30 * time.Millisecond):
	}
	a0.Done() // frees three slots at once
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Track still blocked after the window emptied")
	}
	// Revoke wakes blocked Track calls
	tr2 := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 1)
	mustTrack(t, tr2, tp0, 0)
	go func() {
		_, err := tr2.Track(context.Background(), tp0, 1)
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	tr2.Revoke()
	if err := <-got; !errors.Is(err, ErrRevoked) {
		t.Fatalf("blocked Track after revoke: %v", err)
	}
}

func TestTrackerDrain(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 10)
	a := mustTrack(t, tr, tp0, 0)
	done := make(chan error, 1)
	go func() { done <- tr.Drain(context.Background()) }()
	select {
	case <-done:
		t.Fatal("Drain returned with a message pending")
	case <-time.After(20 * time.Millisecond):
	}
	a.Done()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestTrackerRandomised completes messages in random order from many
// goroutines and checks, after every completion, the invariant that makes
// the delivery guarantee: the committable offset never passes a message that
// is not done, and once everything is done it is one past the last offset.
func TestTrackerRandomised(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		parts := []TopicPartition{tp0, tp1, {Topic: "train", Partition: 0}}
		starts := map[TopicPartition]int64{}
		for _, p := range parts {
			starts[p] = 0
		}
		tr := NewTracker(1, starts, 1000)
		type msg struct {
			tp  TopicPartition
			off int64
			ack *Ack
		}
		var msgs []msg
		last := map[TopicPartition]int64{}
		for i := 0; i < 300; i++ {
			p := parts[rng.IntN(len(parts))]
			last[p] += 1 + int64(rng.IntN(3)) // gaps
			m := msg{p, last[p], mustTrack(t, tr, p, last[p])}
			if extra := rng.IntN(3); extra > 0 {
				m.ack.Add(extra)
				for k := 0; k < extra; k++ {
					msgs = append(msgs, m) // one Done per output
				}
			}
			msgs = append(msgs, m)
		}
		rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
		remaining := map[*Ack]int{}
		for _, m := range msgs {
			remaining[m.ack]++
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ch := make(chan msg)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range ch {
					mu.Lock()
					m.ack.Done()
					remaining[m.ack]--
					// invariant: no pending message below the committable offset
					c := tr.Committable()
					for _, o := range msgs {
						if remaining[o.ack] > 0 && c[o.tp] > o.off {
							t.Errorf("seed %d: committable %d passes pending offset %d of %v", seed, c[o.tp], o.off, o.tp)
						}
					}
					mu.Unlock()
				}
			}()
		}
		for _, m := range msgs {
			ch <- m
		}
		close(ch)
		wg.Wait()
		for _, p := range parts {
			if last[p] > 0 {
				wantCommit(t, tr, p, last[p]+1)
			}
		}
		if tr.Outstanding() != 0 {
			t.Fatalf("seed %d: outstanding %d", seed, tr.Outstanding())
		}
	}
}

// TestTrackerAbandon: a message the source tracked but never handed over
// (Abandon) is never committed past, is pending for the next owner, and
// does not hold Drain, which returns once the messages actually in
// processing are done — before the fix it waited for the abandoned one
// until its deadline. Done on an abandoned message does nothing.
func TestTrackerAbandon(t *testing.T) {
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0, tp1: 0}, 100)
	a0, a1 := mustTrack(t, tr, tp0, 0), mustTrack(t, tr, tp0, 1)
	b0 := mustTrack(t, tr, tp1, 0)
	a1.Abandon() // partition 0's reader stopped while handing 1 over
	a1.Done()    // ignored
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drained <- tr.Drain(ctx)
	}()
	select {
	case err := <-drained:
		t.Fatalf("drain returned %v with messages 0 of both partitions in processing", err)
	case <-time.After(50 * time.Millisecond):
	}
	a0.Done()
	b0.Done()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain waits for the abandoned message")
	}
	wantCommit(t, tr, tp0, 1) // up to the abandoned message, not past it
	wantCommit(t, tr, tp1, 1)
	if p := tr.Revoke()[tp0]; len(p) != 1 || p[0] != 1 {
		t.Fatalf("pending %v, want [1]: read again by the next owner", p)
	}
}

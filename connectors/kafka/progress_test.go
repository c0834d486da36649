package kafka

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
)

func produceAll(t *testing.T, co ClientOptions, parts, per int) {
	t.Helper()
	var msgs []kafkago.Message
	for p := 0; p < parts; p++ {
		for i := 0; i < per; i++ {
			msgs = append(msgs, jsonMsg(p, i))
		}
	}
	produce(t, co, msgs...)
}

func waitReady(t *testing.T, s *GroupSource, d time.Duration, want string) error {
	t.Helper()
	var err error
	waitFor(t, d, "readiness "+want, func() bool {
		err = s.Ready()
		if want == "" {
			return err == nil
		}
		return err != nil && strings.Contains(err.Error(), want)
	})
	return err
}

// TestReadyReportsStalledPartition (reliability issue, item 2 and
// "progress-aware readiness"): a partition whose committed offset stops
// while messages wait behind a stuck one makes the source not ready once
// the stall timeout passes, naming the partition, and shows in
// forestd_stalled_partitions; it is ready again when the partition moves.
func TestReadyReportsStalledPartition(t *testing.T) {
	b, co := startBroker(t, broker.Options{})
	ensure(t, co, 2, "in", "out", "dlq")
	produceAll(t, co, 2, 10)
	st := &stuckStage{target: "in/1/3", release: make(chan struct{}), blocked: make(chan struct{})}
	var release sync.Once
	unstick := func() { release.Do(func() { close(st.release) }) }
	d := startDaemon(t, co, "g", []string{"in"}, st, SourceOptions{StallTimeout: 500 * time.Millisecond})
	t.Cleanup(unstick) // runs before the daemon's stop
	waitFor(t, 20*time.Second, "commits up to the stuck message", func() bool {
		c := committed(b, "g", "in")
		return c[0] == 10 && c[1] == 3
	})
	err := waitReady(t, d.src, 10*time.Second, "consumption stalled")
	if !strings.Contains(err.Error(), "in/1 (7 messages waiting") || !strings.Contains(err.Error(), "held by this daemon") ||
		strings.Contains(err.Error(), "in/0") {
		t.Fatalf("readiness error %q", err)
	}
	m := d.src.opts.Metrics
	waitFor(t, 5*time.Second, "forestd_stalled_partitions{topic=in} 1", func() bool {
		return testutil.ToFloat64(m.StalledPartitions.WithLabelValues("in")) == 1
	})
	if v := testutil.ToFloat64(m.GroupLag.WithLabelValues("in", "1")); v != 7 {
		t.Fatalf("forestd_group_lag{in,1} = %v", v)
	}
	unstick()
	waitReady(t, d.src, 10*time.Second, "")
	waitFor(t, 5*time.Second, "forestd_stalled_partitions{topic=in} 0", func() bool {
		return testutil.ToFloat64(m.StalledPartitions.WithLabelValues("in")) == 0
	})
}

// TestReadyReportsPartitionsOfAnotherMember: a member of the group that
// holds partitions and never consumes them (a dead daemon the broker keeps
// in the group, say) stalls the group; the daemon reports it although the
// partitions it holds itself are fine, and is ready again once the member
// leaves and it takes them.
func TestReadyReportsPartitionsOfAnotherMember(t *testing.T) {
	b, co := startBroker(t, broker.Options{MinSessionTimeout: 500 * time.Millisecond})
	ensure(t, co, 4, "in", "out", "dlq")
	d := startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{StallTimeout: 2 * time.Second})
	waitReady(t, d.src, 20*time.Second, "")
	// a member that takes half of the partitions and never reads them
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"in"},
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond, RebalanceTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil {
			cg.Next(ctx)
		}
	}()
	waitFor(t, 20*time.Second, "the daemon holding 2 of 4 partitions", func() bool {
		tr := d.src.Tracker()
		return tr != nil && len(tr.Partitions()) == 2
	})
	held := d.src.Tracker().Partitions()
	produceAll(t, co, 4, 5)
	waitFor(t, 20*time.Second, "the daemon's partitions committed to their end", func() bool {
		c := committed(b, "g", "in")
		return c[held[0].Partition] == 5 && c[held[1].Partition] == 5
	})
	err = waitReady(t, d.src, 20*time.Second, "consumption stalled")
	for _, tp := range held {
		if strings.Contains(err.Error(), tp.String()+" (") {
			t.Fatalf("the daemon's own partition %s reported stalled: %v", tp, err)
		}
	}
	if strings.Count(err.Error(), "held by another member") != 2 {
		t.Fatalf("readiness error %q, want the other member's two partitions", err)
	}
	cancel()
	cg.Close()
	waitReady(t, d.src, 20*time.Second, "")
	waitFor(t, 10*time.Second, "every partition committed to its end", func() bool {
		c := committed(b, "g", "in")
		return c[0] == 5 && c[1] == 5 && c[2] == 5 && c[3] == 5
	})
}

// TestReadiness: the verdict on the partitions' progress.
func TestReadiness(t *testing.T) {
	tp := func(topic string, p int32) pipeline.TopicPartition {
		return pipeline.TopicPartition{Topic: topic, Partition: p}
	}
	stall := 10 * time.Second
	cases := []struct {
		name  string
		parts []PartitionProgress
		want  string // "" ready
	}{
		{"all consumed", []PartitionProgress{{tp("f", 0), 0, 0, true}, {tp("f", 1), 0, 0, false}}, ""},
		{"lagging but committing", []PartitionProgress{{tp("f", 0), 900, 2 * time.Second, true}}, ""},
		{"stalled here", []PartitionProgress{{tp("f", 0), 9, 11 * time.Second, true}, {tp("f", 1), 0, 0, false}},
			"consumption stalled: f/0 (9 messages waiting, no commit for 11s, held by this daemon)"},
		{"stalled elsewhere", []PartitionProgress{{tp("f", 0), 0, 0, true}, {tp("f", 1), 4, time.Minute, false}},
			"f/1 (4 messages waiting, no commit for 1m0s, held by another member)"},
		{"no partition of a topic with messages waiting", []PartitionProgress{{tp("f", 0), 0, 0, true}, {tp("t", 0), 3, time.Second, false}},
			"this daemon holds no partition of t (3 messages waiting)"},
		{"no partition of an idle topic", []PartitionProgress{{tp("f", 0), 0, 0, true}, {tp("t", 0), 0, 0, false}}, ""},
	}
	for _, c := range cases {
		err := readiness(c.parts, []string{"f", "t"}, stall)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// slowStage forwards each message after a pause, so that a backlog keeps
// every worker busy and the source's readers wait in Submit.
type slowStage struct{ pause time.Duration }

func (s slowStage) Name() string { return "slow" }
func (s slowStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	time.Sleep(s.pause)
	return forward{"out"}.Process(ctx, in)
}

// TestStopUnderBacklogDrainsQuickly (audit: "every SIGTERM or rebalance
// under load waits the full drain_timeout"): stopping the source while
// its readers wait in Submit for busy workers returns as soon as the
// messages being processed finish, not after DrainTimeout — the message a
// reader held when it stopped was tracked but never handed over, and the
// drain used to wait for it. Nothing is lost: the commits stop before
// every message not processed, and a second run reads the rest.
func TestStopUnderBacklogDrainsQuickly(t *testing.T) {
	b, co := startBroker(t, broker.Options{})
	ensure(t, co, 4, "in", "out", "dlq")
	produceAll(t, co, 4, 50)
	d := startDaemon(t, co, "g", []string{"in"}, slowStage{pause: 20 * time.Millisecond}, SourceOptions{DrainTimeout: 20 * time.Second})
	waitFor(t, 20*time.Second, "some messages processed", func() bool {
		return len(consumeAll(t, co, "out")) >= 10
	})
	t0 := time.Now()
	d.stop(t)
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("stopping took %v under a backlog (drain timeout 20s)", took)
	}
	c := committed(b, "g", "in")
	done := 0
	for p := int32(0); p < 4; p++ {
		done += int(c[p])
	}
	if done == 0 || done >= 200 {
		t.Fatalf("committed %v: want some but not all of the backlog", c)
	}
	// a second run reads the rest: every message reaches out at least once
	startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{})
	waitFor(t, 30*time.Second, "every message forwarded", func() bool {
		seen := map[string]bool{}
		for _, m := range consumeAll(t, co, "out") {
			seen[string(m.Key)] = true
		}
		return len(seen) == 200
	})
}

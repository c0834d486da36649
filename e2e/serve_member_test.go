package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// groupMembers describes the consumer group through the broker (Kafka's
// DescribeGroups) and returns its state and member IDs.
func groupMembers(t *testing.T, brokers, group string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &kafkago.Client{Addr: kafkago.TCP(brokers), Timeout: 10 * time.Second}
	resp, err := cl.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		t.Fatalf("describe group %s: %v", group, err)
	}
	if len(resp.Groups) != 1 {
		t.Fatalf("describe group %s: %d groups", group, len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.Error != nil {
		t.Fatalf("describe group %s: %v", group, g.Error)
	}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	return g.GroupState, ids
}

// TestServeDoubleKill9 (reliability issue, item 3): kill -9 a daemon,
// start another and kill -9 it too while it waits in its JoinGroup (the
// first one's session has not lapsed yet), then start a third. The second
// daemon is a dead member whose JoinGroup the broker answers into a closed
// connection. The broker used to arm a member's session timer only when a
// reply reached it, so that member never expired: when the third daemon
// led the rebalance it stayed in the group, holding half of the partitions,
// for as long as the broker ran. Now the embedded broker expires it at its
// session timeout. The cycle runs four times (the leader of each rebalance
// is chosen at random, so each cycle had an even chance of stranding
// partitions); after each, every row produced so far is scored within 30 s
// of the third daemon's start, and the group is down to that one member.
func TestServeDoubleKill9(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	pr := startProducer(t, brokers, featuresTopic, 4, 5, 20*time.Millisecond)
	args := []string{"--model", model, "--stages", "score", "--output-format", "json", "--key", "id",
		"--session-timeout", "5s"}
	cur := startServe(t, brokers, args...)
	cur.waitReady(60 * time.Second)
	time.Sleep(time.Second)
	for cycle := 0; cycle < 4; cycle++ {
		cur.kill()
		second := startServe(t, brokers, args...)
		// the second daemon's JoinGroup is parked: the group waits for the
		// killed member, whose session has not lapsed
		waitCond(t, 30*time.Second, "the second daemon joining beside the dead one", func() bool {
			_, ids := groupMembers(t, brokers, "forestd")
			return len(ids) == 2
		})
		second.kill()
		cur = startServe(t, brokers, args...)
		started := time.Now()
		time.Sleep(500 * time.Millisecond)
		pr.pause()
		ids := pr.ids()
		deadline := started.Add(30 * time.Second)
		for {
			ps := predictionsJSON(t, kcatConsume(t, brokers, "forestd.predictions"))
			seen := map[int]bool{}
			for _, p := range ps {
				seen[int(p.ID)] = true
			}
			missing := 0
			for _, id := range ids {
				if !seen[id] {
					missing++
				}
			}
			if missing == 0 {
				break
			}
			if time.Now().After(deadline) {
				state, members := groupMembers(t, brokers, "forestd")
				t.Fatalf("cycle %d: %d of %d rows unscored 30 s after the restart; group %s with members %v",
					cycle, missing, len(ids), state, members)
			}
			time.Sleep(300 * time.Millisecond)
		}
		waitCond(t, 30*time.Second, "the group down to the live daemon", func() bool {
			state, ids := groupMembers(t, brokers, "forestd")
			return state == "Stable" && len(ids) == 1
		})
		t.Logf("cycle %d: %d rows scored %.1f s after the restart", cycle, len(ids), time.Since(started).Seconds())
		pr.resume()
	}
	pr.stop()
	if code := cur.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestServeReadyzWhileStalled (reliability issue, "progress-aware
// readiness"; the double kill left 2,080 of 6,000 rows unscored while
// /readyz said ready): a member that holds half of the partitions and never
// consumes them — here a bare consumer-group member the test runs, as a
// dead daemon the broker kept would — stalls the group. The daemon's
// /readyz turns 503 within the stall timeout, naming the partitions, and
// forestd_stalled_partitions counts them; when the member leaves, the
// daemon takes them, scores every row and is ready again.
func TestServeReadyzWhileStalled(t *testing.T) {
	t.Parallel()
	needKcat(t)
	model, _ := trainSyntheticModel(t, 4, 10)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--model", model, "--stages", "score", "--output-format", "json", "--key", "id",
		"--stall-timeout", "3s")
	d.waitReady(60 * time.Second)
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{ID: "forestd", Brokers: []string{brokers},
		Topics: []string{featuresTopic}, SessionTimeout: 3 * time.Second, HeartbeatInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cg.Next(ctx)
		}
	}()
	waitCond(t, 30*time.Second, "the daemon holding 2 of 4 partitions", func() bool {
		return d.metric("forestd_assigned_partitions") == 2
	})
	pr := startProducer(t, brokers, featuresTopic, 4, 5, 20*time.Millisecond)
	// each partition stalls when its own first message has waited the stall
	// timeout, so the two may turn up one poll apart
	var body string
	waitCond(t, 30*time.Second, "/readyz naming the 2 stalled partitions of the other member", func() bool {
		var code int
		code, body = d.readyz()
		return code == 503 && strings.Contains(body, "consumption stalled") && strings.Count(body, "held by another member") == 2
	})
	waitCond(t, 10*time.Second, "forestd_stalled_partitions 2", func() bool { return d.metric("forestd_stalled_partitions") == 2 })
	cancel()
	cg.Close()
	waitCond(t, 30*time.Second, "the daemon holding all partitions", func() bool {
		return d.metric("forestd_assigned_partitions") == 4
	})
	pr.stop()
	ids := pr.ids()
	ps := waitAllPredicted(t, brokers, 60*time.Second, ids)
	checkAllPredicted(t, ids, ps)
	d.waitReady(30 * time.Second)
	waitCond(t, 10*time.Second, "forestd_stalled_partitions 0", func() bool { return d.metric("forestd_stalled_partitions") == 0 })
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

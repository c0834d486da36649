package e2e

import (
	"context"
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

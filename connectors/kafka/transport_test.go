package kafka

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/forestd/forestd/internal/broker"
)

// TestClientsCloseTheirTransports: every client the package builds owns a
// kafka-go Transport whose connection pools keep a metadata goroutine and
// their connections until closed. The admin calls, a sink and the model
// bus left them running, so each daemon.Start/Stop in one process leaked
// goroutines (3 per daemon). After the calls and Close no kafka-go
// goroutine of theirs is left.
func TestClientsCloseTheirTransports(t *testing.T) {
	before := len(kafkaGoroutines()) // what earlier tests of the package left
	_, co := startBroker(t, broker.Options{})
	ctx := testCtx(t, 30*time.Second)
	if err := EnsureTopics(ctx, co, []TopicSpec{{Name: "leak", Partitions: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Partitions(ctx, co, "leak"); err != nil {
		t.Fatal(err)
	}
	_, _ = CommittedOffsets(ctx, co, "g", "leak") // an unknown group is an error, and must close too
	var left []string
	for range 50 {
		if left = kafkaGoroutines(); len(left) <= before {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%d kafka-go goroutines after the admin calls, %d before:\n%s", len(left), before, strings.Join(left, "\n\n"))
}

// kafkaGoroutines returns the stacks of kafka-go's transport goroutines.
func kafkaGoroutines() []string {
	buf := make([]byte, 4<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "segmentio/kafka-go.(*connPool)") || strings.Contains(g, "segmentio/kafka-go.(*conn).run") {
			out = append(out, g)
		}
	}
	return out
}

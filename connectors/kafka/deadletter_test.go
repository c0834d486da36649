package kafka

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/connectors/broker"
	"github.com/forestd/forestd/pipeline"
)

// TestSinkFitsDeadLetters (reliability issue, item 2): with the broker's
// message limit raised to 10 MB, a 5 MB dead letter used to be refused by
// the sink (a permanent failure the runtime could not route anywhere), so
// its offset never committed. Now it is stored cut to the sink's
// dead-letter limit, with its original size and digest; and when the
// dead-letter topic's own max.message.bytes is smaller still, the sink cuts
// further until the topic takes it.
func TestSinkFitsDeadLetters(t *testing.T) {
	_, co := startBroker(t, broker.Options{MaxMessageBytes: 10_000_000})
	if err := EnsureTopics(testCtx(t, 10*time.Second), co, []TopicSpec{
		{Name: "dlq", Partitions: 1},
		{Name: "small-dlq", Partitions: 1, MaxMessageBytes: 200_000},
	}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xfe, 0x00, 0x01}, 5_000_000/3)
	sum := sha256.Sum256(big)
	env := &pipeline.Envelope{Topic: "in", Partition: 0, Offset: 3, Key: []byte("k"), Value: big}
	for _, c := range []struct {
		topic string
		max   int // the stored letter's largest size
	}{
		{"dlq", DefaultMaxMessageBytes},
		{"small-dlq", 200_000},
	} {
		m := pipeline.NewMetrics()
		s, err := NewSink(SinkOptions{Client: co, Topics: map[string]string{"dlq": c.topic}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		dl := pipeline.DeadLetter("dlq", env, "decode", errBadValue)
		if err := s.Write(testCtx(t, 30*time.Second), []pipeline.Output{dl}); err != nil {
			t.Fatalf("%s: %v", c.topic, err)
		}
		s.Close()
		msgs := consumeAll(t, co, c.topic)
		if len(msgs) != 1 {
			t.Fatalf("%s: %d messages", c.topic, len(msgs))
		}
		got := msgs[0]
		if len(got.Value) == 0 || len(got.Value) > c.max || !bytes.Equal(got.Value, big[:len(got.Value)]) {
			t.Fatalf("%s: stored value of %d bytes, want a prefix of the original within %d", c.topic, len(got.Value), c.max)
		}
		want := map[string]string{
			pipeline.HeaderDLQTrimmed:       "value",
			pipeline.HeaderDLQOriginalBytes: strconv.Itoa(len(big)),
			pipeline.HeaderDLQValueSHA256:   hex.EncodeToString(sum[:]),
			pipeline.HeaderSourceOffset:     "3",
			pipeline.HeaderDLQStage:         "decode",
		}
		for k, v := range want {
			if h, _ := header(got.Headers, k); h != v {
				t.Fatalf("%s: header %s = %q, want %q", c.topic, k, h, v)
			}
		}
		if v := testutil.ToFloat64(m.DeadLettersTrimmed); v != 1 {
			t.Fatalf("%s: forestd_dead_letters_trimmed_total = %v", c.topic, v)
		}
	}
}

var errBadValue = pipeline.BadInput(errString("undecodable"))

type errString string

func (e errString) Error() string { return string(e) }

package kafka

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/internal/broker"
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

// rawRecord is a record as the broker stores it: a null value is nil, an
// empty one empty.
type rawRecord struct {
	offset  int64
	null    bool
	value   []byte
	headers map[string]string
}

// rawRecords fetches partition 0 of topic at the protocol level, where a
// null value and an empty one differ (kafka-go's Reader returns nil for
// both).
func rawRecords(t *testing.T, co ClientOptions, topic string) []rawRecord {
	t.Helper()
	c, err := co.build()
	if err != nil {
		t.Fatal(err)
	}
	cl := &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.transport}
	resp, err := cl.Fetch(testCtx(t, 10*time.Second), &kafkago.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var out []rawRecord
	for {
		r, err := resp.Records.ReadRecord()
		if err != nil {
			return out
		}
		rr := rawRecord{offset: r.Offset, null: r.Value == nil, headers: map[string]string{}}
		if r.Value != nil {
			rr.value, _ = io.ReadAll(r.Value)
		}
		for _, h := range r.Headers {
			rr.headers[h.Key] = string(h.Value)
		}
		out = append(out, rr)
	}
}

// TestTombstoneAndEmptyValue (reliability issue, item 8): a tombstone and
// an empty value used to reach the decoder alike (kafka-go returns nil for
// both), got the same reason, and the dead-letter topic stored the empty
// value as null. Now each gets its own reason and its dead letter keeps
// the value as it was: null, or empty.
func TestTombstoneAndEmptyValue(t *testing.T) {
	_, co := startBroker(t, broker.Options{})
	ensure(t, co, 1, "in", "out", "dlq")
	produce(t, co,
		kafkago.Message{Topic: "in", Key: []byte("p0/tombstone"), Value: nil},
		kafkago.Message{Topic: "in", Key: []byte("p0/empty"), Value: []byte{}},
		jsonMsg(0, 2))
	if in := rawRecords(t, co, "in"); len(in) != 3 || !in[0].null || in[1].null || len(in[1].value) != 0 {
		t.Fatalf("setup: the input topic holds %+v", in)
	}
	d := startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{})
	consume(t, co, "out", 1, 20*time.Second)
	var dlq []rawRecord
	waitFor(t, 20*time.Second, "two dead letters", func() bool {
		dlq = rawRecords(t, co, "dlq")
		return len(dlq) == 2
	})
	d.stop(t)
	byOffset := map[string]rawRecord{}
	for _, r := range dlq {
		byOffset[r.headers[pipeline.HeaderSourceOffset]] = r
	}
	tomb, empty := byOffset["0"], byOffset["1"]
	if !tomb.null || !strings.Contains(tomb.headers[pipeline.HeaderDLQReason], "tombstone") {
		t.Fatalf("tombstone's dead letter: null %v, reason %q", tomb.null, tomb.headers[pipeline.HeaderDLQReason])
	}
	if empty.null || len(empty.value) != 0 || !strings.Contains(empty.headers[pipeline.HeaderDLQReason], "empty value") {
		t.Fatalf("empty value's dead letter: null %v, %d bytes, reason %q", empty.null, len(empty.value), empty.headers[pipeline.HeaderDLQReason])
	}
}

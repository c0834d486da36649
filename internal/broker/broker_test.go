package broker

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{Listen: "nohost"},
		{Listen: "example.com:9092"}, // a name other than localhost could bind anywhere
		{Listen: "127.0.0.1:99999"},
		{Partitions: -1},
		{MaxMessageBytes: 10},
		{MinSessionTimeout: -time.Second},
		{Users: []User{{Mechanism: "GSSAPI", Name: "u", Password: "p"}}},
		{Users: []User{{Mechanism: MechanismPlain, Name: "u"}}},
		{Topics: []Topic{{Name: ""}}},
	}
	for _, o := range bad {
		if _, err := Start(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestPersistence: a broker restarted on the same data directory still has
// the topic, its messages and the group's committed offsets.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(Options{Listen: "127.0.0.1:0", DataDir: dir, Topics: []Topic{{Name: "t", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: "t", RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(ctx, kafkago.Message{Value: []byte("a")}, kafkago.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"t"},
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := cg.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{"t": {0: 1}}); err != nil {
		t.Fatal(err)
	}
	cg.Close()
	b.Close()

	b2, err := Start(Options{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b2.Addr()}, Topic: "t", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for _, want := range []string{"a", "b"} {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Value) != want {
			t.Fatalf("message %q, want %q", m.Value, want)
		}
	}
	gi := b2.Cluster().GroupInfo("g")
	if gi == nil || gi.Commits["t"][0].Offset != 1 {
		t.Fatalf("committed offsets not restored: %+v", gi)
	}
}

// TestCloseTwice: a second Close does nothing (a deferred Close beside an
// explicit shutdown, the usual embedding); it panicked on a closed channel.
func TestCloseTwice(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b.Close()
}

package kafka

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
)

func ensure(t *testing.T, co ClientOptions, parts int, names ...string) {
	t.Helper()
	var specs []TopicSpec
	for _, n := range names {
		specs = append(specs, TopicSpec{Name: n, Partitions: parts})
	}
	if err := EnsureTopics(testCtx(t, 10*time.Second), co, specs); err != nil {
		t.Fatal(err)
	}
}

// TestSourceSinkEndToEnd: JSON messages in three partitions come out once
// each, keyed by their coordinates; poison messages land in the dead-letter
// topic with their reason; the group's committed offsets reach the end of
// every partition and a graceful stop commits.
func TestSourceSinkEndToEnd(t *testing.T) {
	b, co := startBroker(t, broker.Options{})
	ensure(t, co, 3, "in", "out", "dlq")
	var msgs []kafkago.Message
	for p := 0; p < 3; p++ {
		for i := 0; i < 20; i++ {
			msgs = append(msgs, jsonMsg(p, i))
		}
	}
	poison := kafkago.Message{Topic: "in", Key: []byte("p1/poison"), Value: []byte("\x00garbage")}
	msgs = append(msgs, poison)
	produce(t, co, msgs...)
	d := startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{})
	out := consume(t, co, "out", 60, 20*time.Second)
	if len(out) != 60 {
		t.Fatalf("%d outputs, want 60", len(out))
	}
	seen := map[string]bool{}
	for _, m := range out {
		if seen[string(m.Key)] {
			t.Fatalf("duplicate output %s without any restart", m.Key)
		}
		seen[string(m.Key)] = true
		if ct, _ := header(m.Headers, HeaderContentType); ct != codec.ContentTypeArrow {
			t.Fatalf("output content type %q", ct)
		}
	}
	dlq := consume(t, co, "dlq", 1, 10*time.Second)
	if len(dlq) != 1 || !bytes.Equal(dlq[0].Value, poison.Value) {
		t.Fatalf("dead letters %v", dlq)
	}
	if r, _ := header(dlq[0].Headers, pipeline.HeaderDLQReason); !strings.Contains(r, "neither an Arrow IPC stream") {
		t.Fatalf("dead-letter reason %q", r)
	}
	if p, _ := header(dlq[0].Headers, pipeline.HeaderSourcePartition); p != "1" {
		t.Fatalf("dead-letter source partition %q", p)
	}
	waitFor(t, 10*time.Second, "commits at the end of every partition", func() bool {
		c := committed(b, "g", "in")
		return c[0] == 20 && c[1] == 21 && c[2] == 20
	})
	d.stop(t)
}

// TestRebalanceLateAckDoesNotCommit is the scenario of kafka-go issues
// #1276 and #1308 end to end: member A is stuck on a message when member B
// joins and the partitions are rebalanced. A's generation ends; after the
// drain timeout A commits only what is contiguous and revokes its tracker.
// When A's stuck message finally completes, nothing is committed for it —
// the group's committed offsets never move backwards — and every message
// has an output (the stuck one possibly twice).
func TestRebalanceLateAckDoesNotCommit(t *testing.T) {
	b, co := startBroker(t, broker.Options{})
	ensure(t, co, 2, "in", "out", "dlq")
	var msgs []kafkago.Message
	for p := 0; p < 2; p++ {
		for i := 0; i < 10; i++ {
			msgs = append(msgs, jsonMsg(p, i))
		}
	}
	produce(t, co, msgs...)

	// watch the committed offsets: they must never decrease
	var mono atomic.Bool
	mono.Store(true)
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := map[int32]int64{}
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for p, o := range committed(b, "g", "in") {
				if o < last[p] {
					t.Errorf("partition %d: committed offset went back from %d to %d", p, last[p], o)
					mono.Store(false)
				}
				last[p] = o
			}
		}
	}()

	st := &stuckStage{release: make(chan struct{}), blocked: make(chan struct{})}
	st.target = "in/0/3"
	a := startDaemon(t, co, "g", []string{"in"}, st, SourceOptions{DrainTimeout: 300 * time.Millisecond})
	select {
	case <-st.blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("member A never reached the stuck message")
	}
	waitFor(t, 10*time.Second, "A's commits up to the stuck message", func() bool {
		c := committed(b, "g", "in")
		return c[0] == 3 && c[1] == 10
	})
	// B joins: the group rebalances while A is stuck.
	bm := startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{})
	waitFor(t, 20*time.Second, "every message processed after the rebalance", func() bool {
		c := committed(b, "g", "in")
		return c[0] == 10 && c[1] == 10
	})
	close(st.release) // A's stale worker finishes now
	time.Sleep(300 * time.Millisecond)
	if c := committed(b, "g", "in"); c[0] != 10 || c[1] != 10 {
		t.Fatalf("committed offsets after the late acknowledgement: %v", c)
	}
	out := consumeAll(t, co, "out")
	keys := map[string]int{}
	for _, m := range out {
		keys[string(m.Key)]++
	}
	for p := 0; p < 2; p++ {
		for i := 0; i < 10; i++ {
			k := fmt.Sprintf("in/%d/%d", p, i)
			if keys[k] == 0 {
				t.Errorf("message %s lost", k)
			}
		}
	}
	bm.stop(t)
	a.stop(t)
	close(stopWatch)
	<-watched
	if !mono.Load() {
		t.Fatal("a commit moved backwards")
	}
}

// stuckStage forwards like forward but blocks the first time it sees the
// target message, until release is closed.
type stuckStage struct {
	target  string
	once    sync.Once
	release chan struct{}
	blocked chan struct{}
}

func (s *stuckStage) Name() string { return "stuck" }
func (s *stuckStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	if in.Env.Source() == s.target {
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.blocked)
			<-s.release
		}
	}
	return forward{"out"}.Process(ctx, in)
}

// TestTLSAndSASL runs the source, sink and admin client against a broker
// that requires TLS and each SASL mechanism.
func TestTLSAndSASL(t *testing.T) {
	tc, caFile := selfSignedTLS(t)
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			b, co := startBroker(t, broker.Options{TLS: tc, Users: []broker.User{{Mechanism: mech, Name: "alice", Password: "s3cret"}}})
			co.TLS = TLSOptions{Enabled: true, CAFile: caFile}
			co.SASL = SASLOptions{Mechanism: mech, Username: "alice", Password: "s3cret"}
			ensure(t, co, 1, "in", "out", "dlq")
			produce(t, co, jsonMsg(0, 0), jsonMsg(0, 1))
			startDaemon(t, co, "g", []string{"in"}, forward{"out"}, SourceOptions{})
			if out := consume(t, co, "out", 2, 20*time.Second); len(out) != 2 {
				t.Fatalf("%d outputs over TLS + %s", len(out), mech)
			}
			waitFor(t, 10*time.Second, "commit", func() bool { return committed(b, "g", "in")[0] == 2 })
			// wrong password and plaintext are refused
			bad := co
			bad.SASL.Password = "wrong"
			if err := EnsureTopics(testCtx(t, 5*time.Second), bad, []TopicSpec{{Name: "x", Partitions: 1}}); err == nil {
				t.Fatal("wrong password accepted")
			}
			plain := co
			plain.TLS = TLSOptions{}
			if err := EnsureTopics(testCtx(t, 5*time.Second), plain, []TopicSpec{{Name: "x", Partitions: 1}}); err == nil {
				t.Fatal("plaintext accepted by a TLS broker")
			}
		})
	}
}

func TestClientOptionsValidate(t *testing.T) {
	bad := []ClientOptions{
		{},
		{Brokers: []string{"nohostport"}},
		{Brokers: []string{"h:0"}},
		{Brokers: []string{"h:1"}, SASL: SASLOptions{Mechanism: "GSSAPI", Username: "u"}},
		{Brokers: []string{"h:1"}, SASL: SASLOptions{Mechanism: "PLAIN"}},
		{Brokers: []string{"h:1"}, SASL: SASLOptions{Username: "u"}},
		{Brokers: []string{"h:1"}, TLS: TLSOptions{CertFile: "c.pem"}},
	}
	for _, o := range bad {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	o := ClientOptions{Brokers: []string{"h:1"}, TLS: TLSOptions{CAFile: "/nonexistent/ca.pem"}}
	if _, err := o.build(); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Fatalf("missing CA file: %v", err)
	}
}

// TestSinkSplitsLargeRecords: a record that encodes larger than the
// message limit is produced as several messages, each under the limit,
// together holding every row.
func TestSinkSplitsLargeRecords(t *testing.T) {
	_, co := startBroker(t, broker.Options{})
	ensure(t, co, 1, "out")
	var lines strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&lines, "{\"i\": %d, \"s\": \"row %d padded to make it longer\"}\n", i, i)
	}
	rec, err := codec.DecodeJSON([]byte(lines.String()), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, format := range []string{FormatArrow, FormatJSON} {
		s, err := NewSink(SinkOptions{Client: co, Topics: map[string]string{"out": "out"}, Format: format, MaxMessageBytes: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(testCtx(t, 10*time.Second), []pipeline.Output{{Stream: "out", Key: []byte(format), Record: rec}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	msgs := consumeAll(t, co, "out")
	rows := map[string]int64{}
	for _, m := range msgs {
		if len(m.Value) > 16<<10 {
			t.Fatalf("message of %d bytes above the limit", len(m.Value))
		}
		if _, ok := header(m.Headers, headerPart); !ok {
			t.Fatal("split message without a part header")
		}
		ct, _ := header(m.Headers, HeaderContentType)
		_, recs, err := codec.Decode(m.Value, ct, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			rows[string(m.Key)] += r.NumRows()
			r.Release()
		}
	}
	if rows[FormatArrow] != 3000 || rows[FormatJSON] != 3000 {
		t.Fatalf("rows across parts %v", rows)
	}
	s, _ := NewSink(SinkOptions{Client: co, Topics: map[string]string{"out": "out"}})
	if err := s.Write(context.Background(), []pipeline.Output{{Stream: "nowhere", Raw: []byte("x")}}); err == nil {
		t.Fatal("unmapped stream accepted")
	}
	s.Close()
}

// TestModelBus publishes models larger than the broker's 1 MiB message
// limit; a follower reassembles each exactly, and superseded models are
// deleted by tombstones so that after compaction a new replica sees only
// the newest.
func TestModelBus(t *testing.T) {
	b, co := startBroker(t, broker.Options{})
	if err := EnsureTopics(testCtx(t, 10*time.Second), co, []TopicSpec{{Name: "models", Partitions: 1, Compact: true}}); err != nil {
		t.Fatal(err)
	}
	bus, err := NewModelBus(ModelBusOptions{Client: co, Topic: "models"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	model := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	m1, m2 := model(3<<20+17), model(1500<<10)
	type got struct {
		ref  ModelRef
		hash [32]byte
	}
	follow := func(ctx context.Context, bus *ModelBus, ch chan got) {
		go bus.Follow(ctx, func(ref ModelRef, data []byte) bool { ch <- got{ref, sha256.Sum256(data)}; return true })
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan got, 10)
	follow(ctx, bus, ch)
	waitFor(t, 10*time.Second, "follower caught up", bus.CaughtUp)
	if err := bus.Publish(testCtx(t, 20*time.Second), ModelRef{ID: "aaa", Version: 1}, m1); err != nil {
		t.Fatal(err)
	}
	expect := func(ch chan got, ref ModelRef, data []byte) {
		t.Helper()
		select {
		case g := <-ch:
			if g.ref != ref || g.hash != sha256.Sum256(data) {
				t.Fatalf("got model %+v, want %+v with the published bytes", g.ref, ref)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("model %+v never assembled", ref)
		}
	}
	expect(ch, ModelRef{ID: "aaa", Version: 1}, m1)
	if err := bus.Publish(testCtx(t, 20*time.Second), ModelRef{ID: "bbb", Version: 2}, m2); err != nil {
		t.Fatal(err)
	}
	expect(ch, ModelRef{ID: "bbb", Version: 2}, m2)
	b.Cluster().Compact()
	bus2, _ := NewModelBus(ModelBusOptions{Client: co, Topic: "models"})
	ch2 := make(chan got, 10)
	follow(ctx, bus2, ch2)
	expect(ch2, ModelRef{ID: "bbb", Version: 2}, m2)
	select {
	case g := <-ch2:
		t.Fatalf("a new replica also assembled %+v", g.ref)
	case <-time.After(500 * time.Millisecond):
	}
	// the superseded model's chunks were deleted with tombstones (nil values)
	tomb := 0
	for _, m := range consumeAll(t, co, "models") {
		if strings.HasPrefix(string(m.Key), "model/1/aaa/") && m.Value == nil {
			tomb++
		}
	}
	if tomb != 7 {
		t.Fatalf("%d tombstones for the 7 chunks of the superseded model", tomb)
	}
}

func TestAssembler(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	a1, _ := modelChunks("m", ModelRef{ID: "x", Version: 1}, data, 3000)
	a2, _ := modelChunks("m", ModelRef{ID: "y", Version: 2}, data[:5000], 3000)
	if len(a1) != 4 || len(a2) != 2 {
		t.Fatalf("%d and %d chunks", len(a1), len(a2))
	}
	asm := newModelAssembler()
	// interleaved, out of order
	order := []kafkago.Message{a1[2], a2[1], a1[0], a1[3], a2[0], a1[1]}
	var done []ModelRef
	for _, m := range order {
		ref, d, err := asm.Add(m.Key, m.Value, m.Headers)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			done = append(done, ref)
			want := data
			if ref.ID == "y" {
				want = data[:5000]
			}
			if !bytes.Equal(d, want) {
				t.Fatalf("model %s reassembled wrongly", ref.ID)
			}
		}
	}
	if fmt.Sprint(done) != "[{y 2} {x 1}]" {
		t.Fatalf("completed %v", done)
	}
	ts := asm.Superseded("m", ModelRef{ID: "y", Version: 2})
	if len(ts) != 4 || ts[0].Value != nil || string(ts[0].Key) != "model/1/x/0" {
		t.Fatalf("tombstones %v", ts)
	}
	if (ModelRef{ID: "a", Version: 3}).Newer(ModelRef{ID: "b", Version: 3}) || !(ModelRef{ID: "a", Version: 4}).Newer(ModelRef{ID: "b", Version: 3}) {
		t.Fatal("ModelRef ordering")
	}
	// malformed chunks
	good := a1[0]
	bad := []kafkago.Message{
		{Key: []byte("nope"), Value: []byte("x")},
		{Key: good.Key, Value: good.Value},                                     // no headers
		{Key: []byte("model/1/x/9"), Value: good.Value, Headers: good.Headers}, // index disagrees
		{Key: good.Key, Value: good.Value, Headers: append(good.Headers[:4:4], kafkago.Header{Key: headerModelBytes, Value: []byte("5")})}, // chunk larger than the model
	}
	for _, m := range bad {
		if _, _, err := newModelAssembler().Add(m.Key, m.Value, m.Headers); err == nil {
			t.Errorf("malformed chunk %q accepted", m.Key)
		}
	}
}

// FuzzAssembler: arbitrary model-topic messages never panic the
// assembler, and whatever it completes is consistent with its headers.
func FuzzAssembler(f *testing.F) {
	ms, _ := modelChunks("m", ModelRef{ID: "x", Version: 1}, []byte("hello world"), 4)
	for _, m := range ms {
		f.Add(m.Key, m.Value, "x", "1", string(ms[0].Headers[3].Value), "11")
	}
	f.Add([]byte("model/1/x/0"), []byte(nil), "", "", "", "")
	f.Fuzz(func(t *testing.T, key, value []byte, id, ver, chunk, size string) {
		asm := newModelAssembler()
		asm.MaxModelBytes = 1 << 20
		hs := []kafkago.Header{{Key: headerModelID, Value: []byte(id)}, {Key: headerModelVersion, Value: []byte(ver)},
			{Key: headerChunk, Value: []byte(chunk)}, {Key: headerModelBytes, Value: []byte(size)}}
		for k := 0; k < 3; k++ { // the same message again must be idempotent
			ref, data, err := asm.Add(key, value, hs)
			if err == nil && data != nil {
				if ref.ID != id || len(data) > 1<<20 {
					t.Fatalf("completed %+v with %d bytes", ref, len(data))
				}
			}
		}
	})
}

// TestCatchUpOffersNewestFirst: while catching up a follower keeps the
// newest complete models (at most maxCatchUpModels) and offers them newest
// first until one is adopted, so an entry whose reference claims a higher
// version than it has does not hide the real newest model.
func TestCatchUpOffersNewestFirst(t *testing.T) {
	var c catchUp
	for v := int64(1); v <= 12; v++ {
		c.add(ModelRef{ID: fmt.Sprint("m", v), Version: v}, []byte{byte(v)})
	}
	c.add(ModelRef{ID: "liar", Version: 30}, []byte("content says v1"))
	c.add(ModelRef{ID: "m12", Version: 12}, []byte{12, 12}) // the same model again: replaced
	if len(c.refs) != maxCatchUpModels {
		t.Fatalf("%d models held, bound %d", len(c.refs), maxCatchUpModels)
	}
	var offered []string
	c.offer(func(ref ModelRef, data []byte) bool {
		offered = append(offered, ref.ID)
		if ref.ID == "m12" && len(data) != 2 {
			t.Errorf("m12 offered with its first copy")
		}
		return ref.ID != "liar" // the daemon refuses the liar, adopts the next
	})
	if strings.Join(offered, ",") != "liar,m12" {
		t.Fatalf("offered %v, want the liar, then the newest real model", offered)
	}
	if len(c.refs) != 0 {
		t.Fatal("models held after the offer")
	}
}

// TestSinkAutoFormat: under FormatAuto a record output is encoded as its
// content-type header asks (JSON lines for JSON, Arrow IPC for Arrow or
// none), and a fixed format replaces the header; the decoder reports the
// content type it read, sniffed when the message has no header.
func TestSinkAutoFormat(t *testing.T) {
	_, co := startBroker(t, broker.Options{})
	ensure(t, co, 1, "out")
	rec, err := codec.DecodeJSON([]byte(`{"a": 1}`+"\n"+`{"a": 2}`), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	ct := func(v string) []pipeline.Header { return []pipeline.Header{{Key: "Content-Type", Value: []byte(v)}} }
	cases := []struct {
		format, key string
		headers     []pipeline.Header
		want        string
	}{
		{FormatAuto, "auto-json", ct(codec.ContentTypeJSON), codec.ContentTypeNDJSON},
		{FormatAuto, "auto-ndjson", ct(codec.ContentTypeNDJSON), codec.ContentTypeNDJSON},
		{FormatAuto, "auto-arrow", ct(codec.ContentTypeArrow), codec.ContentTypeArrow},
		{FormatAuto, "auto-none", nil, codec.ContentTypeArrow},
		{FormatArrow, "arrow-json", ct(codec.ContentTypeJSON), codec.ContentTypeArrow},
		{FormatJSON, "json-arrow", ct(codec.ContentTypeArrow), codec.ContentTypeNDJSON},
	}
	for _, c := range cases {
		s, err := NewSink(SinkOptions{Client: co, Topics: map[string]string{"out": "out"}, Format: c.format})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(testCtx(t, 10*time.Second), []pipeline.Output{{Stream: "out", Key: []byte(c.key), Headers: c.headers, Record: rec}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	msgs := consumeAll(t, co, "out")
	if len(msgs) != len(cases) {
		t.Fatalf("%d messages, want %d", len(msgs), len(cases))
	}
	dec := NewDecoder(memory.DefaultAllocator)
	for i, m := range msgs {
		c := cases[i]
		n := 0
		for _, h := range m.Headers {
			if strings.EqualFold(h.Key, HeaderContentType) {
				n++
			}
		}
		got, _ := header(m.Headers, HeaderContentType)
		if string(m.Key) != c.key || got != c.want || n != 1 {
			t.Errorf("%s: content type %q (%d headers), want %q once", m.Key, got, n, c.want)
		}
		// sniffed without the header, as kcat sends it
		b, err := dec(&pipeline.Envelope{Value: m.Value})
		if err != nil {
			t.Fatalf("%s: %v", m.Key, err)
		}
		want := c.want
		if want == codec.ContentTypeNDJSON {
			want = codec.ContentTypeJSON // sniffing tells JSON, not lines
		}
		if b.ContentType != want || b.Rows() != 2 {
			t.Errorf("%s: decoded %q with %d rows, want %q with 2", m.Key, b.ContentType, b.Rows(), want)
		}
		b.Release()
	}
}

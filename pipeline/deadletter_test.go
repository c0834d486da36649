package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func letter(value []byte, key string, extra ...Header) Output {
	env := &Envelope{Topic: "in", Partition: 2, Offset: 7, Key: []byte(key), Value: value,
		Headers: append([]Header{{"content-type", []byte("application/json")}}, extra...)}
	return DeadLetter("dlq", env, "decode", fmt.Errorf("no content-type header, and the value is neither"))
}

// TestFitDeadLetter (reliability issue, item 2): a dead letter above the
// limit is cut to fit it — value first, then the copied headers, the key,
// the reason — and says so, with the original value's size and SHA-256.
func TestFitDeadLetter(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 5<<20)
	sum := sha256.Sum256(big)
	o := letter(big, "k1")
	if deadLetterSize(o) <= 1_000_000 {
		t.Fatal("setup: the letter fits already")
	}
	f, trimmed, err := FitDeadLetter(o, 1_000_000)
	if err != nil || !trimmed {
		t.Fatalf("fit: %v %v", trimmed, err)
	}
	if n := deadLetterSize(f); n > 1_000_000 || n < 1_000_000-64 {
		t.Fatalf("fitted size %d, want just under 1000000 (the value keeps what fits)", n)
	}
	if !bytes.Equal(f.Raw, big[:len(f.Raw)]) {
		t.Fatal("the fitted value is not a prefix of the original")
	}
	if header(f, HeaderDLQTrimmed) != "value" || header(f, HeaderDLQOriginalBytes) != strconv.Itoa(len(big)) ||
		header(f, HeaderDLQValueSHA256) != hex.EncodeToString(sum[:]) {
		t.Fatalf("trim headers %q %q %q", header(f, HeaderDLQTrimmed), header(f, HeaderDLQOriginalBytes), header(f, HeaderDLQValueSHA256))
	}
	for _, k := range []string{"content-type", HeaderDLQReason, HeaderDLQStage, HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset} {
		if header(f, k) != header(o, k) {
			t.Fatalf("header %s changed: %q → %q", k, header(o, k), header(f, k))
		}
	}
	if string(f.Key) != "k1" || len(o.Raw) != len(big) {
		t.Fatal("the key changed, or the original letter was modified")
	}

	// fitted again to a smaller limit (the topic refused it): the
	// description stays that of the original
	g, trimmed, err := FitDeadLetter(f, 100_000)
	if err != nil || !trimmed || deadLetterSize(g) > 100_000 {
		t.Fatalf("refit: %v %v size %d", trimmed, err, deadLetterSize(g))
	}
	if header(g, HeaderDLQOriginalBytes) != strconv.Itoa(len(big)) || header(g, HeaderDLQValueSHA256) != hex.EncodeToString(sum[:]) {
		t.Fatalf("refit lost the original's description: %q %q", header(g, HeaderDLQOriginalBytes), header(g, HeaderDLQValueSHA256))
	}
	if n := strings.Count(fmt.Sprint(g.Headers), HeaderDLQOriginalBytes); n != 1 {
		t.Fatalf("%d original-size headers after a refit", n)
	}

	// large copied headers and key go after the value
	o = letter(bytes.Repeat([]byte("v"), 100), strings.Repeat("k", 3000), Header{"trace", bytes.Repeat([]byte("h"), 5000)})
	f, _, err = FitDeadLetter(o, 3000)
	if err != nil || deadLetterSize(f) > 3000 {
		t.Fatalf("fit with big headers: %v, size %d", err, deadLetterSize(f))
	}
	if header(f, HeaderDLQTrimmed) != "value,headers,key" || header(f, "trace") != "" || len(f.Raw) != 0 || f.Raw == nil {
		t.Fatalf("trimmed %q, trace %d bytes, value %q", header(f, HeaderDLQTrimmed), len(header(f, "trace")), f.Raw)
	}
	if header(f, HeaderDLQReason) == "" || header(f, HeaderSourceOffset) != "7" {
		t.Fatal("the letter's own headers were cut before the key")
	}

	// a letter that fits is untouched; an empty value stays empty, not null
	o = letter([]byte{}, "")
	f, trimmed, err = FitDeadLetter(o, 1_000_000)
	if err != nil || trimmed || f.Raw == nil || header(f, HeaderDLQTrimmed) != "" {
		t.Fatalf("a fitting letter: %v %v raw nil %v", trimmed, err, f.Raw == nil)
	}
	// a limit below the letter's own headers is an error
	if _, _, err := FitDeadLetter(letter(big, "k"), 300); err == nil {
		t.Fatal("a 300-byte limit accepted")
	}
}

// TestDeadLetterStreamDown (reliability issue, item 2): while a dead
// letter cannot be written, its message stays uncommitted, the runtime is
// not ready and says why, intake pauses, and forestd_dead_letters_total
// does not count it; once the stream takes it, everything resumes and it is
// counted once.
func TestDeadLetterStreamDown(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var broken = make(chan struct{})
	sink := &memSink{fail: func(call int, outs []Output) error {
		if outs[0].Stream != "dlq" {
			return nil
		}
		select {
		case <-broken:
			return nil
		default:
			return fmt.Errorf("%w: topic dlq refuses the writer", ErrPermanent)
		}
	}}
	// a bounded retry policy does not bound a dead letter's: it has nowhere
	// else to go
	retry := fastRetry
	retry.MaxAttempts = 3
	r := newTestRuntime(t, mem, &echoStage{}, sink, Options{Workers: 1, Retry: retry})
	ctx := context.Background()
	r.Start(ctx)
	if err := r.Ready(); err != nil {
		t.Fatalf("ready before any dead letter: %v", err)
	}
	tr := NewTracker(1, map[TopicPartition]int64{tp0: 0}, 100)
	submitAll(t, ctx, r, tr, "2", "garbage")
	deadline := time.Now().Add(5 * time.Second)
	for r.Ready() == nil {
		if time.Now().After(deadline) {
			t.Fatal("still ready while the dead letter cannot be written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.Ready(); !strings.Contains(err.Error(), "refuses the writer") {
		t.Fatalf("readiness error %v does not say why", err)
	}
	m := r.Metrics()
	if v := testutil.ToFloat64(m.DeadLetterStreamDown); v != 1 {
		t.Fatalf("forestd_dead_letter_stream_down = %v", v)
	}
	// intake is paused
	a, err := tr.Track(ctx, tp0, 2)
	if err != nil {
		t.Fatal(err)
	}
	submitted := make(chan error, 1)
	go func() { submitted <- r.Submit(ctx, &Envelope{Topic: "in", Offset: 2, Value: []byte("1"), Ack: a}) }()
	select {
	case err := <-submitted:
		t.Fatalf("Submit returned (%v) while the dead-letter stream is down", err)
	case <-time.After(100 * time.Millisecond):
	}
	wantCommit(t, tr, tp0, 1) // the good message before the dead letter
	if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("decode")); v != 0 {
		t.Fatalf("a dead letter never written is counted: %v", v)
	}
	close(broken)
	select {
	case err := <-submitted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("intake still paused 10 s after the dead-letter stream recovered")
	}
	if err := tr.Drain(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	wantCommit(t, tr, tp0, 3)
	if err := r.Ready(); err != nil {
		t.Fatalf("not ready after the stream recovered: %v", err)
	}
	if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("decode")); v != 1 {
		t.Fatalf("forestd_dead_letters_total{stage=decode} = %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.DeadLetterStreamDown); v != 0 {
		t.Fatalf("forestd_dead_letter_stream_down = %v after recovery", v)
	}
}

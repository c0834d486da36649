package lakework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
)

func startBroker(t *testing.T) kafka.ClientOptions {
	t.Helper()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return kafka.ClientOptions{Brokers: []string{b.Addr()}}
}

// TestTwoWorkers: two workers share 40 jobs; every job is handled exactly
// once and both workers stop by themselves when the topic is done.
func TestTwoWorkers(t *testing.T) {
	co := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	opts := Options{Client: co, Topic: "lake-jobs", Group: "g1", Partitions: 6, SessionTimeout: 3 * time.Second}
	var jobs []string
	for i := 0; i < 40; i++ {
		jobs = append(jobs, fmt.Sprintf("date=2026-11-%02d/part-%d.parquet", i%3+1, i))
	}
	if err := Enqueue(ctx, opts, jobs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string][]int{}
	var wg sync.WaitGroup
	stats := make([]Stats, 2)
	errs := make([]error, 2)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[w], errs[w] = Run(ctx, opts, func(ctx context.Context, j Job) error {
				time.Sleep(100 * time.Millisecond)
				mu.Lock()
				handled[j.File] = append(handled[j.File], w)
				mu.Unlock()
				return nil
			})
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	if len(handled) != len(jobs) {
		t.Fatalf("%d of %d jobs handled", len(handled), len(jobs))
	}
	for f, ws := range handled {
		if len(ws) != 1 {
			t.Errorf("%s handled %d times (workers %v)", f, len(ws), ws)
		}
	}
	if stats[0].Jobs+stats[1].Jobs != len(jobs) || stats[0].Jobs == 0 || stats[1].Jobs == 0 {
		t.Fatalf("stats %+v: both workers must take part", stats)
	}
}

// TestBadMessagesAndFailures: a malformed message is counted and
// acknowledged; a handler error stops the worker with that error and the
// job stays uncommitted for the next worker.
func TestBadMessagesAndFailures(t *testing.T) {
	co := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	opts := Options{Client: co, Topic: "jobs2", Group: "g2", Partitions: 1, SessionTimeout: 3 * time.Second}
	if err := Enqueue(ctx, opts, []string{"a.parquet", "b.parquet"}); err != nil {
		t.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: co, Topics: map[string]string{"x": "jobs2"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, []pipeline.Output{{Stream: "x", Raw: []byte(`{"file": "../etc/passwd"}`)}}); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	boom := errors.New("boom")
	_, err = Run(ctx, opts, func(ctx context.Context, j Job) error {
		if j.File == "b.parquet" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("handler error: %v", err)
	}
	var seen []string
	st, err := Run(ctx, opts, func(ctx context.Context, j Job) error {
		seen = append(seen, j.File)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	if strings.Join(seen, ",") != "b.parquet" || st.Bad != 1 || st.Jobs != 2 {
		t.Fatalf("second worker saw %v, stats %+v (want b.parquet again and the malformed message)", seen, st)
	}
}

func TestDecodeJob(t *testing.T) {
	good := []string{`{"file":"a.parquet"}`, `{"file":"date=2026-11-01/part-0.parquet"}`}
	for _, g := range good {
		if _, err := DecodeJob([]byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	bad := []string{``, `{}`, `[]`, `{"file":""}`, `{"file":"/etc/passwd"}`, `{"file":"../x"}`, `{"file":"a/../b"}`,
		`{"file":"a//b"}`, `{"file":"./a"}`, `{"file":".hidden/a"}`, `{"file":"a\\b"}`, `{"file":"a"} {}`,
		`{"file":"a","x":1}`, `{"file":"a\u0000b"}`, `{"file":1}`}
	for _, b := range bad {
		if _, err := DecodeJob([]byte(b)); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
	if _, err := EncodeJob(Job{File: "../x"}); err == nil {
		t.Error("EncodeJob accepted ../x")
	}
}

// FuzzDecodeJob: arbitrary message values never panic, and an accepted
// job names a clean relative path that round-trips through EncodeJob.
func FuzzDecodeJob(f *testing.F) {
	f.Add([]byte(`{"file":"date=2026-11-01/part-0.parquet"}`))
	f.Add([]byte(`{"file":"../x"}`))
	f.Add([]byte(`{"file":"a","file":"b"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := DecodeJob(b)
		if err != nil {
			return
		}
		if strings.HasPrefix(j.File, "/") || strings.Contains(j.File, "..") && strings.Contains("/"+j.File+"/", "/../") {
			t.Fatalf("accepted %q", j.File)
		}
		v, err := EncodeJob(j)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", j.File, err)
		}
		j2, err := DecodeJob(v)
		if err != nil || j2 != j {
			t.Fatalf("round trip %q → %q (%v)", j.File, j2.File, err)
		}
	})
}

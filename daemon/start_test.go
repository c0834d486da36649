package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"go.uber.org/goleak"

	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
)

// opsAddrHandler is a slog.Handler that writes every record to next and
// sends the address of Start's "ops endpoint listening" line on addr: the
// tests reach the ops endpoint while Start still runs.
type opsAddrHandler struct {
	next slog.Handler
	addr chan<- string
}

func (h opsAddrHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h opsAddrHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "ops endpoint listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return h.next.Handle(ctx, r)
}

func (h opsAddrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return opsAddrHandler{next: h.next.WithAttrs(as), addr: h.addr}
}

func (h opsAddrHandler) WithGroup(name string) slog.Handler {
	return opsAddrHandler{next: h.next.WithGroup(name), addr: h.addr}
}

// deadAddr is a loopback address where nothing listens (a free port: the
// tests start a broker there later).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startResult is what Start returned.
type startResult struct {
	d   *Daemon
	err error
}

// startWaiting runs Start in the background against brokers at addr (where
// nothing listens yet), scoring with the iris model, and returns the ops
// endpoint's address once Start logs it, and Start's result to come.
func startWaiting(t *testing.T, ctx context.Context, addr string) (string, <-chan startResult, *syncLog) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Brokers = []string{addr}
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{stageScore}
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.OutputFormat = kafka.FormatJSON
	cfg.Topics.Partitions = 1
	cfg.Kafka.SessionTimeout = 2 * time.Second
	var logs syncLog
	opsAddr := make(chan string, 1)
	log := slog.New(opsAddrHandler{next: slog.NewTextHandler(&logs, nil), addr: opsAddr})
	res := make(chan startResult, 1)
	go func() {
		d, err := Start(ctx, cfg, Options{Logger: log})
		res <- startResult{d, err}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})
	select {
	case ops := <-opsAddr:
		return ops, res, &logs
	case r := <-res:
		if r.d != nil {
			r.d.Stop()
		}
		t.Fatalf("Start returned (%v) before the ops endpoint listened", r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the ops endpoint did not listen while Start waited for the brokers")
	}
	return "", nil, nil
}

// get returns the status code and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// waitReadyz polls /readyz until it answers want with a body that has
// every one of has, and returns the body.
func waitReadyz(t *testing.T, ops string, want int, timeout time.Duration, has ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := get(t, "http://"+ops+"/readyz")
		ok := code == want
		for _, s := range has {
			ok = ok && strings.Contains(body, s)
		}
		if ok {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after %v: %d %q, want %d with %q", timeout, code, body, want, has)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartServesOpsWhileWaitingForBrokers starts the daemon against a
// broker address where nothing listens: while Start retries creating the
// topics, /healthz is 200, /readyz 503 naming the brokers it waits for and
// the last error, /metrics, / and /api/status answer (the latter not
// ready, with the same reason). A broker then starting on that address
// lets Start return, and /readyz turns 200 once the group has joined.
func TestStartServesOpsWhileWaitingForBrokers(t *testing.T) {
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ops, res, _ := startWaiting(t, ctx, addr)
	var d *Daemon
	t.Cleanup(func() { // before the broker closes (cleanups run last first)
		if d == nil {
			cancel()
			if r := <-res; r.d != nil {
				d = r.d
			}
		}
		if d != nil {
			if err := d.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}
	})

	if code, body := get(t, "http://"+ops+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while waiting for the brokers: %d %q", code, body)
	}
	// the first attempt's error, once it has failed
	reason := "waiting for brokers " + addr + ": "
	body := waitReadyz(t, ops, http.StatusServiceUnavailable, 10*time.Second, reason, "connect")
	if !strings.HasPrefix(body, "not ready: ") {
		t.Fatalf("/readyz body %q", body)
	}
	if code, body := get(t, "http://"+ops+"/metrics"); code != http.StatusOK || !strings.Contains(body, "forestd_model_version 1") {
		t.Fatalf("/metrics while waiting: %d, the seed model's version missing:\n%s", code, body)
	}
	code, body := get(t, "http://"+ops+"/api/status")
	var s status.Status
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil {
		t.Fatalf("/api/status while waiting: %d %v %q", code, err, body)
	}
	if s.Ready || !strings.HasPrefix(s.NotReady, reason) {
		t.Fatalf("/api/status while waiting: ready %v, not_ready %q; want not ready, %q…", s.Ready, s.NotReady, reason)
	}
	if code, _ := get(t, "http://"+ops+"/"); code != http.StatusOK {
		t.Fatalf("status page while waiting: %d", code)
	}
	select {
	case r := <-res:
		t.Fatalf("Start returned (%v) with no broker listening", r.err)
	default:
	}

	b, err := broker.Start(broker.Options{Listen: addr, Partitions: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("Start after the broker came up: %v", r.err)
		}
		d = r.d
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return within 30s of the broker starting")
	}
	if d.OpsAddr() != ops {
		t.Fatalf("OpsAddr %s, logged %s", d.OpsAddr(), ops)
	}
	waitReadyz(t, ops, http.StatusOK, 60*time.Second, "ready")
	if code, _ := get(t, "http://"+ops+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz once ready: %d", code)
	}
}

// TestStartCancelledWhileWaitingForBrokers: the end of Start's context
// while it waits for unreachable brokers makes it return promptly with
// the context's error and nothing left running — the ops endpoint closed.
func TestStartCancelledWhileWaitingForBrokers(t *testing.T) {
	addr := deadAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ops, res, _ := startWaiting(t, ctx, addr)
	if code, body := get(t, "http://"+ops+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while waiting for the brokers: %d %q", code, body)
	}
	waitReadyz(t, ops, http.StatusServiceUnavailable, 10*time.Second, "waiting for brokers "+addr+": ")
	cancel()
	start := time.Now()
	select {
	case r := <-res:
		if r.d != nil {
			r.d.Stop()
			t.Fatal("Start returned a daemon after its context ended")
		}
		if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), addr) {
			t.Fatalf("Start's error %v: want context.Canceled, naming the brokers %s", r.err, addr)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Start did not return within 3s of its context ending")
	}
	t.Logf("Start returned %v after the cancel", time.Since(start))
	if c, err := net.DialTimeout("tcp", ops, time.Second); err == nil {
		c.Close()
		t.Fatalf("the ops endpoint %s still accepts connections after Start failed", ops)
	}
}

// TestStartLeavesMemoryLimit: pipeline.memory_limit is process-wide, so
// the daemon library leaves it to the command (forestd serve sets it); an
// embedder's limit is the same before, during and after the daemon.
func TestStartLeavesMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	cfg := DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{stageScore}
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.Kafka.SessionTimeout = 2 * time.Second
	cfg.Pipeline.MemoryLimit = before/2 + 1<<30
	d, err := Start(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("memory limit %d while the daemon runs, want the caller's %d", got, before)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("memory limit %d after Stop, want the caller's %d", got, before)
	}
}

// TestNoGoroutineOutlivesWait stops a daemon while its analysis loop
// publishes a report (a publish that takes a moment to give up after the
// stop). Stop returns only after the loop has returned — it used to be
// left running, able to publish into the sink closeAll had closed — no
// goroutine the daemon started is left in daemon code, and nothing leaks
// anywhere (goleak).
func TestNoGoroutineOutlivesWait(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{stageScore, stageAnalyze, stageDrift} // the analysis and drift loops both joined
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.Train.Label = "y"
	cfg.Train.MinRows = 100
	cfg.Train.RetrainEvery = "100"
	cfg.Kafka.SessionTimeout = 2 * time.Second
	d, err := Start(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	if d.driftLoop == nil {
		t.Fatal("no drift loop with stage drift")
	}
	publishing := make(chan struct{})
	var published atomic.Bool
	d.analyzeLoop.Publish = func(ctx context.Context, _ *operators.Analysis) error {
		close(publishing)
		<-ctx.Done()
		time.Sleep(1500 * time.Millisecond) // giving up takes a while: longer than the rest of the shutdown
		published.Store(true)
		return ctx.Err()
	}
	fr, err := synth.Generate(synth.XOR1, synth.Options{N: 200, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	if _, err := d.analyzer.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-publishing:
	case <-time.After(2 * time.Minute):
		t.Fatal("no report was published")
	}
	stopped = true
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if !published.Load() {
		t.Fatal("Stop returned while the analysis loop was still publishing")
	}
	var left []string
	for _, g := range strings.Split(goroutines(), "\n\n") {
		if strings.Contains(g, "forestd/daemon.") && !strings.Contains(g, "daemon.TestNoGoroutineOutlivesWait") &&
			!strings.Contains(g, "daemon.(*Daemon).runAndClose") {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines in daemon code after Stop:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// goroutines is every goroutine's stack.
func goroutines() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

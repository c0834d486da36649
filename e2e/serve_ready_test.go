package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// httpGet returns the status code and body of GET url (code 0 and the
// error as the body when the request fails).
func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// waitingServe starts `forestd serve` scoring with the iris model against
// brokers at addr, where nothing listens, and returns it once its ops
// endpoint is up and /readyz says it waits for those brokers, after a
// first failed attempt; /healthz must answer 200 by then.
func waitingServe(t *testing.T, addr string) *daemon {
	t.Helper()
	model, err := filepath.Abs("../scoring/testdata/iris.model")
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "serve", "serve", "--brokers", addr, "--model", model, "--stages", "score",
		"--http", "127.0.0.1:0", "--log-format", "json", "--session-timeout", "1500ms", "--partitions", "2")
	d := &daemon{proc: p, ops: p.logField("ops endpoint listening", "addr", 30*time.Second)}
	if code, body := httpGet("http://" + d.ops + "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while waiting for the brokers: %d %q", code, body)
	}
	want := "not ready: waiting for brokers " + addr + ": "
	var code int
	var body string
	waitCond(t, 10*time.Second, "/readyz 503 "+want+"…", func() bool {
		code, body = httpGet("http://" + d.ops + "/readyz")
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, want) && strings.Contains(body, "connection refused")
	})
	return d
}

// TestServeReadyWaitsForBrokers: `forestd serve` started while nothing
// listens at --brokers is live at once — /healthz 200, /metrics and the
// status page served, /readyz and /api/status not ready "waiting for
// brokers ADDR: <last error>" — instead of refusing the probes until the
// brokers answer; once a broker starts there it creates its topics, joins
// the group and /readyz turns 200; SIGTERM then drains and exits 0.
func TestServeReadyWaitsForBrokers(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	d := waitingServe(t, addr)
	if code, body := httpGet("http://" + d.ops + "/metrics"); code != http.StatusOK || !strings.Contains(body, "forestd_model_version 1") {
		t.Fatalf("/metrics while waiting: %d, without the seed model's version:\n%s", code, body)
	}
	if s := apiStatus(t, d.ops); s.Ready || !strings.HasPrefix(s.NotReady, "waiting for brokers "+addr+": ") {
		t.Fatalf("/api/status while waiting: ready %v, not_ready %q", s.Ready, s.NotReady)
	}
	if code, body := httpGet("http://" + d.ops + "/"); code != http.StatusOK {
		t.Fatalf("status page while waiting: %d %q", code, body)
	}
	startBroker(t, addr, t.TempDir())
	d.waitReady(60 * time.Second)
	if s := apiStatus(t, d.ops); !s.Ready {
		t.Fatalf("/api/status once ready: not ready %q", s.NotReady)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestServeStopsWhileWaitingForBrokers: SIGTERM while the daemon waits for
// unreachable brokers stops it within seconds — it does not wait for them —
// by its own hand with exit code 0 (a stop asked for, not a failure) and
// without a panic.
func TestServeStopsWhileWaitingForBrokers(t *testing.T) {
	t.Parallel()
	d := waitingServe(t, freePort(t))
	start := time.Now()
	code := d.stop(5 * time.Second)
	t.Logf("stopped %v after SIGTERM, exit code %d", time.Since(start), code)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM during the start (%v), want 0", code, d.err)
	}
	if log := d.Log(); !strings.Contains(log, "stopped before it started") {
		t.Fatalf("no line says the daemon stopped before it started:\n%s", log)
	}
	if log := d.Log(); strings.Contains(log, "panic") || strings.Contains(log, "goroutine ") {
		t.Fatalf("output shows a panic:\n%s", log)
	}
}

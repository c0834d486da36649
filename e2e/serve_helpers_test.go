package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// The daemon tests run `forestd broker` and `forestd serve` as separate
// processes on free loopback ports and talk to them with Debian's kcat
// (/usr/bin/kcat), a third-party Kafka client. Every process is killed in
// t.Cleanup.

const kcatPath = "/usr/bin/kcat"

func needKcat(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kcatPath); err != nil {
		t.Fatalf("kcat is required (apt-get install kcat): %v", err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is a forestd subprocess whose stderr (JSON logs) is collected.
type proc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startProc starts the forestd binary with args.
func startProc(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, nil, args...)
}

// startProcEnv starts the forestd binary with args and env (NAME=VALUE)
// added to the test's environment.
func startProcEnv(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(forestdBin(t), args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = p
	p.cmd.Stdout = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s log (last 4000 bytes):\n%s", name, tail(p.Log(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// kill sends SIGKILL and waits for the process.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and returns the exit code.
func (p *proc) stop(d time.Duration) int {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("%s did not stop within %v after SIGTERM", p.name, d)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logField waits for a JSON log line with msg and returns field key.
func (p *proc) logField(msg, key string, d time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		sc := bufio.NewScanner(strings.NewReader(p.Log()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
				return fmt.Sprint(m[key])
			}
		}
		select {
		case <-p.done:
			p.t.Fatalf("%s exited (%v) before logging %q", p.name, p.err, msg)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not log %q within %v", p.name, msg, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startBroker runs `forestd broker` on a free port, with extra flags.
func startBroker(t *testing.T, addr, dataDir string, extra ...string) *proc {
	t.Helper()
	if addr == "" {
		addr = freePort(t)
	}
	p := startProc(t, "broker", append([]string{"broker", "--listen", addr, "--data-dir", dataDir, "--log-format", "json"}, extra...)...)
	p.logField("broker listening", "addr", 20*time.Second)
	return p
}

// daemon is a running `forestd serve`.
type daemon struct {
	*proc
	ops string
}

// startServe runs `forestd serve` against brokers with test-friendly
// timings and returns once it has started: its topics exist, the consumer
// group is being joined (waitReady waits for /readyz). The ops endpoint
// listens earlier, while the daemon waits for the brokers.
func startServe(t *testing.T, brokers string, args ...string) *daemon {
	t.Helper()
	base := []string{"serve", "--brokers", brokers, "--http", "127.0.0.1:0", "--log-format", "json",
		"--session-timeout", "1500ms", "--commit-interval", "50ms", "--drain-timeout", "2s", "--partitions", "4"}
	p := startProc(t, "serve", append(base, args...)...)
	d := &daemon{proc: p, ops: p.logField("ops endpoint listening", "addr", 30*time.Second)}
	p.logField("forestd serve started", "group", 30*time.Second)
	return d
}

// digitsDaemon starts a broker (with brokerFlags) and a daemon scoring a
// 10-tree digits model with the extra serve flags, and waits until the
// daemon is ready; it returns the broker's address and the daemon.
func digitsDaemon(t *testing.T, brokerFlags []string, serveFlags ...string) (string, *daemon) {
	t.Helper()
	needKcat(t)
	model, _ := trainModel(t, "digits.parquet", "label", 10)
	b := startBroker(t, "", t.TempDir(), brokerFlags...)
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, append([]string{"--model", model, "--stages", "score"}, serveFlags...)...)
	d.waitReady(60 * time.Second)
	return brokers, d
}

func (d *daemon) waitReady(timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + d.ops + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			if time.Now().After(deadline) {
				d.t.Fatalf("daemon not ready after %v: %s", timeout, body)
			}
		} else if time.Now().After(deadline) {
			d.t.Fatalf("daemon not ready after %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric returns the sum of a metric's samples from /metrics (-1 if the
// endpoint is down).
func (d *daemon) metric(name string) float64 {
	resp, err := http.Get("http://" + d.ops + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// kcatProduce produces each of values as one message (kcat -P with one file
// per message, so binary values pass untouched) with the given headers.
func kcatProduce(t *testing.T, brokers, topic string, headers []string, values ...[]byte) {
	t.Helper()
	kcatProduceX(t, brokers, topic, nil, headers, values...)
}

// kcatProduceX is kcatProduce with extra kcat arguments (e.g. -X
// security.protocol=SASL_SSL).
func kcatProduceX(t *testing.T, brokers, topic string, extra, headers []string, values ...[]byte) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"-b", brokers, "-P", "-t", topic, "-X", "message.max.bytes=2000000"}, extra...)
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	for i, v := range values {
		f := filepath.Join(dir, fmt.Sprintf("m%05d", i))
		if err := os.WriteFile(f, v, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, kcatPath, args...).CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
}

// kcatLines produces each line of text as one message (kcat's default
// newline-delimited mode).
func kcatLines(t *testing.T, brokers, topic string, headers []string, lines []string) {
	t.Helper()
	kcatLinesX(t, brokers, topic, nil, headers, lines)
}

// kcatLinesX is kcatLines with extra kcat arguments (e.g. -K : to send
// KEY:VALUE lines; with -Z an empty VALUE is sent as null).
func kcatLinesX(t *testing.T, brokers, topic string, extra, headers []string, lines []string) {
	t.Helper()
	args := append([]string{"-b", brokers, "-P", "-t", topic}, extra...)
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
}

// kmsg is one message as kcat -J prints it.
type kmsg struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Ts        int64    `json:"ts"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

func (m kmsg) header(k string) string {
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if m.Headers[i] == k {
			return m.Headers[i+1]
		}
	}
	return ""
}

// kcatConsume reads topic from the beginning to its current end with kcat.
func kcatConsume(t *testing.T, brokers, topic string) []kmsg {
	t.Helper()
	return kcatConsumeX(t, brokers, topic, nil)
}

// kcatConsumeX is kcatConsume with extra kcat arguments.
func kcatConsumeX(t *testing.T, brokers, topic string, extra []string) []kmsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
		"-X", "fetch.message.max.bytes=16000000"}, extra...)
	out, err := exec.CommandContext(ctx, kcatPath, args...).Output()
	if err != nil {
		t.Fatalf("kcat -C %s: %v", topic, err)
	}
	var msgs []kmsg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<20), 64<<20)
	for sc.Scan() {
		var m kmsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("kcat -J line %q: %v", tail(sc.Text(), 200), err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// prediction is one prediction row as the daemon writes it in JSON.
type prediction struct {
	ModelID      string  `json:"model_id"`
	ModelVersion int64   `json:"model_version"`
	Source       string  `json:"source"`
	Row          int64   `json:"row"`
	Prediction   any     `json:"prediction"`
	ID           float64 `json:"id"`
	Ts           int64   `json:"-"` // timestamp of the prediction message (ms)
}

// predictionsJSON parses the JSON-lines payloads of prediction messages.
func predictionsJSON(t *testing.T, msgs []kmsg) []prediction {
	t.Helper()
	var out []prediction
	for _, m := range msgs {
		if m.Payload == nil {
			t.Fatal("prediction message without a value")
		}
		for _, line := range strings.Split(strings.TrimSpace(*m.Payload), "\n") {
			var p prediction
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("prediction line %q: %v", line, err)
			}
			p.Ts = m.Ts
			out = append(out, p)
		}
	}
	return out
}

// waitPredictions polls the prediction topic until cond holds.
func waitPredictions(t *testing.T, brokers, topic string, d time.Duration, cond func([]prediction) bool) []prediction {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ps := predictionsJSON(t, kcatConsume(t, brokers, topic))
		if cond(ps) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v with %d predictions", d, len(ps))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitAllPredicted waits until every id has a prediction on
// forestd.predictions. It counts the ids themselves, not distinct
// predictions: a message the producer gave up on at stop may still have
// been appended, and its rows are predictions of ids outside ids.
func waitAllPredicted(t *testing.T, brokers string, d time.Duration, ids []int) []prediction {
	t.Helper()
	return waitPredictions(t, brokers, "forestd.predictions", d, func(ps []prediction) bool {
		seen := make(map[int]bool, len(ps))
		for _, p := range ps {
			seen[int(p.ID)] = true
		}
		for _, id := range ids {
			if !seen[id] {
				return false
			}
		}
		return true
	})
}

// parseSource splits "topic/partition/offset".
func parseSource(t *testing.T, s string) (string, int32, int64) {
	t.Helper()
	p := strings.Split(s, "/")
	if len(p) != 3 {
		t.Fatalf("source %q is not topic/partition/offset", s)
	}
	part, err1 := strconv.Atoi(p[1])
	off, err2 := strconv.ParseInt(p[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("source %q", s)
	}
	return p[0], int32(part), off
}

// trainModel trains a small model on a shared data set and returns its
// path and version.
func trainModel(t *testing.T, data, label string, trees int) (string, int64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m.model")
	code, stdout, stderr := forestd(t, nil, "train", "--in", filepath.Join(dataDir, data), "--label", label, "--out", out,
		"--trees", strconv.Itoa(trees), "--seed", "3")
	if code != 0 {
		t.Fatalf("train: %s %s", stdout, stderr)
	}
	code, stdout, stderr = forestd(t, nil, "inspect", "--model", out)
	if code != 0 {
		t.Fatalf("inspect: %s", stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatal(err)
	}
	return out, int64(m["model_version"].(float64))
}

// producer writes JSON-lines messages of rows with unique ids with the Go
// client (retrying through broker outages) until stopped; ids are
// consecutive from 0.
type producer struct {
	mu     sync.Mutex
	next   int // next id
	acked  []int
	paused bool
	cancel context.CancelFunc
	done   chan struct{}
}

// startProducer produces a message of rowsPer rows every interval to
// topic, with features f0..f{p-1} computed from the id.
func startProducer(t *testing.T, brokers, topic string, p, rowsPer int, interval time.Duration) *producer {
	t.Helper()
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: kafka.ClientOptions{Brokers: strings.Split(brokers, ",")},
		Topics: map[string]string{"in": topic}, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr := &producer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		defer sink.Close()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pr.mu.Lock()
			first, paused := pr.next, pr.paused
			pr.mu.Unlock()
			if paused {
				continue
			}
			var b strings.Builder
			for r := 0; r < rowsPer; r++ {
				id := first + r
				fmt.Fprintf(&b, `{"id": %d`, id)
				for j := 0; j < p; j++ {
					fmt.Fprintf(&b, `, "f%d": %g`, j, float64((id*(j+3))%17)/4)
				}
				b.WriteString("}\n")
			}
			out := []pipeline.Output{{Stream: "in", Key: []byte(strconv.Itoa(first)), Raw: []byte(b.String()),
				Headers: []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeNDJSON)}}}}
			// retry until acknowledged: a row counts as produced only then
			for ctx.Err() == nil {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				err := sink.Write(wctx, out)
				wcancel()
				if err == nil {
					pr.mu.Lock()
					for r := 0; r < rowsPer; r++ {
						pr.acked = append(pr.acked, first+r)
					}
					pr.next = first + rowsPer
					pr.mu.Unlock()
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(pr.stop)
	return pr
}

func (p *producer) stop() {
	p.cancel()
	<-p.done
}

// pause stops producing after the message in progress (kcat -e reaches
// the end of a topic only once the daemon stops writing to it); resume
// starts again.
func (p *producer) pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

func (p *producer) resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
}

func (p *producer) ids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.acked...)
}

// trainSyntheticModel trains a regression-free classification model on
// features f0..f{p-1} with label y = (id mod 2) from rows like the
// producer's, so that the daemon can score them.
func trainSyntheticModel(t *testing.T, p, trees int) (string, int64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id")
	for j := 0; j < p; j++ {
		fmt.Fprintf(&b, ",f%d", j)
	}
	b.WriteString(",y\n")
	for id := 0; id < 400; id++ {
		fmt.Fprintf(&b, "%d", id)
		for j := 0; j < p; j++ {
			fmt.Fprintf(&b, ",%g", float64((id*(j+3))%17)/4)
		}
		fmt.Fprintf(&b, ",%d\n", id%2)
	}
	dir := t.TempDir()
	csv := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.model")
	code, stdout, stderr := forestd(t, nil, "train", "--in", csv, "--label", "y", "--exclude", "id", "--out", out,
		"--trees", strconv.Itoa(trees))
	if code != 0 {
		t.Fatalf("train: %s %s", stdout, stderr)
	}
	_, stdout, _ = forestd(t, nil, "inspect", "--model", out)
	var m map[string]any
	json.Unmarshal([]byte(stdout), &m)
	return out, int64(m["model_version"].(float64))
}

// checkAllPredicted verifies that every id has at least one prediction
// and returns the number of duplicate predictions.
func checkAllPredicted(t *testing.T, ids []int, ps []prediction) int {
	t.Helper()
	count := map[int]int{}
	for _, p := range ps {
		count[int(p.ID)]++
	}
	var missing []int
	dups := 0
	for _, id := range ids {
		if count[id] == 0 {
			missing = append(missing, id)
		}
		if count[id] > 1 {
			dups += count[id] - 1
		}
	}
	if len(missing) > 0 {
		sort.Ints(missing)
		t.Fatalf("%d of %d rows have no prediction (lost), e.g. %v", len(missing), len(ids), missing[:min(10, len(missing))])
	}
	return dups
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/pipeline"
)

func TestServeFlagsOverrideConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("group: fromfile\ntrain: {trees: 7, window: 500}\nkey: id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := serveConfigFromArgs([]string{"--config", p, "--group", "fromflag", "--window", "900",
		"--topic", "dlq=my.dlq", "--brokers", "127.0.0.1:1,127.0.0.1:2", "--stages", "score"}, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Group != "fromflag" || cfg.Train.Window != 900 || cfg.Train.Trees != 7 || cfg.Key != "id" ||
		cfg.Topics.DLQ != "my.dlq" || len(cfg.Brokers) != 2 || fmt.Sprint(cfg.Stages) != "[score]" {
		t.Fatalf("merged config %+v", cfg)
	}
	for _, bad := range [][]string{
		{"--topic", "nope"}, {"--topic", "colour=x"}, {"--config", filepath.Join(dir, "missing.yaml")},
		{"--output-format", "xml"}, {"extra"}, {"--retrain-every", "0"},
	} {
		if _, _, err := serveConfigFromArgs(bad, Env{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	code, _, errs := run(t, "serve", "--window", "1")
	if code != ExitUsage || !strings.Contains(errs, "train: window 1") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("bad flag: exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "serve", "--task", "ordinal")
	if code != ExitUsage || !strings.Contains(errs, "train.task") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("bad --task: exit %d, stderr %q", code, errs)
	}
	// a forest parameter the trainer refuses is a config error at start
	// too (it used to surface when the daemon made its trainer: exit 1)
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("train: {max_features: bogus}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "serve", "--config", bad, "--embedded-listen", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(errs, `train.max_features: max features "bogus"`) || strings.Count(errs, "\n") != 1 {
		t.Fatalf("bad train.max_features: exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "serve", "--max-features", "0", "--embedded-listen", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(errs, "train.max_features: max features 0") {
		t.Fatalf("bad --max-features: exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "serve", "--probs", "top")
	if code != ExitUsage || !strings.Contains(errs, `score.probs: "top" is not`) || strings.Count(errs, "\n") != 1 {
		t.Fatalf("bad --probs: exit %d, stderr %q", code, errs)
	}
	// --probs over score.probs, and the file's value without the flag
	if err := os.WriteFile(p, []byte("score: {probs: none}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{"": "none", "top10": "top10"} {
		a := []string{"--config", p, "--brokers", "127.0.0.1:1"}
		if args != "" {
			a = append(a, "--probs", args)
		}
		if cfg, _, err := serveConfigFromArgs(a, Env{}); err != nil || cfg.Score.Probs != want {
			t.Errorf("--probs %q: score.probs %q, %v; want %s", args, cfg.Score.Probs, err, want)
		}
	}
	// a key named like a column the select stage maps: a usage error at
	// start, not batch after batch into the DLQ (checked on the parsed
	// flags: without the check the daemon would start and run)
	_, _, err = serveConfigFromArgs([]string{"--stages", "select,train,score", "--key", "fdm_g1_1"}, Env{})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `key: column "fdm_g1_1" is named like the select stage's mapped columns`) {
		t.Fatalf("--key fdm_g1_1 with the select stage: %v", err)
	}
}

// TestServeConfigEveryProblem: a configuration with several mistakes is
// one usage error (exit 2) printed as one line per problem, each naming its
// key (daemon.Config.Validate reports them all at once).
func TestServeConfigEveryProblem(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("stages: [score, fly]\nlog: {format: xml}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "serve", "--config", p, "--window", "1")
	want := []string{`forestd serve: stages: unknown stage "fly"`, "forestd serve: train: window 1 and min_rows 100", `forestd serve: log.format: "xml"`}
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	if code != ExitUsage || len(lines) != len(want) {
		t.Fatalf("three mistakes: exit %d, stderr %q; want exit %d and %d lines", code, errs, ExitUsage, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
	// a join whose text is more than its problems' stays one line
	if got := errorLines(fmt.Errorf("config: %w", errors.Join(errors.New("a"), errors.New("b")))); len(got) != 1 || got[0] != "config: a b" {
		t.Errorf("wrapped join: %q", got)
	}
}

// TestServeTrainTask: --task and --stages reach the daemon's
// configuration (the daemon package tests that the trainer follows it).
func TestServeTrainTask(t *testing.T) {
	for _, c := range []struct {
		args     []string
		task     string
		composed bool
	}{
		{nil, "", false}, // empty: auto
		{[]string{"--task", "classification"}, "classification", false},
		{[]string{"--task", "regression"}, "regression", false},
		{[]string{"--stages", "select,train"}, "", true},
	} {
		cfg, _, err := serveConfigFromArgs(append([]string{"--brokers", "127.0.0.1:1"}, c.args...), Env{})
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if cfg.Train.Task != c.task || cfg.Composed() != c.composed {
			t.Errorf("%v: train.task %q composed %v", c.args, cfg.Train.Task, cfg.Composed())
		}
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeInProcess runs `forestd serve` through Main against a broker
// started by the test: JSON rows are scored with the --model seed, one
// prediction per row carrying the model version and the coordinates, a
// wrong-typed row is quarantined, the seed model is published on the model
// topic, and --max-runtime stops the daemon with exit status 0.
func TestServeInProcess(t *testing.T) {
	dir := t.TempDir()
	tr, mdl := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "m.model")
	mustRun(t, "gen", "trunk", "--n", "600", "--p", "4", "--seed", "1", "--out", tr)
	mustRun(t, "train", "--in", tr, "--label", "y", "--out", mdl, "--trees", "10")
	version := mustRun(t, "inspect", "--model", mdl)["model_version"]
	co, stderr, done := startServe(t, "--model", mdl, "--stages", "score", "--output-format", "json",
		"--http", "127.0.0.1:0", "--max-runtime", "8s", "--session-timeout", "2s", "--partitions", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// wait for the daemon's topics, then produce
	waitForTopic(ctx, t, co, "forestd.features", stderr)
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: co, Topics: map[string]string{"f": "forestd.features"}})
	if err != nil {
		t.Fatal(err)
	}
	ct := []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeNDJSON)}}
	good := "{\"x1\":0.5,\"x2\":1,\"x3\":-1,\"x4\":2}\n{\"x1\":-3,\"x2\":0,\"x3\":0,\"x4\":0}\n{\"x1\":1,\"x2\":1,\"x3\":1,\"x4\":null}\n"
	if err := sink.Write(ctx, []pipeline.Output{
		{Stream: "f", Key: []byte("good"), Raw: []byte(good), Headers: ct},
		{Stream: "f", Key: []byte("bad"), Raw: []byte(`{"x1":"a","x2":1,"x3":1,"x4":1}`), Headers: ct},
	}); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	var mu sync.Mutex
	var preds, dlq []*pipeline.Envelope
	tctx, tcancel := context.WithCancel(ctx)
	go kafka.Tail(tctx, co, "forestd.predictions", func(e *pipeline.Envelope) { mu.Lock(); preds = append(preds, e); mu.Unlock() })
	go kafka.Tail(tctx, co, "forestd.dlq", func(e *pipeline.Envelope) { mu.Lock(); dlq = append(dlq, e); mu.Unlock() })
	for {
		mu.Lock()
		n, m := len(preds), len(dlq)
		mu.Unlock()
		if n >= 1 && m >= 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d prediction and %d dead-letter messages; log:\n%s", n, m, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	tcancel()
	p := preds[0]
	rec, err := codec.DecodeJSON(p.Value, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("%d predictions for 3 rows", rec.NumRows())
	}
	js, _ := codec.EncodeJSON(rec)
	if !strings.Contains(string(js), `"source":"forestd.features/`) || !strings.Contains(string(js), `"row":2`) ||
		!strings.Contains(string(js), fmt.Sprintf(`"model_version":%v`, version)) {
		t.Fatalf("predictions %s", js)
	}
	if r, _ := dlq[0].Header(pipeline.HeaderDLQReason); !strings.Contains(string(r), "x1") {
		t.Fatalf("dead-letter reason %q", r)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("daemon did not stop after --max-runtime")
	}
	log := stderr.String()
	for _, want := range []string{"ops endpoint listening", "published the seed model", "forestd serve stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestServeAnalyzeSelect runs the analyze and select stages on labelled
// XOR data (dissertation Table 6.1 iii): a dependence report reaches the
// reports topic and labelled batches reduced to the selected and mapped
// columns reach the selected topic.
func TestServeAnalyzeSelect(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor3.arrows")
	mustRun(t, "gen", "xor3", "--n", "900", "--seed", "4", "--out", data)
	co, stderr, done := startServe(t, "--stages", "analyze,select", "--label", "y",
		"--window", "600", "--min-rows", "300", "--retrain-every", "600", "--http", "127.0.0.1:0",
		"--max-runtime", "8s", "--session-timeout", "2s", "--partitions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	waitForTopic(ctx, t, co, "forestd.training", stderr)
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	sink, _ := kafka.NewSink(kafka.SinkOptions{Client: co, Topics: map[string]string{"t": "forestd.training"}})
	if err := sink.Write(ctx, []pipeline.Output{{Stream: "t", Raw: raw}}); err != nil {
		t.Fatal(err)
	}
	// a second message after the first analysis is selected
	var mu sync.Mutex
	var reports, selected []*pipeline.Envelope
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	go kafka.Tail(tctx, co, "forestd.reports", func(e *pipeline.Envelope) { mu.Lock(); reports = append(reports, e); mu.Unlock() })
	go kafka.Tail(tctx, co, "forestd.selected", func(e *pipeline.Envelope) { mu.Lock(); selected = append(selected, e); mu.Unlock() })
	for {
		mu.Lock()
		n := len(reports)
		mu.Unlock()
		if n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no report; log:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := sink.Write(ctx, []pipeline.Output{{Stream: "t", Raw: raw}}); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	for {
		mu.Lock()
		n := len(selected)
		mu.Unlock()
		if n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing selected; log:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	rep, sel := reports[0], selected[0]
	mu.Unlock()
	ct, _ := rep.Header(kafka.HeaderContentType)
	_, rr, err := codec.Decode(rep.Value, string(ct), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if rr[0].NumRows() != 4 { // 3 features + 1 group
		t.Fatalf("report has %d rows", rr[0].NumRows())
	}
	rr[0].Release()
	ct, _ = sel.Header(kafka.HeaderContentType)
	schema, sr, err := codec.Decode(sel.Value, string(ct), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range schema.Fields() {
		cols = append(cols, f.Name)
	}
	for _, r := range sr {
		r.Release()
	}
	if len(cols) != 4 || cols[0] != "m0" || cols[3] != "y" {
		t.Fatalf("selected columns %v: want m0, two mapped columns of the XOR pair, y", cols)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, stderr.String())
	}
}

// TestServeDemo runs the newcomer's command: it must train, hot-swap,
// score, quarantine its malformed message for the fault it shows (a string
// where a number belongs) and stop by itself with exit 0. Then, in
// parallel, the demo with flags that change what the predictions carry —
// no or top-k probabilities, another key column than the truth, regression
// values, JSON — must show what it can of them, not panic.
func TestServeDemo(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		var stdout, stderr syncBuffer
		code := Main([]string{"serve", "--demo", "--demo-duration", "6s"}, Env{Stdout: &stdout, Stderr: &stderr})
		out := stdout.String()
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
		}
		for _, want := range []string{"prediction   model v1", "summary: ", "model v2", "dead letters: 1", "forestd_rows_out_total{stream=predictions}",
			"  status   http://127.0.0.1:", // the status page, named
			// the dead letter's whole reason, not cut with …
			"column x1 is utf8, numeric expected (exclude it, or dictionary-encode it to use it as a categorical feature)"} {
			if !strings.Contains(out, want) {
				t.Errorf("demo output lacks %q:\n%s", want, out)
			}
		}
		// no raw log line among the demo's output: it shows the dead letter itself
		if log := stderr.String(); strings.Contains(log, pipeline.LogQuarantined) || strings.Contains(out, "…") || strings.Contains(out, "model v-1") {
			t.Errorf("demo printed a raw log line or a cut reason:\n%s\n%s", out, log)
		}
	})
	for _, tc := range []struct {
		flags        []string
		want, reject []string
	}{
		{[]string{"--probs", "none"}, []string{"→ class ", "(truth ", "predictions  error 0."}, []string{"p("}},
		{[]string{"--probs", "top1"}, []string{"→ class ", ")=0.", "predictions  error 0."}, nil},
		{[]string{"--key", "x1"}, []string{"p(1)=", ", x1 ", "predictions (no truth column to compare with)"}, []string{", truth "}},
		{[]string{"--task", "regression"}, []string{"(truth ", "predictions  mean squared error 0."}, []string{"→ class", "p(1)="}},
		{[]string{"--output-format", "json"}, []string{"→ class ", "p(1)=", "predictions  error 0."}, nil},
	} {
		t.Run(strings.Join(tc.flags, "_"), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr syncBuffer
			code := Main(append([]string{"serve", "--demo", "--demo-duration", "4s"}, tc.flags...), Env{Stdout: &stdout, Stderr: &stderr})
			out := stdout.String()
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
			}
			for _, want := range append([]string{"prediction   model v1  forestd.features/", "summary: ", "dead letters: 1"}, tc.want...) {
				if !strings.Contains(out, want) {
					t.Errorf("demo output lacks %q:\n%s", want, out)
				}
			}
			for _, no := range tc.reject {
				if strings.Contains(out, no) {
					t.Errorf("demo output has %q:\n%s", no, out)
				}
			}
		})
	}
}

// TestServePrintConfig: --print-config prints the configuration the
// daemon would run with — flags over the config file over the defaults —
// as a config file that --config reads back to the same configuration,
// and exits without starting anything; a config error still fails it.
func TestServePrintConfig(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"serve", "--print-config", "--forest", "morf", "--layout", "series", "--trees", "30"}, Env{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"forest: morf", "layout: series", "trees: 30", "window: 50000", "commit_interval: 200ms", "max_message_bytes: "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("printed config lacks %q:\n%s", want, out.String())
		}
	}
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if code := Main([]string{"serve", "--config", path, "--print-config"}, Env{Stdout: &again, Stderr: &errb}); code != 0 || again.String() != out.String() {
		t.Fatalf("exit %d; read back:\n%s\nprinted:\n%s", code, again.String(), out.String())
	}
	if code := Main([]string{"serve", "--print-config", "--forest", "morf"}, Env{Stdout: &again, Stderr: &errb}); code != 2 || !strings.Contains(errb.String(), "train.layout") {
		t.Fatalf("morf without a layout: exit %d: %s", code, errb.String())
	}
}

// TestServeDemoFailsWithoutModel: a demo in which no model ever scores
// the stream (here every training message lacks a listed feature and is
// dead-lettered) exits 1 saying so, rather than 0 with an empty summary.
func TestServeDemoFailsWithoutModel(t *testing.T) {
	var stdout, stderr syncBuffer
	code := Main([]string{"serve", "--demo", "--demo-duration", "3s", "--features", "x1,nosuch"}, Env{Stdout: &stdout, Stderr: &stderr})
	if code != 1 || !strings.Contains(stderr.String(), "demo: no model scored the stream in 3s") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// waitForTopic polls until the daemon has created topic, failing the test
// with the daemon's log when ctx ends first.
func waitForTopic(ctx context.Context, t *testing.T, co kafka.ClientOptions, topic string, log *syncBuffer) {
	t.Helper()
	for {
		if _, err := kafka.Partitions(ctx, co, topic); err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("daemon never created topic %s; log:\n%s", topic, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startServe starts a broker on 127.0.0.1 for the test (closed when the
// test ends) and `forestd serve --brokers ADDR args...` against it in a
// goroutine: the client options of the broker, the daemon's stderr, and
// the channel its exit code arrives on.
func startServe(t *testing.T, args ...string) (kafka.ClientOptions, *syncBuffer, chan int) {
	t.Helper()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(append([]string{"serve", "--brokers", b.Addr()}, args...), Env{Stdout: &bytes.Buffer{}, Stderr: stderr})
	}()
	return kafka.ClientOptions{Brokers: []string{b.Addr()}}, stderr, done
}

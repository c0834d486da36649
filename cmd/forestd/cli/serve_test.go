package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/broker"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

func TestServeConfigDefaultsValid(t *testing.T) {
	c := defaultServeConfig()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
}

const fullConfig = `
brokers: [127.0.0.1:9093, 127.0.0.1:9094]
group: scorers
topics:
  features: in.features
  training: in.training
  predictions: out.predictions
  importances: out.importances
  reports: out.reports
  selected: out.selected
  models: out.models
  dlq: out.dlq
  partitions: 8
stages: [train, score]
model: seed.model
key: id
output_format: json
train:
  label: target
  features: [a, b]
  exclude: [ts]
  window: 2000
  window_kind: reservoir
  task: classification
  retrain_every: 30s
  min_rows: 50
  forest: sporf
  trees: 64
  seed: 9
  max_features: sqrt
  threads: 2
pipeline:
  workers: 3
  max_inflight_bytes: 1048576
  max_uncommitted: 100
  commit_interval: 1s
  drain_timeout: 5s
  memory_limit: 536870912
kafka:
  client_id: fd
  tls: {enabled: true, ca_file: ca.pem, server_name: kafka.local}
  sasl: {mechanism: SCRAM-SHA-512, username: alice, password: pw}
  session_timeout: 6s
  start_offset: latest
  max_message_bytes: 500000
http: 127.0.0.1:9400
log: {level: debug, format: json}
`

func TestServeConfigParse(t *testing.T) {
	c, err := parseServeConfig(strings.NewReader(fullConfig), "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]bool{
		"brokers":      len(c.Brokers) == 2 && c.Brokers[1] == "127.0.0.1:9094",
		"group":        c.Group == "scorers",
		"topics":       c.Topics.Features == "in.features" && c.Topics.DLQ == "out.dlq" && c.Topics.Partitions == 8,
		"stages":       fmt.Sprint(c.Stages) == "[train score]",
		"output":       c.OutputFormat == "json" && c.Key == "id" && c.Model == "seed.model",
		"train":        c.Train.Label == "target" && c.Train.Window == 2000 && c.Train.WindowKind == "reservoir" && c.Train.RetrainEvery == "30s" && c.Train.Trees == 64 && c.Train.Seed == 9 && c.Train.Task == "classification",
		"train lists":  fmt.Sprint(c.Train.Features, c.Train.Exclude) == "[a b] [ts]",
		"pipeline":     c.Pipeline.Workers == 3 && c.Pipeline.CommitInterval == time.Second && c.Pipeline.DrainTimeout == 5*time.Second && c.Pipeline.MemoryLimit == 512<<20,
		"kafka":        c.Kafka.SessionTimeout == 6*time.Second && c.Kafka.StartOffset == "latest" && c.Kafka.MaxMessageBytes == 500000,
		"tls and sasl": c.Kafka.TLS.Enabled && c.Kafka.TLS.CAFile == "ca.pem" && c.Kafka.SASL.Mechanism == "SCRAM-SHA-512" && c.Kafka.SASL.Password == "pw",
		"http and log": c.HTTP == "127.0.0.1:9400" && c.Log.Level == "debug" && c.Log.Format == "json",
	}
	for k, ok := range checks {
		if !ok {
			t.Errorf("%s not read: %+v", k, c)
		}
	}
	// keys left out keep their defaults
	c2, err := parseServeConfig(strings.NewReader("group: g2\n"), "x")
	if err != nil || c2.Topics.Features != "forestd.features" || c2.Train.Window != 50000 || c2.Group != "g2" {
		t.Fatalf("partial config: %v %+v", err, c2)
	}
	if c3, err := parseServeConfig(strings.NewReader(""), "empty"); err != nil || c3.validate() != nil {
		t.Fatalf("empty config: %v", err)
	}
}

func TestServeConfigErrors(t *testing.T) {
	parseErrs := map[string]string{
		"grup: x\n":                       "field grup not found",
		"train:\n  windw: 3\n":            "field windw not found",
		"train:\n  window: many\n":        "cannot unmarshal",
		"pipeline:\n  drain_timeout: 5\n": "line 2",
		"group: a\n---\ngroup: b\n":       "more than one YAML document",
		"stages: score\n":                 "cannot unmarshal",
		"{":                               "cfg.yaml",
	}
	for in, want := range parseErrs {
		_, err := parseServeConfig(strings.NewReader(in), "cfg.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", in, err, want)
		}
	}
	invalid := map[string]string{
		"stages: []\n":                                         "stages:",
		"stages: [score, fly]\n":                               `unknown stage "fly"`,
		"stages: [score, score]\n":                             "twice",
		"brokers: [nohost]\n":                                  "brokers:",
		"embedded: {listen: 'x'}\n":                            "embedded.listen",
		"group: ''\n":                                          "group:",
		"topics: {features: 'bad topic'}\n":                    "topics.features",
		"output_format: csv\n":                                 "output_format",
		"train: {label: ''}\n":                                 "train.label",
		"train: {label: 'y0,,y1'}\n":                           "empty column name",
		"train: {window: 10, min_rows: 20}\n":                  "min_rows",
		"train: {window_kind: lru}\n":                          "train.window_kind",
		"train: {retrain_every: soon}\n":                       "train.retrain_every",
		"train: {retrain_every: '-5'}\n":                       "train.retrain_every",
		"train: {trees: 0}\n":                                  "train.trees",
		"train: {task: ordinal}\n":                             "train.task",
		"stages: [select, train]\ntrain: {task: regression}\n": "train.task: regression cannot follow the select stage",
		"pipeline: {max_inflight_bytes: 0}\n":                  "pipeline.max_inflight_bytes",
		"pipeline: {commit_interval: 0s}\n":                    "pipeline.commit_interval",
		"pipeline: {stall_timeout: 0s}\n":                      "pipeline.stall_timeout",
		"kafka: {session_timeout: 1ms}\n":                      "kafka.session_timeout",
		"kafka: {start_offset: middle}\n":                      "kafka.start_offset",
		"kafka: {max_message_bytes: 10}\n":                     "kafka.max_message_bytes",
		"kafka: {sasl: {mechanism: PLAIN}}\n":                  "kafka.sasl applies to external brokers",
		"brokers: [h:1]\nkafka: {sasl: {mechanism: X}}\n":      "SASL mechanism",
		"http: nowhere\n":                                      "http:",
		"log: {level: loud}\n":                                 "log.level",
		"log: {format: xml}\n":                                 "log.format",
	}
	for in, want := range invalid {
		c, err := parseServeConfig(strings.NewReader(in), "cfg.yaml")
		if err != nil {
			t.Errorf("%q: parse error %v", in, err)
			continue
		}
		err = c.validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: validate error %v, want it to mention %q", in, err, want)
		}
	}
}

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
}

// TestServeTrainTask: train.task (--task) reaches the trainer, so numeric
// JSON labels can be learnt as classes; composing select before train
// classifies whatever the setting says about auto.
func TestServeTrainTask(t *testing.T) {
	for _, c := range []struct {
		args []string
		want frame.Task
	}{
		{nil, frame.TaskAuto},
		{[]string{"--task", "classification"}, frame.TaskClassification},
		{[]string{"--task", "regression"}, frame.TaskRegression},
		{[]string{"--stages", "select,train"}, frame.TaskClassification},
	} {
		cfg, _, err := serveConfigFromArgs(append([]string{"--brokers", "127.0.0.1:1"}, c.args...), Env{})
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		tr, err := (&daemon{cfg: cfg}).newTrainer()
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := tr.Options().Task; got != c.want {
			t.Errorf("%v: trainer task %v, want %v", c.args, got, c.want)
		}
	}
}

// FuzzServeConfig: any config file is parsed and validated without a
// panic; what parses and validates has the invariants the daemon relies on.
func FuzzServeConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("group: g\n"))
	f.Add([]byte("train: {retrain_every: 30s}\n"))
	f.Add([]byte("stages: [score]\nbrokers: ['[::1]:9092']\n"))
	f.Add([]byte(composedConfig))
	f.Add([]byte(multiConfig))
	f.Add([]byte("train: {label: 'y0, y1,y0', task: regression}\n"))
	f.Add([]byte("stages: [train]\ntrain: {label: ',', forest: drf}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseServeConfig(bytes.NewReader(b), "fuzz.yaml")
		if err != nil {
			return
		}
		if c.validate() != nil {
			return
		}
		if len(c.Stages) == 0 || c.Train.MinRows > c.Train.Window || c.Pipeline.MaxInFlightBytes < 1 || c.Group == "" {
			t.Fatalf("validated config breaks an invariant: %+v", c)
		}
		if _, _, err := retrainSchedule(c.Train.RetrainEvery); err != nil {
			t.Fatal(err)
		}
		if _, err := frame.ParseTask(c.Train.Task); err != nil {
			t.Fatal(err)
		}
		if labels := c.Train.labels(); len(labels) > 1 && c.has(stageTrain) {
			// several labels that validate make a multi-output trainer
			tr, err := (&daemon{cfg: c}).newTrainer()
			if err != nil {
				t.Fatalf("train.label %q validated, but: %v", c.Train.Label, err)
			}
			if got := tr.Options().Labels; !slices.Equal(got, labels) {
				t.Fatalf("train.label %q: trainer labels %q", c.Train.Label, got)
			}
		}
	})
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
	ct := []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(kafka.ContentTypeNDJSON)}}
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
	rec, err := kafka.DecodeJSON(p.Value, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("%d predictions for 3 rows", rec.NumRows())
	}
	js, _ := kafka.EncodeJSON(rec)
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
	_, rr, err := kafka.Decode(rep.Value, string(ct), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if rr[0].NumRows() != 4 { // 3 features + 1 group
		t.Fatalf("report has %d rows", rr[0].NumRows())
	}
	rr[0].Release()
	ct, _ = sel.Header(kafka.HeaderContentType)
	schema, sr, err := kafka.Decode(sel.Value, string(ct), memory.DefaultAllocator)
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
// score, quarantine its malformed message and stop by itself with exit 0.
func TestServeDemo(t *testing.T) {
	var stdout, stderr syncBuffer
	code := Main([]string{"serve", "--demo", "--demo-duration", "6s"}, Env{Stdout: &stdout, Stderr: &stderr})
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"prediction   model v1", "summary: ", "model v2", "dead letters: 1", "forestd_rows_out_total{stream=predictions}"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
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

// checkConfig parses a YAML daemon config and validates it.
func checkConfig(in string) (serveConfig, error) {
	c, err := parseServeConfig(strings.NewReader(in), "c.yaml")
	if err == nil {
		err = c.validate()
	}
	return c, err
}

// wantConfigErrors checks that every config of invalid fails parsing or
// validation with an error containing its message.
func wantConfigErrors(t *testing.T, invalid map[string]string) {
	t.Helper()
	for in, want := range invalid {
		if _, err := checkConfig(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

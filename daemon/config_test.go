package daemon

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/fixture"
	"github.com/forestd/forestd/operators"
	"gopkg.in/yaml.v3"
)

func TestConfigDefaultsValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultStages: with no stages named, a model file and no label
// score alone (no train stage waiting for a column "y" nobody named);
// otherwise score and train, the train stage learning DefaultLabel unless
// a label is given.
func TestDefaultStages(t *testing.T) {
	for _, c := range []struct {
		yaml, stages, label string
	}{
		{"", "score,train", "y"},
		{"model: m.model\n", "score", ""},
		{"model: m.model\ntrain: {label: target}\n", "score,train", "target"},
		{"model: m.model\nstages: [score, train]\n", "score,train", "y"},
		{"stages: [analyze]\n", "analyze", "y"},
		{"stages: [score]\n", "score", ""},
	} {
		cfg, err := ParseConfig(strings.NewReader(c.yaml), "test.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := strings.Join(cfg.Stages, ","); got != c.stages || cfg.Train.Label != c.label {
			t.Errorf("%q: stages %s label %q, want %s %q", c.yaml, got, cfg.Train.Label, c.stages, c.label)
		}
	}
	if cfg := DefaultConfig(); cfg.OutputFormat != kafka.FormatAuto {
		t.Errorf("default output_format %q, want auto", cfg.OutputFormat)
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
score:
  probs: top3
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

func TestConfigParse(t *testing.T) {
	c, err := ParseConfig(strings.NewReader(fullConfig), "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]bool{
		"brokers":      len(c.Brokers) == 2 && c.Brokers[1] == "127.0.0.1:9094",
		"group":        c.Group == "scorers",
		"topics":       c.Topics.Features == "in.features" && c.Topics.DLQ == "out.dlq" && c.Topics.Partitions == 8,
		"stages":       fmt.Sprint(c.Stages) == "[train score]",
		"output":       c.OutputFormat == "json" && c.Key == "id" && c.Model == "seed.model",
		"score":        c.Score.Probs == "top3",
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
	c2, err := ParseConfig(strings.NewReader("group: g2\n"), "x")
	if err != nil || c2.Topics.Features != "forestd.features" || c2.Train.Window != 50000 || c2.Group != "g2" || c2.Score.Probs != "auto" {
		t.Fatalf("partial config: %v %+v", err, c2)
	}
	if c3, err := ParseConfig(strings.NewReader(""), "empty"); err != nil || c3.Validate() != nil {
		t.Fatalf("empty config: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	parseErrs := map[string]string{
		"grup: x\n":                       "field grup not found",
		"train:\n  windw: 3\n":            "field windw not found",
		"train:\n  window: many\n":        "cannot unmarshal",
		"pipeline:\n  drain_timeout: 5\n": "line 2",
		"group: a\n---\ngroup: b\n":       "more than one YAML document",
		"stages: score\n":                 "cannot unmarshal",
		"score:\n  prob: all\n":           "field prob not found",
		"{":                               "cfg.yaml",
	}
	for in, want := range parseErrs {
		_, err := ParseConfig(strings.NewReader(in), "cfg.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to mention %q", in, err, want)
		}
	}
	invalid := map[string]string{
		"stages: [score, fly]\n":                          `unknown stage "fly"`,
		"stages: [score, score]\n":                        "twice",
		"brokers: [nohost]\n":                             "brokers:",
		"embedded: {listen: 'x'}\n":                       "embedded.listen",
		"embedded: {max_request_bytes: 1000}\n":           "embedded.max_request_bytes",
		"embedded: {max_connections: -1}\n":               "embedded.max_connections",
		"embedded: {handshake_timeout: 10ms}\n":           "embedded.handshake_timeout: 10ms (at least 100ms)",
		"embedded: {idle_timeout: 0s}\n":                  "embedded.idle_timeout: 0s (at least 100ms)",
		"group: ''\n":                                     "group:",
		"topics: {features: 'bad topic'}\n":               "topics.features",
		"output_format: csv\n":                            "output_format",
		"score: {probs: top0}\n":                          `score.probs: "top0" is not auto, all, none or top<k>`,
		"score: {probs: TOP5}\n":                          `score.probs: "TOP5"`,
		"train: {label: 'y0,,y1'}\n":                      "empty column name",
		"train: {window: 10, min_rows: 20}\n":             "min_rows",
		"train: {window_kind: lru}\n":                     "train.window_kind",
		"train: {retrain_every: soon}\n":                  "train.retrain_every",
		"train: {retrain_every: '-5'}\n":                  "train.retrain_every",
		"train: {trees: 0}\n":                             "train.trees",
		"train: {task: ordinal}\n":                        "train.task",
		"pipeline: {max_inflight_bytes: 0}\n":             "pipeline.max_inflight_bytes",
		"pipeline: {commit_interval: 0s}\n":               "pipeline.commit_interval",
		"pipeline: {stall_timeout: 0s}\n":                 "pipeline.stall_timeout",
		"kafka: {session_timeout: 1ms}\n":                 "kafka.session_timeout",
		"kafka: {start_offset: middle}\n":                 "kafka.start_offset",
		"kafka: {max_message_bytes: 10}\n":                "kafka.max_message_bytes",
		"kafka: {sasl: {mechanism: PLAIN}}\n":             "kafka.sasl applies to external brokers",
		"brokers: [h:1]\nkafka: {sasl: {mechanism: X}}\n": "SASL mechanism",
		"http: nowhere\n":                                 "http:",
		"log: {level: loud}\n":                            "log.level",
		"log: {format: xml}\n":                            "log.format",
	}
	for in, want := range invalid {
		c, err := ParseConfig(strings.NewReader(in), "cfg.yaml")
		if err != nil {
			t.Errorf("%q: parse error %v", in, err)
			continue
		}
		err = c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: validate error %v, want it to mention %q", in, err, want)
		}
	}
}

// TestConfigEveryProblem: Validate reports every problem of a config at
// once (errors.Join, one error per problem, in the order of the sections),
// not only the first; a check that presumes another key valid stays
// quiet when that key is wrong, so one mistake is one problem.
func TestConfigEveryProblem(t *testing.T) {
	for in, want := range map[string][]string{
		// three independent mistakes in three sections
		"stages: [score, fly]\ntrain: {trees: 0}\nlog: {format: xml}\n": {
			`stages: unknown stage "fly"`, "train.trees: 0", `log.format: "xml"`},
		// and within sections
		"pipeline: {max_inflight_bytes: 0, stall_timeout: 0s}\nkafka: {start_offset: middle, max_message_bytes: 10}\nhttp: nowhere\n": {
			"pipeline.max_inflight_bytes: 0", "pipeline.stall_timeout: 0s", `kafka.start_offset: "middle"`,
			"kafka.max_message_bytes: 10", `http: "nowhere"`},
		"embedded: {partitions: 0, tls_cert: c.pem}\ngroup: ''\ntopics: {features: 'a b', partitions: 0}\noutput_format: csv\n": {
			"embedded.partitions: 0", "embedded.tls_cert and embedded.tls_key must be given together", "group: empty",
			`topics.features: "a b"`, "topics.partitions: 0", `output_format: "csv"`},
		"train: {window_kind: lru, max_features: bogus, forest: morf}\n": {
			`train.window_kind: "lru"`, "train.layout: train.forest morf needs", `train.max_features: max features "bogus"`},
		// one mistake, one problem: trees is not reported again by the
		// trainer's check, nor a bad layout, nor topics sharing a bad name
		"train: {trees: 0}\n":                                 {"train.trees: 0"},
		"train: {forest: morf, layout: circle}\n":             {`train.layout: layout "circle"`},
		"topics: {predictions: '', dlq: ''}\n":                {`topics.predictions: ""`, `topics.dlq: ""`},
		"stages: [score, score, score]\n":                     {`stages: "score" twice`, `stages: "score" twice`},
		"train: {window: 10, min_rows: 20, retrain_every: x}": {"train: window 10 and min_rows 20", "train.retrain_every"},
	} {
		_, err := checkConfig(in)
		got := configProblems(err)
		if len(got) != len(want) {
			t.Errorf("%q: %d problems, want %d: %q", in, len(got), len(want), got)
			continue
		}
		for i, w := range want {
			if !strings.HasPrefix(got[i], w) || strings.Contains(got[i], "\n") {
				t.Errorf("%q: problem %d is %q, want one line starting %q", in, i, got[i], w)
			}
		}
	}
}

// configProblems is the text of each problem of a Validate error.
func configProblems(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, configProblems(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// composedConfig runs select → train → score on an embedded broker with
// TLS and SASL.
const composedConfig = `
stages: [select, train, score]
train: {label: y, window: 600, min_rows: 200, retrain_every: "600"}
embedded:
  listen: 127.0.0.1:0
  tls_cert: broker.pem
  tls_key: broker-key.pem
  sasl_users: ["forestd:SCRAM-SHA-512", "kcat:PLAIN"]
  sasl_password_file: passwords
`

// multiConfig trains one multi-output regression forest on three labels.
const multiConfig = `
stages: [train, score]
train: {label: 'y0, y1,y2', exclude: [id], window: 600, window_kind: reservoir, min_rows: 200, retrain_every: "400", forest: sporf, task: regression}
`

// TestComposeConfig: select listed before train composes them; any other
// order, or either alone, does not; the composition is validated like the
// stages it joins.
func TestComposeConfig(t *testing.T) {
	c, err := checkConfig(composedConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Composed() {
		t.Fatal("[select, train, score] does not compose")
	}
	orders := map[string]bool{
		"select,train":         true,
		"select,analyze,train": true,
		"score,select,train":   true,
		"train,select":         false, // side by side, as before composition existed
		"train,score,select":   false,
		"select,score":         false,
		"analyze":              false,
		"score,train":          false,
	}
	for stages, want := range orders {
		c := DefaultConfig()
		c.Stages = strings.Split(stages, ",")
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", stages, err)
			continue
		}
		if c.Composed() != want {
			t.Errorf("stages %s: composed %v, want %v", stages, c.Composed(), want)
		}
	}
	wantConfigErrors(t, map[string]string{
		"stages: [select, train, select]\n":                    "twice",
		"stages: [select, traine]\n":                           `unknown stage "traine"`,
		"stages: [select, train]\ntrain: {retrain_every: x}\n": "train.retrain_every",
	})
}

// TestEmbeddedAuthConfig: the embedded section takes TLS and SASL
// settings; kafka.tls and kafka.sasl still belong to external brokers,
// except the CA file and server name with which the daemon checks its own
// broker's certificate.
func TestEmbeddedAuthConfig(t *testing.T) {
	c, err := ParseConfig(strings.NewReader(composedConfig), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Embedded
	if e.TLSCert != "broker.pem" || e.TLSKey != "broker-key.pem" || len(e.SASLUsers) != 2 || e.SASLPasswordFile != "passwords" {
		t.Fatalf("embedded auth not read: %+v", e)
	}
	for _, in := range []string{
		"embedded: {tls_cert: c.pem, tls_key: k.pem}\nkafka: {tls: {ca_file: ca.pem, server_name: broker.local}}\n",
		"embedded: {sasl_users: ['u:PLAIN']}\n",
		"brokers: [h:1]\nembedded: {tls_cert: c.pem}\n", // ignored with external brokers
	} {
		if _, err := checkConfig(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	wantConfigErrors(t, map[string]string{
		"embedded: {tls_cert: c.pem}\n":                                                            "embedded.tls_cert and embedded.tls_key must be given together",
		"embedded: {sasl_users: [alice]}\n":                                                        "embedded.sasl_users:",
		"embedded: {sasl_users: ['a:PLAIN', 'a:PLAIN']}\n":                                         `user "a" twice`,
		"embedded: {sasl_password_file: pw}\n":                                                     "embedded.sasl_password_file without embedded.sasl_users",
		"embedded: {sasl_users: ['a:PLAIN']}\nkafka: {sasl: {username: a}}\n":                      "kafka.sasl applies to external brokers",
		"kafka: {tls: {ca_file: ca.pem}}\n":                                                        "kafka.tls applies to external brokers",
		"embedded: {tls_cert: c.pem, tls_key: k.pem}\nkafka: {tls: {cert_file: c, key_file: k}}\n": "kafka.tls applies",
		"embedded: {sasl_pasword_file: pw}\n":                                                      "field sasl_pasword_file not found",
	})
}

// TestMultiLabelConfig: train.label lists several columns (spaces around
// names trimmed) and the trainer learns them as one multi-output target; a
// single label is unchanged; empty or repeated names, names that are also
// features or excluded, a classification task, the fdm and drf kinds and
// the analyze and select stages are refused with the key at fault.
func TestMultiLabelConfig(t *testing.T) {
	c, err := checkConfig(multiConfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := (&Daemon{cfg: c}).newTrainer()
	if err != nil {
		t.Fatal(err)
	}
	if o := tr.Options(); o.Label != "" || !slices.Equal(o.Labels, []string{"y0", "y1", "y2"}) || o.Params.Forest != "sporf" {
		t.Fatalf("trainer options %+v", o)
	}
	for _, label := range []string{"a,b", "y"} {
		c := DefaultConfig()
		c.Train.Label = label
		tr, err := (&Daemon{cfg: c}).newTrainer()
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		o := tr.Options()
		if want := strings.Split(label, ","); len(want) > 1 && !slices.Equal(o.Labels, want) || len(want) == 1 && (o.Label != "y" || o.Labels != nil) {
			t.Fatalf("%s: trainer label %q labels %q", label, o.Label, o.Labels)
		}
	}
	wantConfigErrors(t, map[string]string{
		"train: {label: 'a,,b'}\n":                                `train.label: frame: targets "a,,b": empty column name`,
		"train: {label: 'a,b,'}\n":                                "empty column name",
		"train: {label: ','}\n":                                   "empty column name",
		"train: {label: 'a,b, a'}\n":                              `train.label: frame: targets "a,b,a": column "a" twice`,
		"train: {label: 'a,b', features: [x, b]}\n":               `train.label: frame: target "b" is also listed as a feature`,
		"train: {label: 'a,b', exclude: [id, a]}\n":               `train.label: frame: target "a" is also listed as excluded`,
		"train: {label: 'a,b', task: classification}\n":           "train.task classification takes one label",
		"train: {label: 'a,b', forest: fdm}\n":                    "train.forest fdm learns one label",
		"train: {label: 'a,b', forest: drf}\n":                    "train.forest drf is not a training kind of the daemon",
		"stages: [train, analyze]\ntrain: {label: 'a,b'}\n":       "the analyze and select stages analyse one class label",
		"stages: [select, train, score]\ntrain: {label: 'a,b'}\n": "the analyze and select stages analyse one class label",
	})
	// a score-only daemon does not read train.label
	if _, err := checkConfig("stages: [score]\ntrain: {label: 'a,,b'}\n"); err != nil {
		t.Fatalf("score-only daemon with an unused bad train.label: %v", err)
	}
}

// TestTrainTask: train.task reaches the trainer (and the analysis behind
// select), so numeric JSON labels can be learnt as classes; composing
// select before train classifies under auto, and regresses with
// train.task regression (the analysis then uses dCor_n).
func TestTrainTask(t *testing.T) {
	for _, c := range []struct {
		in   string
		want frame.Task
	}{
		{"", frame.TaskAuto},
		{"train: {task: classification}\n", frame.TaskClassification},
		{"train: {task: regression}\n", frame.TaskRegression},
		{"stages: [select, train]\n", frame.TaskClassification},
		// a numeric label behind select: the analysis ranks by dCor_n
		{"stages: [select, train]\ntrain: {task: regression}\n", frame.TaskRegression},
	} {
		cfg, err := checkConfig(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		tr, err := (&Daemon{cfg: cfg}).newTrainer()
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if got := tr.Options().Task; got != c.want {
			t.Errorf("%q: trainer task %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzConfig: any config file is parsed and validated without a
// panic; what parses and validates has the invariants the daemon relies on.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("group: g\n"))
	f.Add([]byte("train: {retrain_every: 30s}\n"))
	f.Add([]byte("stages: [score]\nbrokers: ['[::1]:9092']\n"))
	f.Add([]byte(composedConfig))
	f.Add([]byte(multiConfig))
	f.Add([]byte("train: {label: 'y0, y1,y0', task: regression}\n"))
	f.Add([]byte("stages: [train]\ntrain: {label: ',', forest: drf}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(bytes.NewReader(b), "fuzz.yaml")
		if err != nil {
			return
		}
		if c.Validate() != nil {
			return
		}
		if len(c.Stages) == 0 || c.Train.MinRows > c.Train.Window || c.Pipeline.MaxInFlightBytes < 1 || c.Group == "" {
			t.Fatalf("validated config breaks an invariant: %+v", c)
		}
		if _, _, err := operators.ParseRetrain(c.Train.RetrainEvery); err != nil {
			t.Fatal(err)
		}
		if _, err := frame.ParseTask(c.Train.Task); err != nil {
			t.Fatal(err)
		}
		if labels := c.Train.Labels(); len(labels) > 1 && c.Has(stageTrain) {
			// several labels that validate make a multi-output trainer
			tr, err := (&Daemon{cfg: c}).newTrainer()
			if err != nil {
				t.Fatalf("train.label %q validated, but: %v", c.Train.Label, err)
			}
			if got := tr.Options().Labels; !slices.Equal(got, labels) {
				t.Fatalf("train.label %q: trainer labels %q", c.Train.Label, got)
			}
		}
	})
}

// checkConfig parses a YAML daemon config and validates it.
func checkConfig(in string) (Config, error) {
	c, err := ParseConfig(strings.NewReader(in), "c.yaml")
	if err == nil {
		err = c.Validate()
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

// TestTrainTune: train.tune reaches the trainer's params; a kind without a
// candidate set to tune is a config error.
func TestTrainTune(t *testing.T) {
	cfg, err := checkConfig("train: {tune: true, forest: sporf}\n")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := (&Daemon{cfg: cfg}).newTrainer()
	if err != nil {
		t.Fatal(err)
	}
	if o := tr.Options(); !o.Params.Tune || o.Params.Forest != "sporf" {
		t.Fatalf("trainer params %+v", o.Params)
	}
	wantConfigErrors(t, map[string]string{"train: {tune: true, forest: lfs}\n": "train.tune"})
}

// TestTrainLayout: train.layout gives morf (which needs it) and lfs their
// feature layout, in the trainer's params as train's --series, --cyclic
// and --grid set them; morf without one, a layout for another kind, a
// layout that is not one and drf (which the daemon cannot train) are
// config errors naming the key.
func TestTrainLayout(t *testing.T) {
	for in, want := range map[string]forest.Params{
		"train: {forest: morf, layout: series}\n":            {Layout: "series"},
		"train: {forest: morf, layout: cyclic}\n":            {Layout: "cyclic"},
		"train: {forest: morf, layout: 28x28, tune: true}\n": {Layout: "grid", Width: 28, Height: 28},
		"train: {forest: lfs, layout: 8X4}\n":                {Layout: "grid", Width: 8, Height: 4},
		"train: {forest: lfs}\n":                             {},
	} {
		cfg, err := checkConfig(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		tr, err := (&Daemon{cfg: cfg}).newTrainer()
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if p := tr.Options().Params; p.Layout != want.Layout || p.Width != want.Width || p.Height != want.Height {
			t.Errorf("%q: layout %q %dx%d, want %q %dx%d", in, p.Layout, p.Width, p.Height, want.Layout, want.Width, want.Height)
		}
		if want.Layout == "series" { // and the retrain makes a morf model on it
			f, err := tr.Train(context.Background(), fixture.Classes(200, 12, 2, 1), 1)
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if f.Kind != forest.KindMORF {
				t.Fatalf("%q: trained %s", in, f.Kind)
			}
		}
	}
	wantConfigErrors(t, map[string]string{
		"train: {forest: morf}\n":                 "train.layout: train.forest morf needs",
		"train: {forest: rf, layout: series}\n":   "train.layout: \"series\" applies to train.forest morf and lfs, not rf",
		"train: {layout: series}\n":               "not rf",
		"train: {forest: morf, layout: 28}\n":     "train.layout: layout \"28\"",
		"train: {forest: morf, layout: 0x3}\n":    "train.layout",
		"train: {forest: morf, layout: circle}\n": "train.layout",
		"train: {forest: drf}\n":                  "train.forest: drf is not a training kind of the daemon",
	})
}

// TestTrainerParamErrors: a forest parameter the trainer would refuse at
// every retrain is refused when the trainer is made, naming the key, and
// before that by Validate, as a config error like every other (it was
// found only when the daemon made its trainer: serve exited 1, not 2).
func TestTrainerParamErrors(t *testing.T) {
	c := DefaultConfig()
	c.Train.MaxFeatures = "banana"
	if _, err := (&Daemon{cfg: c}).newTrainer(); err == nil || !strings.HasPrefix(err.Error(), `train.max_features: max features "banana"`) {
		t.Fatalf("max_features banana: %v", err)
	}
	wantConfigErrors(t, map[string]string{
		"train: {max_features: bogus}\n":                  `train.max_features: max features "bogus": want sqrt, log2, all, a count or a fraction in (0, 1]`,
		"train: {max_features: '0'}\n":                    "train.max_features: max features 0 must be at least 1",
		"train: {max_features: '1.5'}\n":                  "train.max_features: ",
		"stages: [score]\ntrain: {max_features: bogus}\n": "train.max_features: ",
	})
	for _, mf := range []string{"", "sqrt", "log2", "all", "auto", "7", "0.5", "1"} {
		if _, err := checkConfig("train: {max_features: '" + mf + "'}\n"); err != nil {
			t.Errorf("max_features %q: %v", mf, err)
		}
	}
	if _, err := checkConfig("train: {forest: sporf, max_features: '2.5'}\n"); err != nil {
		t.Errorf("sporf's max_features 2.5 (oblique: up to 64× the features): %v", err)
	}
}

// TestConfigBounds: settings that size goroutines, topics or timers have
// upper bounds (pipeline.workers: 100000000 was accepted and wedged the
// machine), the forest kind is checked at start, and an output topic may
// not be one the daemon reads, the model topic or another output (except
// importances and reports, which may share one).
func TestConfigBounds(t *testing.T) {
	wantConfigErrors(t, map[string]string{
		"pipeline: {workers: 100000000}\n":           "pipeline.workers: 100000000 (0..4096",
		"train: {threads: 100000000}\n":              "train.threads: 100000000 (1..4096)",
		"topics: {partitions: 100000000}\n":          "topics.partitions: 100000000 (1..100000)",
		"kafka: {session_timeout: 9999h}\n":          "kafka.session_timeout: 9999h0m0s (100ms..1h)",
		"kafka: {max_message_bytes: 2000000000}\n":   "kafka.max_message_bytes: 2000000000 (1024..1 GiB)",
		"pipeline: {commit_interval: 1ns}\n":         "pipeline.commit_interval: 1ns (at least 1ms)",
		"train: {forest: bogus}\n":                   "train.forest: ",
		"topics: {dlq: forestd.features}\n":          `topics.dlq: "forestd.features" is also topics.features`,
		"topics: {predictions: forestd.training}\n":  `topics.predictions: "forestd.training" is also topics.training`,
		"topics: {predictions: forestd.models}\n":    `topics.predictions: "forestd.models" is also topics.models: the compacted model topic carries models only`,
		"topics: {models: forestd.dlq}\n":            `topics.dlq: "forestd.dlq" is also topics.models`,
		"topics: {reports: forestd.models}\n":        `topics.reports: "forestd.models" is also topics.models`,
		"topics: {models: forestd.features}\n":       `topics.models: "forestd.features" is also topics.features: the daemon would read its models as data`,
		"topics: {models: forestd.training}\n":       `topics.models: "forestd.training" is also topics.training`,
		"topics: {predictions: x.out, dlq: x.out}\n": `topics.dlq: "x.out" is also topics.predictions: two outputs would mix in one topic`,
		"topics: {selected: forestd.predictions}\n":  `topics.selected: "forestd.predictions" is also topics.predictions`,
		"topics: {importances: forestd.dlq}\n":       `topics.importances: "forestd.dlq" is also topics.dlq`,
		"topics: {reports: forestd.predictions}\n":   `topics.reports: "forestd.predictions" is also topics.predictions`,
		"topics: {selected: forestd.reports}\n":      `topics.selected: "forestd.reports" is also topics.reports`,
	})
	for _, in := range []string{
		"pipeline: {workers: 64}\ntrain: {threads: 8, forest: sporf}\n",
		"topics: {importances: x.explain, reports: x.explain}\n", // the one pair that may share
	} {
		if _, err := checkConfig(in); err != nil {
			t.Fatalf("a reasonable config %q: %v", in, err)
		}
	}
}

// TestConfigIntegers: an integer key given a number that is not an integer
// is an error naming the key (yaml.v3 truncated train.window: 1.5 to 1,
// and turned seed: -1.0 into a huge unsigned number); a float that is an
// exact integer in range (5e4, 200.0) is that integer. One check covers
// every integer key, aliases and merge keys included.
func TestConfigIntegers(t *testing.T) {
	wantConfigErrors(t, map[string]string{
		"train: {window: 1.5}\n":                  "train.window: 1.5 is not an integer",
		"train:\n  window: 2.5\n":                 "train.window: 2.5 is not an integer",
		"train: {min_rows: 100.5}\n":              "train.min_rows: 100.5 is not an integer",
		"train: {trees: .5}\n":                    "train.trees: .5 is not an integer",
		"train: {seed: 1.5}\n":                    "train.seed: 1.5 is not an integer",
		"train: {seed: -1.0}\n":                   "train.seed: -1.0 is out of range",
		"train: {threads: .inf}\n":                "train.threads: .inf is not an integer",
		"train: {window: .nan}\n":                 "train.window: .nan is not an integer",
		"train: {label: &w 1.5, window: *w}\n":    "train.window: 1.5 is not an integer",
		"train: {<<: {window: 1.5}}\n":            "train.window: 1.5 is not an integer",
		"pipeline: {workers: 1.5}\n":              "pipeline.workers: 1.5 is not an integer",
		"pipeline: {max_inflight_bytes: 1e30}\n":  "pipeline.max_inflight_bytes: 1e30 is out of range",
		"topics: {partitions: 2.5}\n":             "topics.partitions: 2.5 is not an integer",
		"embedded: {partitions: 3.5}\n":           "embedded.partitions: 3.5 is not an integer",
		"kafka: {max_message_bytes: 1048576.5}\n": "kafka.max_message_bytes: 1048576.5 is not an integer",
	})
	for in, want := range map[string]int{
		"train: {window: 5e4}\n":   50000,
		"train: {window: 200.0}\n": 200,
		"train: {window: 300}\n":   300,
	} {
		c, err := checkConfig(in)
		if err != nil || c.Train.Window != want {
			t.Errorf("%q: window %d, %v; want %d", in, c.Train.Window, err, want)
		}
	}
	if c, err := checkConfig("pipeline: {memory_limit: 1.25e9}\n"); err != nil || c.Pipeline.MemoryLimit != 1250000000 {
		t.Errorf("memory_limit 1.25e9: %d, %v", c.Pipeline.MemoryLimit, err)
	}
	// 2^40 merges deep: the walk stops at its budget, the decoder refuses
	var b strings.Builder
	b.WriteString("x0: &a0 {window: 1}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("train: {<<: [*a39, *a39]}\n")
	t0 := time.Now()
	if _, err := checkConfig(b.String()); err == nil || time.Since(t0) > 10*time.Second {
		t.Errorf("merge-key bomb: %v after %v", err, time.Since(t0))
	}
}

// TestSelectNamesConfig: the select stage copies the label and the key
// column beside the mapped columns of each batch, which are always named
// fdm_g<group>_<n> (fdm.OutputName). A label or key named like one used to
// pass the checks and then send every batch to the DLQ, each with the
// same reason, once an analysis found that many groups; it is a config
// error naming the key. Without the select stage, or with names that only
// look alike, the config is valid.
func TestSelectNamesConfig(t *testing.T) {
	wantConfigErrors(t, map[string]string{
		"stages: [score, select]\nkey: fdm_g2_1\n":         `key: column "fdm_g2_1" is named like`,
		"stages: [select, train, score]\nkey: fdm_g3_12\n": `key: column "fdm_g3_12"`,
	})
	for _, in := range []string{
		// the analysis names its mapped columns around the label's
		// (fdm.TestFitNamesAroundInputs)
		"stages: [select]\ntrain: {label: fdm_g1_1}\n",
		"stages: [select, train, score]\ntrain: {label: fdm_g3_12}\n",
		"stages: [train, score]\ntrain: {label: fdm_g1_1}\nkey: fdm_g1_2\n",
		"stages: [analyze]\ntrain: {label: fdm_g1_1}\n",
		"stages: [select]\ntrain: {label: fdm_g1}\nkey: fdm_g0_1\n",
		"stages: [select]\ntrain: {label: fdm_g01_1}\nkey: fdm_g1_1x\n",
		"stages: [select]\ntrain: {label: FDM_G1_1}\n",
	} {
		if _, err := checkConfig(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestConfigMarshal: Marshal writes every key (the whole Config, defaults
// included) in a file ParseConfig reads back to the same Config, except
// the client's SASL password, which is never printed.
func TestConfigMarshal(t *testing.T) {
	c, err := checkConfig("brokers: [127.0.0.1:9]\nstages: [select, train, score]\ntrain: {label: cls, forest: morf, layout: 28x28, tune: true}\n" +
		"pipeline: {commit_interval: 250ms}\nkafka: {sasl: {mechanism: PLAIN, username: u, password: s3cret}}\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Config{DefaultConfig(), c} {
		b, err := in.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "s3cret") {
			t.Fatalf("the password is printed:\n%s", b)
		}
		back, err := ParseConfig(bytes.NewReader(b), "printed.yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		again, err := back.Marshal() // nil and empty lists print alike
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) || back.Train.Layout != in.Train.Layout || back.Pipeline != in.Pipeline || back.Kafka.SASL.Username != in.Kafka.SASL.Username {
			t.Fatalf("read back differently:\n%s\nprinted:\n%s", again, b)
		}
		// every key: the YAML walk of the printed file meets every field
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"brokers", "embedded", "topics", "stages", "score", "train", "pipeline", "kafka", "http", "log"} {
			if _, ok := doc[key]; !ok {
				t.Fatalf("key %s missing:\n%s", key, b)
			}
		}
		if tr := doc["train"].(map[string]any); tr["layout"] == nil || tr["tune"] == nil {
			t.Fatalf("train keys missing:\n%s", b)
		}
	}
}

// TestStartNotes: the lines logged once at start say what a stage waits
// for when the configuration leaves it to a default: no row key, no model
// file to score with, the label the train stage learns.
func TestStartNotes(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(startNotes(&c), "\n")
	for _, want := range []string{"predictions carry no row key", "no model file (--model)", "the train stage learns one from 100 labelled rows", `learns label column "y" from topic forestd.training`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	c = DefaultConfig()
	c.Model, c.Key = "m.model", "id"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if notes := startNotes(&c); len(notes) != 0 {
		t.Errorf("a model, a key and no train stage: notes %q", notes)
	}
}

package daemon

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	modelfile "github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// Stage names of the daemon (Config.Stages).
const (
	stageScore   = "score"
	stageTrain   = "train"
	stageAnalyze = "analyze"
	stageSelect  = "select"
	// stageDrift tests the scored traffic against the live model's
	// reference sample (drift.go; Config.Drift). It needs score.
	stageDrift = "drift"
)

// Config is the daemon's configuration: the YAML file given with
// --config (unknown keys are errors), overridden by flags. Field names are
// the YAML keys.
type Config struct {
	Brokers  []string       `yaml:"brokers"`
	Embedded EmbeddedConfig `yaml:"embedded"`
	Group    string         `yaml:"group"`
	Topics   TopicsConfig   `yaml:"topics"`
	// Stages run in the daemon: score (features → predictions), train
	// (training → models, importances), analyze (training → dependence
	// reports), select (features and training → the selected and
	// FDM-mapped columns on the selected topic, using the latest analysis)
	// and drift (the scored traffic tested against the live model's
	// reference sample; key drift, which needs score).
	// The order composes select and train: with select listed before
	// train (e.g. [select, train, score]) train learns on the selected and
	// FDM-mapped columns of the labelled batches (in process, mapped as the
	// select stage maps them), every model carries that mapping in its
	// file, and score — like forestd score and eval — applies the model's
	// own mapping to raw feature batches; training waits for the first
	// analysis that selects features. In any other order the stages run
	// side by side: train learns on the raw columns (see composed).
	Stages []string `yaml:"stages"`
	Model  string   `yaml:"model"`
	// AllowFeatureChange lets a model that reads other source columns than
	// the live one replace it (a trained model after the training data's
	// columns changed, or a model published for other data). By default
	// such models are refused, logged and counted; behind the select stage
	// (select before train) columns may always change.
	AllowFeatureChange bool   `yaml:"allow_feature_change"`
	Key                string `yaml:"key"`
	// OutputFormat is the encoding of the records the daemon produces:
	// auto (the default) answers each message in its own format —
	// predictions and selected columns of a JSON message are JSON lines,
	// of an Arrow message Arrow IPC — and writes importances and reports
	// as Arrow IPC; arrow or json fix one for every output.
	OutputFormat string         `yaml:"output_format"`
	Score        ScoreConfig    `yaml:"score"`
	Train        TrainConfig    `yaml:"train"`
	Drift        DriftConfig    `yaml:"drift"`
	Pipeline     PipelineConfig `yaml:"pipeline"`
	Kafka        KafkaConfig    `yaml:"kafka"`
	HTTP         string         `yaml:"http"`
	Log          LogConfig      `yaml:"log"`
}

// EmbeddedConfig is the embedded broker the daemon starts when it has no
// brokers (key embedded).
type EmbeddedConfig struct {
	Listen     string `yaml:"listen"`
	DataDir    string `yaml:"data_dir"`
	Partitions int    `yaml:"partitions"`
	// max_request_bytes bounds one request's declared size, checked before
	// the broker reads it (Kafka's socket.request.max.bytes);
	// max_connections caps concurrent client connections
	// (internal/broker/limits.go).
	MaxRequestBytes int `yaml:"max_request_bytes"`
	MaxConnections  int `yaml:"max_connections"`
	// handshake_timeout: a new connection's TLS handshake and first
	// complete request; idle_timeout: a connection with no request or
	// response for that long is closed (Kafka's connections.max.idle.ms).
	// At least minBrokerTimeout each; what they bound:
	// internal/broker/limits.go.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	IdleTimeout      time.Duration `yaml:"idle_timeout"`
	// tls_cert, tls_key, sasl_users, sasl_password_file: the embedded
	// broker's TLS and SASL, as forestd broker's flags set them
	// (broker.Auth). The daemon connects to it with matching settings:
	// TLS trusting tls_cert (or kafka.tls.ca_file), SASL as the first user.
	broker.Auth `yaml:",inline"`
}

// TopicsConfig names the daemon's topics by role (key topics).
type TopicsConfig struct {
	Features    string `yaml:"features"`
	Training    string `yaml:"training"`
	Predictions string `yaml:"predictions"`
	Importances string `yaml:"importances"`
	Reports     string `yaml:"reports"`
	Selected    string `yaml:"selected"`
	// Drift receives the drift stage's reports (JSON, one per test).
	Drift  string `yaml:"drift"`
	Models string `yaml:"models"`
	DLQ    string `yaml:"dlq"`
	// Partitions of the topics the daemon creates (the model topic always
	// has one).
	Partitions int `yaml:"partitions"`
}

// ScoreConfig is what the score stage writes (key score; key and
// output_format, which predate it, stay at the top level).
type ScoreConfig struct {
	// Probs chooses the class probabilities of a classification model's
	// predictions: auto (the default: prob_<class> per class up to 256
	// classes, the top 5 beyond), all, top<k> (top1_class, top1_prob …
	// of the k most probable classes) or none (scoring.Probs). Regression
	// and multi-output models ignore it, so one setting serves every
	// model the daemon swaps in.
	Probs string `yaml:"probs"`
}

// defaultAnalysisWindow is train.analysis_window's default.
const defaultAnalysisWindow = 5000

// TrainConfig is the training (and analysis) of labelled batches (key
// train).
type TrainConfig struct {
	// Label is the label column; several, comma-separated ("y0,y1,y2"),
	// are learnt as one multi-output regression forest (labels). Empty
	// (the default): DefaultLabel when a stage needs one (Validate).
	Label    string   `yaml:"label"`
	Features []string `yaml:"features"`
	Exclude  []string `yaml:"exclude"`
	// Window bounds the labelled rows kept; WindowKind is count or
	// reservoir.
	Window     int    `yaml:"window"`
	WindowKind string `yaml:"window_kind"`
	// RetrainEvery is a row count ("10000") or a duration ("30s").
	RetrainEvery string `yaml:"retrain_every"`
	MinRows      int    `yaml:"min_rows"`
	// AnalysisWindow is the most rows of the training window the analyze
	// and select stages analyse (default 5000, at most
	// Window): a dependence analysis's set tests cost O(rows²) (they use
	// a seeded subsample of dependence.DefaultSetRows of them), its
	// marginal tests O(rows·log rows). Each analysis's time is the
	// metric forestd_analysis_seconds.
	AnalysisWindow int `yaml:"analysis_window"`
	// Task is how the label is learnt (frame.ParseTask): classification,
	// regression or auto (frame.ResolveAuto): a float label regresses (JSON
	// numbers decode as floats), and so does an integer label of more than
	// frame.MaxAutoClasses distinct values; every other label is classes.
	Task string `yaml:"task"`
	// Forest is the kind the daemon trains: rf, sporf, morf (with Layout),
	// lfs or fdm. A drf model (forestd train --forest drf) is scored, not
	// trained here: it needs the N×N distance matrix of its rows.
	Forest string `yaml:"forest"`
	// Layout is the features' layout for morf (required) and lfs: series,
	// cyclic or a grid WxH (forest.Params.SetLayout), as train's --series,
	// --cyclic and --grid.
	Layout      string `yaml:"layout"`
	Trees       int    `yaml:"trees"`
	Seed        uint64 `yaml:"seed"`
	MaxFeatures string `yaml:"max_features"`
	Threads     int    `yaml:"threads"`
	// Tune chooses each retrain's hyperparameters out of bag (rf, sporf
	// and morf; forest.Params.Tune).
	Tune bool `yaml:"tune"`
	// RetrainOn is what retrains besides retrain_every: "schedule" (the
	// default: nothing else) or "drift" (stage drift: a drift test that
	// finds drift retrains once labelled rows arrived since the last
	// training).
	RetrainOn string `yaml:"retrain_on"`
	// ReferenceRows is the sample of its training window each model
	// keeps for the drift stage (operators.TrainOptions.ReferenceRows;
	// 0: none).
	ReferenceRows int `yaml:"reference_rows"`
}

// retrainOnDrift is train.retrain_on's value that retrains on drift.
const retrainOnDrift = "drift"

// DriftConfig is the drift stage (key drift; stage drift): every Every
// the current window — the last Window rows (or the rows of the last
// duration, at most MaxWindowRows) of scored traffic — is tested against
// the live model's reference sample with arrowforest/drift's energy
// tests, one per feature and one joint, at level Alpha across them
// (Adjust); each test's report goes to topics.drift.
type DriftConfig struct {
	// Window is a row count ("2000") or a duration ("5m").
	Window string `yaml:"window"`
	// MaxWindowRows bounds a duration window's rows.
	MaxWindowRows int `yaml:"max_window_rows"`
	// Every is a row count of newly scored rows ("1000") or a duration.
	Every string `yaml:"every"`
	// MinRows is the least rows in the window to test.
	MinRows int     `yaml:"min_rows"`
	Alpha   float64 `yaml:"alpha"`
	// Adjust is holm, bh or none (dependence.ParseAdjust).
	Adjust string `yaml:"adjust"`
	// MaxRows bounds the pooled rows of the joint test (drift.Options).
	MaxRows int    `yaml:"max_rows"`
	Seed    uint64 `yaml:"seed"`
	Threads int    `yaml:"threads"`
}

// parseSchedule reads a row count or a duration (operators.ParseRetrain)
// of the config key key.
func parseSchedule(key, v string) (int, time.Duration, error) {
	rows, every, err := operators.ParseRetrain(v)
	if se := (*operators.ScheduleError)(nil); errors.As(err, &se) {
		se.Key = key
	}
	return rows, every, err
}

// window is drift.window: a row bound and, for a duration, the age.
func (c DriftConfig) window() (rows int, age time.Duration, err error) {
	rows, age, err = parseSchedule("drift.window", c.Window)
	if age > 0 {
		rows = c.MaxWindowRows
	}
	return rows, age, err
}

// validate checks the drift section (used only with stage drift).
func (c DriftConfig) validate() error {
	var errs []error
	if _, _, err := c.window(); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := parseSchedule("drift.every", c.Every); err != nil {
		errs = append(errs, err)
	}
	if c.MaxWindowRows < 2 || c.MaxWindowRows > 10_000_000 {
		errs = append(errs, fmt.Errorf("drift.max_window_rows: %d (2..10000000)", c.MaxWindowRows))
	}
	if rows, _, err := c.window(); err == nil && (c.MinRows < 1 || c.MinRows > rows) {
		errs = append(errs, fmt.Errorf("drift.min_rows: %d (1..the window's %d rows)", c.MinRows, rows))
	}
	if !(c.Alpha > 0 && c.Alpha < 1) {
		errs = append(errs, fmt.Errorf("drift.alpha: %v outside (0, 1)", c.Alpha))
	}
	if _, err := dependence.ParseAdjust(c.Adjust); err != nil {
		errs = append(errs, fmt.Errorf("drift.adjust: %w", err))
	}
	if c.MaxRows < 2 {
		errs = append(errs, fmt.Errorf("drift.max_rows: %d (at least 2)", c.MaxRows))
	}
	if c.Threads < 1 || c.Threads > maxThreads {
		errs = append(errs, fmt.Errorf("drift.threads: %d (1..%d)", c.Threads, maxThreads))
	}
	return errors.Join(errs...)
}

// PipelineConfig bounds the work in flight (key pipeline).
type PipelineConfig struct {
	Workers          int           `yaml:"workers"`
	MaxInFlightBytes int64         `yaml:"max_inflight_bytes"`
	MaxUncommitted   int           `yaml:"max_uncommitted"`
	CommitInterval   time.Duration `yaml:"commit_interval"`
	DrainTimeout     time.Duration `yaml:"drain_timeout"`
	// StallTimeout: /readyz fails when a partition of the consumed topics
	// has messages waiting and no commit for this long (kafka.SourceOptions).
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// MemoryLimit is the Go runtime's soft memory limit in bytes for the
	// process that runs the daemon. It is process-wide, so Start does not
	// set it: `forestd serve` does (debug.SetMemoryLimit), and an embedder
	// sets it itself if it wants one. 0 leaves the limit as it is.
	MemoryLimit int64 `yaml:"memory_limit"`
}

// KafkaConfig is the Kafka client's setup for external brokers (key kafka).
type KafkaConfig struct {
	ClientID        string        `yaml:"client_id"`
	TLS             TLSConfig     `yaml:"tls"`
	SASL            SASLConfig    `yaml:"sasl"`
	SessionTimeout  time.Duration `yaml:"session_timeout"`
	StartOffset     string        `yaml:"start_offset"`
	MaxMessageBytes int           `yaml:"max_message_bytes"`
}

// TLSConfig is the client's TLS (key kafka.tls).
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASLConfig is the client's SASL authentication (key kafka.sasl).
type SASLConfig struct {
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password may instead come from $FORESTD_SASL_PASSWORD.
	Password string `yaml:"password"`
}

// LogConfig is the structured log's level and format (key log).
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// checkShared refuses topics that roles must not share, naming both keys:
// an output (predictions, dlq, importances, reports, selected) that is
// also an input (features, training) would feed the daemon its own output;
// the model topic, which the daemon both reads (hot swaps) and writes
// (trained models), compacted by key, shared with an input would be scored
// or trained on, and shared with an output would carry other records beside
// the models (and lose them to compaction); two outputs on one topic would
// mix records a consumer reads as one kind (dead letters among
// predictions). Only importances and reports may share a topic: both are
// one-partition topics of small records the daemon never reads back, with
// disjoint columns (and an Arrow record names its kind in its
// forestd.schema metadata), for a consumer that wants a model's
// explanations from one topic. The two inputs are not compared here.
func (t TopicsConfig) checkShared() error {
	type role struct{ key, topic string }
	inputs := []role{{"features", t.Features}, {"training", t.Training}}
	models := role{"models", t.Models}
	outputs := []role{{"predictions", t.Predictions}, {"dlq", t.DLQ}, {"importances", t.Importances},
		{"reports", t.Reports}, {"selected", t.Selected}, {"drift", t.Drift}}
	for _, in := range inputs {
		if models.topic == in.topic {
			return fmt.Errorf("topics.models: %q is also topics.%s: the daemon would read its models as data", models.topic, in.key)
		}
	}
	for i, out := range outputs {
		for _, in := range inputs {
			if out.topic == in.topic {
				return fmt.Errorf("topics.%s: %q is also topics.%s: the daemon would read its own output", out.key, out.topic, in.key)
			}
		}
		if out.topic == models.topic {
			return fmt.Errorf("topics.%s: %q is also topics.models: the compacted model topic carries models only", out.key, out.topic)
		}
		for _, other := range outputs[:i] {
			if out.topic == other.topic && !(other.key == "importances" && out.key == "reports") {
				return fmt.Errorf("topics.%s: %q is also topics.%s: two outputs would mix in one topic (only importances and reports may share one)", out.key, out.topic, other.key)
			}
		}
	}
	return nil
}

// DefaultConfig is the configuration with no file and no flags.
func DefaultConfig() Config {
	return Config{
		Embedded: EmbeddedConfig{Listen: broker.DefaultListen, Partitions: 4,
			MaxRequestBytes: broker.DefaultMaxRequestBytes, MaxConnections: broker.DefaultMaxConnections,
			HandshakeTimeout: broker.DefaultHandshakeTimeout, IdleTimeout: broker.DefaultIdleTimeout},
		Group: "forestd",
		Topics: TopicsConfig{
			Features: "forestd.features", Training: "forestd.training", Predictions: "forestd.predictions",
			Importances: "forestd.importances", Reports: "forestd.reports", Selected: "forestd.selected",
			Drift: "forestd.drift", Models: "forestd.models", DLQ: "forestd.dlq", Partitions: 4,
		},
		OutputFormat: kafka.FormatAuto,
		Score:        ScoreConfig{Probs: "auto"},
		Train: TrainConfig{Window: 50000, WindowKind: operators.WindowCount, RetrainEvery: "10000",
			MinRows: 100, Forest: "rf", Trees: 100, Seed: 1, Threads: 1, AnalysisWindow: defaultAnalysisWindow,
			RetrainOn: "schedule", ReferenceRows: modelfile.DefaultReferenceRows},
		Drift: DriftConfig{Window: "2000", MaxWindowRows: 100000, Every: "1000", MinRows: 100, Alpha: drift.DefaultAlpha,
			Adjust: string(dependence.AdjustHolm), MaxRows: drift.DefaultMaxRows, Seed: 1, Threads: 1},
		Pipeline: PipelineConfig{MaxInFlightBytes: 64 << 20, MaxUncommitted: 1000,
			CommitInterval: 200 * time.Millisecond, DrainTimeout: 10 * time.Second, StallTimeout: time.Minute},
		Kafka: KafkaConfig{SessionTimeout: 10 * time.Second, StartOffset: kafka.StartEarliest,
			MaxMessageBytes: kafka.DefaultMaxMessageBytes},
		HTTP: "127.0.0.1:0",
		Log:  LogConfig{Level: "info", Format: "text"},
	}
}

// minBrokerTimeout is the least embedded.handshake_timeout and
// embedded.idle_timeout: a shorter one would close the daemon's own
// clients' connections as they open them.
const minBrokerTimeout = 100 * time.Millisecond

// embeddedAuthKeys name the embedded broker's TLS and SASL keys in errors.
var embeddedAuthKeys = broker.AuthNames{Cert: "embedded.tls_cert", Key: "embedded.tls_key", Users: "embedded.sasl_users", Passwords: "embedded.sasl_password_file"}

// maxConfigBytes bounds a config file.
const maxConfigBytes = 1 << 20

// ParseConfig reads YAML over the defaults. Unknown keys, a second
// document and values of the wrong type are errors naming the line; a
// number that is not an integer for an integer key (train.window: 1.5,
// which yaml.v3 would truncate) is an error naming the key (intWalk).
func ParseConfig(r io.Reader, name string) (Config, error) {
	cfg := DefaultConfig()
	b, err := io.ReadAll(io.LimitReader(r, maxConfigBytes+1))
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxConfigBytes {
		return cfg, fmt.Errorf("%s: larger than %d bytes", name, maxConfigBytes)
	}
	// integer keys first, so that 1.5 is refused naming its key rather
	// than truncated (or refused naming only its line); a file that does
	// not parse is reported by the decoder below
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) == nil {
		w := intWalk{budget: maxIntWalk}
		if err := w.check(&doc, reflect.TypeOf(cfg), ""); err != nil {
			return cfg, fmt.Errorf("%s: %w", name, err)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("%s: %s", name, strings.Join(strings.Fields(err.Error()), " "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("%s: more than one YAML document", name)
	}
	return cfg, nil
}

// maxIntWalk bounds the nodes intWalk visits: a config is a few hundred,
// and a file built of nested merge keys to blow up (which the decoder
// refuses as excessive aliasing) is not walked to its end.
const maxIntWalk = 100000

var durationType = reflect.TypeOf(time.Duration(0))

// intWalk checks the integer keys of a YAML document against the Go type
// it decodes into, all of them at once: yaml.v3 truncates a float into an
// integer field (train.window: 1.5 became 1, seed: -1.0 a huge unsigned
// number) and has no option to refuse it. A float that is an exact integer
// in the field's range (5e4) is accepted as that integer.
type intWalk struct{ budget int }

// check walks n, decoded into a value of type t at key path, following
// aliases and merge keys; unknown keys and values of another kind are left
// to the decoder.
func (w *intWalk) check(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if w.budget--; w.budget < 0 {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if err := w.check(c, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" { // <<: a mapping, or a list of them, merged into this one
				for v.Kind == yaml.AliasNode && v.Alias != nil {
					v = v.Alias
				}
				merged := []*yaml.Node{v}
				if v.Kind == yaml.SequenceNode {
					merged = v.Content
				}
				for _, m := range merged {
					if err := w.check(m, t, path); err != nil {
						return err
					}
				}
				continue
			}
			if ft, ok := yamlField(t, k.Value); ok {
				if err := w.check(v, ft, joinKey(path, k.Value)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for i, c := range n.Content {
				if err := w.check(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if err := w.check(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value)); err != nil {
					return err
				}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t == durationType || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return nil // integers, and durations, are the decoder's
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			return fmt.Errorf("%s: %s is not an integer", path, n.Value)
		}
		// [lo, hi) of the field's kind (the unsigned ones from reflect.Uint)
		lo, hi, what := -math.Ldexp(1, t.Bits()-1), math.Ldexp(1, t.Bits()-1), ""
		if t.Kind() >= reflect.Uint {
			lo, hi, what = 0, math.Ldexp(1, t.Bits()), "unsigned "
		}
		if f < lo || f >= hi {
			return fmt.Errorf("%s: %s is out of range (%s%d-bit integer)", path, n.Value, what, t.Bits())
		}
	}
	return nil
}

// yamlField returns the type of the field of struct t that YAML key key
// decodes into (yaml.v3's rules: the tag's name, else the lower-cased field
// name; inline structs' fields as their own).
func yamlField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if it, ok := yamlField(ft, key); ok {
					return it, true
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// joinKey is path.key.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Marshal writes c as the YAML file ParseConfig reads back to c: every
// key, defaults included, so that it documents the whole configuration
// (forestd serve --print-config). The Kafka client's SASL password is
// left empty: it belongs in the file or $FORESTD_SASL_PASSWORD, not in
// what is printed.
func (c Config) Marshal() ([]byte, error) {
	c.Kafka.SASL.Password = ""
	return yaml.Marshal(c)
}

// LoadConfig reads the YAML configuration file at path over the defaults
// (see ParseConfig). Errors name the file.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return DefaultConfig(), err
	}
	defer f.Close()
	return ParseConfig(f, path)
}

// CheckAddr checks that addr is host:port with a valid port; what names the
// setting in the error.
func CheckAddr(what, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q is not host:port", what, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%s %q: bad port", what, addr)
	}
	return nil
}

// DefaultLabel is the label column of a stage that needs one when
// train.label is empty.
const DefaultLabel = "y"

// resolveStages fills the defaults that depend on other keys: no stages
// named run score alone when a model file is given and no label (a user
// who brings a model and no labels wants predictions, not a train stage
// waiting for a column "y" never named), else score and train; a stage
// that needs a label and has none learns DefaultLabel.
func (c *Config) resolveStages() {
	if len(c.Stages) == 0 {
		c.Stages = []string{stageScore, stageTrain}
		if c.Model != "" && c.Train.Label == "" {
			c.Stages = []string{stageScore}
		}
	}
	if c.Train.Label == "" && (c.Has(stageTrain) || c.Has(stageAnalyze) || c.Has(stageSelect)) {
		c.Train.Label = DefaultLabel
	}
}

// Composed reports whether select is listed before train: train then
// learns behind the select stage (see Config.Stages).
func (c *Config) Composed() bool {
	s, t := slices.Index(c.Stages, stageSelect), slices.Index(c.Stages, stageTrain)
	return s >= 0 && t > s
}

// Has reports whether stage (stageScore, stageTrain, stageAnalyze,
// stageSelect) is among the stages the daemon runs.
func (c *Config) Has(stage string) bool {
	for _, s := range c.Stages {
		if s == stage {
			return true
		}
	}
	return false
}

// Upper bounds of settings whose value sizes goroutines, topics or
// allocations: far above any real deployment, and low enough that a typo
// (workers: 100000000 wedged the machine) is refused at start.
const (
	maxThreads    = 4096   // pipeline.workers, train.threads
	maxPartitions = 100000 // topics.partitions
)

// Validate fills the defaults that depend on other keys (the stages and
// the label, resolveStages), checks every value of the configuration, as
// Start does first, and returns every problem it finds at once: one error
// per problem, each one line naming its YAML key (e.g. "train.max_features:
// …"), joined with errors.Join in the order of the sections below (a
// caller prints one line each, or walks them with Unwrap() []error). A
// config that passes starts, or fails only on what it meets (brokers,
// files).
//
// Each section has its own validator; a check that presumes another key
// valid (the topics' sharing presumes their names, the trainer's
// parameters the keys checked before them) runs only when that key passed,
// so that one mistake is reported once.
func (c *Config) Validate() error {
	c.resolveStages()
	return errors.Join(
		c.validateStages(),
		c.validateBrokers(),
		c.validateGroup(),
		c.Topics.validate(),
		c.validateOutput(),
		c.validateTrain(),
		c.validateDrift(),
		c.Pipeline.validate(),
		c.validateKafka(),
		c.validateOps(),
	)
}

// validateStages checks stages: known names, each once.
func (c *Config) validateStages() error {
	if len(c.Stages) == 0 {
		return errors.New("stages: at least one of score, train, analyze, select")
	}
	var errs []error
	seen := map[string]bool{}
	for _, s := range c.Stages {
		switch s {
		case stageScore, stageTrain, stageAnalyze, stageSelect, stageDrift:
		default:
			errs = append(errs, fmt.Errorf("stages: unknown stage %q (score, train, analyze, select, drift)", s))
			continue
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("stages: %q twice", s))
		}
		seen[s] = true
	}
	return errors.Join(errs...)
}

// validateDrift checks the drift section when the drift stage runs (it
// tests scored traffic: it needs score).
func (c *Config) validateDrift() error {
	if !c.Has(stageDrift) {
		return nil
	}
	var errs []error
	if !c.Has(stageScore) {
		errs = append(errs, errors.New("stages: drift tests the scored traffic: it needs score"))
	}
	return errors.Join(append(errs, c.Drift.validate())...)
}

// validateBrokers checks brokers, and the embedded broker's keys when
// there are none (embedded is ignored with external brokers).
func (c *Config) validateBrokers() error {
	var errs []error
	for _, b := range c.Brokers {
		errs = append(errs, CheckAddr("brokers:", b))
	}
	if len(c.Brokers) > 0 {
		return errors.Join(errs...)
	}
	e := c.Embedded
	errs = append(errs, CheckAddr("embedded.listen:", e.Listen))
	if e.Partitions < 1 {
		errs = append(errs, fmt.Errorf("embedded.partitions: %d", e.Partitions))
	}
	if r := e.MaxRequestBytes; r < broker.DefaultMaxMessageBytes || r > 1<<31-1 {
		errs = append(errs, fmt.Errorf("embedded.max_request_bytes: %d (%d..%d)", r, broker.DefaultMaxMessageBytes, 1<<31-1))
	}
	if e.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("embedded.max_connections: %d (at least 1)", e.MaxConnections))
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"handshake_timeout", e.HandshakeTimeout}, {"idle_timeout", e.IdleTimeout}} {
		if t.d < minBrokerTimeout {
			errs = append(errs, fmt.Errorf("embedded.%s: %v (at least %v)", t.key, t.d, minBrokerTimeout))
		}
	}
	errs = append(errs, e.Validate(embeddedAuthKeys))
	return errors.Join(errs...)
}

// validateGroup checks group.
func (c *Config) validateGroup() error {
	if c.Group == "" {
		return errors.New("group: empty consumer group")
	}
	return nil
}

// validate checks topics: every name a Kafka topic name, the partitions
// bounded, and (when every name is valid) no two roles sharing a topic
// they must not share (checkShared).
func (t TopicsConfig) validate() error {
	var errs []error
	for _, r := range []struct{ key, topic string }{
		{"features", t.Features}, {"training", t.Training}, {"predictions", t.Predictions},
		{"importances", t.Importances}, {"reports", t.Reports}, {"selected", t.Selected},
		{"drift", t.Drift}, {"models", t.Models}, {"dlq", t.DLQ},
	} {
		if !validTopic(r.topic) {
			errs = append(errs, fmt.Errorf("topics.%s: %q is not a Kafka topic name (1-249 of a-z A-Z 0-9 . _ -)", r.key, r.topic))
		}
	}
	if t.Partitions < 1 || t.Partitions > maxPartitions {
		errs = append(errs, fmt.Errorf("topics.partitions: %d (1..%d)", t.Partitions, maxPartitions))
	}
	if len(errs) == 0 {
		errs = append(errs, t.checkShared())
	}
	return errors.Join(errs...)
}

// validateOutput checks what the daemon writes: output_format, score.probs
// and, behind the select stage, the key column's name
// (validateSelectNames).
func (c *Config) validateOutput() error {
	var errs []error
	switch c.OutputFormat {
	case kafka.FormatAuto, kafka.FormatArrow, kafka.FormatJSON:
	default:
		errs = append(errs, fmt.Errorf("output_format: %q is not auto, arrow or json", c.OutputFormat))
	}
	if err := scoring.Probs(c.Score.Probs).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("score.probs: %w", err))
	}
	if c.Has(stageSelect) {
		errs = append(errs, c.validateSelectNames())
	}
	return errors.Join(errs...)
}

// validateTrain checks the train section: the label when a stage needs
// one (validateLabels), the window, the task, the schedule, the forest
// and, when the keys they share passed, the forest parameters as the
// trainer checks them before it is made (forestParams).
func (c *Config) validateTrain() error {
	var errs []error
	bad := map[string]bool{} // train keys already reported
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, err)
			bad[key] = true
		}
	}
	if c.Has(stageTrain) || c.Has(stageAnalyze) || c.Has(stageSelect) {
		if c.Train.Label == "" {
			add("label", errors.New("train.label: the train, analyze and select stages need a label column"))
		} else {
			add("label", c.validateLabels())
		}
	}
	t := c.Train
	if t.Window < 2 || t.MinRows < 2 || t.MinRows > t.Window {
		add("window", fmt.Errorf("train: window %d and min_rows %d need 2 ≤ min_rows ≤ window", t.Window, t.MinRows))
	}
	if t.AnalysisWindow < 2 {
		add("analysis_window", fmt.Errorf("train.analysis_window: %d rows; the analysis needs at least 2", t.AnalysisWindow))
	}
	switch t.WindowKind {
	case operators.WindowCount, operators.WindowReservoir:
	default:
		add("window_kind", fmt.Errorf("train.window_kind: %q is not count or reservoir", t.WindowKind))
	}
	if _, err := frame.ParseTask(t.Task); err != nil {
		add("task", fmt.Errorf("train.task: %w", err))
	}
	if _, _, err := parseSchedule("train.retrain_every", t.RetrainEvery); err != nil {
		add("retrain_every", err)
	}
	switch t.RetrainOn {
	case "schedule":
	case retrainOnDrift:
		if !c.Has(stageDrift) || !c.Has(stageTrain) {
			add("retrain_on", fmt.Errorf("train.retrain_on: drift needs the stages train and drift"))
		}
	default:
		add("retrain_on", fmt.Errorf("train.retrain_on: %q is not schedule or drift", t.RetrainOn))
	}
	if t.ReferenceRows < 0 {
		add("reference_rows", fmt.Errorf("train.reference_rows: %d (0: none)", t.ReferenceRows))
	}
	if t.Trees < 1 || t.Trees > 100000 {
		add("trees", fmt.Errorf("train.trees: %d", t.Trees))
	}
	if t.Threads < 1 || t.Threads > maxThreads {
		add("threads", fmt.Errorf("train.threads: %d (1..%d)", t.Threads, maxThreads))
	}
	add("forest", t.validateForest())
	// as the trainer checks them, before it is made (its first problem
	// only): a layout that does not parse is validateForest's to report,
	// and so is each key reported above
	if (&forest.Params{}).SetLayout(t.Layout) == nil {
		var pe *forest.ParamError
		if _, err := t.forestParams(); err != nil && !(errors.As(err, &pe) && bad[pe.Param]) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateForest checks train.forest, train.layout and train.tune, which
// depend on one another; its first problem only.
func (t TrainConfig) validateForest() error {
	if t.Forest != "" {
		if _, err := forest.ParseKind(t.Forest); err != nil {
			return fmt.Errorf("train.forest: %w", err)
		}
	}
	switch kind := forest.Kind(t.Forest); {
	case kind == forest.KindDRF:
		return fmt.Errorf("train.forest: drf is not a training kind of the daemon (a distance forest needs the N×N distance matrix of its training rows): train rf, sporf, morf, lfs or fdm here, or score a model from forestd train --forest drf")
	case kind == forest.KindMORF && t.Layout == "":
		return fmt.Errorf("train.layout: train.forest morf needs the features' layout: series, cyclic or a grid WxH (as forestd train's --series, --cyclic, --grid)")
	case t.Layout != "" && kind != forest.KindMORF && kind != forest.KindLFS:
		return fmt.Errorf("train.layout: %q applies to train.forest morf and lfs, not %s", t.Layout, cmp.Or(t.Forest, "rf"))
	}
	if err := (&forest.Params{}).SetLayout(t.Layout); err != nil {
		return fmt.Errorf("train.layout: %w", err)
	}
	if t.Tune && !forest.Kind(t.Forest).Tunable() {
		return fmt.Errorf("train.tune: forest %q has no candidate set to tune (rf, sporf and morf have)", t.Forest)
	}
	return nil
}

// validate checks the pipeline section: every bound at once.
func (p PipelineConfig) validate() error {
	var errs []error
	if p.Workers < 0 || p.Workers > maxThreads {
		errs = append(errs, fmt.Errorf("pipeline.workers: %d (0..%d; 0: one per CPU)", p.Workers, maxThreads))
	}
	if p.MaxInFlightBytes < 1 {
		errs = append(errs, fmt.Errorf("pipeline.max_inflight_bytes: %d", p.MaxInFlightBytes))
	}
	if p.MaxUncommitted < 1 {
		errs = append(errs, fmt.Errorf("pipeline.max_uncommitted: %d", p.MaxUncommitted))
	}
	if p.CommitInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("pipeline.commit_interval: %v (at least 1ms)", p.CommitInterval))
	}
	if p.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("pipeline.drain_timeout: %v", p.DrainTimeout))
	}
	if p.StallTimeout <= 0 {
		errs = append(errs, fmt.Errorf("pipeline.stall_timeout: %v", p.StallTimeout))
	}
	if p.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("pipeline.memory_limit: %d", p.MemoryLimit))
	}
	return errors.Join(errs...)
}

// validateKafka checks the kafka section: the client's bounds, and its TLS
// and SASL, which apply to external brokers only (the embedded broker's
// are the embedded section's, validateBrokers).
func (c *Config) validateKafka() error {
	var errs []error
	k := c.Kafka
	if k.SessionTimeout < 100*time.Millisecond || k.SessionTimeout > time.Hour {
		errs = append(errs, fmt.Errorf("kafka.session_timeout: %v (100ms..1h)", k.SessionTimeout))
	}
	switch k.StartOffset {
	case kafka.StartEarliest, kafka.StartLatest:
	default:
		errs = append(errs, fmt.Errorf("kafka.start_offset: %q is not earliest or latest", k.StartOffset))
	}
	if k.MaxMessageBytes < 1024 || k.MaxMessageBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("kafka.max_message_bytes: %d (1024..1 GiB)", k.MaxMessageBytes))
	}
	if len(c.Brokers) > 0 {
		co := c.ClientOptions()
		if err := co.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kafka: %w", err))
		}
		return errors.Join(errs...)
	}
	if k.SASL.Mechanism != "" || k.SASL.Username != "" || k.SASL.Password != "" {
		errs = append(errs, errors.New("kafka.sasl applies to external brokers; the embedded broker's users are embedded.sasl_users (the daemon authenticates as the first)"))
	}
	t := k.TLS
	if t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify || (t.Enabled || t.CAFile != "" || t.ServerName != "") && !c.Embedded.TLS() {
		errs = append(errs, errors.New("kafka.tls applies to external brokers; the embedded broker's TLS is embedded.tls_cert and embedded.tls_key (the daemon trusts that certificate, or kafka.tls.ca_file)"))
	}
	return errors.Join(errs...)
}

// validateOps checks http and the log section.
func (c *Config) validateOps() error {
	var errs []error
	errs = append(errs, CheckAddr("http:", c.HTTP))
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format: %q is not text or json", c.Log.Format))
	}
	return errors.Join(errs...)
}

// Labels returns the label columns of train.label: several when it lists
// them comma-separated (frame.SplitLabel: spaces around a name trimmed,
// empty names kept for validateLabels), else the one label as given.
func (t TrainConfig) Labels() []string {
	if !strings.Contains(t.Label, ",") {
		return []string{t.Label}
	}
	return frame.SplitLabel(t.Label)
}

// validateLabels checks several label columns (train.label: a,b,c), which
// train learns as one multi-output regression forest: named, distinct,
// neither in train.features nor in train.exclude (frame.CheckTargets),
// regression with a forest kind that takes several targets (as forestd
// train --label a,b,c requires), and no analyze or select stage, whose
// analysis takes one class label.
func (c *Config) validateLabels() error {
	t := c.Train
	names := t.Labels()
	if len(names) < 2 {
		return nil
	}
	if err := frame.CheckTargets(names, t.Features, t.Exclude); err != nil {
		return fmt.Errorf("train.label: %w", err)
	}
	if c.Has(stageAnalyze) || c.Has(stageSelect) {
		return fmt.Errorf("train.label: %q names several columns, a multi-output regression target; the analyze and select stages analyse one class label", t.Label)
	}
	if tk, err := frame.ParseTask(t.Task); err == nil && tk == frame.TaskClassification {
		return fmt.Errorf("train.label: %q names several columns, a multi-output regression target; train.task classification takes one label", t.Label)
	}
	switch t.Forest {
	case "fdm":
		return fmt.Errorf("train.label: %q names several columns: train.forest fdm learns one label (rf, sporf, morf and lfs learn several as one multi-output regression forest)", t.Label)
	case "drf":
		return fmt.Errorf("train.label: %q names several columns: train.forest drf is not a training kind of the daemon (a distance forest needs the N×N distance matrix of its training rows); rf, sporf, morf and lfs learn several as one multi-output regression forest, and a model from forestd train --forest drf can be scored here", t.Label)
	}
	return nil
}

// validateSelectNames refuses a key column named like a column the
// select stage maps. The stage copies the key beside the mapped columns of
// each batch (operators.SelectRecords, as a passthrough column), and the
// analysis names the mapped columns fdm_g<group>_<n> (fdm.OutputName)
// unless the analysed window has columns so named — its features and its
// label, which it steps around (fdm2_…, fdm3_…) — but a key that is no
// feature (a string id) is not in the window: a key of such a name would
// send every batch to the DLQ, each with the same reason, as soon as an
// analysis found that many groups. The name is known before any data, so
// the clash is refused here, once, even when the analysis might never
// find that many groups.
func (c *Config) validateSelectNames() error {
	if fdm.IsOutputName(c.Key) {
		return fmt.Errorf("key: column %q is named like the select stage's mapped columns (fdm_g<group>_<n>), which the selected records hold beside it: rename the column, or drop the select stage", c.Key)
	}
	return nil
}

func validTopic(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// ClientOptions are the Kafka client settings for the configured brokers
// (the SASL password from kafka.sasl.password or $FORESTD_SASL_PASSWORD).
func (c *Config) ClientOptions() kafka.ClientOptions {
	pw := c.Kafka.SASL.Password
	if pw == "" {
		pw = os.Getenv(broker.PasswordEnv)
	}
	return kafka.ClientOptions{
		Brokers:  c.Brokers,
		ClientID: c.Kafka.ClientID,
		TLS: kafka.TLSOptions{Enabled: c.Kafka.TLS.Enabled, CAFile: c.Kafka.TLS.CAFile, CertFile: c.Kafka.TLS.CertFile,
			KeyFile: c.Kafka.TLS.KeyFile, ServerName: c.Kafka.TLS.ServerName, InsecureSkipVerify: c.Kafka.TLS.InsecureSkipVerify},
		SASL: kafka.SASLOptions{Mechanism: c.Kafka.SASL.Mechanism, Username: c.Kafka.SASL.Username, Password: pw},
	}
}

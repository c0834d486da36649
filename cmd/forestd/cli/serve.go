package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/broker"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
)

const serveUsage = `[--config FILE] [--brokers HOST:PORT,...] [flags]

The Kafka daemon: scores feature batches from the features topic with the
current model, retrains on labelled batches from the training topic, hot-swaps
models, and publishes predictions, importances, models and dead letters.
With no --brokers it starts an embedded broker on --embedded-listen (with TLS
and SASL when --embedded-tls-cert/--embedded-sasl-user are given; the daemon
connects with the matching settings).

--stages lists the stages in order: score, train, analyze, select. Listing
select before train composes them, e.g. --stages select,train,score: train
learns on the selected and FDM-mapped columns of the labelled batches, each
model carries its mapping, and score applies a model's own mapping to the raw
feature batches. In any other order the stages run side by side (train on the
raw columns; select only publishes to the selected topic).

Passwords: the embedded broker's users read theirs from
--embedded-sasl-password-file (NAME:PASSWORD lines) or $FORESTD_SASL_PASSWORD,
never from a flag; the client's comes from kafka.sasl.password in the config
file or $FORESTD_SASL_PASSWORD (--sasl-password works too, but shows in ps).
Flags override the YAML config file.
--demo runs a self-contained demo that stops by itself.`

// serveFlags holds the flag values; only flags given on the command line
// override the config file.
type serveFlags struct {
	config, brokers, embeddedListen, dataDir, group, stages, model, key, outputFormat      string
	label, features, exclude, retrainEvery, windowKind, forest, maxFeatures, httpAddr      string
	logLevel, logFormat, startOffset, tlsCA, tlsCert, tlsKey, tlsServerName                string
	saslMechanism, saslUsername, saslPassword, clientID                                    string
	window, minRows, trees, trainThreads, workers, maxUncommitted, partitions, maxMsgBytes int
	seed                                                                                   uint64
	maxInFlightBytes, memoryLimit                                                          int64
	sessionTimeout, drainTimeout, commitInterval, maxRuntime, demoDuration, stallTimeout   time.Duration
	tls, tlsInsecure, demo                                                                 bool
	topics                                                                                 listFlag
	embeddedTLSCert, embeddedTLSKey, embeddedPasswords, task                               string
	embeddedUsers                                                                          listFlag
}

func runServe(args []string, env Env) error {
	cfg, f, err := serveConfigFromArgs(args, env)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.demo {
		return runDemo(ctx, cfg, f.demoDuration, env)
	}
	if f.maxRuntime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.maxRuntime)
		defer cancel()
	}
	log := newLogger(cfg.Log, env.Stderr)
	d, err := startDaemon(ctx, cfg, log)
	if err != nil {
		return err
	}
	return d.wait(ctx)
}

// serveConfigFromArgs parses the flags, reads --config, applies the flags
// given over it and validates the result.
func serveConfigFromArgs(args []string, env Env) (serveConfig, *serveFlags, error) {
	fs := newFlagSet("serve", serveUsage, env)
	d := defaultServeConfig()
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "YAML configuration file (flags override it)")
	fs.StringVar(&f.brokers, "brokers", "", "Kafka bootstrap brokers host:port,... (none: start the embedded broker)")
	fs.StringVar(&f.embeddedListen, "embedded-listen", d.Embedded.Listen, "address of the embedded broker")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory where the embedded broker persists its logs and offsets (empty: memory only)")
	fs.StringVar(&f.group, "group", d.Group, "consumer group")
	fs.StringVar(&f.stages, "stages", strings.Join(d.Stages, ","), "stages to run, in order: score, train, analyze, select (select before train composes them)")
	fs.StringVar(&f.embeddedTLSCert, "embedded-tls-cert", "", "PEM certificate: the embedded broker accepts TLS only (with --embedded-tls-key)")
	fs.StringVar(&f.embeddedTLSKey, "embedded-tls-key", "", "PEM key of --embedded-tls-cert")
	fs.Var(&f.embeddedUsers, "embedded-sasl-user", "NAME:MECHANISM (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): the embedded broker requires SASL; the daemon authenticates as the first (repeatable)")
	fs.StringVar(&f.embeddedPasswords, "embedded-sasl-password-file", "", "NAME:PASSWORD lines for --embedded-sasl-user (default: $FORESTD_SASL_PASSWORD for every user)")
	fs.StringVar(&f.model, "model", "", "model file that seeds the first model")
	fs.StringVar(&f.key, "key", "", "input column copied into every prediction (besides the source coordinates)")
	fs.StringVar(&f.outputFormat, "output-format", d.OutputFormat, "format of produced records: arrow or json")
	fs.StringVar(&f.label, "label", d.Train.Label, "label column of training batches; several, comma-separated, train one multi-output regression forest")
	fs.StringVar(&f.features, "features", "", "feature columns for training, comma-separated (default: all but the label)")
	fs.StringVar(&f.exclude, "exclude", "", "columns that are not features, comma-separated")
	fs.StringVar(&f.retrainEvery, "retrain-every", d.Train.RetrainEvery, "retrain after this many labelled rows, or at this interval (e.g. 30s)")
	fs.IntVar(&f.window, "window", d.Train.Window, "labelled rows kept for training")
	fs.StringVar(&f.windowKind, "window-kind", d.Train.WindowKind, "training window: count (most recent rows) or reservoir (uniform sample)")
	fs.IntVar(&f.minRows, "min-rows", d.Train.MinRows, "least rows to train a model on")
	fs.StringVar(&f.forest, "forest", d.Train.Forest, "forest kind for training: rf or sporf")
	fs.StringVar(&f.task, "task", d.Train.Task, "how the label is learnt: auto (numbers regress, strings classify), classification or regression")
	fs.IntVar(&f.trees, "trees", d.Train.Trees, "trees per trained model")
	fs.Uint64Var(&f.seed, "seed", d.Train.Seed, "training seed")
	fs.StringVar(&f.maxFeatures, "max-features", "", "candidate features per split (sqrt, log2, all, N or a fraction)")
	fs.IntVar(&f.trainThreads, "train-threads", d.Train.Threads, "threads for training")
	fs.IntVar(&f.workers, "workers", 0, "messages processed in parallel (default: the number of CPUs)")
	fs.Int64Var(&f.maxInFlightBytes, "max-inflight-bytes", d.Pipeline.MaxInFlightBytes, "bound on message bytes in flight (backpressure)")
	fs.IntVar(&f.maxUncommitted, "max-uncommitted", d.Pipeline.MaxUncommitted, "bound on fetched messages not yet committable")
	fs.DurationVar(&f.commitInterval, "commit-interval", d.Pipeline.CommitInterval, "offset commit interval")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", d.Pipeline.DrainTimeout, "how long a rebalance or shutdown waits for messages in flight")
	fs.DurationVar(&f.stallTimeout, "stall-timeout", d.Pipeline.StallTimeout, "/readyz fails when a partition has messages waiting and no commit for this long")
	fs.Int64Var(&f.memoryLimit, "memory-limit", 0, "Go runtime soft memory limit in bytes (0: none)")
	fs.IntVar(&f.partitions, "partitions", d.Topics.Partitions, "partitions of the topics the daemon creates")
	fs.Var(&f.topics, "topic", "rename a topic: ROLE=NAME with ROLE one of features, training, predictions, importances, reports, selected, models, dlq (repeatable)")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", d.Kafka.SessionTimeout, "consumer-group session timeout")
	fs.StringVar(&f.startOffset, "start-offset", d.Kafka.StartOffset, "where a partition without a committed offset starts: earliest or latest")
	fs.IntVar(&f.maxMsgBytes, "max-message-bytes", d.Kafka.MaxMessageBytes, "largest message the daemon produces (larger outputs are split)")
	fs.StringVar(&f.clientID, "client-id", "", "Kafka client ID")
	fs.BoolVar(&f.tls, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of the CAs that sign the brokers' certificates")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate (mutual TLS)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM client key (mutual TLS)")
	fs.StringVar(&f.tlsServerName, "tls-server-name", "", "name to check in the brokers' certificates")
	fs.BoolVar(&f.tlsInsecure, "tls-insecure", false, "skip certificate verification (testing only)")
	fs.StringVar(&f.saslMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&f.saslUsername, "sasl-username", "", "SASL username")
	fs.StringVar(&f.saslPassword, "sasl-password", "", "SASL password (or $FORESTD_SASL_PASSWORD)")
	fs.StringVar(&f.httpAddr, "http", d.HTTP, "address of /metrics, /healthz and /readyz (port 0: a free port, printed in the log)")
	fs.StringVar(&f.logLevel, "log-level", d.Log.Level, "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", d.Log.Format, "text or json")
	fs.DurationVar(&f.maxRuntime, "max-runtime", 0, "stop gracefully after this long (0: run until SIGTERM)")
	fs.BoolVar(&f.demo, "demo", false, "run the built-in demo: embedded broker, simulated stream, training, hot swap, scoring; stops by itself")
	fs.DurationVar(&f.demoDuration, "demo-duration", 20*time.Second, "how long --demo runs")
	cfg := defaultServeConfig()
	pos, err := parse(fs, args)
	if err != nil {
		return cfg, nil, err
	}
	if len(pos) > 0 {
		return cfg, nil, usagef("unexpected argument %q", pos[0])
	}
	if f.config != "" {
		if cfg, err = readServeConfig(f.config); err != nil {
			return cfg, nil, usageError{err}
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := applyServeFlags(&cfg, &f, set); err != nil {
		return cfg, nil, err
	}
	if f.demo {
		demoDefaults(&cfg, set)
	}
	if err := cfg.validate(); err != nil {
		return cfg, nil, usageError{err}
	}
	return cfg, &f, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// applyServeFlags copies the flags given on the command line over cfg.
func applyServeFlags(cfg *serveConfig, f *serveFlags, set map[string]bool) error {
	str := map[string]*string{
		"embedded-listen": &cfg.Embedded.Listen, "data-dir": &cfg.Embedded.DataDir, "group": &cfg.Group,
		"model": &cfg.Model, "key": &cfg.Key, "output-format": &cfg.OutputFormat, "label": &cfg.Train.Label,
		"retrain-every": &cfg.Train.RetrainEvery, "window-kind": &cfg.Train.WindowKind, "forest": &cfg.Train.Forest, "task": &cfg.Train.Task,
		"max-features": &cfg.Train.MaxFeatures, "http": &cfg.HTTP, "log-level": &cfg.Log.Level, "log-format": &cfg.Log.Format,
		"start-offset": &cfg.Kafka.StartOffset, "client-id": &cfg.Kafka.ClientID, "tls-ca": &cfg.Kafka.TLS.CAFile,
		"tls-cert": &cfg.Kafka.TLS.CertFile, "tls-key": &cfg.Kafka.TLS.KeyFile, "tls-server-name": &cfg.Kafka.TLS.ServerName,
		"sasl-mechanism": &cfg.Kafka.SASL.Mechanism, "sasl-username": &cfg.Kafka.SASL.Username, "sasl-password": &cfg.Kafka.SASL.Password,
		"embedded-tls-cert": &cfg.Embedded.TLSCert, "embedded-tls-key": &cfg.Embedded.TLSKey,
		"embedded-sasl-password-file": &cfg.Embedded.SASLPasswordFile,
	}
	val := map[string]string{
		"embedded-listen": f.embeddedListen, "data-dir": f.dataDir, "group": f.group, "model": f.model, "key": f.key,
		"output-format": f.outputFormat, "label": f.label, "retrain-every": f.retrainEvery, "window-kind": f.windowKind,
		"forest": f.forest, "task": f.task, "max-features": f.maxFeatures, "http": f.httpAddr, "log-level": f.logLevel, "log-format": f.logFormat,
		"start-offset": f.startOffset, "client-id": f.clientID, "tls-ca": f.tlsCA, "tls-cert": f.tlsCert, "tls-key": f.tlsKey,
		"tls-server-name": f.tlsServerName, "sasl-mechanism": f.saslMechanism, "sasl-username": f.saslUsername, "sasl-password": f.saslPassword,
		"embedded-tls-cert": f.embeddedTLSCert, "embedded-tls-key": f.embeddedTLSKey, "embedded-sasl-password-file": f.embeddedPasswords,
	}
	for name, p := range str {
		if set[name] {
			*p = val[name]
		}
	}
	ints := map[string][2]*int{
		"window": {&cfg.Train.Window, &f.window}, "min-rows": {&cfg.Train.MinRows, &f.minRows}, "trees": {&cfg.Train.Trees, &f.trees},
		"train-threads": {&cfg.Train.Threads, &f.trainThreads}, "workers": {&cfg.Pipeline.Workers, &f.workers},
		"max-uncommitted": {&cfg.Pipeline.MaxUncommitted, &f.maxUncommitted}, "partitions": {&cfg.Topics.Partitions, &f.partitions},
		"max-message-bytes": {&cfg.Kafka.MaxMessageBytes, &f.maxMsgBytes},
	}
	for name, p := range ints {
		if set[name] {
			*p[0] = *p[1]
		}
	}
	durs := map[string][2]*time.Duration{
		"commit-interval": {&cfg.Pipeline.CommitInterval, &f.commitInterval}, "drain-timeout": {&cfg.Pipeline.DrainTimeout, &f.drainTimeout},
		"stall-timeout":   {&cfg.Pipeline.StallTimeout, &f.stallTimeout},
		"session-timeout": {&cfg.Kafka.SessionTimeout, &f.sessionTimeout},
	}
	for name, p := range durs {
		if set[name] {
			*p[0] = *p[1]
		}
	}
	if set["brokers"] {
		cfg.Brokers = splitList(f.brokers)
	}
	if set["stages"] {
		cfg.Stages = splitList(f.stages)
	}
	if set["embedded-sasl-user"] {
		cfg.Embedded.SASLUsers = f.embeddedUsers.vals
	}
	if set["features"] {
		cfg.Train.Features = splitList(f.features)
	}
	if set["exclude"] {
		cfg.Train.Exclude = splitList(f.exclude)
	}
	if set["seed"] {
		cfg.Train.Seed = f.seed
	}
	if set["max-inflight-bytes"] {
		cfg.Pipeline.MaxInFlightBytes = f.maxInFlightBytes
	}
	if set["memory-limit"] {
		cfg.Pipeline.MemoryLimit = f.memoryLimit
	}
	if set["tls"] {
		cfg.Kafka.TLS.Enabled = f.tls
	}
	if set["tls-insecure"] {
		cfg.Kafka.TLS.InsecureSkipVerify = f.tlsInsecure
	}
	for _, t := range f.topics.vals {
		role, name, ok := strings.Cut(t, "=")
		if !ok {
			return usagef("--topic %q: want ROLE=NAME", t)
		}
		p := map[string]*string{"features": &cfg.Topics.Features, "training": &cfg.Topics.Training, "predictions": &cfg.Topics.Predictions,
			"importances": &cfg.Topics.Importances, "reports": &cfg.Topics.Reports, "selected": &cfg.Topics.Selected,
			"models": &cfg.Topics.Models, "dlq": &cfg.Topics.DLQ}[role]
		if p == nil {
			return usagef("--topic %q: unknown role %q (features, training, predictions, importances, reports, selected, models, dlq)", t, role)
		}
		*p = name
	}
	return nil
}

func newLogger(c logConfig, w io.Writer) *slog.Logger {
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.Level]
	o := &slog.HandlerOptions{Level: lv}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// daemon is a running forestd serve.
type daemon struct {
	cfg     serveConfig
	log     *slog.Logger
	metrics *pipeline.Metrics
	broker  *broker.Broker
	co      kafka.ClientOptions
	cur     *operators.Current
	models  *pipeline.Models
	bus     *kafka.ModelBus
	sink    *kafka.Sink
	rt      *pipeline.Runtime
	src     *kafka.GroupSource
	ops     *pipeline.Ops
	loop    *pipeline.TrainLoop

	analyzer    *operators.Analyzer
	analyzeLoop *pipeline.AnalyzeLoop

	workCancel, bgCancel context.CancelFunc
	srcDone              chan error
	bg                   sync.WaitGroup
	seed                 *operators.Model
	seedOnTopic          atomic.Bool
}

// startDaemon builds and starts everything; ctx's end is the signal to
// shut down (see wait).
func startDaemon(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *daemon, err error) {
	// d is not the named result: every failure returns nil, and the
	// deferred cleanup must still see the daemon built so far
	d := &daemon{cfg: cfg, log: log, metrics: pipeline.NewMetrics(), cur: operators.NewCurrent(), srcDone: make(chan error, 1)}
	defer func() {
		if err != nil {
			d.closeAll()
		}
	}()
	if cfg.Pipeline.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.Pipeline.MemoryLimit)
	}
	d.models = &pipeline.Models{Current: d.cur, Metrics: d.metrics, Logger: log}
	if cfg.Model != "" {
		data, err := os.ReadFile(cfg.Model)
		if err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
		m, err := operators.DecodeModel(data)
		if err != nil {
			return nil, fmt.Errorf("--model %s: %w", cfg.Model, err)
		}
		d.seed = m
		d.models.Offer(m, "seed file "+cfg.Model)
	}
	var embeddedUsers []broker.User
	if len(cfg.Brokers) == 0 {
		tc, users, err := cfg.Embedded.resolve(os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("embedded broker: %w", err)
		}
		b, err := broker.Start(broker.Options{Listen: cfg.Embedded.Listen, DataDir: cfg.Embedded.DataDir,
			Partitions: cfg.Embedded.Partitions, AutoCreateTopics: true, Logger: log, TLS: tc, Users: users})
		if err != nil {
			return nil, fmt.Errorf("embedded broker: %w", err)
		}
		d.broker = b
		embeddedUsers = users
		cfg.Brokers = []string{b.Addr()}
		d.cfg.Brokers = cfg.Brokers
		log.Info("embedded broker listening", "addr", b.Addr(), "data_dir", cfg.Embedded.DataDir,
			"tls", tc != nil, "sasl_users", len(users))
	}
	d.co = cfg.clientOptions()
	if d.broker != nil { // reach the embedded broker with its own TLS and SASL settings
		if d.co.TLS, d.co.SASL, err = cfg.Embedded.clientFor(embeddedUsers, cfg.Kafka.TLS.CAFile, cfg.Kafka.TLS.ServerName); err != nil {
			return nil, fmt.Errorf("embedded broker: %w", err)
		}
	}
	if err := d.ensureTopics(ctx); err != nil {
		return nil, err
	}
	if d.bus, err = kafka.NewModelBus(kafka.ModelBusOptions{Client: d.co, Topic: cfg.Topics.Models, Logger: log}); err != nil {
		return nil, err
	}
	d.sink, err = kafka.NewSink(kafka.SinkOptions{Client: d.co, Format: cfg.OutputFormat, MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Logger: log,
		Metrics: d.metrics,
		Topics: map[string]string{
			pipeline.StreamPredictions: cfg.Topics.Predictions, pipeline.StreamImportances: cfg.Topics.Importances,
			pipeline.StreamReports: cfg.Topics.Reports, pipeline.StreamSelected: cfg.Topics.Selected,
			pipeline.DefaultDeadLetterStream: cfg.Topics.DLQ,
		}})
	if err != nil {
		return nil, err
	}
	routes, err := d.buildStages()
	if err != nil {
		return nil, err
	}
	d.rt, err = pipeline.New(pipeline.Options{Workers: cfg.Pipeline.Workers, MaxInFlightBytes: cfg.Pipeline.MaxInFlightBytes,
		Logger: log, Metrics: d.metrics}, kafka.NewDecoder(nil), routes, d.sink)
	if err != nil {
		return nil, err
	}
	d.src, err = kafka.NewGroupSource(kafka.SourceOptions{Client: d.co, Group: cfg.Group, Topics: d.rt.Topics(),
		StartOffset: cfg.Kafka.StartOffset, SessionTimeout: cfg.Kafka.SessionTimeout, CommitInterval: cfg.Pipeline.CommitInterval,
		DrainTimeout: cfg.Pipeline.DrainTimeout, MaxUncommitted: cfg.Pipeline.MaxUncommitted, StallTimeout: cfg.Pipeline.StallTimeout,
		MaxMessageBytes: max(8<<20, 2*cfg.Kafka.MaxMessageBytes), Logger: log, Metrics: d.metrics})
	if err != nil {
		return nil, err
	}
	if d.ops, err = pipeline.ServeOps(cfg.HTTP, d.metrics, d.ready, log); err != nil {
		return nil, err
	}
	log.Info("ops endpoint listening", "addr", d.ops.Addr(), "metrics", "http://"+d.ops.Addr()+"/metrics")

	workCtx, workCancel := context.WithCancel(context.Background())
	bgCtx, bgCancel := context.WithCancel(context.Background())
	d.workCancel, d.bgCancel = workCancel, bgCancel
	d.rt.Start(workCtx)
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.bus.Follow(bgCtx, func(ref kafka.ModelRef, data []byte) {
			if d.seed != nil && ref.ID == d.seed.Meta.ID {
				d.seedOnTopic.Store(true)
			}
			if _, err := d.models.Adopt(data, "model topic"); err != nil {
				log.Warn("ignoring an undecodable model from the model topic", "model_id", ref.ID, "model_version", ref.Version, "err", err)
			}
		})
	}()
	if d.seed != nil {
		d.bg.Add(1)
		go func() {
			defer d.bg.Done()
			d.publishSeed(bgCtx)
		}()
	}
	if d.loop != nil {
		d.bg.Add(1)
		go func() {
			defer d.bg.Done()
			d.loop.Run(bgCtx)
		}()
	}
	if d.analyzeLoop != nil {
		// not waited for at shutdown: a permutation search cannot be
		// interrupted, and its result would not be published anyway
		go d.analyzeLoop.Run(bgCtx)
	}
	go func() { d.srcDone <- d.src.Run(ctx, d.rt.Submit) }()
	log.Info("forestd serve started", "brokers", strings.Join(cfg.Brokers, ","), "group", cfg.Group,
		"stages", strings.Join(cfg.Stages, ","), "composed", cfg.composed(), "topics", strings.Join(d.rt.Topics(), ","),
		"output_format", cfg.OutputFormat)
	return d, nil
}

// ensureTopics creates the daemon's topics, retrying while the brokers are
// unreachable.
func (d *daemon) ensureTopics(ctx context.Context) error {
	c := d.cfg
	specs := []kafka.TopicSpec{
		{Name: c.Topics.Features, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Training, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Predictions, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Importances, Partitions: 1},
		{Name: c.Topics.Models, Partitions: 1, Compact: true},
		{Name: c.Topics.DLQ, Partitions: c.Topics.Partitions},
	}
	if c.has(stageAnalyze) || c.has(stageSelect) { // select runs the analysis too, and publishes its reports
		specs = append(specs, kafka.TopicSpec{Name: c.Topics.Reports, Partitions: 1})
	}
	if c.has(stageSelect) {
		specs = append(specs, kafka.TopicSpec{Name: c.Topics.Selected, Partitions: c.Topics.Partitions})
	}
	// A refused password or certificate (kafka.ErrAuth) is not retried for
	// ever: after authFailures refusals in a row the daemon stops with that
	// error, so a misconfigured daemon fails with one clear line.
	const authFailures = 3
	refused := 0
	return pipeline.DefaultBackoff().Do(ctx, func() error {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := kafka.CheckAuth(tctx, d.co); err != nil {
			return err
		}
		return kafka.EnsureTopics(tctx, d.co, specs)
	}, func(err error) bool {
		if !errors.Is(err, kafka.ErrAuth) {
			refused = 0
			return true
		}
		refused++
		return refused < authFailures
	}, func(attempt int, err error) {
		if refused == 0 {
			d.log.Warn("creating topics failed; retrying", "attempt", attempt+1, "err", err)
		}
	})
}

func (d *daemon) buildStages() ([]pipeline.Route, error) {
	c := d.cfg
	var routes []pipeline.Route
	if c.has(stageScore) {
		sc, err := operators.NewScorer(d.cur, operators.ScoreOptions{Key: c.Key})
		if err != nil {
			return nil, err
		}
		ss := &pipeline.ScoreStage{Scorer: sc, Current: d.cur, Metrics: d.metrics}
		routes = append(routes, pipeline.Route{Topic: c.Topics.Features, Stages: []pipeline.Stage{ss}, Pin: ss.Pin})
	}
	if c.has(stageSelect) {
		// the features route forwards its batches reduced to the selected
		// columns too (before scoring, which reads the unchanged batch)
		if _, err := d.analysisStages(); err != nil {
			return nil, err
		}
		sel := &pipeline.SelectStage{Analyzer: d.analyzer, Passthrough: d.passthrough(), Metrics: d.metrics}
		if len(routes) > 0 && routes[0].Topic == c.Topics.Features {
			routes[0].Stages = append([]pipeline.Stage{sel}, routes[0].Stages...)
		} else {
			routes = append(routes, pipeline.Route{Topic: c.Topics.Features, Stages: []pipeline.Stage{sel}})
		}
	}
	if c.has(stageTrain) || c.has(stageAnalyze) || c.has(stageSelect) {
		var st []pipeline.Stage
		if c.has(stageSelect) || c.has(stageAnalyze) {
			extra, err := d.analysisStages()
			if err != nil {
				return nil, err
			}
			st = append(st, extra...)
		}
		if c.has(stageTrain) {
			tr, err := d.newTrainer()
			if err != nil {
				return nil, err
			}
			d.loop = &pipeline.TrainLoop{Trainer: tr, Models: d.models, Threads: c.Train.Threads, CreatedBy: "forestd serve",
				Publish: d.publishModel, Logger: d.log}
			if c.composed() { // select → train: train behind the select stage's mapping
				d.loop.Compose = d.analyzer
			}
			if err := d.loop.Init(); err != nil {
				return nil, err
			}
			st = append(st, &pipeline.TrainStage{Trainer: tr, Loop: d.loop, Metrics: d.metrics})
		}
		routes = append(routes, pipeline.Route{Topic: c.Topics.Training, Stages: st})
	}
	if len(routes) == 0 {
		return nil, errors.New("no stage consumes a topic")
	}
	return routes, nil
}

func (d *daemon) newTrainer() (*operators.Trainer, error) {
	c := d.cfg.Train
	rows, every, err := retrainSchedule(c.RetrainEvery)
	if err != nil {
		return nil, usageError{err}
	}
	p := forest.DefaultParams(frame.TaskAuto)
	p.Forest, p.Trees, p.Seed, p.MaxFeatures = forest.Kind(c.Forest), c.Trees, c.Seed, c.MaxFeatures
	p.Criterion = ""                     // the label's task picks it (gini or mse), see operators.Trainer.Train
	task, err := frame.ParseTask(c.Task) // checked by serveConfig.validate
	if err != nil {
		return nil, usageError{fmt.Errorf("train.task: %w", err)}
	}
	if d.cfg.composed() {
		// the analysis behind select treats the label as classes (FDM picks
		// mappings by their Gini correlation with it, dissertation §6.3), so
		// the model trained behind it classifies too, even when the label
		// arrives as JSON numbers
		task = frame.TaskClassification
	}
	o := operators.TrainOptions{Label: c.Label, Task: task, Features: c.Features, Exclude: c.Exclude,
		Window: c.Window, Kind: c.WindowKind, RetrainRows: rows, RetrainEvery: every, MinRows: c.MinRows,
		Params: p, Seed: c.Seed}
	if labels := c.labels(); len(labels) > 1 { // one multi-output regression forest
		o.Label, o.Labels = "", labels
	}
	return operators.NewTrainer(o)
}

// publishModel sends a trained model to the model topic and its
// importances to the importance topic.
func (d *daemon) publishModel(ctx context.Context, m *operators.Model) error {
	if err := d.bus.Publish(ctx, kafka.ModelRef{ID: m.Meta.ID, Version: m.Meta.Version}, m.Bytes); err != nil {
		return err
	}
	d.metrics.ModelsPublished.Inc()
	rec, err := operators.ImportancesRecord(nil, m)
	if err != nil {
		return err
	}
	defer rec.Release()
	return d.sink.Write(ctx, []pipeline.Output{{Stream: pipeline.StreamImportances, Key: []byte(m.Meta.ID), Record: rec,
		Headers: []pipeline.Header{{Key: pipeline.HeaderModelID, Value: []byte(m.Meta.ID)},
			{Key: pipeline.HeaderModelVersion, Value: []byte(fmt.Sprint(m.Meta.Version))}}}})
}

// publishSeed publishes the --model seed on the model topic once the topic
// has been read, unless it is there already or a newer model took over, so
// that every replica scores with it.
func (d *daemon) publishSeed(ctx context.Context) {
	for !d.bus.CaughtUp() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	if d.seedOnTopic.Load() || d.cur.Load() != d.seed {
		return
	}
	err := pipeline.DefaultBackoff().Do(ctx, func() error { return d.publishModel(ctx, d.seed) }, nil, nil)
	if err == nil {
		d.log.Info("published the seed model", "model_id", d.seed.Meta.ID, "model_version", d.seed.Meta.Version)
	}
}

// ready is /readyz: the daemon has a model (when it scores), can write dead
// letters, holds a consumer-group generation in which the group makes
// progress (kafka.GroupSource.Ready) and has read the model topic.
func (d *daemon) ready() error {
	if d.cfg.has(stageScore) && d.cur.Load() == nil {
		if d.cfg.composed() {
			return errors.New("no model yet (give --model, or wait for the first analysis that selects features and the training behind it)")
		}
		return errors.New("no model yet (give --model, or wait for the first training)")
	}
	if err := d.rt.Ready(); err != nil { // a dead letter cannot be written
		return err
	}
	if err := d.src.Ready(); err != nil { // in a generation, and the group makes progress
		return err
	}
	if !d.bus.CaughtUp() {
		return errors.New("model topic not read to its end yet")
	}
	return nil
}

// wait blocks until ctx ends, then shuts down gracefully: the source stops
// fetching, drains the messages in flight, commits and leaves the group;
// the workers finish; everything closes. Exit status 0 unless the source
// failed.
func (d *daemon) wait(ctx context.Context) error {
	var srcErr error
	select {
	case <-ctx.Done():
	case srcErr = <-d.srcDone:
		d.srcDone <- srcErr
	}
	d.log.Info("shutting down: draining messages in flight")
	select {
	case srcErr = <-d.srcDone:
	case <-time.After(d.cfg.Pipeline.DrainTimeout + 10*time.Second):
		d.log.Warn("drain timed out; stopping the workers")
		d.workCancel()
		srcErr = <-d.srcDone
	}
	// The source has drained (or given up after the drain timeout): whatever
	// is still in a worker is uncommitted and will be read again, so the
	// workers are stopped rather than waited for.
	d.workCancel()
	d.rt.Close()
	d.closeAll()
	d.log.Info("forestd serve stopped", "rows_in", sumCounter(d.metrics, "forestd_rows_in_total"),
		"rows_out", sumCounter(d.metrics, "forestd_rows_out_total"))
	return srcErr
}

func (d *daemon) closeAll() {
	if d.bgCancel != nil {
		d.bgCancel()
	}
	d.bg.Wait()
	if d.workCancel != nil {
		d.workCancel()
	}
	if d.sink != nil {
		d.sink.Close()
	}
	if d.bus != nil {
		d.bus.Close()
	}
	if d.ops != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d.ops.Close(sctx)
		cancel()
	}
	if d.broker != nil {
		d.broker.Close()
	}
}

// sumCounter adds up every series of a counter family.
func sumCounter(m *pipeline.Metrics, name string) float64 {
	fams, err := m.Registry.Gather()
	if err != nil {
		return 0
	}
	var s float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			if c := mt.GetCounter(); c != nil {
				s += c.GetValue()
			}
		}
	}
	return s
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/internal/metricsum"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// Logger returns a structured logger with the configured level and format
// writing to w.
func (c LogConfig) Logger(w io.Writer) *slog.Logger {
	lv := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[c.Level]
	o := &slog.HandlerOptions{Level: lv}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// Options are what Start needs besides the configuration.
type Options struct {
	// Logger receives the daemon's structured log (nil: Config.Log's level
	// and format, on standard error).
	Logger *slog.Logger
}

// Daemon is a running forestd daemon: the Kafka consumer that scores,
// trains, analyses and selects as its configuration says (see the package
// documentation). Its methods are safe for concurrent use.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	metrics *pipeline.Metrics
	dm      *metrics
	broker  *broker.Broker
	co      kafka.ClientOptions
	cur     *operators.Current
	models  *models
	bus     *kafka.ModelBus
	sink    *kafka.Sink
	rt      *pipeline.Runtime
	src     *kafka.GroupSource
	ops     *pipeline.Ops
	loop    *trainLoop
	status  *status.Recorder

	analyzer    *operators.Analyzer
	analyzeLoop *analyzeLoop
	driftLoop   *driftLoop // stage drift (drift.go)

	workCancel, bgCancel context.CancelFunc
	srcDone              chan error
	bg                   sync.WaitGroup
	seed                 *scoring.Model
	seedOnTopic          atomic.Bool

	stop context.CancelFunc // ends the run: the graceful shutdown begins
	done chan struct{}      // closed when the shutdown is complete
	err  error              // the run's result, set before done closes

	// starting is Ready's answer while Start builds the daemon — what it
	// waits for — and nil once everything runs. The ops endpoint serves
	// from early in Start on; setting starting to nil under startMu after
	// the last field is built is what lets Ready read those fields.
	startMu  sync.Mutex
	starting error
}

// Start validates cfg, builds and starts the daemon: first the ops
// endpoint (/metrics, /healthz, /readyz, and the status page at / and
// /api/status), then the embedded broker when cfg.Brokers is empty, the
// topics, the model topic's follower, the stages and the consumer group.
// Creating the topics waits, retrying, while the brokers are unreachable;
// meanwhile /healthz answers 200 and /readyz 503 "waiting for brokers …"
// with the last error (Ready). It returns once everything runs, or with
// ctx's error when ctx ends first. The daemon runs until ctx is done or
// Stop is called; then it drains the messages in flight, commits and
// closes everything (Wait). A failed start leaves nothing running.
func Start(ctx context.Context, cfg Config, opts Options) (_ *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = cfg.Log.Logger(os.Stderr)
	}
	runCtx, stop := context.WithCancel(ctx)
	cur := operators.NewCurrent()
	// a model for other columns replaces the live one only when allowed, or
	// behind the select stage, whose analyses choose the columns
	cur.AllowColumnChange = cfg.AllowFeatureChange || cfg.Composed()
	// d is not the named result: every failure returns nil, and the
	// deferred cleanup must still see the daemon built so far
	d := &Daemon{cfg: cfg, log: log, metrics: pipeline.NewMetrics(), cur: cur, srcDone: make(chan error, 1),
		stop: stop, done: make(chan struct{}), starting: errors.New("starting")}
	d.dm = newMetrics(d.metrics.Registry, d.metrics.Retries)
	defer func() {
		if err != nil {
			stop()
			d.closeAll()
		}
	}()
	bgCtx, bgCancel := context.WithCancel(context.Background())
	d.bgCancel = bgCancel
	// the steps, in order; each leaves what it built in d for closeAll
	if err := d.serveOps(bgCtx); err != nil {
		return nil, err
	}
	if err := d.loadSeed(); err != nil {
		return nil, err
	}
	if err := d.connect(ctx); err != nil {
		return nil, err
	}
	if err := d.buildPipeline(); err != nil {
		return nil, err
	}
	d.startLoops(bgCtx)
	d.setStarting(nil) // every field Ready reads is set: it asks them from here on
	d.consume(runCtx)
	go d.runAndClose(runCtx)
	log.Info("forestd serve started", "brokers", strings.Join(d.cfg.Brokers, ","), "group", cfg.Group,
		"stages", strings.Join(cfg.Stages, ","), "composed", cfg.Composed(), "topics", strings.Join(d.rt.Topics(), ","),
		"output_format", cfg.OutputFormat, "score.probs", cfg.Score.Probs)
	for _, n := range startNotes(&d.cfg) {
		log.Info(n)
	}
	return d, nil
}

// serveOps is Start's first step: the status page's recorder (sampling
// until bgCtx ends) and the ops endpoint. It comes first: the daemon is
// live (/healthz) while it waits for the brokers, and /readyz, /metrics
// and the status page say why it is not ready yet.
func (d *Daemon) serveOps(bgCtx context.Context) (err error) {
	// the status page (/ on the ops address) records from here on
	if d.status, err = status.New(status.Options{Gatherer: d.metrics.Registry, Ready: d.Ready}); err != nil {
		return err
	}
	var page []pipeline.OpsHandler
	for _, p := range status.Patterns() {
		page = append(page, pipeline.OpsHandler{Pattern: p, Handler: d.status.Handler()})
	}
	if d.ops, err = pipeline.ServeOps(d.cfg.HTTP, d.metrics, d.Ready, d.log, page...); err != nil {
		return err
	}
	d.log.Info("ops endpoint listening", "addr", d.ops.Addr(), "metrics", "http://"+d.ops.Addr()+"/metrics",
		"status", "http://"+d.ops.Addr()+"/")
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.status.Run(bgCtx)
	}()
	d.models = &models{Current: d.cur, Metrics: d.dm, Logger: d.log, Status: d.status}
	if d.cfg.Has(stageScore) {
		probs := scoring.Probs(d.cfg.Score.Probs)
		d.models.Probs = &probs
	}
	return nil
}

// loadSeed loads the model file of cfg.Model, if any, and makes it live.
func (d *Daemon) loadSeed() error {
	if d.cfg.Model == "" {
		return nil
	}
	m, err := scoring.Load(d.cfg.Model)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if err := m.Prepare(0); err != nil {
		return fmt.Errorf("model %s: %w", d.cfg.Model, err)
	}
	d.seed = m
	d.models.Offer(m, "seed file "+d.cfg.Model)
	return nil
}

// connect starts the embedded broker when no brokers are configured,
// creates the topics (waiting while the brokers are unreachable) and
// opens the model topic's bus and the sink.
func (d *Daemon) connect(ctx context.Context) (err error) {
	cfg := d.cfg
	var embeddedUsers []broker.User
	if len(cfg.Brokers) == 0 {
		tc, users, err := cfg.Embedded.Resolve(os.Getenv)
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		b, err := broker.Start(broker.Options{Listen: cfg.Embedded.Listen, DataDir: cfg.Embedded.DataDir,
			Partitions: cfg.Embedded.Partitions, AutoCreateTopics: true, Logger: d.log, TLS: tc, Users: users,
			MaxRequestBytes: cfg.Embedded.MaxRequestBytes, MaxConnections: cfg.Embedded.MaxConnections,
			HandshakeTimeout: cfg.Embedded.HandshakeTimeout, IdleTimeout: cfg.Embedded.IdleTimeout})
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		d.broker = b
		newBrokerMetrics(d.metrics.Registry, b.LimitStats)
		embeddedUsers = users
		d.cfg.Brokers = []string{b.Addr()}
		d.log.Info("embedded broker listening", "addr", b.Addr(), "data_dir", cfg.Embedded.DataDir,
			"tls", tc != nil, "sasl_users", len(users))
	}
	d.co = d.cfg.ClientOptions()
	if d.broker != nil { // reach the embedded broker with its own TLS and SASL settings
		if d.co.TLS, d.co.SASL, err = embeddedClient(cfg.Embedded.Auth, embeddedUsers, cfg.Kafka.TLS.CAFile, cfg.Kafka.TLS.ServerName); err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
	}
	if err := d.ensureTopics(ctx); err != nil {
		return fmt.Errorf("creating topics on brokers %s: %w", strings.Join(d.cfg.Brokers, ","), err)
	}
	d.setStarting(errors.New("starting: topics created"))
	if d.bus, err = kafka.NewModelBus(kafka.ModelBusOptions{Client: d.co, Topic: cfg.Topics.Models, Logger: d.log}); err != nil {
		return err
	}
	d.sink, err = kafka.NewSink(kafka.SinkOptions{Client: d.co, Format: cfg.OutputFormat, MaxMessageBytes: cfg.Kafka.MaxMessageBytes, Logger: d.log,
		Metrics: d.metrics, DeadLetterStream: pipeline.DefaultDeadLetterStream, // the runtime's, below
		Topics: map[string]string{
			streamPredictions: cfg.Topics.Predictions, streamImportances: cfg.Topics.Importances,
			streamReports: cfg.Topics.Reports, streamSelected: cfg.Topics.Selected, streamDrift: cfg.Topics.Drift,
			pipeline.DefaultDeadLetterStream: cfg.Topics.DLQ,
		}})
	return err
}

// buildPipeline builds the stages, the runtime and the consumer group's
// source, and starts the runtime's workers.
func (d *Daemon) buildPipeline() (err error) {
	cfg := d.cfg
	routes, err := d.buildStages()
	if err != nil {
		return err
	}
	d.rt, err = pipeline.New(pipeline.Options{Workers: cfg.Pipeline.Workers, MaxInFlightBytes: cfg.Pipeline.MaxInFlightBytes,
		Logger: d.log, Metrics: d.metrics, OnDeadLetter: d.deadLetter, DeadLetterStream: pipeline.DefaultDeadLetterStream},
		d.decoder(routes), routes, d.sink)
	if err != nil {
		return err
	}
	d.src, err = kafka.NewGroupSource(kafka.SourceOptions{Client: d.co, Group: cfg.Group, Topics: d.rt.Topics(),
		StartOffset: cfg.Kafka.StartOffset, SessionTimeout: cfg.Kafka.SessionTimeout, CommitInterval: cfg.Pipeline.CommitInterval,
		DrainTimeout: cfg.Pipeline.DrainTimeout, MaxUncommitted: cfg.Pipeline.MaxUncommitted, StallTimeout: cfg.Pipeline.StallTimeout,
		MaxMessageBytes: max(8<<20, 2*cfg.Kafka.MaxMessageBytes), Logger: d.log, Metrics: d.metrics})
	if err != nil {
		return err
	}
	workCtx, workCancel := context.WithCancel(context.Background())
	d.workCancel = workCancel
	d.rt.Start(workCtx)
	return nil
}

// startLoops starts the goroutines that run beside the pipeline until
// bgCtx ends, each joined by closeAll (d.bg): the model topic's follower,
// the seed's publication and the train, analysis and drift loops.
func (d *Daemon) startLoops(bgCtx context.Context) {
	goBg := func(run func(context.Context)) {
		d.bg.Add(1)
		go func() {
			defer d.bg.Done()
			run(bgCtx)
		}()
	}
	goBg(func(ctx context.Context) {
		d.bus.Follow(ctx, func(ref kafka.ModelRef, data []byte) bool {
			if d.seed != nil && ref.ID == d.seed.ID() {
				d.seedOnTopic.Store(true)
				return true // the seed is live or superseded already
			}
			return d.models.Adopt(ref, data, "model topic")
		})
	})
	if d.seed != nil {
		goBg(d.publishSeed)
	}
	if d.loop != nil {
		goBg(func(ctx context.Context) { d.loop.Run(ctx) })
	}
	if d.analyzeLoop != nil {
		// bgCtx's end stops a search under way (SearchOptions.Context), so
		// closeAll never closes the sink under a report being published
		goBg(func(ctx context.Context) { d.analyzeLoop.Run(ctx) })
	}
	if d.driftLoop != nil {
		goBg(func(ctx context.Context) { d.driftLoop.Run(ctx) })
	}
}

// consume joins the consumer group and feeds the runtime until runCtx
// ends (d.srcDone gets the source's result).
func (d *Daemon) consume(runCtx context.Context) {
	go func() {
		// A daemon that scores or trains consumes only once the model topic
		// has been read to its end and its newest models offered: started
		// earlier, it scored a backlog with a stale seed --model (or trained
		// on top of it) until the follower caught up with the newer model.
		if d.cfg.Has(stageScore) || d.cfg.Has(stageTrain) {
			if err := d.bus.WaitCaughtUp(runCtx); err != nil {
				d.srcDone <- nil // stopped before consuming anything
				return
			}
		}
		d.srcDone <- d.src.Run(runCtx, d.rt.Submit)
	}()
}

// startNotes are the lines the daemon logs once at start about what its
// stages will do with what they were given, so that a default nobody chose
// (no row key, a label "y" never named, no model to score with) is said
// rather than discovered.
func startNotes(c *Config) []string {
	var notes []string
	if c.Has(stageScore) {
		if c.Key == "" {
			notes = append(notes, "score: predictions carry no row key, only the source topic/partition/offset and row; set key (--key COLUMN) to copy an input column into each")
		}
		if c.Model == "" {
			from := "until one arrives on topic " + c.Topics.Models
			if c.Has(stageTrain) {
				from += fmt.Sprintf(" or the train stage learns one from %d labelled rows on topic %s", c.Train.MinRows, c.Topics.Training)
			}
			notes = append(notes, "score: no model file (--model): messages on topic "+c.Topics.Features+" wait "+from)
		}
	}
	if c.Has(stageTrain) {
		notes = append(notes, fmt.Sprintf("train: learns label column %q from topic %s (train.label, --label); a batch without it is a dead letter", c.Train.Label, c.Topics.Training))
	}
	return notes
}

// Stop begins the graceful shutdown (as the end of Start's context does)
// and waits for it: see Wait.
func (d *Daemon) Stop() error {
	d.stop()
	return d.Wait()
}

// Wait blocks until the daemon has shut down: the source stopped fetching,
// drained the messages in flight, committed and left the group; the workers
// finished; everything closed. It returns nil unless the consumer failed.
func (d *Daemon) Wait() error {
	<-d.done
	return d.err
}

// Done is closed when the daemon has shut down.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Config returns the daemon's configuration, with Brokers set to the
// embedded broker's address when it started one.
func (d *Daemon) Config() Config { return d.cfg }

// ClientOptions are the Kafka client settings that reach the daemon's
// brokers (the embedded broker's TLS and SASL included).
func (d *Daemon) ClientOptions() kafka.ClientOptions { return d.co }

// OpsAddr is the address of the ops endpoint (/metrics, /healthz, /readyz,
// the status page).
func (d *Daemon) OpsAddr() string { return d.ops.Addr() }

// Registry holds the daemon's Prometheus metrics (those /metrics serves).
func (d *Daemon) Registry() *prometheus.Registry { return d.metrics.Registry }

// deadLetter is the runtime's OnDeadLetter: the status page lists it and
// counts it by the kind of its reason.
func (d *Daemon) deadLetter(env *pipeline.Envelope, stage string, reason error) {
	d.status.DeadLetter(env.Topic, env.Partition, env.Offset, stage, reasonKind(stage, reason), reason.Error())
}

// reasonKind is the bounded label the status page counts dead letters by.
func reasonKind(stage string, err error) string {
	switch {
	case errors.Is(err, pipeline.ErrInternal):
		return "internal error"
	case errors.Is(err, pipeline.ErrPermanent):
		return "undeliverable"
	case stage == "decode":
		return "undecodable"
	case errors.Is(err, frame.ErrMissingColumn):
		return "missing column"
	case errors.Is(err, frame.ErrColumnType):
		return "wrong column type"
	}
	return "other input error"
}

// Model returns the model scoring now (nil before the first).
func (d *Daemon) Model() *scoring.Model { return d.cur.Load() }

// ensureTopics creates the daemon's topics, retrying while the brokers are
// unreachable.
func (d *Daemon) ensureTopics(ctx context.Context) error {
	c := d.cfg
	specs := []kafka.TopicSpec{
		{Name: c.Topics.Features, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Training, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Predictions, Partitions: c.Topics.Partitions},
		{Name: c.Topics.Importances, Partitions: 1},
		{Name: c.Topics.Models, Partitions: 1, Compact: true},
		{Name: c.Topics.DLQ, Partitions: c.Topics.Partitions},
	}
	if c.Has(stageAnalyze) || c.Has(stageSelect) { // select runs the analysis too, and publishes its reports
		specs = append(specs, kafka.TopicSpec{Name: c.Topics.Reports, Partitions: 1})
	}
	if c.Has(stageSelect) {
		specs = append(specs, kafka.TopicSpec{Name: c.Topics.Selected, Partitions: c.Topics.Partitions})
	}
	if c.Has(stageDrift) { // one partition: the reports in the order of the tests
		specs = append(specs, kafka.TopicSpec{Name: c.Topics.Drift, Partitions: 1})
	}
	// A refused password or certificate (kafka.ErrAuth) is not retried for
	// ever: after authFailures refusals in a row the daemon stops with that
	// error, so a misconfigured daemon fails with one clear line.
	const authFailures = 3
	refused := 0
	brokers := strings.Join(c.Brokers, ",")
	d.setStarting(fmt.Errorf("waiting for brokers %s", brokers))
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
		d.setStarting(fmt.Errorf("waiting for brokers %s: %w", brokers, err))
		if refused == 0 {
			d.log.Warn("creating topics failed; retrying", "attempt", attempt+1, "err", err)
		}
	})
}

func (d *Daemon) buildStages() ([]pipeline.Route, error) {
	c := d.cfg
	var routes []pipeline.Route
	var ss *scoreStage
	if c.Has(stageScore) {
		ss = &scoreStage{Current: d.cur, Key: c.Key, Probs: scoring.Probs(c.Score.Probs), Metrics: d.dm}
		routes = append(routes, pipeline.Route{Topic: c.Topics.Features, Stages: []pipeline.Stage{ss}, Pin: ss.Pin})
	}
	if c.Has(stageSelect) {
		// the features route forwards its batches reduced to the selected
		// columns too (before scoring, which reads the unchanged batch)
		if _, err := d.analysisStages(); err != nil {
			return nil, err
		}
		sel := &selectStage{Analyzer: d.analyzer, Passthrough: d.passthrough(), Metrics: d.dm}
		if len(routes) > 0 && routes[0].Topic == c.Topics.Features {
			routes[0].Stages = append([]pipeline.Stage{sel}, routes[0].Stages...)
		} else {
			routes = append(routes, pipeline.Route{Topic: c.Topics.Features, Stages: []pipeline.Stage{sel}})
		}
	}
	if c.Has(stageTrain) || c.Has(stageAnalyze) || c.Has(stageSelect) {
		var st []pipeline.Stage
		if c.Has(stageSelect) || c.Has(stageAnalyze) {
			extra, err := d.analysisStages()
			if err != nil {
				return nil, err
			}
			st = append(st, extra...)
		}
		if c.Has(stageTrain) {
			tr, err := d.newTrainer()
			if err != nil {
				return nil, err
			}
			d.loop = &trainLoop{Trainer: tr, Models: d.models, Threads: c.Train.Threads, CreatedBy: "forestd serve",
				Publish: d.publishModel, Logger: d.log}
			if c.Composed() { // select → train: train behind the select stage's mapping
				d.loop.Compose = d.analyzer
			}
			if err := d.loop.Init(); err != nil {
				return nil, err
			}
			st = append(st, &trainStage{Trainer: tr, Loop: d.loop, Metrics: d.dm})
		}
		routes = append(routes, pipeline.Route{Topic: c.Topics.Training, Stages: st})
	}
	if len(routes) == 0 {
		return nil, errors.New("no stage consumes a topic")
	}
	if c.Has(stageDrift) && ss != nil { // after train: drift may retrain (train.retrain_on)
		w, err := d.driftStage()
		if err != nil {
			return nil, err
		}
		ss.Drift = w
	}
	return routes, nil
}

// trainTask is the label's task for the train stage and the analysis:
// train.task, except that behind select (Composed) auto means classes —
// the analysis and the model must read the label alike, and FDM ranks
// mappings by their Gini correlation with the classes (dissertation
// §6.3), even when the label arrives as JSON numbers; train.task
// regression makes both numeric (dCor_n with |y − y'|).
func (c Config) trainTask() (frame.Task, error) {
	task, err := frame.ParseTask(c.Train.Task) // checked by Config.Validate
	if err != nil {
		return 0, fmt.Errorf("train.task: %w", err)
	}
	if c.Composed() && task == frame.TaskAuto {
		task = frame.TaskClassification
	}
	return task, nil
}

func (d *Daemon) newTrainer() (*operators.Trainer, error) {
	c := d.cfg.Train
	rows, every, err := parseSchedule("train.retrain_every", c.RetrainEvery)
	if err != nil {
		return nil, err
	}
	p, err := c.forestParams()
	if err != nil {
		return nil, err
	}
	task, err := d.cfg.trainTask()
	if err != nil {
		return nil, err
	}
	o := operators.TrainOptions{Label: c.Label, Task: task, Features: c.Features, Exclude: c.Exclude,
		Window: c.Window, Kind: c.WindowKind, RetrainRows: rows, RetrainEvery: every, MinRows: c.MinRows,
		Params: p, Seed: c.Seed, ReferenceRows: c.ReferenceRows}
	if c.ReferenceRows == 0 {
		o.ReferenceRows = -1 // none
	}
	if labels := c.Labels(); len(labels) > 1 { // one multi-output regression forest
		o.Label, o.Labels = "", labels
	}
	return operators.NewTrainer(o)
}

// forestParams is the forest parameters of the trainer, checked as the
// trainer checks them before any row arrives (operators.TrainOptions.
// CheckParams), an error naming the config key: Config.Validate calls it,
// so that a bad parameter (train.max_features: bogus) is a config error at
// start like every other.
func (c TrainConfig) forestParams() (forest.Params, error) {
	p := forest.DefaultParams(frame.TaskAuto)
	p.Forest, p.Trees, p.Seed, p.MaxFeatures, p.Tune = forest.Kind(c.Forest), c.Trees, c.Seed, c.MaxFeatures, c.Tune
	p.Criterion = "" // the label's task picks it (gini or mse), see operators.Trainer.Train
	if err := p.SetLayout(c.Layout); err != nil {
		return p, fmt.Errorf("train.layout: %w", err)
	}
	var pe *forest.ParamError
	if err := (operators.TrainOptions{Params: p}).CheckParams(); errors.As(err, &pe) { // name the config key
		return p, fmt.Errorf("train.%s: %w", pe.Param, pe) // pe: the key stays findable (Validate)
	} else if err != nil {
		return p, fmt.Errorf("train: %w", err)
	}
	return p, nil
}

// publishModel sends a trained model to the model topic and its
// importances to the importance topic.
func (d *Daemon) publishModel(ctx context.Context, m *scoring.Model) error {
	if err := d.bus.Publish(ctx, kafka.ModelRef{ID: m.ID(), Version: m.Version()}, m.Bytes()); err != nil {
		return err
	}
	d.dm.ModelsPublished.Inc()
	rec, err := m.Importances(nil)
	if err != nil {
		return err
	}
	defer rec.Release()
	return d.sink.Write(ctx, []pipeline.Output{{Stream: streamImportances, Key: []byte(m.ID()), Record: rec,
		Headers: []pipeline.Header{{Key: HeaderModelID, Value: []byte(m.ID())},
			{Key: HeaderModelVersion, Value: []byte(fmt.Sprint(m.Version()))}}}})
}

// publishSeed publishes the seed model on the model topic once the topic
// has been read, unless it is there already or a newer model took over, so
// that every replica scores with it.
func (d *Daemon) publishSeed(ctx context.Context) {
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
		d.log.Info("published the seed model", "model_id", d.seed.ID(), "model_version", d.seed.Version())
	}
}

// Ready is /readyz: nil when the daemon has started (Start has returned:
// while it waits for the brokers, "waiting for brokers …" and the last
// error), has a model (when it scores), can write dead letters, holds a
// consumer-group generation in which the group makes progress
// (kafka.GroupSource.Ready), has read the model topic and has a live heap
// below 90% of the runtime's memory limit (memory.go); else what it waits
// for.
func (d *Daemon) Ready() error {
	d.startMu.Lock()
	starting := d.starting
	d.startMu.Unlock()
	if starting != nil { // the runtime, the source and the model bus may not exist yet
		return starting
	}
	if err := memoryPressure(); err != nil { // memory.go
		return err
	}
	if d.cfg.Has(stageScore) && d.cur.Load() == nil {
		if d.cfg.Composed() {
			return errors.New("no model yet (set Config.Model, --model, or wait for the first analysis that selects features and the training behind it)")
		}
		return errors.New("no model yet (set Config.Model, --model, or wait for the first training)")
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

// setStarting sets what Ready reports while Start runs (nil: started).
func (d *Daemon) setStarting(reason error) {
	d.startMu.Lock()
	d.starting = reason
	d.startMu.Unlock()
}

// runAndClose runs the daemon until ctx ends and then closes done: the
// last goroutine of the daemon, which Wait cannot join but which does
// nothing after it closes done.
func (d *Daemon) runAndClose(ctx context.Context) {
	d.err = d.run(ctx)
	close(d.done)
}

// run waits until ctx ends (or the source fails), then shuts down
// gracefully and returns the source's error.
func (d *Daemon) run(ctx context.Context) error {
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
	d.log.Info("forestd serve stopped", "rows_in", metricsum.Counter(d.metrics.Registry, "forestd_rows_in_total"),
		"rows_out", metricsum.Counter(d.metrics.Registry, "forestd_rows_out_total"))
	return srcErr
}

func (d *Daemon) closeAll() {
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

// embeddedClient returns the client settings that reach the embedded broker
// set up with a: TLS trusting the broker's own certificate (unless ca names
// another CA file) and SASL as its first user.
func embeddedClient(a broker.Auth, users []broker.User, ca, serverName string) (kafka.TLSOptions, kafka.SASLOptions, error) {
	var t kafka.TLSOptions
	if a.TLS() {
		if ca == "" {
			ca = a.TLSCert
		}
		t = kafka.TLSOptions{Enabled: true, CAFile: ca, ServerName: serverName}
	}
	var s kafka.SASLOptions
	if a.SASL() {
		if len(users) == 0 {
			return t, s, errors.New("SASL without users")
		}
		s = kafka.SASLOptions{Mechanism: users[0].Mechanism, Username: users[0].Name, Password: users[0].Password}
	}
	return t, s, nil
}

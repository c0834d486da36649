package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/internal/servedemo"
)

const serveUsage = `[--config FILE] [--brokers HOST:PORT,...] [flags]

The Kafka daemon: scores feature batches from the features topic with the
current model, retrains on labelled batches from the training topic, hot-swaps
models, and publishes predictions, importances, models and dead letters.
With --model and no --label (nor --stages) it only scores. Predictions are
written in each message's own format (JSON lines for JSON, Arrow IPC for
Arrow) unless --output-format says otherwise, and carry a row key only with
--key COLUMN.
With no --brokers it starts an embedded broker on --embedded-listen (with TLS
and SASL when --embedded-tls-cert/--embedded-sasl-user are given; the daemon
connects with the matching settings).

--stages lists the stages in order: score, train, analyze, select, drift. Listing
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
	config, brokers, embeddedListen, dataDir, group, stages, model, key, outputFormat         string
	label, features, exclude, retrainEvery, windowKind, forest, layout, maxFeatures, httpAddr string
	logLevel, logFormat, startOffset, tlsCA, tlsCert, tlsKey, tlsServerName                   string
	saslMechanism, saslUsername, saslPassword, clientID                                       string
	window, minRows, trees, trainThreads, workers, maxUncommitted, partitions, maxMsgBytes    int
	seed                                                                                      uint64
	maxInFlightBytes, memoryLimit                                                             int64
	sessionTimeout, drainTimeout, commitInterval, maxRuntime, demoDuration, stallTimeout      time.Duration
	tls, tlsInsecure, demo, allowFeatureChange, tune, printConfig                             bool
	topics                                                                                    listFlag
	embeddedTLSCert, embeddedTLSKey, embeddedPasswords, task, probs                           string
	embeddedUsers                                                                             listFlag
}

func runServe(args []string, env Env) error {
	cfg, f, err := serveConfigFromArgs(args, env)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.printConfig {
		b, err := cfg.Marshal()
		if err != nil {
			return err
		}
		_, err = env.Stdout.Write(b)
		return err
	}
	if cfg.Pipeline.MemoryLimit > 0 { // process-wide: the command's to set, not the daemon library's
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(cfg.Pipeline.MemoryLimit))
	}
	if f.demo {
		return servedemo.Run(ctx, cfg, f.demoDuration, env.Stdout, env.Stderr)
	}
	if f.maxRuntime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.maxRuntime)
		defer cancel()
	}
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: cfg.Log.Logger(env.Stderr)})
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// SIGTERM (or --max-runtime) during the start, e.g. while it
			// waits for the brokers: a stop asked for, not a failure
			fmt.Fprintf(env.Stderr, "forestd serve: stopped before it started: %v\n", err)
			return nil
		}
		return err
	}
	return d.Wait()
}

// serveConfigFromArgs parses the flags, reads --config, applies the flags
// given over it and validates the result.
func serveConfigFromArgs(args []string, env Env) (daemon.Config, *serveFlags, error) {
	fs := newFlagSet("serve", serveUsage, env)
	d := daemon.DefaultConfig()
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "YAML configuration file (flags override it)")
	fs.StringVar(&f.brokers, "brokers", "", "Kafka bootstrap brokers host:port,... (none: start the embedded broker)")
	fs.StringVar(&f.embeddedListen, "embedded-listen", d.Embedded.Listen, "address of the embedded broker")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory where the embedded broker persists its logs and offsets (empty: memory only)")
	fs.StringVar(&f.group, "group", d.Group, "consumer group")
	fs.StringVar(&f.stages, "stages", "", "stages to run, in order: score, train, analyze, select (select before train composes them; default: score alone with --model and no --label, else score,train)")
	fs.StringVar(&f.embeddedTLSCert, "embedded-tls-cert", "", "PEM certificate: the embedded broker accepts TLS only (with --embedded-tls-key)")
	fs.StringVar(&f.embeddedTLSKey, "embedded-tls-key", "", "PEM key of --embedded-tls-cert")
	fs.Var(&f.embeddedUsers, "embedded-sasl-user", "NAME:MECHANISM (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): the embedded broker requires SASL; the daemon authenticates as the first (repeatable)")
	fs.StringVar(&f.embeddedPasswords, "embedded-sasl-password-file", "", "NAME:PASSWORD lines for --embedded-sasl-user (default: $FORESTD_SASL_PASSWORD for every user)")
	fs.StringVar(&f.model, "model", "", "model file that seeds the first model")
	fs.BoolVar(&f.allowFeatureChange, "allow-feature-change", false, "let a model that reads other columns than the live one replace it (refused and counted by default)")
	fs.StringVar(&f.key, "key", "", "input column copied into every prediction (besides the source coordinates)")
	fs.StringVar(&f.outputFormat, "output-format", d.OutputFormat, "format of produced records: auto (predictions answer each message in its format: JSON in, JSON lines out; Arrow in, Arrow out), arrow or json")
	fs.StringVar(&f.probs, "probs", d.Score.Probs, "class probabilities written in the predictions (score.probs): "+probsChoices)
	fs.StringVar(&f.label, "label", d.Train.Label, "label column of training batches (default "+daemon.DefaultLabel+" when a stage needs one); several, comma-separated, train one multi-output regression forest")
	fs.StringVar(&f.features, "features", "", "feature columns for training, comma-separated (default: all but the label)")
	fs.StringVar(&f.exclude, "exclude", "", "columns that are not features, comma-separated")
	fs.StringVar(&f.retrainEvery, "retrain-every", d.Train.RetrainEvery, "retrain after this many labelled rows, or at this interval (e.g. 30s)")
	fs.IntVar(&f.window, "window", d.Train.Window, "labelled rows kept for training")
	fs.StringVar(&f.windowKind, "window-kind", d.Train.WindowKind, "training window: count (most recent rows) or reservoir (uniform sample)")
	fs.IntVar(&f.minRows, "min-rows", d.Train.MinRows, "least rows to train a model on")
	fs.StringVar(&f.forest, "forest", d.Train.Forest, "forest kind for training: rf, sporf, morf (with --layout), lfs or fdm")
	fs.StringVar(&f.layout, "layout", d.Train.Layout, "features' layout (train.layout) for morf (required) and lfs: series, cyclic or a grid WxH")
	fs.StringVar(&f.task, "task", d.Train.Task, "how the label is learnt: classification, regression or auto: a float label is numeric (regression; JSON numbers are floats), and so is a label of more than 32 distinct numbers; every other label is classes")
	fs.IntVar(&f.trees, "trees", d.Train.Trees, "trees per trained model")
	fs.BoolVar(&f.tune, "tune", false, "choose each retrain's hyperparameters out of bag (rf, sporf, morf)")
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
	fs.StringVar(&f.httpAddr, "http", d.HTTP, "address of the status page (/), /api/status, /metrics, /healthz and /readyz (port 0: a free port, printed in the log)")
	fs.StringVar(&f.logLevel, "log-level", d.Log.Level, "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", d.Log.Format, "text or json")
	fs.DurationVar(&f.maxRuntime, "max-runtime", 0, "stop gracefully after this long (0: run until SIGTERM)")
	fs.BoolVar(&f.demo, "demo", false, "run the built-in demo: embedded broker, simulated stream, training, hot swap, scoring; stops by itself")
	fs.DurationVar(&f.demoDuration, "demo-duration", 20*time.Second, "how long --demo runs")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the configuration the daemon would run with (every YAML key: defaults, --config and flags applied; the SASL password left empty) and exit")
	cfg := daemon.DefaultConfig()
	pos, err := parse(fs, args)
	if err != nil {
		return cfg, nil, err
	}
	if len(pos) > 0 {
		return cfg, nil, usagef("unexpected argument %q", pos[0])
	}
	if f.config != "" {
		if cfg, err = daemon.LoadConfig(f.config); err != nil {
			return cfg, nil, usageError{fmt.Errorf("--config: %w", err)}
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := applyServeFlags(&cfg, &f, set); err != nil {
		return cfg, nil, err
	}
	if f.demo {
		servedemo.Defaults(&cfg, set)
	}
	if err := cfg.Validate(); err != nil {
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
func applyServeFlags(cfg *daemon.Config, f *serveFlags, set map[string]bool) error {
	str := map[string]*string{
		"embedded-listen": &cfg.Embedded.Listen, "data-dir": &cfg.Embedded.DataDir, "group": &cfg.Group,
		"model": &cfg.Model, "key": &cfg.Key, "output-format": &cfg.OutputFormat, "label": &cfg.Train.Label,
		"retrain-every": &cfg.Train.RetrainEvery, "window-kind": &cfg.Train.WindowKind, "forest": &cfg.Train.Forest, "layout": &cfg.Train.Layout, "task": &cfg.Train.Task,
		"max-features": &cfg.Train.MaxFeatures, "http": &cfg.HTTP, "log-level": &cfg.Log.Level, "log-format": &cfg.Log.Format,
		"start-offset": &cfg.Kafka.StartOffset, "client-id": &cfg.Kafka.ClientID, "tls-ca": &cfg.Kafka.TLS.CAFile,
		"tls-cert": &cfg.Kafka.TLS.CertFile, "tls-key": &cfg.Kafka.TLS.KeyFile, "tls-server-name": &cfg.Kafka.TLS.ServerName,
		"sasl-mechanism": &cfg.Kafka.SASL.Mechanism, "sasl-username": &cfg.Kafka.SASL.Username, "sasl-password": &cfg.Kafka.SASL.Password,
		"embedded-tls-cert": &cfg.Embedded.TLSCert, "embedded-tls-key": &cfg.Embedded.TLSKey,
		"embedded-sasl-password-file": &cfg.Embedded.SASLPasswordFile, "probs": &cfg.Score.Probs,
	}
	val := map[string]string{
		"embedded-listen": f.embeddedListen, "data-dir": f.dataDir, "group": f.group, "model": f.model, "key": f.key,
		"output-format": f.outputFormat, "label": f.label, "retrain-every": f.retrainEvery, "window-kind": f.windowKind,
		"forest": f.forest, "layout": f.layout, "task": f.task, "max-features": f.maxFeatures, "http": f.httpAddr, "log-level": f.logLevel, "log-format": f.logFormat,
		"start-offset": f.startOffset, "client-id": f.clientID, "tls-ca": f.tlsCA, "tls-cert": f.tlsCert, "tls-key": f.tlsKey,
		"tls-server-name": f.tlsServerName, "sasl-mechanism": f.saslMechanism, "sasl-username": f.saslUsername, "sasl-password": f.saslPassword,
		"embedded-tls-cert": f.embeddedTLSCert, "embedded-tls-key": f.embeddedTLSKey, "embedded-sasl-password-file": f.embeddedPasswords,
		"probs": f.probs,
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
	if set["tune"] {
		cfg.Train.Tune = f.tune
	}
	if set["allow-feature-change"] {
		cfg.AllowFeatureChange = f.allowFeatureChange
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
			"drift": &cfg.Topics.Drift, "models": &cfg.Topics.Models, "dlq": &cfg.Topics.DLQ}[role]
		if p == nil {
			return usagef("--topic %q: unknown role %q (features, training, predictions, importances, reports, selected, drift, models, dlq)", t, role)
		}
		*p = name
	}
	return nil
}

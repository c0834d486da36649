package benthos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// CreatedBy is the writer recorded in the models forestd_train writes.
const CreatedBy = "forestd_train"

func trainSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Categories("Machine Learning").
		Summary("Keeps a bounded window of labelled rows, retrains a forestd forest on a schedule and writes each model to a file atomically.").
		Description(`
Messages pass through unchanged. The labelled rows of each message (JSON, one
object each, or Arrow IPC streams) go into a window of at most `+"`window`"+` rows
(the most recent, or a uniform reservoir sample), so memory is bounded by
`+"`window`"+` × features × 4 bytes (plus 8 bytes per target for regression), plus
one copy of the window while a model trains. Rows whose label is null are
skipped. When `+"`retrain_every`"+` new rows arrived (a row count) or that much
time passed with at least one new row (a duration), a forest is trained in the
background with the parameters of `+"`forestd train`"+` and written to `+"`model_path`"+`
through a temporary file and a rename, with a version one above the previous
model (or above the file's when it existed at start), so a `+"`forestd_score`"+` on
the same file hot-swaps to it. Training never blocks the messages. A retrain
that fails is logged as a warning and counted in `+"`forestd_training_errors`"+`,
and the previous model stays: among others, a window in which a feature has
no value in any row (absent or null everywhere, e.g. a misspelt entry of
`+"`features`"+`) fails with an error naming the column and the window's row count.

The feature columns are `+"`features`"+`, or every column of the first labelled
message but the label(s) and `+"`exclude`"+`. A label of several comma-separated
columns (`+"`y0,y1`"+`) trains one multi-output regression forest. A message that
cannot be used for training (not JSON or Arrow, a value of the wrong kind, a
categorical feature, a label of another kind than before) is marked with an
error and passes on.

Metrics: `+"`forestd_training_rows`, `forestd_training_rows_skipped`, `forestd_messages_errored`, `forestd_models_written`, `forestd_model_version`, `forestd_training_errors`, `forestd_training_latency_ns`"+`.`).
		Fields(
			service.NewStringField("label").
				Description("The label column; several comma-separated columns are learnt as one multi-output regression target.").
				Example("y").Example("y0,y1,y2").
				LintRule(`root = if this.trim() == "" { ["label: a label column is required"] }`),
			service.NewStringListField("features").
				Description("The feature columns; empty means every column of the first labelled message but the label(s) and `exclude`. A message may lack a listed feature (a missing value), but a retrain whose window has no value of it in any row fails, naming it.").
				Default([]any{}),
			service.NewStringListField("exclude").
				Description("Columns that are not features (e.g. an id).").
				Default([]any{}).Example([]any{"id"}),
			service.NewIntField("window").
				Description("The most labelled rows kept for training.").
				Default(50000).
				LintRule(`root = if this < 2 { ["window must be at least 2 rows"] }`),
			service.NewStringEnumField("window_kind", operators.WindowCount, operators.WindowReservoir).
				Description("`count` keeps the most recent rows; `reservoir` a uniform sample of every row seen (Vitter's Algorithm R).").
				Default(operators.WindowCount).Advanced(),
			service.NewStringField("retrain_every").
				Description("Retrain after this many new labelled rows (`10000`) or at this interval when a new row arrived (`30s`).").
				Default("25000").Example("10000").Example("5m").
				LintRule(`root = if !this.string().trim().re_match("^([1-9][0-9]*|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$") || this.string().re_replace_all("[^1-9]", "") == "" { ["retrain_every must be a positive row count (10000) or a duration (30s)"] }`),
			service.NewIntField("min_rows").
				Description("The least number of rows in the window to train on.").
				Default(100),
			service.NewStringField("model_path").
				Description("Where each model is written (atomically: a temporary file in the same directory, then a rename).").
				Example("./models/live.model").
				LintRule(`root = if this.trim() == "" { ["model_path: where to write the model is required"] }`),
			service.NewStringEnumField("task", "auto", "classification", "regression").
				Description("How the label is learnt: `auto` regresses on numbers and classifies strings, as `forestd train` does.").
				Default("auto"),
			service.NewStringEnumField("forest", string(forest.KindRF), string(forest.KindSPORF), string(forest.KindMORF)).
				Description("The forest kind: `rf` (Breiman, axis-aligned splits), `sporf` (sparse oblique splits, Randomer paper §2) or `morf` (patches on the features' `layout`, Manifold Oblique Random Forests §3).").
				Default(string(forest.KindRF)),
			service.NewStringField("layout").
				Description("morf (required): the features' layout, `series`, `cyclic` or a grid `WxH` (as `forestd train`'s `--series`, `--cyclic`, `--grid`; features in row-major order).").
				Default("").Example("series").Example("28x28"),
			service.NewBoolField("tune").
				Description("Choose each retrain's hyperparameters out of bag, as `forestd train --tune` does (rf: max_features, min_leaf; sporf: lambda, max_features, mean differences; morf: patch sizes, max_features, min_leaf, mean differences), then train the winner with `trees`. At most about 4× the work of an untuned retrain.").
				Default(false).Advanced(),
			service.NewIntField("trees").Description("Trees per forest.").Default(100).
				LintRule(`root = if this < 1 || this > 100000 { ["trees must be between 1 and 100000"] }`),
			service.NewStringField("max_features").
				Description("Candidate features per node: `sqrt`, `log2`, `all`, a count from 1 or a fraction in (0, 1] (sporf and morf: up to 64, atoms per node as a multiple of the features); empty is sqrt for classification and p/3 for regression.").
				Default("").Example("sqrt").Example("0.3"),
			service.NewStringEnumField("criterion", "", "gini", "entropy", "mse").
				Description("Split criterion; empty is gini for classification and mse for regression.").
				Default("").Advanced(),
			service.NewIntField("min_leaf").Description("Minimum in-bag rows per leaf.").Default(1).Advanced(),
			service.NewIntField("min_split").Description("Nodes with fewer in-bag rows are not split (0: 2 for classification, 5 for regression).").Default(0).Advanced(),
			service.NewIntField("max_depth").Description("Maximum tree depth (0: unlimited).").Default(0).Advanced(),
			service.NewStringEnumField("sample", "bootstrap", "subsample").Description("Rows drawn per tree with or without replacement.").Default("bootstrap").Advanced(),
			service.NewFloatField("sample_fraction").Description("Rows drawn per tree as a fraction of the window (0: 1 for bootstrap, 0.632 for subsample).").Default(0.0).Advanced(),
			service.NewStringEnumField("split", "binned", "exact").Description("Split search: histograms over quantile bins, or sorted values.").Default("binned").Advanced(),
			service.NewIntField("bins").Description("Quantile bins per feature in binned mode.").Default(255).Advanced().
				LintRule(`root = if this < 2 || this > 255 { ["bins must be between 2 and 255"] }`),
			service.NewFloatField("lambda").Description("sporf: mean non-zeros per split atom (Poisson λ).").Default(1.5).Advanced(),
			service.NewIntField("seed").Description("Seeds training (the same window and seed give the same model bytes) and the reservoir.").Default(1),
			service.NewIntField("threads").Description("Goroutines training a forest (0: every CPU); the model never depends on it.").Default(0).Advanced(),
		).
		// max_features as forest's parser (mtry) reads it: a count from 1 to
		// 2^20 (at most the features, which lint cannot know), a fraction in
		// (0, 1] — up to 64 for the oblique kinds, sporf and morf — or a name
		LintRule(`let mf = this.max_features.or("").string()
let mf_ok = match {
  ["", "sqrt", "auto", "log2", "all"].contains($mf) => true,
  $mf.re_match("^[+-]?[0-9]+$") => $mf.number() >= 1 && $mf.number() <= 1048576,
  this.forest.or("rf") == "rf" => $mf.number(0) > 0 && $mf.number(0) <= 1,
  _ => $mf.number(0) > 0 && $mf.number(0) <= 64,
}
root = [
  if !$mf_ok { "max_features must be sqrt, log2, all, a count from 1 or a fraction in (0, 1] (sporf and morf: (0, 64]); empty is sqrt for classification, p/3 for regression" },
  if this.min_rows.or(100) > this.window.or(50000) { "min_rows must not exceed window" },
  if this.min_rows.or(100) < 2 { "min_rows must be at least 2" },
  if this.label.or("").contains(",") && this.task.or("auto") == "classification" { "task: several labels are a multi-output regression target; classification takes one label" },
  if this.task.or("auto") == "regression" && ["gini", "entropy"].contains(this.criterion.or("")) { "criterion: gini and entropy are classification criteria; regression uses mse" },
  if this.task.or("auto") == "classification" && this.criterion.or("") == "mse" { "criterion: mse is the regression criterion; classification uses gini or entropy" },
  if this.features.or([]).any(f -> this.label.or("").split(",").map_each(l -> l.trim()).contains(f)) { "features: a label column is also listed as a feature" },
  if this.exclude.or([]).any(f -> this.label.or("").split(",").map_each(l -> l.trim()).contains(f)) { "exclude: a label column is also excluded" },
  if this.forest.or("rf") != "sporf" && this.lambda.or(1.5) != 1.5 { "lambda applies to forest: sporf only" },
  if this.forest.or("rf") == "morf" && this.layout.or("").trim() == "" { "layout: forest morf needs the features' layout (series, cyclic or a grid WxH)" },
  if this.forest.or("rf") != "morf" && this.layout.or("").trim() != "" { "layout applies to forest: morf only" },
  if this.sample.or("bootstrap") == "subsample" && this.sample_fraction.or(0) >= 1 { "sample_fraction: subsampling draws fewer rows than the window (below 1)" },
  if this.sample_fraction.or(0) < 0 || this.sample_fraction.or(0) > 1 { "sample_fraction must be in [0, 1]" },
].filter(e -> e != null)`).
		Example("Train, then score",
			"Labelled rows train a model that the score processor after it hot-swaps to.", `
pipeline:
  processors:
    - forestd_train:
        label: y
        exclude: [id]
        window: 20000
        retrain_every: 5000
        model_path: ./live.model
    - forestd_score:
        model: ./live.model
        require_model: false
`)
}

type trainMetrics struct {
	rows, skipped, errored, written, trainErrors *service.MetricCounter
	version                                      *service.MetricGauge
	latency                                      *service.MetricTimer
}

// trainProc is the forestd_train processor. Adding rows is safe for
// concurrent use (operators.Trainer); one background loop trains and
// writes the models.
type trainProc struct {
	tr      *operators.Trainer
	labels  []string // the label column(s)
	path    string
	threads int
	mem     memory.Allocator
	log     *service.Logger
	met     trainMetrics

	version int64 // of the last model written; the loop alone changes it
	wake    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// trainOptions reads the processor's fields into the Trainer's options.
func trainOptions(conf *service.ParsedConfig) (operators.TrainOptions, error) {
	var o operators.TrainOptions
	var err error
	str := func(name string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = conf.FieldString(name)
		return s
	}
	num := func(name string) int {
		if err != nil {
			return 0
		}
		var n int
		n, err = conf.FieldInt(name)
		return n
	}
	label := str("label")
	task := str("task")
	kind := str("forest")
	maxFeat := str("max_features")
	criterion := str("criterion")
	sample := str("sample")
	split := str("split")
	every := str("retrain_every")
	o.Kind = str("window_kind")
	o.Window, o.MinRows = num("window"), num("min_rows")
	trees, minLeaf, minSplit, maxDepth, bins, seed := num("trees"), num("min_leaf"), num("min_split"), num("max_depth"), num("bins"), num("seed")
	if err != nil {
		return o, err
	}
	if o.Features, err = conf.FieldStringList("features"); err != nil {
		return o, err
	}
	if o.Exclude, err = conf.FieldStringList("exclude"); err != nil {
		return o, err
	}
	frac, err := conf.FieldFloat("sample_fraction")
	if err != nil {
		return o, err
	}
	lambda, err := conf.FieldFloat("lambda")
	if err != nil {
		return o, err
	}
	if strings.Contains(label, ",") {
		o.Labels = frame.SplitLabel(label)
	} else {
		o.Label = strings.TrimSpace(label)
	}
	if o.Task, err = frame.ParseTask(task); err != nil {
		return o, fmt.Errorf("task: %w", err)
	}
	if o.RetrainRows, o.RetrainEvery, err = operators.ParseRetrain(every); err != nil {
		return o, err
	}
	k, err := forest.ParseKind(kind)
	if err != nil {
		return o, fmt.Errorf("forest: %w", err)
	}
	if seed < 0 {
		return o, fmt.Errorf("seed %d is negative", seed)
	}
	p := forest.DefaultParams(o.Task)
	p.Forest, p.Trees, p.Seed = k, trees, uint64(seed)
	p.MaxFeatures, p.Criterion, p.MinLeaf, p.MaxDepth = maxFeat, criterion, minLeaf, maxDepth
	if minSplit > 0 {
		p.MinSplit = minSplit
	}
	p.Sample, p.SampleFraction, p.Split, p.Bins = sample, frac, split, bins
	if k == forest.KindSPORF {
		p.Lambda = lambda
	}
	if err := p.SetLayout(strings.TrimSpace(str("layout"))); err != nil {
		return o, err
	}
	if p.Tune, err = conf.FieldBool("tune"); err != nil {
		return o, err
	}
	o.Params, o.Seed = p, uint64(seed)
	if trees < 1 {
		return o, fmt.Errorf("trees %d", trees)
	}
	return o, nil
}

func newTrainProc(conf *service.ParsedConfig, mgr *service.Resources) (*trainProc, error) {
	o, err := trainOptions(conf)
	if err != nil {
		return nil, fmt.Errorf("forestd_train: %w", err)
	}
	var pe *forest.ParamError
	if err := o.CheckParams(); errors.As(err, &pe) { // name the config field
		return nil, fmt.Errorf("forestd_train: %s: %w", pe.Param, pe.Err)
	} else if err != nil {
		return nil, fmt.Errorf("forestd_train: %w", err)
	}
	tr, err := operators.NewTrainer(o)
	if err != nil {
		return nil, fmt.Errorf("forestd_train: %w", err)
	}
	p := &trainProc{tr: tr, mem: memory.DefaultAllocator, log: mgr.Logger(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	if p.labels = o.Labels; o.Label != "" {
		p.labels = []string{o.Label}
	}
	if p.path, err = conf.FieldString("model_path"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.path) == "" {
		return nil, errors.New("forestd_train: model_path: where to write the model is required")
	}
	// where the model goes must be writable there, not found out at the
	// first retrain (and warned about at every one after)
	if err := files.CheckTarget(p.path); err != nil {
		return nil, fmt.Errorf("forestd_train: model_path: %w", err)
	}
	if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("forestd_train: model_path %s: its directory %s does not exist", p.path, filepath.Dir(p.path))
	}
	if p.threads, err = conf.FieldInt("threads"); err != nil {
		return nil, err
	}
	if p.threads < 0 {
		return nil, fmt.Errorf("forestd_train: threads %d", p.threads)
	}
	// versions continue from the model already at model_path, so that a
	// forestd_score on it accepts the next one
	if m, err := scoring.Load(p.path, scoring.LoadOptions{NoBytes: true}); err == nil {
		p.version = m.Version()
	} else if !errors.Is(err, os.ErrNotExist) {
		p.log.Warnf("forestd_train: %s holds no readable model (%v); versions start at 1 and the file is replaced", p.path, err)
	}
	m := mgr.Metrics()
	p.met = trainMetrics{
		rows:        m.NewCounter("forestd_training_rows"),
		skipped:     m.NewCounter("forestd_training_rows_skipped"),
		errored:     m.NewCounter("forestd_messages_errored"),
		written:     m.NewCounter("forestd_models_written"),
		trainErrors: m.NewCounter("forestd_training_errors"),
		version:     m.NewGauge("forestd_model_version"),
		latency:     m.NewTimer("forestd_training_latency_ns"),
	}
	if p.version > 0 {
		p.met.version.Set(p.version)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.loop(ctx, o.RetrainEvery)
	return p, nil
}

// ProcessBatch implements service.BatchProcessor: it adds the batch's
// labelled rows to the window and passes the messages on unchanged.
func (p *trainProc) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	errored := func(msg *service.Message, err error) {
		msg.SetError(oneLine(err))
		p.met.errored.Incr(1)
	}
	parts := splitBatch("forestd_train", batch, errored)
	if len(parts.json) > 0 {
		p.addJSON(batch, parts, errored)
	}
	for _, i := range parts.arrow {
		schema, recs, err := codec.Decode(parts.bytes[i], codec.ContentTypeArrow, p.mem)
		if err != nil {
			errored(batch[i], fmt.Errorf("forestd_train: %w", err))
			continue
		}
		if err := p.add(schema, recs); err != nil {
			errored(batch[i], fmt.Errorf("forestd_train: %w", err))
		}
		release(recs)
	}
	select { // the loop checks whether a retrain is due
	case p.wake <- struct{}{}:
	default:
	}
	return []service.MessageBatch{batch}, nil
}

// addJSON adds the JSON messages of a batch as one record; a message is
// validated on its own first (the feature columns, once the window knows
// them, must be numbers), see scoreProc.scoreJSON.
func (p *trainProc) addJSON(batch service.MessageBatch, parts batchParts, errored func(*service.Message, error)) {
	o := p.tr.Options()
	opts := codec.JSONOptions{Single: true}
	if len(o.Features) > 0 {
		// the features and the labels are all the trainer reads: other
		// members are only checked to be valid JSON, as forestd_score's
		opts.Kinds = featureKinds(o.Features, nil)
		opts.Only = append(slices.Clone(o.Features), p.labels...)
	}
	rec, _, fail := parts.jsonRecord("forestd_train", batch, opts, p.mem, errored)
	if rec == nil {
		return
	}
	defer rec.Release()
	if err := p.add(rec.Schema(), []arrow.Record{rec}); err != nil {
		fail(err)
	}
}

// add adds labelled rows to the window. Rows of a batch without the label
// column are unlabelled (scoring traffic) and skipped like null labels.
func (p *trainProc) add(schema *arrow.Schema, recs []arrow.Record) error {
	for _, l := range p.labels {
		if !schema.HasField(l) {
			n := 0
			for _, r := range recs {
				n += int(r.NumRows())
			}
			p.met.skipped.Incr(int64(n))
			return nil
		}
	}
	added, skipped, err := p.tr.Add(schema, recs)
	if err != nil {
		return err
	}
	p.met.rows.Incr(int64(added))
	p.met.skipped.Incr(int64(skipped))
	return nil
}

// loop trains whenever the window says a retrain is due, until Close.
func (p *trainProc) loop(ctx context.Context, every time.Duration) {
	defer close(p.done)
	tick := time.Second
	if every > 0 {
		tick = min(tick, max(every/4, 10*time.Millisecond))
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-t.C:
		}
		if !p.tr.Due(time.Now()) {
			continue
		}
		if err := p.retrain(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.met.trainErrors.Incr(1)
			p.log.Warnf("forestd_train: %v", err)
		}
	}
}

// retrain trains on a snapshot of the window and writes the model.
func (p *trainProc) retrain(ctx context.Context) error {
	// the model at model_path may hold the last version (model.MaxVersion):
	// refuse before training rather than write a version that wraps
	version, err := model.NextVersion(p.version)
	if err != nil {
		return fmt.Errorf("%s: %w", p.path, err)
	}
	t0 := time.Now()
	fr, err := p.tr.Snapshot(t0)
	if err != nil {
		return err
	}
	f, err := p.tr.Train(ctx, fr, p.threads)
	if err != nil {
		return err
	}
	// Encoded only: this processor writes the model and never scores
	// with it, so it is not compiled (scoring.Encode would).
	// with the reference sample of drift tests (model.SampleReference)
	data, meta, err := model.EncodeBytes(f, model.Meta{Version: version, CreatedBy: CreatedBy, Reference: p.tr.Reference(f, fr)})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(p.path, data); err != nil {
		return err
	}
	p.version = meta.Version
	p.met.written.Incr(1)
	p.met.version.Set(p.version)
	p.met.latency.Timing(time.Since(t0).Nanoseconds())
	p.log.Infof("forestd_train: wrote model %s version %d (%d rows) to %s", meta.ID, meta.Version, fr.NRows, p.path)
	return nil
}

// Close implements service.BatchProcessor: it stops the training loop
// (a forest in training is abandoned).
func (p *trainProc) Close(ctx context.Context) error {
	p.once.Do(func() {
		p.cancel()
		<-p.done
	})
	return nil
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/fdm"
	modelfile "github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// Headers on outputs derived from a scored message.
const (
	HeaderModelID      = "forestd-model-id"
	HeaderModelVersion = "forestd-model-version"
	HeaderSource       = "forestd-source"
)

// Default output streams.
const (
	streamPredictions = "predictions"
	streamImportances = "importances"
	streamReports     = "reports"
	streamSelected    = "selected"
)

// Reasons a model is refused (forestd_models_rejected_total{reason}).
const (
	rejectUndecodable = "undecodable"      // not a valid model file
	rejectVersion     = "version_mismatch" // the topic entry's key disagrees with the model's content
	rejectNotNewer    = "not_newer"        // older than the live model
	rejectColumns     = "columns_changed"  // reads other columns than the live model
)

// answerHeaders are the headers of an output answering in: hs and the
// content type in was read in, which the sink encodes the output in under
// output_format auto (kafka.FormatAuto) and replaces otherwise.
func answerHeaders(in *pipeline.Batch, hs ...pipeline.Header) []pipeline.Header {
	if in.ContentType != "" {
		hs = append(hs, pipeline.Header{Key: kafka.HeaderContentType, Value: []byte(in.ContentType)})
	}
	return hs
}

// models installs models into an operators.Current and keeps the model
// metrics and logs in step: every model it installs is logged as hot-swapped,
// every model it refuses is logged with the reason and counted.
type models struct {
	Current *operators.Current
	Metrics *metrics
	Logger  *slog.Logger
	// Status, when set, records swaps and trainings for the status page.
	Status *status.Recorder
	// Probs, when set (the score stage runs), is score.probs: the log of a
	// swap names what a classification model's predictions carry.
	Probs *scoring.Probs
}

// Offer installs m if operators.Current.Offer takes it (newer, same source
// columns unless allowed); origin says where it came from, for the log.
func (ms *models) Offer(m *scoring.Model, origin string) bool {
	err := ms.Current.Offer(m)
	switch {
	case errors.Is(err, operators.ErrLive):
		return false // seen again (e.g. our own model back from the topic): nothing to say
	case errors.Is(err, operators.ErrNotNewer):
		ms.reject(rejectNotNewer, m.ID(), m.Version(), origin, err)
		return false
	case errors.Is(err, operators.ErrColumnsChanged):
		ms.reject(rejectColumns, m.ID(), m.Version(), origin, fmt.Errorf("%w (set allow_feature_change to accept such models)", err))
		return false
	case err != nil:
		ms.reject(rejectUndecodable, m.ID(), m.Version(), origin, err)
		return false
	}
	if ms.Metrics != nil {
		ms.Metrics.ModelVersion.Set(float64(m.Version()))
		ms.Metrics.ModelSwaps.Inc()
	}
	if ms.Status != nil {
		ms.Status.ModelLive(m, origin)
	}
	if ms.Logger != nil {
		attrs := []any{"model_id", m.ID(), "model_version", m.Version(), "origin", origin,
			"trees", m.NumTrees(), "features", len(m.Forest().Features)}
		if ms.Probs != nil && m.Classes() != nil {
			if p, err := m.ResolveProbs(*ms.Probs); err == nil {
				attrs = append(attrs, "classes", len(m.Classes()), "probs", string(p))
			}
		}
		ms.Logger.Info("model hot-swapped", attrs...)
	}
	return true
}

// Adopt decodes a model from the model topic, whose entry claims ref, and
// offers it: a model whose content has another ID or version than its
// entry claims is refused, so that a mislabelled entry can neither take
// over nor, by claiming a high version, hide the real newest model.
func (ms *models) Adopt(ref kafka.ModelRef, data []byte, origin string) bool {
	m, err := scoring.Decode(data)
	if err == nil {
		err = m.Prepare(0)
	}
	if err != nil {
		ms.reject(rejectUndecodable, ref.ID, ref.Version, origin, err)
		return false
	}
	if m.ID() != ref.ID || m.Version() != ref.Version {
		ms.reject(rejectVersion, ref.ID, ref.Version, origin,
			fmt.Errorf("the entry says version %d id %.12s, the model is version %d id %.12s", ref.Version, ref.ID, m.Version(), m.ID()))
		return false
	}
	return ms.Offer(m, origin)
}

func (ms *models) reject(reason, id string, version int64, origin string, err error) {
	if ms.Metrics != nil {
		ms.Metrics.ModelRejected.WithLabelValues(reason).Inc()
	}
	if ms.Logger != nil {
		ms.Logger.Warn("model refused", "reason", reason, "model_id", id, "model_version", version, "origin", origin, "err", err)
	}
}

// stageErr is what a stage returns for an operator's error: input that does
// not fit (scoring.ErrInput) quarantines the message; anything else is
// retried.
func stageErr(err error) error {
	if errors.Is(err, scoring.ErrInput) {
		return pipeline.BadInput(err)
	}
	return err
}

// scoreStage scores each batch (scoring.Model.Score) with the model pinned
// to its message and emits one prediction record per input record with
// rows on Stream, keyed by the source coordinates so that a downstream
// consumer can drop duplicates after a restart (ARCHITECTURE.md, the
// daemon's promises).
type scoreStage struct {
	Current *operators.Current
	// Key names an input column copied into every prediction (besides the
	// source coordinates); empty: none.
	Key string
	// Probs chooses a classification model's probabilities (score.probs).
	Probs   scoring.Probs
	Stream  string
	Metrics *metrics
	// Mem allocates the predictions (nil: memory.DefaultAllocator).
	Mem memory.Allocator
	// Full, when set, decodes a message in full: its batches may hold only
	// the columns the model reads (scoreDecoder), and what Score refuses
	// in those is scored again from the full record, for the same reason.
	Full pipeline.Decoder
	// Drift, when set (stage drift), keeps the last rows scored: the
	// drift stage's current window (drift.go).
	Drift *driftWindow
}

// Name implements pipeline.Stage.
func (s *scoreStage) Name() string { return "score" }

// Pin is the score route's Route.Pin: it pins the current model (nil
// before the first) to each message as it is submitted.
func (s *scoreStage) Pin() any {
	if m := s.Current.Load(); m != nil {
		return m
	}
	return nil
}

// Process implements pipeline.Stage. It scores with the model pinned to the message
// at submission (see Pin), or, for messages that arrived before any model,
// waits for the first model (backpressure) rather than failing.
func (s *scoreStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	if s.Current != nil && s.Current.Load() == nil && s.Metrics != nil {
		s.Metrics.ScoreWaitingModels.Inc()
		defer s.Metrics.ScoreWaitingModels.Dec()
	}
	m, _ := in.Env.Pinned.(*scoring.Model)
	if m == nil {
		// arrived before any model: the first one installed (never a newer
		// one than later messages get, see operators.Current.First)
		var err error
		if m, err = s.Current.First(ctx); err != nil {
			return nil, nil, err
		}
	}
	src := in.Env.Source()
	opts := scoring.Options{Source: src, Threads: 1, Mem: s.Mem, Probs: s.Probs} // the runtime scores messages in parallel
	if s.Key != "" {
		opts.Keep = []string{s.Key}
	}
	recs, err := m.Score(in.Records, opts)
	if err != nil && s.Full != nil && in.ContentType != codec.ContentTypeArrow {
		recs, err = s.scoreFull(m, in.Env, opts, err)
	}
	if err != nil {
		return nil, nil, stageErr(err)
	}
	if s.Drift != nil {
		s.Drift.add(m, in.Records, src)
	}
	stream := s.Stream
	if stream == "" {
		stream = streamPredictions
	}
	hs := answerHeaders(in,
		pipeline.Header{Key: HeaderModelID, Value: []byte(m.ID())},
		pipeline.Header{Key: HeaderModelVersion, Value: []byte(strconv.FormatInt(m.Version(), 10))},
		pipeline.Header{Key: HeaderSource, Value: []byte(src)})
	outs := make([]pipeline.Output, 0, len(recs))
	for _, r := range recs {
		if r.NumRows() == 0 {
			// a batch without rows has no predictions: nothing to publish
			// (an empty value would only be noise downstream)
			r.Release()
			continue
		}
		outs = append(outs, pipeline.Output{Stream: stream, Key: []byte(src), Headers: hs, Record: r})
	}
	return outs, nil, nil
}

// scoreFull scores env decoded in full, after Score refused the columns
// scoreDecoder decoded (err), so that a refusal names what a full record
// gives (another column's name, the closest to a missing one).
func (s *scoreStage) scoreFull(m *scoring.Model, env *pipeline.Envelope, opts scoring.Options, err error) ([]arrow.Record, error) {
	b, derr := s.Full(env)
	if derr != nil {
		return nil, err
	}
	defer b.Release()
	return m.Score(b.Records, opts)
}

// TrainStage adds labelled batches to the training window and wakes the
// training loop. A training message is acknowledged once its rows are in
// the (in-memory, bounded) window: the window is soft state that the next
// daemon rebuilds from new labelled data, and the model it trains is
// published on the model topic.
type trainStage struct {
	Trainer *operators.Trainer
	Loop    *trainLoop
	Metrics *metrics
	evicted atomic.Int64 // the trainer's evictions counted so far
}

// Name implements pipeline.Stage.
func (s *trainStage) Name() string { return "train" }

// Process implements pipeline.Stage; it passes the batch on unchanged.
func (s *trainStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	_, skipped, err := s.Trainer.Add(in.Schema, in.Records)
	if err != nil {
		return nil, nil, stageErr(err)
	}
	if s.Metrics != nil {
		st := s.Trainer.Stats()
		s.Metrics.TrainingRows.Set(float64(st.Rows))
		s.Metrics.TrainingSkipped.Add(float64(skipped))
		// the counter follows the trainer's total, whatever order
		// concurrent batches read it in
		for prev := s.evicted.Load(); st.Evicted > prev; prev = s.evicted.Load() {
			if s.evicted.CompareAndSwap(prev, st.Evicted) {
				s.Metrics.TrainingEvicted.Add(float64(st.Evicted - prev))
				break
			}
		}
	}
	if s.Loop != nil {
		s.Loop.Notify()
	}
	return nil, in, nil
}

// TrainLoop retrains when the trainer says a retrain is due, installs the
// new model (version = current version + 1) and publishes it.
//
// With Compose set (a select → train pipeline), the loop trains behind the
// select stage: each model is trained on the window mapped to the latest
// analysis' selected and FDM-mapped columns, exactly as the select stage
// maps batches, and carries that mapping (operators.Trainer.TrainMapped),
// so that scoring applies it to raw feature batches. Training waits while
// there is no analysis yet or the latest one selected nothing — the select
// stage forwards nothing then either.
type trainLoop struct {
	Trainer *operators.Trainer
	Models  *models
	// Compose, when set, is the analyzer whose latest selection the loop
	// trains behind.
	Compose *operators.Analyzer
	// Threads bounds the training worker pool (default 1).
	Threads int
	// CreatedBy is written into the model (e.g. "forestd serve").
	CreatedBy string
	// Publish sends a new model to the model and importance topics; it is
	// retried with Retry until it succeeds or the loop stops.
	Publish func(ctx context.Context, m *scoring.Model) error
	Retry   pipeline.Backoff
	// Poll is how often the schedule is checked without new rows (for
	// duration-based retraining; default 100 ms).
	Poll   time.Duration
	Logger *slog.Logger

	waker
	// drifted is set by the drift stage (train.retrain_on: drift) and
	// cleared by the next training.
	drifted atomic.Bool
}

// retrainOnDrift asks for a retrain because the drift stage found drift:
// the loop trains as soon as labelled rows arrived since the last
// training (retraining on the same window would give the same forest).
func (l *trainLoop) retrainOnDrift() {
	l.drifted.Store(true)
	l.Notify()
}

// driftDue: drift was found and there are new labelled rows to train on.
func (l *trainLoop) driftDue() bool {
	if !l.drifted.Load() {
		return false
	}
	st := l.Trainer.Stats()
	return st.Since > 0 && st.Rows >= l.Trainer.Options().MinRows
}

// Notify wakes the loop (new rows arrived). It never blocks.
func (l *trainLoop) Notify() { l.waker.notify() }

// Init prepares the loop; call before Notify is used concurrently.
func (l *trainLoop) Init() error {
	if l.Trainer == nil || l.Models == nil || l.Models.Current == nil {
		return errors.New("pipeline: training loop needs a trainer and a model holder")
	}
	if l.Threads == 0 {
		l.Threads = 1
	}
	return l.waker.setup(&l.Poll, 100*time.Millisecond, &l.Logger, l.Retry)
}

// Run trains until ctx is done.
func (l *trainLoop) Run(ctx context.Context) error {
	if !l.waker.ready() {
		if err := l.Init(); err != nil {
			return err
		}
	}
	return l.waker.run(ctx, l.Poll, l.due(), func(ctx context.Context) {
		if err := l.trainOnce(ctx); err != nil && ctx.Err() == nil {
			if mt := l.Models.Metrics; mt != nil {
				mt.TrainingErrors.Inc()
			}
			l.Logger.Warn("training failed", "err", err)
		}
	})
}

// due is the training schedule; a composed loop is also waiting for a
// selection (logged once).
func (l *trainLoop) due() func(time.Time) bool {
	if l.Compose == nil {
		return func(now time.Time) bool { return l.Trainer.Due(now) || l.driftDue() }
	}
	logged := false
	return func(now time.Time) bool {
		if !l.Trainer.Due(now) && !l.driftDue() {
			return false
		}
		if t, _ := l.Compose.Selection(); t == nil {
			if !logged {
				l.Logger.Info("training waits for the first analysis that selects features (stages select → train)")
				logged = true
			}
			return false
		}
		return true
	}
}

func (l *trainLoop) trainOnce(ctx context.Context) error {
	var sel *fdm.Transform
	var seq int64
	if l.Compose != nil {
		if sel, seq = l.Compose.Selection(); sel == nil {
			return errors.New("no analysis has selected features yet")
		}
	}
	// a live model at the last version (model.MaxVersion) has no next
	// one: say so before training, not after
	if err := l.nextVersion(new(int64)); err != nil {
		return err
	}
	t0 := time.Now()
	onDrift := l.drifted.Swap(false)
	fr, err := l.Trainer.Snapshot(t0)
	if err != nil {
		return err
	}
	f, err := l.Trainer.TrainMapped(ctx, fr, sel, l.Threads)
	if err != nil {
		return err
	}
	var version int64
	if err := l.nextVersion(&version); err != nil {
		return err
	}
	// the model keeps a sample of its window: the drift stage's reference
	m, err := scoring.EncodeMeta(f, modelfile.Meta{Version: version, CreatedBy: l.CreatedBy, Reference: l.Trainer.Reference(f, fr)})
	if err != nil {
		return fmt.Errorf("encoding the trained model: %w", err)
	}
	secs := time.Since(t0).Seconds()
	if mt := l.Models.Metrics; mt != nil {
		mt.ModelsTrained.Inc()
		mt.TrainingSeconds.Observe(secs)
	}
	attrs := []any{"model_id", m.ID(), "model_version", version, "rows", fr.NRows,
		"classes", len(fr.Classes), "seconds", secs, "bytes", len(m.Bytes()), "on_drift", onDrift}
	if f.Targets != nil { // a multi-output regression forest
		attrs = append(attrs, "targets", strings.Join(f.Targets, ","))
	}
	if sel != nil {
		attrs = append(attrs, "analysis_seq", seq, "features", strings.Join(f.Features, ","),
			"source_columns", strings.Join(sel.Inputs(), ","))
	}
	l.Logger.Info("model trained", attrs...)
	if l.Models.Status != nil { // when and on how many rows, for the status page
		l.Models.Status.ModelTrained(m, fr.NRows, secs)
	}
	l.Models.Offer(m, "trained")
	if l.Publish == nil {
		return nil
	}
	return l.Retry.Do(ctx, func() error { return l.Publish(ctx, m) }, nil, func(attempt int, err error) {
		if l.Models.Metrics != nil {
			l.Models.Metrics.Retries.WithLabelValues("publish-model").Inc()
		}
		l.Logger.Warn("publishing the model failed; retrying", "model_version", version, "attempt", attempt+1, "err", err)
	})
}

// nextVersion sets *v to the version a new model takes: 1, or one above
// the live model's; it fails (model.ErrVersionLimit, counted in
// forestd_training_errors_total by Run) rather than pass model.MaxVersion.
func (l *trainLoop) nextVersion(v *int64) (err error) {
	*v = 1
	if cur := l.Models.Current.Load(); cur != nil {
		*v, err = modelfile.NextVersion(cur.Version())
	}
	return err
}

// waker is the scheduling the training and analysis loops share: a
// one-slot wake-up channel that never blocks the notifier, and a poll
// ticker for schedules that fall due with time alone.
type waker struct{ wake chan struct{} }

func (w *waker) init() { w.wake = make(chan struct{}, 1) }

// setup is the common part of a loop's Init: the poll interval defaults
// to def, the logger to a discarding one, the retry policy is validated,
// and the waker is made ready.
func (w *waker) setup(poll *time.Duration, def time.Duration, logger **slog.Logger, retry pipeline.Backoff) error {
	if *poll == 0 {
		*poll = def
	}
	if *logger == nil {
		*logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := retry.Validate(); err != nil {
		return err
	}
	w.init()
	return nil
}
func (w *waker) ready() bool { return w.wake != nil }

// notify wakes the loop; it never blocks and is a no-op before init.
func (w *waker) notify() {
	if w.wake == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run calls work whenever due reports true after a wake-up or a tick of
// poll, until ctx is done.
func (w *waker) run(ctx context.Context, poll time.Duration, due func(time.Time) bool, work func(context.Context)) error {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-tick.C:
		}
		if due(time.Now()) {
			work(ctx)
		}
	}
}

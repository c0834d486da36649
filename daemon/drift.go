package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// streamDrift is the drift stage's output stream (topics.drift).
const streamDrift = "drift"

// driftWindow is the drift stage's current window: the last rows of
// scored traffic (a row count, or the rows of the last duration up to a
// row cap), copied out of each scored batch — the live model's source
// columns only — so that the window holds no decoder memory. The score
// stage adds to it on the hot path (a copy of those columns); the drift
// loop reads it.
type driftWindow struct {
	rows    int           // the row bound (the cap, with a duration)
	age     time.Duration // 0: a row window
	now     func() time.Time
	mu      sync.Mutex
	cols    []string // the columns kept: the live model's source columns
	chunks  []driftChunk
	n       int   // rows held
	added   int64 // rows added in total
	notify  func()
	dropped int64 // batches whose columns could not be copied
}

type driftChunk struct {
	rec arrow.Record // the kept columns of one batch (Go memory)
	src string       // the batch's source coordinates
	at  time.Time
}

// add copies the rows of one scored batch (m's source columns present in
// recs) into the window and drops what falls out of it. A model reading
// other columns than the window's starts the window afresh.
func (w *driftWindow) add(m *scoring.Model, recs []arrow.Record, src string) {
	cols := m.Columns()
	now := w.now()
	var fresh []driftChunk
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		lo := max(0, int(r.NumRows())-w.rows) // only the last rows can stay
		rec, err := copyColumns(r, cols, int64(lo))
		if err != nil {
			w.mu.Lock()
			w.dropped++
			w.mu.Unlock()
			continue
		}
		fresh = append(fresh, driftChunk{rec: rec, src: src, at: now})
	}
	if len(fresh) == 0 {
		return
	}
	w.mu.Lock()
	if !slices.Equal(w.cols, cols) {
		w.cols, w.chunks, w.n = slices.Clone(cols), nil, 0
	}
	for _, c := range fresh {
		w.chunks = append(w.chunks, c)
		w.n += int(c.rec.NumRows())
		w.added += c.rec.NumRows()
	}
	w.trim(now)
	w.mu.Unlock()
	if w.notify != nil {
		w.notify()
	}
}

// trim drops rows beyond the bound and chunks older than the age (mu held).
func (w *driftWindow) trim(now time.Time) {
	drop := 0
	for drop < len(w.chunks) && w.age > 0 && now.Sub(w.chunks[drop].at) > w.age {
		w.n -= int(w.chunks[drop].rec.NumRows())
		drop++
	}
	for drop < len(w.chunks) && w.n-int(w.chunks[drop].rec.NumRows()) >= w.rows {
		w.n -= int(w.chunks[drop].rec.NumRows())
		drop++
	}
	w.chunks = slices.Delete(w.chunks, 0, drop)
	if over := w.n - w.rows; over > 0 && len(w.chunks) > 0 { // cut the oldest chunk
		c := &w.chunks[0]
		c.rec = c.rec.NewSlice(int64(over), c.rec.NumRows())
		w.n -= over
	}
}

// snapshot returns the window's records (immutable), their rows, the
// first and last source coordinates and the rows added in total.
func (w *driftWindow) snapshot() (recs []arrow.Record, rows int, first, last string, added int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trim(w.now())
	for _, c := range w.chunks {
		recs = append(recs, c.rec)
	}
	if len(w.chunks) > 0 {
		first, last = w.chunks[0].src, w.chunks[len(w.chunks)-1].src
	}
	return recs, w.n, first, last, w.added
}

// copyColumns copies rows lo.. of the columns of r named in cols (those r
// has) into Go memory.
func copyColumns(r arrow.Record, cols []string, lo int64) (arrow.Record, error) {
	var fields []arrow.Field
	var arrs []arrow.Array
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	mem := memory.NewGoAllocator()
	for _, name := range cols {
		idx := r.Schema().FieldIndices(name)
		if len(idx) != 1 {
			continue // absent (or ambiguous): the drift test names it skipped
		}
		s := array.NewSlice(r.Column(idx[0]), lo, r.NumRows())
		c, err := array.Concatenate([]arrow.Array{s}, mem)
		s.Release()
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", name, err)
		}
		fields, arrs = append(fields, r.Schema().Field(idx[0])), append(arrs, c)
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, r.NumRows()-lo), nil
}

// driftReport is one message of the drift topic: the drift test of the
// current window against the live model's reference sample
// (drift.Report), with what was tested and when. Error is set when no
// test could run (an empty window, no feature with values on both sides:
// the features are then named in Skipped).
type driftReport struct {
	Seq          int64     `json:"seq"`
	At           time.Time `json:"at"`
	ModelID      string    `json:"model_id"`
	ModelVersion int64     `json:"model_version"`
	// Window: the current window's rows and the source coordinates
	// (topic/partition/offset) of its first and last batch.
	WindowRows  int    `json:"window_rows"`
	WindowFirst string `json:"window_first"`
	WindowLast  string `json:"window_last"`
	drift.Report
	Error string `json:"error,omitempty"`
	// Retrain is set when the report asked for a retrain
	// (train.retrain_on: drift).
	Retrain bool `json:"retrain"`
}

// driftLoop tests the current window against the live model's reference
// sample every drift.every (rows or a duration), off the scoring path: one
// goroutine that the daemon joins in Wait and stops through its context.
type driftLoop struct {
	Window  *driftWindow
	Current *operators.Current
	Options drift.Options
	// EveryRows / Every: test after this many new rows, or this long
	// with any new row; MinRows: the least rows in the window to test.
	EveryRows int
	Every     time.Duration
	MinRows   int
	// Publish sends a report (retried with Retry); Retrain, when set
	// (train.retrain_on: drift), is called when drift is found.
	Publish func(ctx context.Context, rep *driftReport) error
	Retry   pipeline.Backoff
	Retrain func()
	Metrics *driftMetrics
	Status  *status.Recorder
	Logger  *slog.Logger
	Poll    time.Duration

	waker
	seq       int64
	tested    int64     // rows added at the last test
	testedAt  time.Time // time of the last test
	noRefLog  string    // the model whose missing reference was logged
	lastNames []string  // features of the latest p-value gauges
}

// Init prepares the loop.
func (l *driftLoop) Init() error {
	if l.Window == nil || l.Current == nil {
		return errors.New("daemon: the drift loop needs a window and a model holder")
	}
	l.Window.notify = l.notify
	return l.waker.setup(&l.Poll, 100*time.Millisecond, &l.Logger, l.Retry)
}

// Run tests until ctx is done; a test under way stops with it
// (drift.Options.Context) and reports nothing.
func (l *driftLoop) Run(ctx context.Context) error {
	if !l.waker.ready() {
		if err := l.Init(); err != nil {
			return err
		}
	}
	return l.waker.run(ctx, l.Poll, l.due, func(ctx context.Context) {
		rep := l.testOnce(ctx)
		if rep == nil {
			return
		}
		if l.Publish == nil {
			return
		}
		err := l.Retry.Do(ctx, func() error { return l.Publish(ctx, rep) }, nil, func(attempt int, err error) {
			l.Logger.Warn("publishing a drift report failed; retrying", "seq", rep.Seq, "attempt", attempt+1, "err", err)
		})
		if err != nil && ctx.Err() == nil {
			l.Logger.Warn("drift report not published", "seq", rep.Seq, "err", err)
		}
	})
}

// due: enough new rows since the last test, or the interval passed with
// some; and a window of at least MinRows.
func (l *driftLoop) due(now time.Time) bool {
	_, rows, _, _, added := l.Window.snapshot()
	fresh := added - l.tested
	if fresh <= 0 || rows < l.MinRows {
		return false
	}
	if l.EveryRows > 0 && fresh >= int64(l.EveryRows) {
		return true
	}
	return l.Every > 0 && now.Sub(l.testedAt) >= l.Every
}

// testOnce tests the window against the live model's reference and
// records the outcome; nil when there is nothing to test against, or when
// ctx stopped the test.
func (l *driftLoop) testOnce(ctx context.Context) *driftReport {
	recs, rows, first, last, added := l.Window.snapshot()
	l.tested, l.testedAt = added, time.Now()
	m := l.Current.Load()
	if m == nil {
		return nil
	}
	ref := m.Reference()
	if ref == nil {
		if l.noRefLog != m.ID() {
			l.Logger.Info("the live model has no reference sample: drift waits for a model that has one (trained by this version of forestd)", "model_id", m.ID(), "model_version", m.Version())
			l.noRefLog = m.ID()
		}
		return nil
	}
	l.seq++
	rep := &driftReport{Seq: l.seq, At: time.Now().UTC(), ModelID: m.ID(), ModelVersion: m.Version(),
		WindowRows: rows, WindowFirst: first, WindowLast: last}
	t0 := time.Now()
	o := l.Options
	o.Context = ctx
	r, err := drift.Test([]arrow.Record{ref}, recs, o)
	if ctx.Err() != nil {
		return nil // stopping: the test was cut short
	}
	rep.Report = r
	if err != nil {
		rep.Error = err.Error()
		if errors.Is(err, drift.ErrEmpty) && len(r.Skipped) == 0 {
			for _, f := range ref.Schema().Fields() { // an empty window: every feature skipped, by name
				rep.Skipped = append(rep.Skipped, drift.Skipped{Name: f.Name, Reason: "the current window has no rows"})
			}
		}
		l.Logger.Warn("drift test not made", "seq", rep.Seq, "window_rows", rows, "err", err)
	}
	if rep.Features == nil {
		rep.Features = []drift.Feature{}
	}
	secs := time.Since(t0).Seconds()
	if rep.Drift && l.Retrain != nil {
		rep.Retrain = true
		l.Retrain()
	}
	l.record(rep, secs)
	return rep
}

// record updates the metrics, the status page and the log.
func (l *driftLoop) record(rep *driftReport, secs float64) {
	if mt := l.Metrics; mt != nil {
		mt.Tests.Inc()
		mt.Seconds.Observe(secs)
		mt.WindowRows.Set(float64(rep.WindowRows))
		names := make([]string, len(rep.Features))
		for i, f := range rep.Features {
			names[i] = f.Name
		}
		if !slices.Equal(names, l.lastNames) { // a feature no longer tested has no latest p-value
			mt.PValue.Reset()
			l.lastNames = names
		}
		for _, f := range rep.Features {
			mt.PValue.WithLabelValues(f.Name).Set(f.PValue)
		}
		if rep.Joint != nil {
			mt.JointPValue.Set(rep.Joint.PValue)
		}
		if rep.Drift {
			mt.Detected.Inc()
		}
	}
	if l.Status != nil {
		l.Status.Drift(rep.ModelVersion, rep.WindowRows, &rep.Report, rep.Error)
	}
	attrs := []any{"seq", rep.Seq, "model_version", rep.ModelVersion, "window_rows", rep.WindowRows,
		"window_last", rep.WindowLast, "seconds", secs}
	if rep.Drift {
		var moved []string
		for _, f := range rep.Features {
			if f.Drift {
				moved = append(moved, f.Name)
			}
		}
		if rep.Joint != nil && rep.Joint.Drift {
			moved = append(moved, "(joint)")
		}
		l.Logger.Warn("drift found", append(attrs, "features", moved, "retrain", rep.Retrain)...)
		return
	}
	l.Logger.Debug("no drift", attrs...)
}

// driftMetrics are the drift stage's metrics.
type driftMetrics struct {
	Tests       prometheus.Counter
	Detected    prometheus.Counter
	PValue      *prometheus.GaugeVec // feature
	JointPValue prometheus.Gauge
	WindowRows  prometheus.Gauge
	Seconds     prometheus.Histogram
}

func newDriftMetrics(reg *prometheus.Registry) *driftMetrics {
	m := &driftMetrics{
		Tests:       prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_drift_tests_total", Help: "Drift tests of the current window against the live model's reference sample (stage drift)."}),
		Detected:    prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_drift_detected_total", Help: "Drift tests that found drift (any feature or the joint test, after drift.adjust)."}),
		PValue:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "forestd_drift_p_value", Help: "The latest drift test's p-value per feature (unadjusted; the report on topics.drift has the adjusted ones)."}, []string{"feature"}),
		JointPValue: prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_drift_joint_p_value", Help: "The latest joint drift test's p-value (unadjusted; -1 before the first)."}),
		WindowRows:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_drift_window_rows", Help: "Rows in the drift stage's current window at its latest test."}),
		Seconds:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forestd_drift_seconds", Help: "Time of one drift test.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	m.JointPValue.Set(-1)
	reg.MustRegister(m.Tests, m.Detected, m.PValue, m.JointPValue, m.WindowRows, m.Seconds)
	return m
}

// publishDrift sends one drift report, JSON, to the drift topic.
func (d *Daemon) publishDrift(ctx context.Context, rep *driftReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("drift report %d: %w", rep.Seq, err)
	}
	return d.sink.Write(ctx, []pipeline.Output{{Stream: streamDrift, Key: []byte("drift/" + strconv.FormatInt(rep.Seq, 10)), Raw: b,
		Headers: []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte("application/json")},
			{Key: HeaderModelID, Value: []byte(rep.ModelID)},
			{Key: HeaderModelVersion, Value: []byte(strconv.FormatInt(rep.ModelVersion, 10))}}}})
}

// driftStage builds the drift window and loop from the config (stage
// drift; Config.Drift).
func (d *Daemon) driftStage() (*driftWindow, error) {
	c := d.cfg.Drift
	wrows, wage, err := c.window()
	if err != nil {
		return nil, err
	}
	erows, every, err := parseSchedule("drift.every", c.Every)
	if err != nil {
		return nil, err
	}
	adj, err := dependence.ParseAdjust(c.Adjust)
	if err != nil {
		return nil, fmt.Errorf("drift.adjust: %w", err)
	}
	w := &driftWindow{rows: wrows, age: wage, now: time.Now}
	l := &driftLoop{Window: w, Current: d.cur, EveryRows: erows, Every: every, MinRows: c.MinRows,
		Options: drift.Options{Alpha: c.Alpha, Adjust: adj, Seed: c.Seed, MaxRows: c.MaxRows, Threads: c.Threads},
		Publish: d.publishDrift, Metrics: newDriftMetrics(d.metrics.Registry), Status: d.status, Logger: d.log}
	if d.cfg.Train.RetrainOn == retrainOnDrift && d.loop != nil {
		l.Retrain = d.loop.retrainOnDrift
	}
	if err := l.Init(); err != nil {
		return nil, err
	}
	d.driftLoop = l
	return w, nil
}

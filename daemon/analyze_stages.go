package daemon

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
)

// AnalyzeStage adds labelled batches to the dependence-analysis window and
// wakes the analysis loop; it passes the batch on unchanged.
type analyzeStage struct {
	Analyzer *operators.Analyzer
	Loop     *analyzeLoop
}

// Name implements pipeline.Stage.
func (s *analyzeStage) Name() string { return "analyze" }

// Process implements pipeline.Stage.
func (s *analyzeStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	if _, err := s.Analyzer.Add(in.Schema, in.Records); err != nil {
		return nil, nil, stageErr(err)
	}
	if s.Loop != nil {
		s.Loop.notify()
	}
	return nil, in, nil
}

// SelectStage forwards each batch reduced to the latest analysis' selected
// and FDM-mapped columns (operators.Analysis.Select) on Stream, keyed by the
// source coordinates. Until a first analysis exists it forwards nothing. It
// passes the original batch on unchanged to the next stage.
type selectStage struct {
	Analyzer    *operators.Analyzer
	Stream      string
	Passthrough []string // columns copied when present (e.g. the label)
	Metrics     *metrics
	// Mem allocates the selected records (nil: memory.DefaultAllocator).
	Mem memory.Allocator
}

// Name implements pipeline.Stage.
func (s *selectStage) Name() string { return "select" }

// Process implements pipeline.Stage.
func (s *selectStage) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	an := s.Analyzer.Latest()
	if an == nil || an.Transform == nil {
		return nil, in, nil
	}
	recs, err := an.Select(s.Mem, in.Schema, in.Records, s.Passthrough)
	if err != nil {
		return nil, nil, stageErr(err)
	}
	stream := s.Stream
	if stream == "" {
		stream = streamSelected
	}
	src := in.Env.Source()
	outs := make([]pipeline.Output, len(recs))
	for i, r := range recs {
		outs[i] = pipeline.Output{Stream: stream, Key: []byte(src), Record: r, Headers: answerHeaders(in, pipeline.Header{Key: HeaderSource, Value: []byte(src)})}
	}
	if s.Metrics != nil {
		s.Metrics.SelectedPublished.Inc()
	}
	return outs, in, nil
}

// AnalyzeLoop runs the dependence analysis when it is due and publishes
// each report.
type analyzeLoop struct {
	Analyzer *operators.Analyzer
	// Publish sends a report; it is retried with Retry until it succeeds
	// or the loop stops.
	Publish func(ctx context.Context, an *operators.Analysis) error
	Retry   pipeline.Backoff
	Poll    time.Duration
	Metrics *metrics
	Logger  *slog.Logger
	// Status, when set, shows the latest report on the status page.
	Status *status.Recorder
	waker
}

// Init prepares the loop; call it before the stage runs.
func (l *analyzeLoop) Init() error {
	if l.Analyzer == nil {
		return errors.New("pipeline: analysis loop without an analyzer")
	}
	return l.waker.setup(&l.Poll, 200*time.Millisecond, &l.Logger, l.Retry)
}

// Run analyses until ctx is done.
func (l *analyzeLoop) Run(ctx context.Context) error {
	if !l.waker.ready() {
		if err := l.Init(); err != nil {
			return err
		}
	}
	return l.waker.run(ctx, l.Poll, l.Analyzer.Due, l.analyzeOnce)
}

func (l *analyzeLoop) analyzeOnce(ctx context.Context) {
	t0 := time.Now()
	an, err := l.Analyzer.Analyze(ctx, t0)
	if err != nil {
		if ctx.Err() != nil { // stopping: the search gave up at once
			l.Logger.Info("dependence analysis stopped", "seconds", time.Since(t0).Seconds())
			return
		}
		l.Logger.Warn("dependence analysis failed", "err", err)
		return
	}
	secs := time.Since(t0).Seconds()
	l.Logger.Info("dependence analysis", "seq", an.Seq, "rows", an.Rows, "groups", len(an.Result.Groups),
		"marginal", len(an.Result.Marginal), "seconds", secs)
	if l.Metrics != nil {
		l.Metrics.AnalysisSeconds.Observe(secs)
		l.Metrics.AnalysisRows.Set(float64(an.Rows))
	}
	if l.Status != nil {
		if err := l.show(an); err != nil {
			l.Logger.Warn("the status page cannot show the dependence report", "seq", an.Seq, "err", err)
		}
	}
	if l.Publish == nil {
		return
	}
	err = l.Retry.Do(ctx, func() error { return l.Publish(ctx, an) }, nil, func(attempt int, err error) {
		l.Logger.Warn("publishing the report failed; retrying", "attempt", attempt+1, "err", err)
	})
	if err == nil && l.Metrics != nil {
		l.Metrics.ReportsPublished.Inc()
	}
}

// show hands the analysis to the status page, read back from the report
// record the reports topic gets (report.ReadDependence), so that the page
// shows what consumers of the topic see.
func (l *analyzeLoop) show(an *operators.Analysis) error {
	rec, err := an.Report(nil)
	if err != nil {
		return err
	}
	defer rec.Release()
	d, err := report.ReadDependence([]arrow.Record{rec})
	if err != nil {
		return err
	}
	l.Status.Analysis(an.Seq, d)
	return nil
}

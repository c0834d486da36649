package daemon

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
)

// A daemon stopping while a long dependence analysis runs does not wait
// for it: the search stops within moments and the loop returns.
func TestAnalyzeLoopStopsMidSearch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// parity of 60 features: no feature, pair or triple tells the label; 600 rows: the default search
	// tests 60 features, 1,770 pairs and 34,220 triples (minutes)
	fr, err := synth.Generate(synth.Parity, synth.Options{N: 600, P: 60, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	started := make(chan struct{})
	var once sync.Once
	s := dependence.DefaultSearchOptions()
	s.Test.Threads = 1
	s.Progress = func(p dependence.SearchProgress) {
		if p.Stage == "sets" && p.Done >= 3 {
			once.Do(func() { close(started) })
		}
	}
	an, err := operators.NewAnalyzer(operators.AnalyzeOptions{Label: "y", Task: frame.TaskClassification, Window: 600, MinRows: 100, Search: &s, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := an.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	var logs syncLog
	loop := &analyzeLoop{Analyzer: an, Poll: 5 * time.Millisecond, Retry: fastRetry, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := loop.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); loop.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("the analysis did not reach the set tests")
	}
	cancel()
	t0 := time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the analysis loop did not stop within 30 s of its context")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the loop took %v to stop", d)
	}
	if an.Latest() != nil {
		t.Error("a stopped analysis became the latest")
	}
	if !strings.Contains(logs.String(), "dependence analysis stopped") || strings.Contains(logs.String(), "failed") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// train.analysis_window (issue 30) bounds the rows the analyze stage
// analyses — 5,000 by default, never more than the training window — and
// each analysis's time and rows are metrics; a window under 2 rows is
// refused naming the key.
func TestAnalysisWindowConfig(t *testing.T) {
	c, err := ParseConfig(strings.NewReader("stages: [analyze]\ntrain: {label: y, window: 1000, min_rows: 50, analysis_window: 300}\n"), "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := DefaultConfig(); d.Train.AnalysisWindow != defaultAnalysisWindow {
		t.Errorf("default analysis_window %d", d.Train.AnalysisWindow)
	}
	bad, _ := ParseConfig(strings.NewReader("train: {analysis_window: 1}\n"), "bad.yaml")
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "train.analysis_window") {
		t.Errorf("analysis_window 1: %v", err)
	}
	pm, dm := testMetrics()
	d := &Daemon{cfg: c, dm: dm, log: slog.New(slog.NewTextHandler(&syncLog{}, nil))}
	if _, err := d.analysisStages(); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fr, err := synth.Generate(synth.XOR3, synth.Options{N: 1000, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	if _, err := d.analyzer.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	d.analyzeLoop.Publish = nil
	d.analyzeLoop.analyzeOnce(context.Background())
	an := d.analyzer.Latest()
	if an == nil || an.Rows != 300 {
		t.Fatalf("analysis %+v, want 300 rows", an)
	}
	if n := testutil.CollectAndCount(dm.AnalysisSeconds); n != 1 || testutil.ToFloat64(dm.AnalysisRows) != 300 {
		t.Errorf("forestd_analysis_seconds series %d, forestd_analysis_window_rows %v", n, testutil.ToFloat64(dm.AnalysisRows))
	}
	mfs, err := pm.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "forestd_analysis_seconds"
	}
	if !found {
		t.Error("forestd_analysis_seconds is not in the daemon's registry")
	}
}

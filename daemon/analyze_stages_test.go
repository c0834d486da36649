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

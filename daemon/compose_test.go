package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/schemas"
)

// syncLog is a slog destination safe for concurrent writers.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestComposeSelectTrainScore runs the stages of a select → train → score
// daemon in process: labelled xor3 batches (dissertation Table 6.1 iii)
// go through analyze, select and train; the training loop waits for the
// first selection, then trains a model on the selected and FDM-mapped
// columns that carries the mapping; the score stage scores raw feature
// batches with it exactly as mapping them with the select stage and
// scoring the mapped columns offline.
func TestComposeSelectTrainScore(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := dependence.DefaultSearchOptions()
	s.Test.Threads = 1
	an, err := operators.NewAnalyzer(operators.AnalyzeOptions{Label: "y", Window: 600, MinRows: 100, Every: 600, Search: &s, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed = 30, 2
	tr, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Window: 600, MinRows: 100, RetrainRows: 300, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncLog
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	models := &models{Current: operators.NewCurrent(), Metrics: func() *metrics { _, m := testMetrics(); return m }()}
	page, err := status.New(status.Options{})
	if err != nil {
		t.Fatal(err)
	}
	models.Status = page
	aloop := &analyzeLoop{Analyzer: an, Poll: 5 * time.Millisecond, Retry: fastRetry, Status: page}
	tloop := &trainLoop{Trainer: tr, Models: models, Compose: an, Poll: 5 * time.Millisecond, Retry: fastRetry, Logger: logger}
	for _, err := range []error{aloop.Init(), tloop.Init()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stages := []pipeline.Stage{&analyzeStage{Analyzer: an, Loop: aloop}, &selectStage{Analyzer: an, Passthrough: []string{"y"}, Mem: mem},
		&trainStage{Trainer: tr, Loop: tloop}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); tloop.Run(ctx) }()
	defer wg.Wait()
	defer cancel()
	train, err := synth.Generate(synth.XOR3, synth.Options{N: 600, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	rec := train.ToRecord(mem)
	defer rec.Release()
	feed := func(lo, hi int64) (selected int) {
		sl := rec.NewSlice(lo, hi)
		defer sl.Release()
		b := &pipeline.Batch{Env: &pipeline.Envelope{Topic: "training", Partition: 0, Offset: lo}, Schema: sl.Schema(), Records: []arrow.Record{sl}}
		for _, st := range stages {
			outs, next, err := st.Process(ctx, b)
			if err != nil || next != b {
				t.Fatalf("%s: %v", st.Name(), err)
			}
			for _, o := range outs {
				selected += int(o.Record.NumRows())
				o.Record.Release()
			}
		}
		return selected
	}
	// the training window is due, but nothing is selected yet: no model
	feed(0, 300)
	waitFor(t, "the training loop to wait for a selection", func() bool {
		return strings.Contains(logs.String(), "training waits for the first analysis that selects features")
	})
	if models.Current.Load() != nil {
		t.Fatal("trained before any selection")
	}
	feed(300, 600) // the analysis falls due at 600 rows
	wg.Add(1)
	go func() { defer wg.Done(); aloop.Run(ctx) }()
	waitFor(t, "a selection", func() bool { sel, _ := an.Selection(); return sel != nil })
	waitFor(t, "a composed model", func() bool { return models.Current.Load() != nil })
	m := models.Current.Load()
	// the status page shows the analysis as the reports topic has it, and
	// the model with its training rows
	ps := page.Status()
	latest := an.Latest()
	if ps.Analysis == nil || ps.Analysis.Seq != latest.Seq || len(ps.Analysis.Features) != len(latest.Names) ||
		len(ps.Analysis.Groups) != len(latest.Result.Groups) || len(ps.Analysis.Marginal()) != len(latest.Result.Marginal) {
		t.Fatalf("status page analysis %+v, analysis %+v", ps.Analysis, latest.Result)
	}
	if ps.Model == nil || ps.Model.ID != m.ID() || ps.Model.TrainingRows == nil || *ps.Model.TrainingRows != 600 {
		t.Fatalf("status page model %+v", ps.Model)
	}
	sel, _ := an.Selection()
	if !reflect.DeepEqual(m.Forest().Mapping, sel) || !slices.Equal(m.Forest().Features, sel.Names()) {
		t.Fatalf("model features %v, want the selected and mapped columns %v", m.Forest().Features, sel.Names())
	}
	if want := []string{"m0", "x2a_0", "x2a_1"}; !slices.Equal(sel.Inputs(), want) {
		t.Fatalf("selection reads %v, want %v", sel.Inputs(), want)
	}
	if !strings.Contains(logs.String(), "analysis_seq=1") {
		t.Fatalf("the trained model's log line does not name its analysis:\n%s", logs.String())
	}
	if n := feed(0, 100); n != 100 { // select now forwards reduced batches too
		t.Fatalf("select forwarded %d rows, want 100", n)
	}

	// score raw held-out batches with the score stage
	test, err := synth.Generate(synth.XOR3, synth.Options{N: 300, Seed: 77})
	if err != nil {
		t.Fatal(err)
	}
	raw := test.ToRecord(mem)
	defer raw.Release()
	ss := &scoreStage{Current: models.Current, Mem: mem}
	outs, _, err := ss.Process(ctx, &pipeline.Batch{Env: &pipeline.Envelope{Topic: "features", Pinned: ss.Pin()}, Schema: raw.Schema(), Records: []arrow.Record{raw}})
	if err != nil {
		t.Fatal(err)
	}
	defer outs[0].Record.Release()
	got := outs[0].Record.Column(outs[0].Record.Schema().FieldIndices(schemas.ColPrediction)[0]).(*array.String)
	// offline: the select stage's mapping, then the trees on the mapped columns
	mapped, err := (&operators.Analysis{Transform: m.Forest().Mapping}).Select(mem, raw.Schema(), []arrow.Record{raw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped[0].Release()
	plain := *m.Forest()
	plain.Mapping = nil
	c, err := forest.Compile(&plain)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.FeaturesFromRecords(mapped[0].Schema(), mapped, plain.Features, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Predict(fr, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 300 {
		t.Fatalf("%d predictions for 300 rows", got.Len())
	}
	right := 0
	for i := 0; i < got.Len(); i++ {
		if got.Value(i) != plain.Classes[want.Class[i]] {
			t.Fatalf("row %d: score stage %s, mapped offline %s", i, got.Value(i), plain.Classes[want.Class[i]])
		}
		if got.Value(i) == test.Classes[test.Y[i]] {
			right++
		}
	}
	if acc := float64(right) / 300; acc < 0.85 {
		t.Fatalf("held-out accuracy %.3f", acc)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

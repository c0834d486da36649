package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	modelfile "github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// driftModel is a model of 4 trunk features that keeps a reference sample
// of 1,000 of its training rows.
func driftModel(t *testing.T) *scoring.Model {
	t.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 1000, Seed: 1, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Threads = 5, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.EncodeMeta(f, modelfile.Meta{Version: 1, Reference: modelfile.SampleReference(fr, f, 1000, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// trafficBatch is n rows of the model's distribution (another seed);
// edit changes the frame first (a shift, missing values).
func trafficBatch(t *testing.T, n int, seed uint64, edit func(*frame.Frame)) arrow.Record {
	t.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, Seed: seed, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(fr)
	}
	return fr.ToRecord(memory.NewGoAllocator())
}

// TestDriftWindow: the window keeps the last rows (cutting the oldest
// batch), or those of the last duration, only the model's columns, and
// starts afresh for a model of other columns.
func TestDriftWindow(t *testing.T) {
	m := driftModel(t)
	now := time.Unix(0, 0)
	w := &driftWindow{rows: 1000, now: func() time.Time { return now }}
	var batches []arrow.Record
	for i := range 4 {
		b := trafficBatch(t, 300, uint64(10+i), nil)
		batches = append(batches, b)
		w.add(m, []arrow.Record{b}, "f/0/"+string(rune('0'+i)))
	}
	recs, rows, first, last, added := w.snapshot()
	if rows != 1000 || added != 1200 || first != "f/0/0" || last != "f/0/3" || len(recs) != 4 || recs[0].NumRows() != 100 {
		t.Fatalf("window: %d rows of %d added, %s..%s, %d records, the first of %d rows", rows, added, first, last, len(recs), recs[0].NumRows())
	}
	// the oldest kept row is row 200 of the first batch, and only the
	// model's columns are kept (not the label)
	got := recs[0].Column(0).(*array.Float32).Value(0)
	want := batches[0].Column(0).(*array.Float32).Value(200)
	if got != want || recs[0].NumCols() != int64(len(m.Columns())) {
		t.Fatalf("oldest value %v, want %v; %d columns", got, want, recs[0].NumCols())
	}
	// a duration window drops what is older
	w = &driftWindow{rows: 1000, age: time.Minute, now: func() time.Time { return now }}
	w.add(m, []arrow.Record{batches[0]}, "a")
	now = now.Add(2 * time.Minute)
	w.add(m, []arrow.Record{batches[1]}, "b")
	if _, rows, first, _, _ := w.snapshot(); rows != 300 || first != "b" {
		t.Fatalf("duration window: %d rows from %s", rows, first)
	}
	// a batch larger than the window keeps its last rows only
	w = &driftWindow{rows: 100, now: time.Now}
	w.add(m, []arrow.Record{batches[2]}, "c")
	if recs, rows, _, _, _ := w.snapshot(); rows != 100 || recs[0].Column(0).(*array.Float32).Value(0) != batches[2].Column(0).(*array.Float32).Value(200) {
		t.Fatalf("a large batch: %d rows", rows)
	}
}

// TestDriftLoop: a window of the reference's distribution finds no drift;
// a 1 sd shift of one feature is found on that feature, counted, and asks
// for a retrain; bad input — an empty window, a column with no value, a
// model without a reference — gives a report naming what was skipped, or
// none, never a panic.
func TestDriftLoop(t *testing.T) {
	m := driftModel(t)
	cur := operators.NewCurrent()
	if err := cur.Offer(m); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var retrains atomic.Int32
	dm := newDriftMetrics(prometheus.NewRegistry())
	w := &driftWindow{rows: 1000, now: time.Now}
	l := &driftLoop{Window: w, Current: cur, MinRows: 10, EveryRows: 500, Options: drift.Options{Alpha: 0.01, Seed: 1},
		Retrain: func() { retrains.Add(1) }, Metrics: dm, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Retry: fastRetry}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	// an empty window: every feature named as skipped
	rep := l.testOnce(context.Background())
	if rep == nil || rep.Error == "" || len(rep.Skipped) != len(m.Columns()) || rep.Drift {
		t.Fatalf("empty window: %+v", rep)
	}
	w.add(m, []arrow.Record{trafficBatch(t, 1000, 7, nil)}, "f/0/1")
	if !l.due(time.Now()) {
		t.Fatal("1,000 new rows and not due (every 500)")
	}
	rep = l.testOnce(context.Background())
	if rep == nil || rep.Error != "" || rep.Drift || len(rep.Features) != 4 || rep.Joint == nil || retrains.Load() != 0 {
		t.Fatalf("same distribution: %+v", rep)
	}
	if l.due(time.Now()) {
		t.Fatal("due again without new rows")
	}
	names := m.Columns()
	// feature 1 moves by one standard deviation (trunk's are 1)
	w.add(m, []arrow.Record{trafficBatch(t, 1000, 8, func(fr *frame.Frame) {
		for i := range fr.Cols[1] {
			fr.Cols[1][i]++
		}
	})}, "f/0/2")
	rep = l.testOnce(context.Background())
	if rep == nil || !rep.Drift || !rep.Retrain || retrains.Load() != 1 {
		t.Fatalf("shifted: %+v", rep)
	}
	for _, f := range rep.Features {
		if f.Drift != (f.Name == names[1]) {
			t.Errorf("feature %s: drift %v (p %v, adjusted %v)", f.Name, f.Drift, f.PValue, f.PAdjusted)
		}
	}
	if testutil.ToFloat64(dm.Detected) != 1 || testutil.ToFloat64(dm.Tests) != 3 ||
		testutil.ToFloat64(dm.PValue.WithLabelValues(names[1])) > 0.01 || !strings.Contains(logs.String(), "drift found") {
		t.Fatalf("metrics: detected %v, tests %v; log %s", testutil.ToFloat64(dm.Detected), testutil.ToFloat64(dm.Tests), logs.String())
	}
	// a column without a value in the window: skipped by name, the rest tested
	w.add(m, []arrow.Record{trafficBatch(t, 1000, 9, func(fr *frame.Frame) {
		for i := range fr.Cols[2] {
			fr.Cols[2][i] = float32(math.NaN())
		}
	})}, "f/0/3")
	rep = l.testOnce(context.Background())
	if rep == nil || rep.Error != "" || len(rep.Skipped) != 1 || rep.Skipped[0].Name != names[2] || len(rep.Features) != 3 {
		t.Fatalf("an all-missing column: %+v", rep)
	}
	// every column missing: a report that says so, naming them
	w.add(m, []arrow.Record{trafficBatch(t, 1000, 9, func(fr *frame.Frame) {
		for j := range fr.Cols {
			for i := range fr.Cols[j] {
				fr.Cols[j][i] = float32(math.NaN())
			}
		}
	})}, "f/0/4")
	if rep = l.testOnce(context.Background()); rep == nil || rep.Error == "" || len(rep.Skipped) != 4 {
		t.Fatalf("all columns missing: %+v", rep)
	}
	// a model without a reference sample: no test, said once
	plain, err := scoring.Encode(m.Forest(), 2, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.Offer(plain); err != nil {
		t.Fatal(err)
	}
	if rep := l.testOnce(context.Background()); rep != nil || !strings.Contains(logs.String(), "no reference sample") {
		t.Fatalf("a model without a reference: %+v", rep)
	}
}

// TestRetrainOnDrift: drift found retrains at once when labelled rows
// arrived since the last training, not on the same window again.
func TestRetrainOnDrift(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 1
	tr, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Window: 1000, MinRows: 50, RetrainRows: 100000, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	_, m := testMetrics()
	models := &models{Current: operators.NewCurrent(), Metrics: m}
	loop := &trainLoop{Trainer: tr, Models: models, CreatedBy: "test", Retry: fastRetry, Poll: 5 * time.Millisecond}
	stage, ctx := startTrainLoop(t, loop, m)
	rec := trafficBatch(t, 200, 3, nil)
	if _, _, err := stage.Process(ctx, batchOf(rec)); err != nil {
		t.Fatal(err)
	}
	if loop.due()(time.Now()) {
		t.Fatal("due before drift (the schedule is 100,000 rows)")
	}
	loop.retrainOnDrift()
	waitFor(t, "a retrain on drift", func() bool { return models.Current.Load() != nil })
	if got := models.Current.Load(); got.Version() != 1 || got.Reference() == nil || got.Reference().NumRows() != 200 {
		t.Fatalf("model %d with reference %v", got.Version(), got.Reference())
	}
	loop.retrainOnDrift()
	if loop.driftDue() {
		t.Fatal("drift retrains again without new rows")
	}
}

// batchOf is a pipeline batch of rec.
func batchOf(rec arrow.Record) *pipeline.Batch {
	return &pipeline.Batch{Env: &pipeline.Envelope{Topic: "t"}, Schema: rec.Schema(), Records: []arrow.Record{rec}}
}

// TestDriftConfig: the drift stage needs score, retrain_on drift needs
// the drift and train stages, and each drift key is checked by name.
func TestDriftConfig(t *testing.T) {
	if _, err := checkConfig("stages: [score, train, drift]\ntrain: {retrain_on: drift}\ndrift: {window: 5m, every: 30s}\n"); err != nil {
		t.Fatal(err)
	}
	wantConfigErrors(t, map[string]string{
		"stages: [train, drift]\n":                                       "stages: drift tests the scored traffic",
		"stages: [score, train]\ntrain: {retrain_on: drift}\n":           "train.retrain_on: drift needs",
		"train: {retrain_on: always}\n":                                  "train.retrain_on",
		"train: {reference_rows: -1}\n":                                  "train.reference_rows",
		"stages: [score, drift]\ndrift: {window: soon}\n":                `drift.window "soon" is neither`,
		"stages: [score, drift]\ndrift: {every: '0'}\n":                  `drift.every "0": a row count must be positive`,
		"stages: [score, drift]\ndrift: {alpha: 1}\n":                    "drift.alpha",
		"stages: [score, drift]\ndrift: {adjust: bonf}\n":                "drift.adjust",
		"stages: [score, drift]\ndrift: {window: '50', min_rows: 100}\n": "drift.min_rows",
		"stages: [score, drift]\ndrift: {max_rows: 1}\n":                 "drift.max_rows",
		"stages: [score, drift]\ndrift: {threads: 0}\n":                  "drift.threads",
		"stages: [score, drift]\ntopics: {drift: forestd.predictions}\n": "topics.drift",
	})
}

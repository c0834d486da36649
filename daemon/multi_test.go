package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// swissBatch returns swiss-roll rows (dRF paper §3.1) as one labelled
// batch: float32 inputs x1..x6 and float64 responses y0, y1, y2, with y1
// null on every nullEvery-th row (none when nullEvery is 0).
func swissBatch(t *testing.T, mem memory.Allocator, n int, seed uint64, nullEvery int) arrow.Record {
	t.Helper()
	in, ys, names, err := synth.GenerateMulti("swissroll", synth.Options{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rec := in.ToRecord(mem)
	defer rec.Release()
	fields, cols := slices.Clone(rec.Schema().Fields()), slices.Clone(rec.Columns())
	for k, name := range names {
		b := array.NewFloat64Builder(mem)
		for i, v := range ys[k] {
			if k == 1 && nullEvery > 0 && i%nullEvery == 0 {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		a := b.NewArray()
		b.Release()
		defer a.Release()
		fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true})
		cols = append(cols, a)
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(n))
}

// TestTrainLoopMultiOutput runs the train and score stages of a daemon
// with train.label y0,y1,y2 in process: labelled swiss-roll batches (some
// rows with a null response, skipped and counted in the metrics) make the
// loop train, install and publish a multi-output regression forest — the
// forest forest.Train learns from the same rows read with frame's Targets —
// and the score stage scores feature batches with it into one prediction
// column per target; a training batch without a response is bad input.
func TestTrainLoopMultiOutput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	targets := []string{"y0", "y1", "y2"}
	p := forest.DefaultParams(frame.TaskRegression)
	p.Trees, p.Seed, p.Threads = 8, 5, 1
	tr, err := operators.NewTrainer(operators.TrainOptions{Labels: targets, Window: 1000, MinRows: 300, RetrainRows: 300, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	_, m := testMetrics()
	models := &models{Current: operators.NewCurrent(), Metrics: m}
	published := make(chan *scoring.Model, 4)
	var log syncLog
	loop := &trainLoop{Trainer: tr, Models: models, CreatedBy: "test", Retry: fastRetry, Poll: 5 * time.Millisecond,
		Logger:  slog.New(slog.NewTextHandler(&log, nil)),
		Publish: func(ctx context.Context, md *scoring.Model) error { published <- md; return nil }}
	if err := loop.Init(); err != nil {
		t.Fatal(err)
	}
	stage := &trainStage{Trainer: tr, Loop: loop, Metrics: m}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// two messages of 200 rows, every 10th row of the first without y1:
	// 380 rows in the window, one training after the second
	batches := []arrow.Record{swissBatch(t, mem, 200, 1, 10), swissBatch(t, mem, 200, 2, 0)}
	defer releaseRecords(batches)
	for _, rec := range batches {
		b := &pipeline.Batch{Env: &pipeline.Envelope{Topic: "t"}, Schema: rec.Schema(), Records: []arrow.Record{rec}}
		if _, next, err := stage.Process(ctx, b); err != nil || next != b {
			t.Fatalf("train stage: %v", err)
		}
	}
	if v := testutil.ToFloat64(m.TrainingSkipped); v != 20 {
		t.Fatalf("skipped-rows metric %v, want 20", v)
	}
	go loop.Run(ctx)
	var md *scoring.Model
	select {
	case md = <-published:
	case <-time.After(20 * time.Second):
		t.Fatalf("no model trained; log:\n%s", log.String())
	}
	if !slices.Equal(md.Targets(), targets) || models.Current.Load() != md || md.Version() != 1 {
		t.Fatalf("model: targets %v, installed %v, version %d", md.Targets(), models.Current.Load() == md, md.Version())
	}
	if !strings.Contains(log.String(), "targets=y0,y1,y2") {
		t.Errorf("the training log does not name the targets:\n%s", log.String())
	}
	// offline: the same rows read with Targets, trained with forest.Train
	fr, err := frame.FromRecords(batches[0].Schema(), batches, frame.Options{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	if fr.NRows != 380 || fr.SkippedLabels != 20 {
		t.Fatalf("offline frame: %d rows, %d skipped", fr.NRows, fr.SkippedLabels)
	}
	p.Criterion = "mse"
	offline, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	om, err := scoring.Encode(offline, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	if om.ID() != md.ID() {
		t.Fatalf("daemon model %s, forest.Train on the same rows %s", md.ID(), om.ID())
	}
	// score: one column per target, as the offline model predicts
	ss := &scoreStage{Current: models.Current, Metrics: m, Mem: mem}
	test, ys, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 50, Seed: 9})
	if err != nil || len(ys) != 3 {
		t.Fatal(err)
	}
	feat := test.ToRecord(mem)
	defer feat.Release()
	env := &pipeline.Envelope{Topic: "forestd.features", Partition: 0, Offset: 3}
	outs, _, err := ss.Process(ctx, &pipeline.Batch{Env: env, Schema: feat.Schema(), Records: []arrow.Record{feat}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, o := range outs {
			o.Record.Release()
		}
	}()
	oc, err := forest.Compile(offline)
	if err != nil {
		t.Fatal(err)
	}
	want, err := oc.PredictValues(test, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || !outs[0].Record.Schema().Equal(schemas.MultiPredictions(schemas.PredictionSpec{ModelID: md.ID(), ModelVersion: 1}, targets)) {
		t.Fatalf("score outputs %v", outs)
	}
	rec := outs[0].Record
	for r := range targets {
		col := rec.Column(4 + r).(*array.Float64)
		for i := 0; i < 50; i++ {
			if col.Value(i) != want[i*3+r] {
				t.Fatalf("row %d %s: scored %v, offline %v", i, targets[r], col.Value(i), want[i*3+r])
			}
		}
	}
	// a training batch without y2 is bad input
	noY2 := array.NewRecord(arrow.NewSchema(batches[1].Schema().Fields()[:8], nil), batches[1].Columns()[:8], 200)
	defer noY2.Release()
	_, _, err = stage.Process(ctx, &pipeline.Batch{Env: &pipeline.Envelope{}, Schema: noY2.Schema(), Records: []arrow.Record{noY2}})
	if !errors.Is(err, pipeline.ErrBadInput) || !strings.Contains(err.Error(), "y2") {
		t.Fatalf("batch without y2: %v", err)
	}
}

func releaseRecords(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	modelfile "github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// TestTrainLoop: labelled batches through the train stage make the loop
// train, install and publish models with increasing versions; a failing
// publication is retried; a bad batch is quarantined as bad input.
// TestTrainLoopCountsFailures: a retrain that fails (here a window of one
// class: nothing to learn) is counted in forestd_training_errors_total,
// and no model goes live.
func TestTrainLoopCountsFailures(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 1
	tr, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Task: frame.TaskClassification, Window: 1000, MinRows: 50, RetrainRows: 100, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	_, m := testMetrics()
	models := &models{Current: operators.NewCurrent(), Metrics: m}
	var logs syncLog
	loop := &trainLoop{Trainer: tr, Models: models, CreatedBy: "test", Retry: fastRetry, Poll: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Publish: func(context.Context, *scoring.Model) error { return nil }}
	stage, ctx := startTrainLoop(t, loop, m)
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: 1, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range fr.Y {
		fr.Y[i] = 0
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	b := &pipeline.Batch{Env: &pipeline.Envelope{Topic: "t"}, Schema: rec.Schema(), Records: []arrow.Record{rec}}
	if _, _, err := stage.Process(ctx, b); err != nil {
		t.Fatalf("train stage: %v", err)
	}
	waitTrainingError(t, m, &logs)
	if !strings.Contains(logs.String(), "training failed") || models.Current.Load() != nil || testutil.ToFloat64(m.ModelsTrained) != 0 {
		t.Fatalf("after a failed retrain: model %v, trained %v, log %s", models.Current.Load(), testutil.ToFloat64(m.ModelsTrained), logs.String())
	}
}

// startTrainLoop starts loop (stopped when the test ends) and returns the
// train stage feeding its trainer, and the context it runs under.
func startTrainLoop(t *testing.T, loop *trainLoop, m *metrics) (*trainStage, context.Context) {
	t.Helper()
	if err := loop.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go loop.Run(ctx)
	return &trainStage{Trainer: loop.Trainer, Loop: loop, Metrics: m}, ctx
}

func TestTrainLoop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 1
	tr, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Window: 1000, MinRows: 50, RetrainRows: 200, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	_, m := testMetrics()
	models := &models{Current: operators.NewCurrent(), Metrics: m}
	var mu sync.Mutex
	var published []int64
	fails := 2
	loop := &trainLoop{Trainer: tr, Models: models, CreatedBy: "test", Retry: fastRetry, Poll: 5 * time.Millisecond,
		Publish: func(ctx context.Context, md *scoring.Model) error {
			mu.Lock()
			defer mu.Unlock()
			if fails > 0 {
				fails--
				return errors.New("broker down")
			}
			published = append(published, md.Version())
			return nil
		}}
	stage, ctx := startTrainLoop(t, loop, m)
	feed := func(seed uint64) {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: seed, P: 4})
		if err != nil {
			t.Fatal(err)
		}
		rec := fr.ToRecord(mem)
		defer rec.Release()
		b := &pipeline.Batch{Env: &pipeline.Envelope{Topic: "t"}, Schema: rec.Schema(), Records: []arrow.Record{rec}}
		if _, next, err := stage.Process(ctx, b); err != nil || next != b {
			t.Fatalf("train stage: %v", err)
		}
	}
	waitVersion := func(v int64) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			n := len(published)
			mu.Unlock()
			if cur := models.Current.Load(); cur != nil && cur.Version() == v && n >= int(v) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("model version %d not trained and published (published %v)", v, published)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	feed(1)
	waitVersion(1)
	feed(2)
	waitVersion(2)
	mu.Lock()
	if len(published) != 2 || published[0] != 1 || published[1] != 2 {
		t.Fatalf("published %v", published)
	}
	mu.Unlock()
	if v := testutil.ToFloat64(m.ModelVersion); v != 2 {
		t.Fatalf("model version metric %v", v)
	}
	if v := testutil.ToFloat64(m.ModelsTrained); v != 2 {
		t.Fatalf("models trained %v", v)
	}
	// a batch without the label is bad input
	fr, _ := synth.Generate(synth.Trunk, synth.Options{N: 10, Seed: 3, P: 4})
	fr.LabelName = ""
	fr.Y, fr.Classes, fr.Task = nil, nil, frame.TaskAuto
	rec := fr.ToRecord(mem)
	defer rec.Release()
	_, _, err = stage.Process(ctx, &pipeline.Batch{Env: &pipeline.Envelope{}, Schema: rec.Schema(), Records: []arrow.Record{rec}})
	if !errors.Is(err, pipeline.ErrBadInput) {
		t.Fatalf("unlabelled batch: %v", err)
	}
}

// TestScoreStageProbs: the score stage writes the probabilities
// score.probs chooses (the top 2 classes, or none) and the log of a swap
// names them; without the setting a few-class model keeps a prob_<class>
// column per class.
func TestScoreStageProbs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 300, Seed: 1, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	// three classes: the trunk's two, the second split by x2's sign
	fr.Classes = append(fr.Classes, "third")
	for i := range fr.Y {
		if fr.Y[i] == 1 && fr.Cols[1][i] > 0 {
			fr.Y[i] = 2
		}
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	top2 := scoring.ProbsTop(2)
	ms := &models{Current: operators.NewCurrent(), Logger: slog.New(slog.NewTextHandler(&logged, nil)), Probs: &top2}
	if !ms.Offer(m, "test") {
		t.Fatal("model not installed")
	}
	if !strings.Contains(logged.String(), "classes=3 probs=top2") {
		t.Errorf("swap log %q does not name the probabilities", logged.String())
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	for probs, want := range map[scoring.Probs]string{
		scoring.ProbsTop(2):  "[model_id model_version source row y prediction top1_class top1_prob top2_class top2_prob]",
		scoring.ProbsNone:    "[model_id model_version source row y prediction]",
		scoring.ProbsAuto:    "[model_id model_version source row y prediction prob_" + strings.Join(fr.Classes, " prob_") + "]",
		scoring.ProbsTop(50): "[model_id model_version source row y prediction top1_class top1_prob top2_class top2_prob top3_class top3_prob]",
	} {
		st := &scoreStage{Current: ms.Current, Key: "y", Probs: probs, Mem: mem}
		outs, _, err := st.Process(context.Background(), &pipeline.Batch{Env: &pipeline.Envelope{Topic: "f"}, Schema: rec.Schema(), Records: []arrow.Record{rec}})
		if err != nil {
			t.Fatalf("%q: %v", probs, err)
		}
		var names []string
		for _, f := range outs[0].Record.Schema().Fields() {
			names = append(names, f.Name)
		}
		if fmt.Sprint(names) != want {
			t.Errorf("%q: columns %v, want %s", probs, names, want)
		}
		for _, o := range outs {
			o.Record.Release()
		}
	}
}

// TestTrainLoopVersionLimit (issue 35, item 3): with a live model at the
// last version (model.MaxVersion) a retrain is refused — counted in
// forestd_training_errors_total and logged with the limit — instead of
// writing version+1, which used to wrap to −2⁶³ and freeze retraining.
func TestTrainLoopVersionLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 5, 1
	tr, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Task: frame.TaskClassification, Window: 1000, MinRows: 50, RetrainRows: 100, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	_, m := testMetrics()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: 1, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	models := &models{Current: operators.NewCurrent(), Metrics: m}
	if err := models.Current.Offer(model(t, fr, modelfile.MaxVersion)); err != nil {
		t.Fatal(err)
	}
	var logs syncLog
	loop := &trainLoop{Trainer: tr, Models: models, CreatedBy: "test", Retry: fastRetry, Poll: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Publish: func(context.Context, *scoring.Model) error { return nil }}
	stage, ctx := startTrainLoop(t, loop, m)
	rec := fr.ToRecord(mem)
	defer rec.Release()
	b := &pipeline.Batch{Env: &pipeline.Envelope{Topic: "t"}, Schema: rec.Schema(), Records: []arrow.Record{rec}}
	if _, _, err := stage.Process(ctx, b); err != nil {
		t.Fatalf("train stage: %v", err)
	}
	waitTrainingError(t, m, &logs)
	if cur := models.Current.Load(); cur.Version() != modelfile.MaxVersion || testutil.ToFloat64(m.ModelsTrained) != 0 ||
		!strings.Contains(logs.String(), modelfile.ErrVersionLimit.Error()) {
		t.Fatalf("at the version limit: live version %d, trained %v, log %s", cur.Version(), testutil.ToFloat64(m.ModelsTrained), logs.String())
	}
}

// waitTrainingError waits up to 10 s for the training loop to count a
// failed retrain.
func waitTrainingError(t *testing.T, m *metrics, logs *syncLog) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(m.TrainingErrors) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no training error counted; log: %s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

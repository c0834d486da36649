package cli

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// TestServeMultiLabelConfig: --label lists several columns for one
// multi-output target (the daemon package tests the rules and the
// trainer); a classification task with several labels is a usage error.
func TestServeMultiLabelConfig(t *testing.T) {
	cfg, _, err := serveConfigFromArgs([]string{"--brokers", "127.0.0.1:1", "--label", "a,b"}, Env{})
	if err != nil || !slices.Equal(cfg.Train.Labels(), []string{"a", "b"}) {
		t.Fatalf("--label a,b: %v %v", err, cfg.Train.Labels())
	}
	code, _, errs := run(t, "serve", "--label", "y0,y1", "--task", "classification")
	if code != ExitUsage || !strings.Contains(errs, "train.task classification takes one label") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("--label y0,y1 --task classification: exit %d, stderr %q", code, errs)
	}
}

// TestServeMultiOutput runs `forestd serve --stages train,score --label
// y0,y1,y2` against a broker started by the test: swiss-roll rows
// (dRF paper §3.1, three responses) on the training topic make the daemon
// train a multi-output regression forest and publish it on the model
// topic, with its importances; feature batches are then scored into one
// prediction column per target, equal to what the published model
// predicts offline for the same rows.
func TestServeMultiOutput(t *testing.T) {
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.arrows"), filepath.Join(dir, "test.arrows")
	mustRun(t, "gen", "swissroll", "--n", "500", "--seed", "3", "--out", train)
	mustRun(t, "gen", "swissroll", "--n", "40", "--seed", "4", "--out", test)
	co, stderr, done := startServe(t, "--stages", "train,score", "--label", "y0,y1,y2",
		"--window", "1000", "--min-rows", "400", "--retrain-every", "400", "--trees", "10",
		"--output-format", "json", "--http", "127.0.0.1:0", "--max-runtime", "10s", "--session-timeout", "2s",
		"--partitions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	waitForTopic(ctx, t, co, "forestd.features", stderr)
	rawTrain, err := os.ReadFile(train)
	if err != nil {
		t.Fatal(err)
	}
	rawTest, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: co, Topics: map[string]string{"t": "forestd.training", "f": "forestd.features"}})
	if err != nil {
		t.Fatal(err)
	}
	// the features message waits in the score stage for the first model
	if err := sink.Write(ctx, []pipeline.Output{{Stream: "t", Raw: rawTrain}, {Stream: "f", Key: []byte("test"), Raw: rawTest}}); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	var mu sync.Mutex
	var preds, imps []*pipeline.Envelope
	var published []byte
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	go kafka.Tail(tctx, co, "forestd.predictions", func(e *pipeline.Envelope) { mu.Lock(); preds = append(preds, e); mu.Unlock() })
	go kafka.Tail(tctx, co, "forestd.importances", func(e *pipeline.Envelope) { mu.Lock(); imps = append(imps, e); mu.Unlock() })
	bus, err := kafka.NewModelBus(kafka.ModelBusOptions{Client: co, Topic: "forestd.models"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	go bus.Follow(tctx, func(ref kafka.ModelRef, data []byte) bool { mu.Lock(); published = data; mu.Unlock(); return true })
	for {
		mu.Lock()
		n, m, got := len(preds), len(imps), published != nil
		mu.Unlock()
		if n >= 1 && m >= 1 && got {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d prediction and %d importance messages, model published %v; log:\n%s", n, m, got, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	tcancel()
	mu.Lock()
	p, data := preds[0], published
	mu.Unlock()
	m, err := scoring.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Targets(), []string{"y0", "y1", "y2"}) || m.Version() != 1 || m.NumTrees() != 10 {
		t.Fatalf("published model: targets %v, version %d, %d trees", m.Targets(), m.Version(), m.NumTrees())
	}
	if id, _ := p.Header(daemon.HeaderModelID); string(id) != m.ID() {
		t.Fatalf("predictions by model %q, published %q", id, m.ID())
	}
	rec, err := codec.DecodeJSON(p.Value, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var cols []string
	for _, f := range rec.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	if rec.NumRows() != 40 || !slices.Equal(cols, []string{"model_id", "model_version", "source", "row", "y0", "y1", "y2"}) {
		t.Fatalf("%d predictions for 40 rows, columns %v", rec.NumRows(), cols)
	}
	// offline: the published model on the same rows
	schema, recs, err := files.ReadFile(test, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.FeaturesFromRecords(schema, recs, m.Forest().Features, nil)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := model.DecodeBytes(m.Bytes()) // with its trees
	if err != nil {
		t.Fatal(err)
	}
	c, err := forest.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.PredictValues(fr, 1)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		col := rec.Column(4 + r)
		for i := 0; i < int(rec.NumRows()); i++ {
			g := int(jsonFloat(t, rec.Column(3), i))
			if v := jsonFloat(t, col, i); math.Abs(v-want[g*3+r]) > 1e-9*math.Max(1, math.Abs(want[g*3+r])) {
				t.Fatalf("row %d y%d: daemon %v, published model offline %v", g, r, v, want[g*3+r])
			}
		}
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"model trained", "targets=y0,y1,y2", "model hot-swapped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// jsonFloat reads value i of a numeric column decoded from JSON.
func jsonFloat(t *testing.T, a arrow.Array, i int) float64 {
	t.Helper()
	switch c := a.(type) {
	case *array.Float64:
		return c.Value(i)
	case *array.Int64:
		return float64(c.Value(i))
	}
	t.Fatalf("prediction column of type %v", a.DataType())
	return 0
}

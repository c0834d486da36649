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

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
)

// multiConfig trains one multi-output regression forest on three labels.
const multiConfig = `
stages: [train, score]
train: {label: 'y0, y1,y2', exclude: [id], window: 600, window_kind: reservoir, min_rows: 200, retrain_every: "400", forest: sporf, task: regression}
`

// TestServeMultiLabelConfig: train.label lists several columns (spaces
// around names trimmed) and the trainer learns them as one multi-output
// target, from YAML and from --label; a single label is unchanged; empty
// or repeated names, names that are also features or excluded, a
// classification task, the fdm and drf kinds and the analyze and select
// stages are refused with the key at fault.
func TestServeMultiLabelConfig(t *testing.T) {
	c, err := parseServeConfig(strings.NewReader(multiConfig), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	tr, err := (&daemon{cfg: c}).newTrainer()
	if err != nil {
		t.Fatal(err)
	}
	if o := tr.Options(); o.Label != "" || !slices.Equal(o.Labels, []string{"y0", "y1", "y2"}) || o.Params.Forest != "sporf" {
		t.Fatalf("trainer options %+v", o)
	}
	for _, args := range [][]string{{"--label", "a,b"}, {"--label", "y"}, {"--label", "a,b", "--stages", "score"}} {
		cfg, _, err := serveConfigFromArgs(append([]string{"--brokers", "127.0.0.1:1"}, args...), Env{})
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		tr, err := (&daemon{cfg: cfg}).newTrainer()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		o := tr.Options()
		if want := strings.Split(args[1], ","); len(want) > 1 && !slices.Equal(o.Labels, want) || len(want) == 1 && (o.Label != "y" || o.Labels != nil) {
			t.Fatalf("%v: trainer label %q labels %q", args, o.Label, o.Labels)
		}
	}
	invalid := map[string]string{
		"train: {label: 'a,,b'}\n":                                "train.label: \"a,,b\" has an empty column name",
		"train: {label: 'a,b,'}\n":                                "empty column name",
		"train: {label: ','}\n":                                   "empty column name",
		"train: {label: 'a,b, a'}\n":                              `names column "a" twice`,
		"train: {label: 'a,b', features: [x, b]}\n":               `column "b" is also listed in train.features`,
		"train: {label: 'a,b', exclude: [id, a]}\n":               `column "a" is also listed in train.exclude`,
		"train: {label: 'a,b', task: classification}\n":           "train.task classification takes one label",
		"train: {label: 'a,b', forest: fdm}\n":                    "train.forest fdm learns one label",
		"train: {label: 'a,b', forest: drf}\n":                    "train.forest drf is not a training kind of the daemon",
		"stages: [train, analyze]\ntrain: {label: 'a,b'}\n":       "the analyze and select stages analyse one class label",
		"stages: [select, train, score]\ntrain: {label: 'a,b'}\n": "the analyze and select stages analyse one class label",
	}
	wantConfigErrors(t, invalid)
	// a score-only daemon does not read train.label
	c, err = parseServeConfig(strings.NewReader("stages: [score]\ntrain: {label: 'a,,b'}\n"), "c.yaml")
	if err != nil || c.validate() != nil {
		t.Fatalf("score-only daemon with an unused bad train.label: %v %v", err, c.validate())
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
	go bus.Follow(tctx, func(ref kafka.ModelRef, data []byte) { mu.Lock(); published = data; mu.Unlock() })
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
	m, err := operators.DecodeModel(data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Forest.Targets, []string{"y0", "y1", "y2"}) || m.Multi == nil || m.Meta.Version != 1 || len(m.Forest.Trees) != 10 {
		t.Fatalf("published model: targets %v, multi %v, version %d, %d trees", m.Forest.Targets, m.Multi != nil, m.Meta.Version, len(m.Forest.Trees))
	}
	if id, _ := p.Header(pipeline.HeaderModelID); string(id) != m.Meta.ID {
		t.Fatalf("predictions by model %q, published %q", id, m.Meta.ID)
	}
	rec, err := kafka.DecodeJSON(p.Value, memory.DefaultAllocator)
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
	fr, err := frame.FeaturesFromRecords(schema, recs, m.Forest.Features, nil)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Multi.PredictValues(fr, 1)
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

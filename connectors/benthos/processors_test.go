package benthos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// breastCancer is the data set, a model trained on it and its file.
func breastCancer(t *testing.T, dir string) (arrow.Record, *scoring.Model, string) {
	rec := readData(t, "breast_cancer.parquet")
	t.Cleanup(rec.Release)
	m := trainModel(t, rec, "label", frame.TaskClassification, 20, 1, 1)
	path := filepath.Join(dir, "bc.model")
	writeModel(t, path, m)
	return rec, m, path
}

// TestScoreJSONBatch: one batch of 569 JSON rows plus malformed messages
// (a string feature — in the first message, so it cannot fix the column's
// kind for the rest —, a missing feature, non-JSON, two objects, a nested
// value): one output per input in order, every good row scored as
// scoring.Model.Score scores the same rows, its own members untouched, and
// each bad message flagged with its reason and left as it was.
func TestScoreJSONBatch(t *testing.T) {
	rec, m, path := breastCancer(t, t.TempDir())
	ref := predictions(t, m, rec)
	defer ref.Release()
	s := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q}", path))
	rows := jsonRows(t, rec)
	bad := map[int][]byte{
		0:   []byte(`{"mean_radius": "abc", "mean_texture": 1}`),
		100: []byte(strings.Replace(string(rows[5]), `"worst_symmetry":`, `"other":`, 1)),
		200: []byte(`mean_radius=3`),
		300: []byte(string(rows[1]) + "\n" + string(rows[2])),
		400: []byte(strings.Replace(string(rows[7]), `"mean_area":`, `"mean_area":[1],"x":`, 1)),
	}
	reasons := map[int]string{0: `column "mean_radius": a string where a number is expected`, 100: `no key "worst_symmetry"`,
		200: "neither an Arrow IPC stream", 300: "more than one object", 400: "nested objects"}
	var msgs [][]byte
	var rowOf []int // data row of each message, -1 for a bad one
	for i, row := range rows {
		if b, ok := bad[i]; ok {
			msgs, rowOf = append(msgs, b), append(rowOf, -1)
		}
		msgs, rowOf = append(msgs, row), append(rowOf, i)
	}
	out := s.process(t, msgs...)
	if len(out) != len(msgs) {
		t.Fatalf("%d outputs for %d messages", len(out), len(msgs))
	}
	pred := column(t, ref, "prediction").(*array.String)
	p0 := column(t, ref, "prob_0").(*array.Float32)
	p1 := column(t, ref, "prob_1").(*array.Float32)
	nbad := 0
	for k, g := range out {
		i := rowOf[k]
		if i < 0 {
			nbad++
			var reason string
			for b, value := range bad {
				if string(msgs[k]) == string(value) {
					reason = reasons[b]
				}
			}
			if g.err == nil || !strings.Contains(g.err.Error(), reason) || strings.Contains(g.err.Error(), "\n") {
				t.Fatalf("message %d (bad): error %v, want %q", k, g.err, reason)
			}
			if string(g.content) != string(msgs[k]) {
				t.Fatalf("message %d (bad) changed: %s", k, g.content)
			}
			continue
		}
		if g.err != nil {
			t.Fatalf("row %d: %v", i, g.err)
		}
		o := g.object(t)
		if o["prediction"] != pred.Value(i) || o["model_id"] != m.ID() || o["model_version"] != json.Number("1") {
			t.Fatalf("row %d: %v, want prediction %s", i, o, pred.Value(i))
		}
		for c, want := range map[string]float32{"prob_0": p0.Value(i), "prob_1": p1.Value(i)} {
			v, err := strconv.ParseFloat(string(o[c].(json.Number)), 32)
			if err != nil || float32(v) != want {
				t.Fatalf("row %d: %s = %v, want %v", i, c, o[c], want)
			}
		}
		var in map[string]any
		_ = json.Unmarshal(rows[i], &in)
		for key := range in {
			if fmt.Sprint(o[key]) != fmt.Sprint(json.Number(fmt.Sprint(in[key]))) && o[key] != in[key] {
				t.Fatalf("row %d: member %s changed: %v → %v", i, key, in[key], o[key])
			}
		}
		if g.meta[MetaModelVersion] != int64(1) || g.meta[MetaModelID] != m.ID() {
			t.Fatalf("row %d: metadata %v", i, g.meta)
		}
	}
	if nbad != len(bad) {
		t.Fatalf("%d bad messages, want %d", nbad, len(bad))
	}
}

// TestScoreArrow: the Arrow IPC messages of a batch (scored together, one
// Model.Score call per schema) come back as prediction records of forestd's
// schema with the kept column, numbered from row 0 per message with the
// message's own source (here its index in the batch), equal to
// scoring.Model.Score on each message alone; a message without a feature
// and a truncated stream are flagged while the others are scored.
func TestScoreArrow(t *testing.T) {
	rec, m, path := breastCancer(t, t.TempDir())
	s := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q, keep: [label], source: '${! batch_index() }'}", path))
	var msgs [][]byte
	for lo := int64(0); lo < rec.NumRows(); lo += 100 {
		sl := rec.NewSlice(lo, min(lo+100, rec.NumRows()))
		msgs = append(msgs, arrowMessage(t, sl))
		sl.Release()
	}
	noFeature := array.NewRecord(arrow.NewSchema(rec.Schema().Fields()[1:], nil), rec.Columns()[1:], rec.NumRows())
	defer noFeature.Release()
	msgs = append(msgs, arrowMessage(t, noFeature), msgs[0][:len(msgs[0])/2])
	out := s.process(t, msgs...)
	row := int64(0)
	for k, g := range out[:len(out)-2] {
		if g.err != nil {
			t.Fatalf("message %d: %v", k, g.err)
		}
		schema, recs, err := codec.Decode(g.content, "", memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := m.PredictionSchema(rec.Schema(), scoring.Options{Keep: []string{"label"}})
		if !schema.Equal(want) || len(recs) != 1 {
			t.Fatalf("message %d: schema %v, want %v", k, schema, want)
		}
		n := recs[0].NumRows()
		in := rec.NewSlice(row, row+n)
		ref, err := m.Score([]arrow.Record{in}, scoring.Options{Keep: []string{"label"}, Source: fmt.Sprint(k), Threads: 1})
		in.Release()
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < int(ref[0].NumCols()); j++ {
			if !array.Equal(recs[0].Column(j), ref[0].Column(j)) {
				t.Fatalf("message %d: column %s differs from Model.Score on the message alone: %v vs %v", k, ref[0].Schema().Field(j).Name, recs[0].Column(j), ref[0].Column(j))
			}
		}
		release(ref)
		release(recs)
		row += n
	}
	if row != rec.NumRows() {
		t.Fatalf("%d rows scored", row)
	}
	if e := out[len(out)-2].err; e == nil || !strings.Contains(e.Error(), "missing feature column") {
		t.Fatalf("message without a feature: %v", e)
	}
	if e := out[len(out)-1].err; e == nil {
		t.Fatal("truncated Arrow stream scored")
	}
}

// TestScoreResultField: predictions under result_field; without it, a
// message whose members are named like prediction columns gets them
// replaced (Benthos' structured form), never duplicated.
func TestScoreResultField(t *testing.T) {
	rec, m, path := breastCancer(t, t.TempDir())
	row := jsonRows(t, rec)[0]
	s := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q, result_field: forestd}", path))
	o := s.process(t, row)[0].object(t)
	inner, ok := o["forestd"].(map[string]any)
	if !ok || inner["model_id"] != m.ID() || o["mean_radius"] == nil || o["prediction"] != nil {
		t.Fatalf("result_field: %v", o)
	}
	clash := []byte(strings.Replace(string(row), "{", `{"prediction":"old","model_version":0,`, 1))
	s2 := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q}", path))
	g := s2.process(t, clash)[0]
	if strings.Count(string(g.content), `"prediction"`) != 1 || strings.Contains(string(g.content), `"old"`) {
		t.Fatalf("clashing members: %s", g.content)
	}
	if o := g.object(t); o["model_version"] != json.Number("1") {
		t.Fatalf("clashing members: %v", o)
	}
}

// TestScoreOutputClashes: forestd_score refuses settings under which the
// predictions would silently replace an input — at start a result_field
// that is also a keep column; at every load of the model file (at start,
// and at a reload, where the current model keeps scoring) a result_field
// the model reads, a column the model reads named like a prediction
// member added at the root, and a keep column named like a target — each
// with an error naming the column.
func TestScoreOutputClashes(t *testing.T) {
	dir := t.TempDir()
	rec, _, path := breastCancer(t, dir)
	start := func(yaml string) (*scoreProc, error) {
		t.Helper()
		conf, err := scoreSpec().ParseYAML(yaml, nil) // no lint: the constructor's own checks
		if err != nil {
			t.Fatal(err)
		}
		p, err := newScoreProc(conf, service.MockResources())
		if err == nil {
			t.Cleanup(func() { p.Close(context.Background()) })
		}
		return p, err
	}
	refused := func(yaml, want string) {
		t.Helper()
		if _, err := start(yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", yaml, err, want)
		}
	}
	refused(fmt.Sprintf(`{model: %q, keep: [id], result_field: id}`, path), `result_field "id" is also a keep column`)
	refused(fmt.Sprintf(`{model: %q, result_field: mean_radius}`, path), `result_field "mean_radius" is a column the model reads`)

	// a reload to a model that reads the result_field is refused
	other := filepath.Join(dir, "other.model")
	writeModel(t, other, trainWith(t, rec, frame.Options{Label: "label", Task: frame.TaskClassification, Exclude: []string{"mean_radius"}}, 5, 1, 1))
	p, err := start(fmt.Sprintf(`{model: %q, result_field: mean_radius, reload_interval: 1h}`, other))
	if err != nil {
		t.Fatal(err)
	}
	v1 := p.file.cur.Load()
	writeModel(t, other, trainWith(t, rec, frame.Options{Label: "label", Task: frame.TaskClassification}, 5, 1, 2))
	if _, err := p.file.poll(); err == nil || !strings.Contains(err.Error(), `result_field "mean_radius" is a column the model reads`) {
		t.Fatalf("reload to a model reading mean_radius: %v", err)
	}
	if p.file.cur.Load() != v1 {
		t.Fatal("the refused model replaced the current one")
	}

	// predictions at the root, and a feature named like one of them
	f := slices.Clone(rec.Schema().Fields())
	f[slices.IndexFunc(f, func(f arrow.Field) bool { return f.Name == "mean_radius" })].Name = "prediction"
	renamed := array.NewRecord(arrow.NewSchema(f, nil), rec.Columns(), rec.NumRows())
	defer renamed.Release()
	root := filepath.Join(dir, "root.model")
	writeModel(t, root, trainWith(t, renamed, frame.Options{Label: "label", Task: frame.TaskClassification}, 5, 1, 1))
	refused(fmt.Sprintf(`{model: %q}`, root), `the model reads a column "prediction", which its predictions, added at the root of each JSON message, would replace: set result_field`)
	if _, err := start(fmt.Sprintf(`{model: %q, result_field: forestd}`, root)); err != nil {
		t.Fatalf("under a result_field: %v", err)
	}
	// a feature named like a member of the top classes clashes with probs
	// top<k> only, and prob_<class> with all only
	f = slices.Clone(rec.Schema().Fields())
	f[slices.IndexFunc(f, func(f arrow.Field) bool { return f.Name == "mean_radius" })].Name = "top2_prob"
	f[slices.IndexFunc(f, func(f arrow.Field) bool { return f.Name == "mean_texture" })].Name = "prob_1"
	renamed2 := array.NewRecord(arrow.NewSchema(f, nil), rec.Columns(), rec.NumRows())
	defer renamed2.Release()
	topName := filepath.Join(dir, "top.model")
	writeModel(t, topName, trainWith(t, renamed2, frame.Options{Label: "label", Task: frame.TaskClassification}, 5, 1, 1))
	refused(fmt.Sprintf(`{model: %q, probs: top2}`, topName), `the model reads a column "top2_prob"`)
	refused(fmt.Sprintf(`{model: %q, probs: all}`, topName), `the model reads a column "prob_1"`)
	for _, ok := range []string{"top1", "none"} {
		if _, err := start(fmt.Sprintf(`{model: %q, probs: %s}`, topName, ok)); err != nil {
			t.Errorf("probs %s: %v", ok, err)
		}
	}
	refused(fmt.Sprintf(`{model: %q, probs: top0}`, path), `forestd_score: probs: "top0" is not auto, all, none or top<k>`)
	refused(fmt.Sprintf(`{model: %q, keep: [top1_class]}`, path), `keep: column "top1_class" is named like a prediction column`)

	// a kept column named like a target of a multi-output model
	multi := filepath.Join(dir, "multi.model")
	writeModel(t, multi, trainWith(t, rec, frame.Options{Targets: []string{"mean_radius", "mean_texture"}, Exclude: []string{"label"}}, 5, 1, 1))
	refused(fmt.Sprintf(`{model: %q, keep: [mean_texture], result_field: forestd}`, multi), `keep: column "mean_texture" is named like a predicted column`)
}

// TestScoreHotSwap: batches flow on two pipeline threads while the model
// file is replaced — first by a half-written file in place (ignored), then
// by version 2 through a rename, then by an older version 1 (refused):
// every message is scored, versions never go back, version 2 arrives, and
// each message's predictions are those of the version it names.
func TestScoreHotSwap(t *testing.T) {
	dir := t.TempDir()
	rec, m1, path := breastCancer(t, dir)
	m2 := trainModel(t, rec, "label", frame.TaskClassification, 20, 2, 2)
	old := trainModel(t, rec, "label", frame.TaskClassification, 20, 3, 1)
	refs := map[int64]*array.String{}
	for _, m := range []*scoring.Model{m1, m2} {
		p := predictions(t, m, rec)
		defer p.Release()
		refs[m.Version()] = column(t, p, "prediction").(*array.String)
	}
	s := startStream(t, 2, fmt.Sprintf("forestd_score: {model: %q, reload_interval: 10ms}", path))
	rows := jsonRows(t, rec)[:200]
	var mu sync.Mutex
	var versions []int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				out := s.process(t, rows...)
				last := int64(0)
				for i, g := range out {
					if g.err != nil {
						t.Errorf("row %d: %v", i, g.err)
						return
					}
					o := g.object(t)
					v, _ := o["model_version"].(json.Number).Int64()
					if v < last {
						t.Errorf("version %d after %d within one batch", v, last)
					}
					last = v
					if o["prediction"] != refs[v].Value(i) {
						t.Errorf("row %d: prediction %v, version %d predicts %s", i, o["prediction"], v, refs[v].Value(i))
						return
					}
				}
				mu.Lock()
				versions = append(versions, last)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	mustWrite(t, path, m2.Bytes()[:len(m2.Bytes())/2]) // half written, in place
	time.Sleep(100 * time.Millisecond)
	writeModel(t, path, m2)
	time.Sleep(200 * time.Millisecond)
	writeModel(t, path, old)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(versions) < 4 || versions[len(versions)-1] != 2 || !slices.Contains(versions, 1) {
		t.Fatalf("versions per batch %v", versions)
	}
	// batches finish on two threads, so per-batch order is checked within
	// each batch above; across batches the last ones all carry version 2
	for _, v := range versions[slices.Index(versions, 2)+2:] {
		if v != 2 {
			t.Fatalf("version %d after version 2: %v", v, versions)
		}
	}
}

// TestTrainThenScore: labelled rows pass through forestd_train unchanged
// (its window bounded) and forestd_score on the same file hot-swaps to the
// models it writes, versions 1, 2, … in order; rows without a label pass
// without error.
func TestTrainThenScore(t *testing.T) {
	rec := readData(t, "breast_cancer.parquet")
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "live.model")
	s := startStream(t, 1,
		fmt.Sprintf("forestd_train: {label: label, task: classification, window: 300, min_rows: 200, retrain_every: 200, trees: 10, model_path: %q}", path),
		fmt.Sprintf("forestd_score: {model: %q, require_model: false, reload_interval: 10ms, result_field: forestd}", path))
	rows := jsonRows(t, rec)
	out := s.process(t, rows[:100]...)
	for i, g := range out {
		if g.err == nil || !strings.Contains(g.err.Error(), "no model loaded yet") {
			t.Fatalf("row %d before any model: %v", i, g.err)
		}
		if string(g.content) != string(rows[i]) {
			t.Fatalf("row %d changed by training: %s", i, g.content)
		}
	}
	seen := map[int64]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for lo := 100; len(seen) < 2 && time.Now().Before(deadline); lo = (lo + 100) % 500 {
		out = s.process(t, rows[lo:lo+100]...)
		for i, g := range out {
			if g.err != nil {
				if strings.Contains(g.err.Error(), "no model loaded yet") {
					continue
				}
				t.Fatalf("row %d: %v", lo+i, g.err)
			}
			o := g.object(t)
			v, _ := o["forestd"].(map[string]any)["model_version"].(json.Number).Int64()
			seen[v] = true
			if o["label"] == nil {
				t.Fatalf("row %d lost its members: %v", lo+i, o)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("versions scored: %v", seen)
	}
	m, err := scoring.Load(path)
	if err != nil || m.Version() < 2 || m.Meta().CreatedBy != CreatedBy {
		t.Fatalf("model file: %v %v", m, err)
	}
	// unlabelled rows: not errors
	unl := []byte(strings.Replace(string(rows[0]), `,"label":0`, "", 1))
	unl = []byte(strings.Replace(string(unl), `,"label":1`, "", 1))
	if strings.Contains(string(unl), `"label"`) {
		t.Fatalf("could not drop the label: %s", unl)
	}
	if g := s.process(t, unl)[0]; g.err != nil {
		t.Fatalf("unlabelled row: %v", g.err)
	}
}

// TestTrainFeatureWithoutValues: forestd_train with features: [mean_radius,
// nosuch], where no message carries nosuch, passes the messages on, and its
// retrain fails naming the column and the window's size (the loop warns and
// counts it as any retrain failure) while the model file keeps the previous
// model; it used to train an all-null column silently, and forestd_score
// then asked every message for it.
func TestTrainFeatureWithoutValues(t *testing.T) {
	rec, m, path := breastCancer(t, t.TempDir())
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// a retrain_every no test reaches: the retrain below is the only one
	p, batch := fedTrainProc(t, fmt.Sprintf(`{label: label, task: classification, features: [mean_radius, nosuch], window: 300, min_rows: 100, retrain_every: 1h, trees: 5, model_path: %q}`, path), jsonRows(t, rec)[:150])
	for i, msg := range batch {
		if msg.GetError() != nil {
			t.Fatalf("message %d: %v", i, msg.GetError())
		}
	}
	err = p.retrain(context.Background())
	if err == nil || !strings.Contains(err.Error(), `feature "nosuch" has no value in any of the 150 training rows`) || !strings.Contains(err.Error(), "training on 150 rows") {
		t.Fatalf("retrain: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) || p.version != m.Version() {
		t.Fatalf("the previous model was replaced (version %d): %v", p.version, err)
	}
}

// TestTrainVersionLimit (issue 35, item 3): forestd_train continuing from
// a model at the last version (model.MaxVersion) refuses to retrain — an
// error matching model.ErrVersionLimit, which the loop warns about and
// counts in forestd_training_errors — and keeps the model; it used to
// write version −2⁶³ after 2⁶³ − 1.
func TestTrainVersionLimit(t *testing.T) {
	rec := readData(t, "breast_cancer.parquet")
	t.Cleanup(rec.Release)
	path := filepath.Join(t.TempDir(), "last.model")
	writeModel(t, path, trainModel(t, rec, "label", frame.TaskClassification, 5, 1, model.MaxVersion))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := fedTrainProc(t, fmt.Sprintf(`{label: label, task: classification, window: 300, min_rows: 100, retrain_every: 1h, trees: 5, model_path: %q}`, path), jsonRows(t, rec)[:150])
	err = p.retrain(context.Background())
	if !errors.Is(err, model.ErrVersionLimit) || !strings.Contains(err.Error(), path) {
		t.Fatalf("retrain at version %d: %v", int64(model.MaxVersion), err)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) || p.version != model.MaxVersion {
		t.Fatalf("the model at the limit was replaced (version %d): %v", p.version, err)
	}
}

// fedTrainProc makes a forestd_train processor of the YAML conf (closed
// when the test ends) and passes it one batch of the rows, which it
// returns.
func fedTrainProc(t *testing.T, conf string, rows [][]byte) (*trainProc, service.MessageBatch) {
	t.Helper()
	pc, err := trainSpec().ParseYAML(conf, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newTrainProc(pc, service.MockResources())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	var batch service.MessageBatch
	for _, row := range rows {
		batch = append(batch, service.NewMessage(row))
	}
	if _, err := p.ProcessBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	return p, batch
}

// TestTrainMORF: forestd_train with forest: morf, a layout and tune
// trains a manifold oblique forest on the 8×8 digits whose model records
// the layout and the out-of-bag choice, as forestd train --forest morf
// --grid 8x8 --tune does.
func TestTrainMORF(t *testing.T) {
	rec := readData(t, "digits.parquet")
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "digits.model")
	p, _ := fedTrainProc(t, fmt.Sprintf(`{label: label, task: classification, forest: morf, layout: 8x8, tune: true, window: 400, min_rows: 300, retrain_every: 1h, trees: 20, threads: 1, model_path: %q}`, path), jsonRows(t, rec)[:400])
	if err := p.retrain(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f := m.Forest()
	if f.Kind != forest.KindMORF || f.Params.Layout != "grid" || f.Params.Width != 8 || f.Params.Height != 8 || f.Tuning == nil {
		t.Fatalf("model: kind %s, layout %q %dx%d, tuning %v", f.Kind, f.Params.Layout, f.Params.Width, f.Params.Height, f.Tuning)
	}
}

// TestSelectProcessor: JSON and Arrow messages are mapped as
// operators.SelectRecords maps the same rows read from the Parquet file
// (the code behind forestd select --apply); a message without an input of
// the mapping is flagged.
func TestSelectProcessor(t *testing.T) {
	mapping := "examples/xor.fdm.json"
	fh, err := os.Open(mapping)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := fdm.ReadTransform(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec := readData(t, "iris.parquet") // no xor columns: rename iris' to the mapping's
	defer rec.Release()
	fields := []arrow.Field{{Name: "x3a_0", Type: arrow.PrimitiveTypes.Float64}, {Name: "x3a_1", Type: arrow.PrimitiveTypes.Float64},
		{Name: "x3a_2", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: rec.Schema().Field(4).Type}}
	cols := []arrow.Array{rec.Column(0), rec.Column(1), rec.Column(2), rec.Column(4)}
	data := array.NewRecord(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer data.Release()
	_, want, err := operators.SelectRecords(tr, data.Schema(), []arrow.Record{data}, operators.SelectOptions{Label: "y"})
	if err != nil {
		t.Fatal(err)
	}
	defer release(want)
	wantRows := jsonRows(t, want[0])
	s := startStream(t, 1, fmt.Sprintf("forestd_select: {mapping: %q, label: y}", mapping))
	rows := jsonRows(t, data)
	out := s.process(t, append(rows, []byte(`{"x3a_0": 1, "y": 0}`))...)
	for i, g := range out[:len(rows)] {
		if g.err != nil || string(g.content) != string(wantRows[i]) {
			t.Fatalf("row %d: %s (%v), want %s", i, g.content, g.err, wantRows[i])
		}
	}
	if e := out[len(rows)].err; e == nil || !strings.Contains(e.Error(), `no key "x3a_1"`) {
		t.Fatalf("row without x3a_1: %v", e)
	}
	g := s.process(t, arrowMessage(t, data))[0]
	if g.err != nil {
		t.Fatal(g.err)
	}
	_, recs, err := codec.Decode(g.content, "", memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	if !array.RecordEqual(recs[0], want[0]) {
		t.Fatal("Arrow message mapped differently")
	}
}

// TestSelectNameClashes: forestd_select refuses at start, naming the
// column, a mapping whose mapped column is named like an input feature it
// would replace in every message, and a keep column or label named like a
// mapped column (they used to pass start; the first silently overwrote the
// input in every message, the others errored every message).
func TestSelectNameClashes(t *testing.T) {
	good, err := os.ReadFile("examples/xor.fdm.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ownInput := filepath.Join(dir, "own.fdm.json")
	mustWrite(t, ownInput, []byte(strings.Replace(string(good), `"name": "fdm_g1_2"`, `"name": "x3a_1"`, 1)))
	for conf, want := range map[string]string{
		fmt.Sprintf(`{mapping: %q}`, ownInput):                   `group 1 output "x3a_1" is named like an input feature of the mapping (group 1)`,
		`{mapping: examples/xor.fdm.json, keep: [id, fdm_g1_2]}`: `keep: column "fdm_g1_2" is named like a mapped column of the mapping (group 1)`,
		`{mapping: examples/xor.fdm.json, label: fdm_g1_1}`:      `label: column "fdm_g1_1" is named like a mapped column of the mapping (group 1)`,
	} {
		c, err := selectSpec().ParseYAML(conf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newSelectProc(c, service.MockResources()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", conf, err, want)
		}
	}
}

// TestScoreProbs: with probs top3 a JSON message gets the top 3 classes of
// a 26-class model (top1_class, top1_prob, …) instead of 26 prob_<class>
// members, with the values scoring.Model.Score gives with the same
// option; with probs none an Arrow message's predictions end at
// prediction, as Model.Score's do.
func TestScoreProbs(t *testing.T) {
	dir := t.TempDir()
	full := readData(t, "letter_recognition.parquet")
	defer full.Release()
	rec := full.NewSlice(0, 300)
	defer rec.Release()
	m := trainModel(t, full, "label", frame.TaskClassification, 5, 1, 1)
	path := filepath.Join(dir, "letters.model")
	writeModel(t, path, m)
	ref, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: scoring.ProbsTop(3), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer release(ref)
	s := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q, probs: top3}", path))
	out := s.process(t, jsonRows(t, rec)...)
	for i, g := range out {
		if g.err != nil {
			t.Fatalf("row %d: %v", i, g.err)
		}
		o := g.object(t)
		for k := range o {
			if strings.HasPrefix(k, "prob_") || k == "top4_class" {
				t.Fatalf("row %d: member %s with probs top3", i, k)
			}
		}
		if o["prediction"] != o["top1_class"] {
			t.Fatalf("row %d: prediction %v, top1_class %v", i, o["prediction"], o["top1_class"])
		}
		for q := 1; q <= 3; q++ {
			c, p := fmt.Sprintf("top%d_class", q), fmt.Sprintf("top%d_prob", q)
			if o[c] != column(t, ref[0], c).(*array.String).Value(i) {
				t.Fatalf("row %d: %s %v, want %s", i, c, o[c], column(t, ref[0], c).(*array.String).Value(i))
			}
			v, err := strconv.ParseFloat(string(o[p].(json.Number)), 32)
			if want := column(t, ref[0], p).(*array.Float32).Value(i); err != nil || float32(v) != want {
				t.Fatalf("row %d: %s %v, want %v", i, p, o[p], want)
			}
		}
	}
	s2 := startStream(t, 1, fmt.Sprintf("forestd_score: {model: %q, probs: none, keep: [label]}", path))
	g := s2.process(t, arrowMessage(t, rec))[0]
	if g.err != nil {
		t.Fatal(g.err)
	}
	schema, recs, err := codec.Decode(g.content, "", memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	want, err := m.PredictionSchema(rec.Schema(), scoring.Options{Keep: []string{"label"}, Probs: scoring.ProbsNone})
	if err != nil {
		t.Fatal(err)
	}
	if !schema.Equal(want) || schema.NumFields() != 6 || schema.Field(5).Name != "prediction" {
		t.Fatalf("probs none: schema %v, want %v", schema, want)
	}
}

// TestScoreWarnsUnscored: a message forestd_score cannot score is passed
// on with its error and a WARN log line — at most one per second, the
// next counting the messages it left out — so that a pipeline without a
// switch on errored() does not pass it on silently.
func TestScoreWarnsUnscored(t *testing.T) {
	_, _, path := breastCancer(t, t.TempDir())
	var logs syncBuf
	conf, err := scoreSpec().ParseYAML(fmt.Sprintf(`{model: %q}`, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&logs, nil)))
	p, err := newScoreProc(conf, service.MockResources(service.MockResourcesOptUseLogger(logger)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	clock := time.Unix(1000, 0)
	p.unscored.now = func() time.Time { return clock }
	bad := func(n int) {
		t.Helper()
		var batch service.MessageBatch
		for i := 0; i < n; i++ {
			batch = append(batch, service.NewMessage([]byte(`{"mean_radius": "abc"}`)))
		}
		out, err := p.ProcessBatch(context.Background(), batch)
		if err != nil || len(out) != 1 || len(out[0]) != n || out[0][0].GetError() == nil {
			t.Fatalf("ProcessBatch: %v, %v", out, err)
		}
	}
	warns := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "not scored") {
				out = append(out, l)
			}
		}
		return out
	}
	bad(3)
	if w := warns(); len(w) != 1 || !strings.Contains(w[0], "3 messages not scored") || !strings.Contains(w[0], "mean_radius") {
		t.Fatalf("after one batch: %q", w)
	}
	clock = clock.Add(300 * time.Millisecond)
	bad(2) // within the second: counted, not logged
	bad(1)
	if w := warns(); len(w) != 1 {
		t.Fatalf("within a second: %q", w)
	}
	clock = clock.Add(time.Second)
	bad(1)
	if w := warns(); len(w) != 2 || !strings.Contains(w[1], "1 message not scored") || !strings.Contains(w[1], "and 3 more since the last warning") {
		t.Fatalf("after a second: %q", w)
	}
}

// syncBuf is a bytes.Buffer safe for a logger and a test to share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

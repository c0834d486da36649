package operators

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// xorAnalyzer analyses n labelled rows of xor3 (dissertation Table 6.1
// iii: a marginal feature m0 and an XOR pair) drawn with seed.
func xorAnalyzer(t *testing.T, mem memory.Allocator, n int, seed uint64) (*Analyzer, arrow.Record) {
	t.Helper()
	fr, err := synth.Generate(synth.XOR3, synth.Options{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(mem)
	s := dependence.DefaultSearchOptions()
	s.Test.Threads = 1
	a, err := NewAnalyzer(AnalyzeOptions{Label: "y", Window: n, MinRows: 100, Search: &s, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Analyze(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if tr, _ := a.Selection(); tr == nil || len(tr.Groups) != 1 {
		t.Fatalf("the analysis did not map the XOR pair: %+v", a.Latest().Result)
	}
	return a, rec
}

// offlinePredict scores records that already hold the model's feature
// columns with the forest's trees alone: the mapping applied beforehand,
// the way forestd select --apply then forestd score on its output would.
func offlinePredict(t *testing.T, f *forest.Forest, schema *arrow.Schema, recs []arrow.Record) *forest.Prediction {
	t.Helper()
	plain := *f
	plain.Mapping = nil
	c, err := forest.Compile(&plain)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.FeaturesFromRecords(schema, recs, plain.Features, plain.Levels)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Predict(fr, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// predictionColumns reads the predicted class and the probabilities of
// prediction records.
func predictionColumns(t *testing.T, recs []arrow.Record) (classes []string, probs [][]float32) {
	t.Helper()
	for _, r := range recs {
		for c, fl := range r.Schema().Fields() {
			switch {
			case fl.Name == schemas.ColPrediction:
				a := r.Column(c).(*array.String)
				for i := 0; i < a.Len(); i++ {
					classes = append(classes, a.Value(i))
				}
			case strings.HasPrefix(fl.Name, schemas.ProbPrefix):
				a := r.Column(c).(*array.Float32)
				probs = append(probs, slices.Clone(a.Float32Values()))
			}
		}
	}
	return classes, probs
}

// TestTrainMappedScoresRaw: a model trained behind the select stage's
// mapping reads the mapped columns, carries the mapping in its bytes, and
// scores raw batches exactly as mapping them first (Analysis.Select, the
// select stage) and scoring the mapped columns offline; on held-out xor3
// rows it is accurate. A later analysis with another mapping leaves the
// model's mapping alone, and a hot swap to a model with another mapping
// changes the mapping with the model.
func TestTrainMappedScoresRaw(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	a, rec := xorAnalyzer(t, mem, 600, 4)
	defer rec.Release()
	sel, seq := a.Selection()
	if seq != 1 {
		t.Fatalf("selection of analysis %d", seq)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed = 30, 2
	tr, err := NewTrainer(TrainOptions{Label: "y", Window: 600, MinRows: 100, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	win, err := tr.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, err := tr.TrainMapped(context.Background(), win, sel, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Features, sel.Names()) || len(f.Features) != 3 || f.Features[0] != "m0" {
		t.Fatalf("model features %v, want the selection's columns %v", f.Features, sel.Names())
	}
	if !reflect.DeepEqual(f.Mapping, sel) || f.Mapping == sel {
		t.Fatal("the model does not carry a private copy of the selection's mapping")
	}
	m1, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	m1, err = scoring.Decode(m1.Bytes()) // the mapping travels in the model bytes
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m1.Forest().Mapping, sel) {
		t.Fatal("the mapping does not survive the model encoding")
	}
	pinned, _ := json.Marshal(m1.Forest().Mapping)

	// held-out raw rows, scored by the daemon's scorer with the model
	test, err := synth.Generate(synth.XOR3, synth.Options{N: 400, Seed: 99})
	if err != nil {
		t.Fatal(err)
	}
	raw := test.ToRecord(mem)
	defer raw.Release()
	cur := NewCurrent()
	cur.Offer(m1)
	score := func(m *scoring.Model) ([]string, [][]float32) {
		out, err := m.Score([]arrow.Record{raw}, scoring.Options{Source: "t/0/1", Threads: 1, Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, r := range out {
				r.Release()
			}
		}()
		return predictionColumns(t, out)
	}
	offline := func(m *scoring.Model) *forest.Prediction {
		an := &Analysis{Transform: m.Forest().Mapping}
		mapped, err := an.Select(mem, raw.Schema(), []arrow.Record{raw}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer mapped[0].Release()
		f, _, err := model.DecodeBytes(m.Bytes()) // with its trees
		if err != nil {
			t.Fatal(err)
		}
		return offlinePredict(t, f, mapped[0].Schema(), mapped)
	}
	classes, probs := score(m1)
	want := offline(m1)
	if len(classes) != 400 || len(probs) != len(m1.Forest().Classes) {
		t.Fatalf("%d predictions with %d probability columns", len(classes), len(probs))
	}
	right := 0
	for i, c := range classes {
		if c != m1.Forest().Classes[want.Class[i]] {
			t.Fatalf("row %d: daemon %s, mapped offline %s", i, c, m1.Forest().Classes[want.Class[i]])
		}
		for k := range probs {
			if probs[k][i] != want.Prob[i*len(probs)+k] {
				t.Fatalf("row %d: probability %d differs: %v vs %v", i, k, probs[k][i], want.Prob[i*len(probs)+k])
			}
		}
		if c == test.Classes[test.Y[i]] {
			right++
		}
	}
	acc := float64(right) / float64(len(classes))
	t.Logf("held-out accuracy %.4f", acc)
	if acc < 0.85 {
		t.Fatalf("held-out accuracy %.3f through the mapping (the XOR pair plus m0 allow ~0.9)", acc)
	}

	// a new analysis on other rows maps differently; the model keeps its own
	a2, rec2 := xorAnalyzer(t, mem, 600, 5)
	defer rec2.Release()
	sel2, _ := a2.Selection()
	if reflect.DeepEqual(sel2, sel) {
		t.Fatal("the second analysis mapped identically; the test needs another mapping")
	}
	if now, _ := json.Marshal(m1.Forest().Mapping); string(now) != string(pinned) {
		t.Fatal("a later analysis changed the published model's mapping")
	}
	// hot swap to a model trained behind the new mapping: the mapping swaps with it
	f2, err := tr.TrainMapped(context.Background(), win, sel2, 1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := scoring.Encode(f2, 2, "test")
	if err != nil {
		t.Fatal(err)
	}
	cur.AllowColumnChange = true // a new selection maps to new columns
	if err := cur.Offer(m2); err != nil || cur.Load() != m2 {
		t.Fatal("hot swap refused")
	}
	classes2, _ := score(m2)
	want2 := offline(m2)
	for i, c := range classes2 {
		if c != m2.Forest().Classes[want2.Class[i]] {
			t.Fatalf("after the swap, row %d: daemon %s, offline with the new mapping %s", i, c, m2.Forest().Classes[want2.Class[i]])
		}
	}
	// a batch without a column the mapping reads is bad input
	noPair := array.NewRecord(arrow.NewSchema(raw.Schema().Fields()[:2], nil), raw.Columns()[:2], raw.NumRows())
	defer noPair.Release()
	if _, err := m2.Score([]arrow.Record{noPair}, scoring.Options{Source: "t/0/2", Mem: mem}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("batch without x2a_1: %v", err)
	}
	// no mapping: TrainMapped is Train
	f0, err := tr.TrainMapped(context.Background(), win, nil, 1)
	if err != nil || f0.Mapping != nil || !slices.Equal(f0.Features, win.Names) {
		t.Fatalf("unmapped training: %v %v", err, f0.Features)
	}
}

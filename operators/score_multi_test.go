package operators

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/schemas"
)

// swissFrames draws n swiss-roll rows (dRF paper §3.1): the first nTrain
// as training features and row-major responses, the rest as test features.
func swissFrames(t *testing.T, n, nTrain int) (train *frame.Frame, y []float64, test *frame.Frame) {
	t.Helper()
	fr, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: n, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	train = &frame.Frame{Names: fr.Names, NRows: nTrain}
	test = &frame.Frame{Names: fr.Names, NRows: n - nTrain}
	for _, c := range fr.Cols {
		train.Cols = append(train.Cols, c[:nTrain])
		test.Cols = append(test.Cols, c[nTrain:])
	}
	for i := 0; i < nTrain; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	return train, y, test
}

// TestScoreMulti: a drf model and a multi-output rf model, encoded and
// decoded as the model topic carries them, score a message of two records
// into multi-output predictions (one float64 column per target, with model
// version, message coordinates and the key column) that equal the offline
// predictions (manifold.Predictor, forest.Compiled) row for row; a key
// column named like a target is an input error; the model's importances
// publish as for any forest.
func TestScoreMulti(t *testing.T) {
	for _, kind := range []string{"drf", "rf"} {
		t.Run(kind, func(t *testing.T) { testScoreMulti(t, kind) })
	}
}

func testScoreMulti(t *testing.T, kind string) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	train, y, test := swissFrames(t, 400, 300)
	targets := []string{"y0", "y1", "y2"}
	var f *forest.Forest
	var err error
	if kind == "drf" {
		o := manifold.DefaultOptions()
		o.Trees, o.MaxFeatures, o.Threads, o.EmbedDim = 10, "3", 2, 2
		f, err = manifold.Train(train, y, targets, o)
	} else {
		if err = train.SetTargets(targets, y); err != nil {
			t.Fatal(err)
		}
		p := forest.DefaultParams(frame.TaskRegression)
		p.Trees, p.Threads = 10, 2
		f, err = forest.Train(train, p, forest.TrainOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	enc, err := EncodeModel(f, 9, "test")
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeModel(enc.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if m.Multi == nil || (m.Compiled != nil) != (kind == "rf") || m.Meta.Version != 9 {
		t.Fatalf("decoded %s model: predictor %v, compiled %v, version %d", kind, m.Multi, m.Compiled, m.Meta.Version)
	}
	cur := NewCurrent()
	cur.Offer(m)
	s, err := NewScorer(cur, ScoreOptions{Mem: mem, Key: "x1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := test.ToRecord(mem)
	defer rec.Release()
	r1, r2 := rec.NewSlice(0, 40), rec.NewSlice(40, 100)
	defer r1.Release()
	defer r2.Release()
	out, used, err := s.Score(context.Background(), nil, rec.Schema(), []arrow.Record{r1, r2}, "forestd.features/1/7")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range out {
			r.Release()
		}
	}()
	if used != m || len(out) != 2 || out[0].NumRows() != 40 || out[1].NumRows() != 60 {
		t.Fatalf("outputs %v", out)
	}
	var offline forest.MultiOutput
	if kind == "drf" {
		offline, err = manifold.NewPredictor(f, 1)
	} else {
		offline, err = forest.Compile(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := offline.PredictValues(test, 1)
	if err != nil {
		t.Fatal(err)
	}
	spec := schemas.PredictionSpec{ModelID: m.Meta.ID, ModelVersion: 9, Keep: []arrow.Field{rec.Schema().Field(0)}}
	wantSchema := schemas.MultiPredictions(spec, []string{"y0", "y1", "y2"})
	for k, o := range out {
		if !o.Schema().Equal(wantSchema) {
			t.Fatalf("schema %v, want %v", o.Schema(), wantSchema)
		}
		id := o.Column(0).(*array.String)
		ver := o.Column(1).(*array.Int64)
		src := o.Column(2).(*array.String)
		row := o.Column(3).(*array.Int64)
		key := o.Column(4).(*array.Float32)
		for i := 0; i < int(o.NumRows()); i++ {
			g := int(row.Value(i))
			if g != 40*k+i || id.Value(i) != m.Meta.ID || ver.Value(i) != 9 || src.Value(i) != "forestd.features/1/7" {
				t.Fatalf("record %d row %d: id %q version %d source %q row %d", k, i, id.Value(i), ver.Value(i), src.Value(i), g)
			}
			if key.Value(i) != test.Cols[0][g] {
				t.Fatalf("row %d: key %v, input %v", g, key.Value(i), test.Cols[0][g])
			}
			for r := 0; r < 3; r++ {
				if v := o.Column(5 + r).(*array.Float64).Value(i); v != want[g*3+r] {
					t.Fatalf("row %d y%d: daemon %v, offline %v", g, r, v, want[g*3+r])
				}
			}
		}
	}
	bad, _ := NewScorer(cur, ScoreOptions{Mem: mem, Key: "y1"})
	yrec := withColumn(t, mem, rec, "y1")
	defer yrec.Release()
	if _, _, err := bad.Score(context.Background(), nil, yrec.Schema(), []arrow.Record{yrec}, "t/0/0"); !errors.Is(err, ErrInput) {
		t.Fatalf("key column named like a target: %v", err)
	}
	imp, err := ImportancesRecord(mem, m)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Release()
	if imp.NumRows() != int64(2*len(f.Features)) {
		t.Fatalf("%d importance rows for %d features × 2 kinds", imp.NumRows(), len(f.Features))
	}
}

// withColumn returns rec with one more float32 column name (all zero).
func withColumn(t *testing.T, mem memory.Allocator, rec arrow.Record, name string) arrow.Record {
	t.Helper()
	b := array.NewFloat32Builder(mem)
	defer b.Release()
	b.AppendValues(make([]float32, rec.NumRows()), nil)
	a := b.NewArray()
	defer a.Release()
	fields := append(rec.Schema().Fields(), arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float32})
	return array.NewRecord(arrow.NewSchema(fields, nil), append(rec.Columns(), a), rec.NumRows())
}

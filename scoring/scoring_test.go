package scoring_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/scoring"
)

const dataDir = "../testdata"

func trunk(t testing.TB, n int, seed uint64) *frame.Frame {
	t.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, Seed: seed, P: 5})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

func trainModel(t testing.TB, fr *frame.Frame, version int64) *scoring.Model {
	t.Helper()
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Seed, p.Threads = 20, 3, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, version, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// TestScoreBadInput: a missing kept column, a missing feature, a
// wrong-typed feature, records of different schemas, a column kept twice
// and a kept column named like an output column (fixed, predicted, or a
// predicted target) are ErrInput errors naming the column; nothing is left
// allocated.
func TestScoreBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 300, 1), 1)
	rec := trunk(t, 10, 2).ToRecord(mem)
	defer rec.Release()
	cols, fields := rec.Columns()[1:], rec.Schema().Fields()[1:]
	noX1 := array.NewRecord(arrow.NewSchema(fields, nil), cols, 10)
	defer noX1.Release()
	sb := array.NewStringBuilder(mem)
	for i := 0; i < 10; i++ {
		sb.Append("abc")
	}
	str := sb.NewArray()
	sb.Release()
	defer str.Release()
	wrong := array.NewRecord(arrow.NewSchema(append([]arrow.Field{{Name: "x1", Type: arrow.BinaryTypes.String}}, fields...), nil),
		append([]arrow.Array{str}, cols...), 10)
	defer wrong.Release()
	// the input's columns plus one each named like an output column
	var extraFields []arrow.Field
	var extraCols []arrow.Array
	for _, name := range []string{"prediction", "row", "prob_" + m.Forest().Classes[0]} {
		extraFields = append(extraFields, arrow.Field{Name: name, Type: rec.Column(0).DataType()})
		extraCols = append(extraCols, rec.Column(0))
	}
	extra := array.NewRecord(arrow.NewSchema(append(rec.Schema().Fields(), extraFields...), nil), append(rec.Columns(), extraCols...), 10)
	defer extra.Release()
	for name, c := range map[string]struct {
		recs []arrow.Record
		keep []string
		want string
	}{
		"missing kept column":    {[]arrow.Record{rec}, []string{"id"}, "id"},
		"missing feature":        {[]arrow.Record{noX1}, nil, "x1"},
		"wrong-typed feature":    {[]arrow.Record{wrong}, nil, "x1"},
		"two schemas":            {[]arrow.Record{rec, noX1}, nil, "record 1 of the call has another schema than record 0: 6 columns, then 5 (without [x1], with [])"},
		"two column types":       {[]arrow.Record{rec, wrong}, nil, "record 1 of the call has another schema than record 0: column x1 is"},
		"kept column must exist": {[]arrow.Record{noX1}, []string{"x1"}, "x1"},
		"kept column twice":      {[]arrow.Record{rec}, []string{"x1", "x1"}, "kept column x1 is listed twice"},
		"kept prediction":        {[]arrow.Record{extra}, []string{"prediction"}, "output column prediction would be both a kept column and a predicted column"},
		"kept row":               {[]arrow.Record{extra}, []string{"row"}, "output column row would be both a fixed column and a kept column"},
		"kept probability":       {[]arrow.Record{extra}, []string{"prob_" + m.Forest().Classes[0]}, "would be both a kept column and a predicted column"},
	} {
		out, err := m.Score(c.recs, scoring.Options{Keep: c.keep, Mem: mem})
		if !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v (want a one-line input error naming %s)", name, err, c.want)
		}
		release(out)
		// a column the input lacks, kept or a feature, is one kind of error
		// (the daemon's status page counts them together)
		if missing := strings.HasPrefix(name, "missing") || name == "kept column must exist"; missing != errors.Is(err, frame.ErrMissingColumn) {
			t.Errorf("%s: %v: errors.Is(err, frame.ErrMissingColumn) is %v", name, err, !missing)
		}
	}
	if _, err := m.Score([]arrow.Record{rec}, scoring.Options{Threads: -1}); err == nil || errors.Is(err, scoring.ErrInput) {
		t.Errorf("-1 threads: %v (want a usage error, not an input error)", err)
	}
	// a model with several outputs: a kept column named like a target
	sw, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, 0, 600)
	for i := 0; i < 200; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	if err := sw.SetTargets([]string{"x1", "y1", "y2"}, y); err != nil {
		t.Fatal(err)
	}
	multi := trainModel(t, sw, 1)
	srec := sw.ToRecord(mem)
	defer srec.Release()
	if _, err := multi.Score([]arrow.Record{srec}, scoring.Options{Keep: []string{"x1"}, Mem: mem}); !errors.Is(err, scoring.ErrInput) {
		t.Errorf("kept column named like a target: %v", err)
	}
}

// TestCheckInput: CheckInput refuses, as Score does a record of that
// schema, a schema without a feature, with one of another type, or none,
// as an ErrInput error naming the column, and accepts the input's own.
func TestCheckInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 300, 1), 1)
	rec := trunk(t, 1, 2).ToRecord(mem)
	defer rec.Release()
	if err := m.CheckInput(rec.Schema()); err != nil {
		t.Fatal(err)
	}
	fields := rec.Schema().Fields()[1:]
	for name, c := range map[string]struct {
		schema *arrow.Schema
		want   string
	}{
		"missing feature":     {arrow.NewSchema(fields, nil), "missing feature column x1"},
		"wrong-typed feature": {arrow.NewSchema(append([]arrow.Field{{Name: "x1", Type: arrow.BinaryTypes.String}}, fields...), nil), "x1"},
		"no schema":           {nil, "no input schema"},
	} {
		if err := m.CheckInput(c.schema); !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want an input error naming %s)", name, err, c.want)
		}
	}
}

// TestScoreBadSchemaFile: a model trained on digits refuses
// bad_schema.arrows (pixel_7_7 missing, written by Arrow JS) as an input
// error naming the column.
func TestScoreBadSchemaFile(t *testing.T) {
	schema, recs, err := files.ReadFile(filepath.Join(dataDir, "digits.arrows"), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	release(recs)
	if err != nil {
		t.Fatal(err)
	}
	m := trainModel(t, fr, 1)
	_, brecs, err := files.ReadFile(filepath.Join(dataDir, "bad_schema.arrows"), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(brecs)
	_, err = m.Score(brecs, scoring.Options{})
	if !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), "pixel_7_7") {
		t.Fatalf("bad_schema.arrows: %v", err)
	}
}

// TestLoad: Load reads a model file written by Encode; a missing, a
// truncated and a non-model file are errors naming the path.
func TestLoad(t *testing.T) {
	m := trainModel(t, trunk(t, 200, 1), 2)
	dir := t.TempDir()
	good := filepath.Join(dir, "m.model")
	if err := os.WriteFile(good, m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := scoring.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != m.ID() || got.Version() != 2 || got.Kind() != forest.KindRF || !slicesEqual(got.Columns(), m.Forest().Features) {
		t.Fatalf("loaded %s v%d %s %v", got.ID(), got.Version(), got.Kind(), got.Columns())
	}
	trunc := filepath.Join(dir, "trunc.model")
	if err := os.WriteFile(trunc, m.Bytes()[:len(m.Bytes())/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.model"), trunc, filepath.Join(dataDir, "iris.parquet")} {
		if _, err := scoring.Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v (want an error naming the file)", p, err)
		}
	}
}

// TestLoadNoBytes: LoadOptions.NoBytes gives the model of the file without
// its bytes (Bytes nil) and the same identity and predictions; by default
// Load keeps them; two LoadOptions are an error naming the path.
func TestLoadNoBytes(t *testing.T) {
	m := trainModel(t, trunk(t, 200, 1), 2)
	path := filepath.Join(t.TempDir(), "m.model")
	if err := os.WriteFile(path, m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	kept, err := scoring.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := scoring.Load(path, scoring.LoadOptions{NoBytes: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kept.Bytes(), m.Bytes()) {
		t.Fatalf("Load kept %d bytes, want the file's %d", len(kept.Bytes()), len(m.Bytes()))
	}
	if lean.Bytes() != nil {
		t.Fatalf("Load with NoBytes kept %d bytes", len(lean.Bytes()))
	}
	if lean.ID() != m.ID() || lean.Version() != 2 || lean.NumTrees() != kept.NumTrees() {
		t.Fatalf("NoBytes loaded %s v%d, %d trees; want %s v2, %d", lean.ID(), lean.Version(), lean.NumTrees(), m.ID(), kept.NumTrees())
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := trunk(t, 300, 9).ToRecord(mem)
	defer rec.Release()
	var preds [2][]string
	for i, mm := range []*scoring.Model{kept, lean} {
		out, err := mm.Score([]arrow.Record{rec}, scoring.Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		col := out[0].Column(out[0].Schema().FieldIndices("prediction")[0])
		for r := 0; r < col.Len(); r++ {
			preds[i] = append(preds[i], col.ValueStr(r))
		}
		release(out)
	}
	if !slicesEqual(preds[0], preds[1]) || len(preds[0]) != 300 {
		t.Fatalf("predictions differ: %d with the bytes, %d without", len(preds[0]), len(preds[1]))
	}
	if _, err := scoring.Load(path, scoring.LoadOptions{}, scoring.LoadOptions{NoBytes: true}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("two LoadOptions: %v, want an error naming %s", err, path)
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNewer: versions order models; the content ID breaks ties, so
// replicas converge on one model.
func TestNewer(t *testing.T) {
	fr := trunk(t, 200, 1)
	m1, m2 := trainModel(t, fr, 1), trainModel(t, fr, 2)
	if !m2.Newer(m1) || m1.Newer(m2) || !m1.Newer(nil) || m1.Newer(m1) {
		t.Fatal("version order")
	}
	other := trainModel(t, trunk(t, 200, 9), 1)
	if m1.ID() == other.ID() || m1.Newer(other) == other.Newer(m1) {
		t.Fatal("same version: the ID must break the tie one way")
	}
}

// TestImportances: the importance record carries every kind the model has,
// with each feature's value.
func TestImportances(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 300, 1), 5)
	rec, err := m.Importances(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	f := m.Forest()
	imp := f.Importances[forest.ImportanceImpurity]
	if len(imp) != 5 || rec.NumRows() != int64(5*len(f.Importances)) {
		t.Fatalf("%d rows for %d kinds", rec.NumRows(), len(f.Importances))
	}
	feat, kind, val := rec.Column(2).(*array.String), rec.Column(3).(*array.String), rec.Column(4).(*array.Float64)
	found := 0
	for i := 0; i < int(rec.NumRows()); i++ {
		for q, n := range f.Features {
			if kind.Value(i) == forest.ImportanceImpurity && n == feat.Value(i) && val.Value(i) == imp[q] {
				found++
			}
		}
	}
	if found != 5 {
		t.Fatalf("impurity importances not carried: %d of 5", found)
	}
}

// TestEvaluate: accuracy and error of a classifier, recomputed here from
// Score's predictions and the labels; rows with a null label are skipped
// and counted; a class the model never saw counts as an error.
func TestEvaluate(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 400, 1), 1)
	test := trunk(t, 150, 2)
	rec := test.ToRecord(mem)
	defer rec.Release()
	ev, err := m.Evaluate([]arrow.Record{rec}, []string{"y"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(out)
	pred := out[0].Column(4).(*array.String)
	wrong := 0
	for i := 0; i < test.NRows; i++ {
		if pred.Value(i) != test.Classes[test.Y[i]] {
			wrong++
		}
	}
	if !ev.Classification || ev.Rows != 150 || ev.SkippedLabels != 0 || ev.Error != float64(wrong)/150 || ev.Accuracy != 1-ev.Error {
		t.Fatalf("evaluation %+v, recomputed %d wrong of 150", ev, wrong)
	}
	if _, err := m.Evaluate([]arrow.Record{rec}, []string{"nope"}, 1); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("missing label column: %v", err)
	}
	if _, err := m.Evaluate(nil, []string{"y"}, 1); !errors.Is(err, scoring.ErrNoRows) {
		t.Fatalf("no records: %v", err)
	}
}

// TestEvaluateRegression: a regression model's rmse, mae and mse equal the
// ones recomputed from Score's predictions.
func TestEvaluateRegression(t *testing.T) {
	sw, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw.YReg, sw.Task, sw.LabelName = tg[0], frame.TaskRegression, "y0"
	m := trainModel(t, sw, 1)
	rec := sw.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	ev, err := m.Evaluate([]arrow.Record{rec}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(out)
	p := out[0].Column(4).(*array.Float64)
	var se, ae float64
	for i, y := range tg[0] {
		se += (p.Value(i) - y) * (p.Value(i) - y)
		ae += math.Abs(p.Value(i) - y)
	}
	if ev.Classification || ev.Rows != 300 || math.Abs(ev.MSE-se/300) > 1e-12 || math.Abs(ev.MAE-ae/300) > 1e-12 || math.Abs(ev.RMSE-math.Sqrt(se/300)) > 1e-12 {
		t.Fatalf("evaluation %+v, recomputed mse %v mae %v", ev, se/300, ae/300)
	}
}

// TestNilRecord: a nil record among those given to Score or Evaluate, and
// kept columns without an input schema, are ErrInput errors, as the
// frame and the operators report them; they were nil pointer panics
// across the package boundary.
func TestNilRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 300, 1), 1)
	rec := trunk(t, 10, 2).ToRecord(mem)
	defer rec.Release()
	if _, err := m.Score([]arrow.Record{rec, nil}, scoring.Options{}); !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), "record 1 of the call is nil") {
		t.Errorf("Score: %v", err)
	}
	if _, err := m.Evaluate([]arrow.Record{nil}, nil, 1); !errors.Is(err, scoring.ErrInput) {
		t.Errorf("Evaluate: %v", err)
	}
	if _, err := m.PredictionSchema(nil, scoring.Options{Keep: []string{"id"}}); !errors.Is(err, scoring.ErrInput) {
		t.Errorf("PredictionSchema: %v", err)
	}
}

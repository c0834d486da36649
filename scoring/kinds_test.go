package scoring_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// kindCase is a model of one kind with the data it is scored on and the
// engine's own predictions of that data (what Score must reproduce).
type kindCase struct {
	name string
	f    *forest.Forest
	test *frame.Frame // the raw source columns Score reads
}

// kindCases trains a small model of every kind forestd scores: rf, sporf,
// morf, lfs, fdm (RF_FDM with landmark mappings, whose trees split on
// derived group-norm columns), a forest pinned behind an FDM_RF mapping (the
// daemon's select → train), a multi-output regression forest and a drf.
func kindCases(t *testing.T) []kindCase {
	t.Helper()
	trunk := func(n int, seed uint64) *frame.Frame {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, Seed: seed, P: 9})
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	train := func(fr *frame.Frame, set func(*forest.Params)) *forest.Forest {
		p := forest.DefaultParams(fr.Task)
		p.Trees, p.Threads = 8, 2
		set(&p)
		f, err := forest.Train(fr, p, forest.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var cases []kindCase
	tr, te := trunk(300, 1), trunk(70, 2)
	for _, c := range []struct {
		name string
		set  func(*forest.Params)
	}{
		{"rf", func(*forest.Params) {}},
		{"sporf", func(p *forest.Params) { p.Forest, p.MeanDiff = forest.KindSPORF, true }},
		{"morf", func(p *forest.Params) { p.Forest, p.PatchHMax, p.PatchWMax = forest.KindMORF, 2, 2 }},
		{"lfs", func(p *forest.Params) { p.Forest, p.LFSSize = forest.KindLFS, 3 }},
	} {
		if c.name == "morf" || c.name == "lfs" {
			// a 3×3 grid of the nine trunk features
			set := c.set
			c.set = func(p *forest.Params) { set(p); p.Width, p.Height, p.Layout = 3, 3, "grid" }
		}
		cases = append(cases, kindCase{c.name, train(tr, c.set), te})
	}

	// RF_FDM with landmark mappings (derived inputs) on xor3
	xtr, err := synth.Generate(synth.XOR3, synth.Options{N: 400, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	xte, err := synth.Generate(synth.XOR3, synth.Options{N: 60, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	fdmForest := train(xtr, func(p *forest.Params) {
		p.Forest, p.FDMMap, p.FDMGroups, p.FDMMarginal = forest.KindFDM, fdm.MapDRL, "1,2", "0"
	})
	if fdmForest.Derived == nil {
		t.Fatal("fdm forest with landmark mappings has no derived inputs")
	}
	cases = append(cases, kindCase{"fdm", fdmForest, xte})

	// a forest pinned behind the FDM_RF mapping of an analysis (select → train)
	rec := xtr.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	an, err := operators.NewAnalyzer(operators.AnalyzeOptions{Label: "y", Window: 400, MinRows: 100, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := an.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := an.Analyze(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	sel, _ := an.Selection()
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 8, 2
	trn, err := operators.NewTrainer(operators.TrainOptions{Label: "y", Window: 400, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := trn.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
		t.Fatal(err)
	}
	window, err := trn.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := trn.TrainMapped(context.Background(), window, sel, 2)
	if err != nil {
		t.Fatal(err)
	}
	if mapped.Mapping == nil {
		t.Fatal("no mapping pinned")
	}
	cases = append(cases, kindCase{"fdm-mapped", mapped, xte})

	// several outputs: a multi-output regression forest and a drf
	sw, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 360, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	swtr := &frame.Frame{Names: sw.Names, NRows: 300}
	swte := &frame.Frame{Names: sw.Names, NRows: 60}
	for _, c := range sw.Cols {
		swtr.Cols = append(swtr.Cols, c[:300])
		swte.Cols = append(swte.Cols, c[300:])
	}
	var y []float64
	for i := 0; i < 300; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	targets := []string{"y0", "y1", "y2"}
	o := manifold.DefaultOptions()
	o.Trees, o.MaxFeatures, o.Threads, o.EmbedDim = 8, "3", 2, 2
	drf, err := manifold.Train(swtr, y, targets, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := swtr.SetTargets(targets, y); err != nil {
		t.Fatal(err)
	}
	multi := train(swtr, func(*forest.Params) {})
	cases = append(cases, kindCase{"multi-output", multi, swte}, kindCase{"drf", drf, swte})
	return cases
}

// enginePredictions predicts the frame with the engine directly: the
// compiled forest (mapping and derived inputs applied as in training) or
// the drf predictor.
func enginePredictions(t *testing.T, f *forest.Forest, raw *frame.Frame) *forest.Prediction {
	t.Helper()
	fr, err := f.FromSource(raw)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind == forest.KindDRF {
		p, err := manifold.NewPredictor(f, 1)
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.PredictValues(fr, 1)
		if err != nil {
			t.Fatal(err)
		}
		return &forest.Prediction{Value: v}
	}
	c, err := forest.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := c.Predict(fr, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

// TestScoreEveryKind: every model kind, encoded and decoded as a model
// file carries it, scores a two-record input through Score — under a
// checked allocator, so a prediction record or a kept column that is not
// released fails the test — into exactly the engine's own predictions,
// rows numbered across the records, at 1 and 3 threads.
func TestScoreEveryKind(t *testing.T) {
	for _, kc := range kindCases(t) {
		t.Run(kc.name, func(t *testing.T) {
			enc, err := scoring.Encode(kc.f, 4, "test")
			if err != nil {
				t.Fatal(err)
			}
			m, err := scoring.Decode(enc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() != kc.f.Kind || m.ID() != enc.ID() || m.Version() != 4 {
				t.Fatalf("decoded %s %s v%d, encoded %s %s", m.Kind(), m.ID(), m.Version(), kc.f.Kind, enc.ID())
			}
			want := enginePredictions(t, kc.f, kc.test)
			for _, threads := range []int{1, 3} {
				checkScore(t, m, kc.test, want, threads)
			}
		})
	}
}

func checkScore(t *testing.T, m *scoring.Model, raw *frame.Frame, want *forest.Prediction, threads int) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := raw.ToRecord(mem)
	defer rec.Release()
	n := int(rec.NumRows())
	r1, r2 := rec.NewSlice(0, 25), rec.NewSlice(25, int64(n))
	defer r1.Release()
	defer r2.Release()
	keep := raw.Names[0]
	out, err := m.Score([]arrow.Record{r1, r2}, scoring.Options{Keep: []string{keep}, Source: "part-0.parquet", FirstRow: 100, Threads: threads, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, o := range out {
			o.Release()
		}
	}()
	wantSchema, err := m.PredictionSchema(rec.Schema(), scoring.Options{Keep: []string{keep}})
	if err != nil {
		t.Fatal(err)
	}
	q := max(len(m.Targets()), 1)
	k := len(m.Classes())
	if len(out) != 2 || out[0].NumRows() != 25 || int(out[1].NumRows()) != n-25 {
		t.Fatalf("%d records for 2", len(out))
	}
	g := 0
	for _, o := range out {
		if !o.Schema().Equal(wantSchema) {
			t.Fatalf("schema %v, want %v", o.Schema(), wantSchema)
		}
		row, src, kept := o.Column(3).(*array.Int64), o.Column(2).(*array.String), o.Column(4).(*array.Float32)
		for i := 0; i < int(o.NumRows()); i, g = i+1, g+1 {
			if row.Value(i) != int64(100+g) || src.Value(i) != "part-0.parquet" || kept.Value(i) != raw.Cols[0][g] {
				t.Fatalf("row %d: row %d source %q kept %v", g, row.Value(i), src.Value(i), kept.Value(i))
			}
			switch {
			case k > 0:
				if c := o.Column(5).(*array.String).Value(i); c != m.Classes()[want.Class[g]] {
					t.Fatalf("row %d: class %s, engine %s", g, c, m.Classes()[want.Class[g]])
				}
				for j := 0; j < k; j++ {
					if p := o.Column(6 + j).(*array.Float32).Value(i); p != want.Prob[g*k+j] {
						t.Fatalf("row %d: prob %d %v, engine %v", g, j, p, want.Prob[g*k+j])
					}
				}
			default:
				for r := 0; r < q; r++ {
					v := o.Column(5 + r).(*array.Float64).Value(i)
					if v != want.Value[g*q+r] || math.IsNaN(v) {
						t.Fatalf("row %d output %d: %v, engine %v", g, r, v, want.Value[g*q+r])
					}
				}
			}
		}
	}
	if g != n {
		t.Fatalf("%d prediction rows for %d input rows", g, n)
	}
	// a record without rows scores to a prediction record without rows
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	none, err := m.Score([]arrow.Record{empty}, scoring.Options{Threads: threads, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	if len(none) != 1 || none[0].NumRows() != 0 {
		t.Fatalf("zero-row input: %v", none)
	}
	none[0].Release()
}

package scoring_test

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/internal/fixture"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// metaValue is the schema's metadata value of key ("" when absent).
func metaValue(s *arrow.Schema, key string) string {
	md := s.Metadata()
	if i := md.FindKey(key); i >= 0 {
		return md.Values()[i]
	}
	return ""
}

// TestScoreProbsTop: the top-k records of a 300-class model hold, row by
// row, the k largest of the prob_<class> values that the full output of
// the same model on the same rows holds, in order — equal probabilities
// with the predicted class first, then in class order — for k = 1, 7, the
// auto default (5, with a note in the metadata) and k at and above the
// number of classes (every class, ranked). Rows are numbered across the
// records of the call, as with every class's probabilities.
func TestScoreProbsTop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const k = 300
	m := trainModel(t, fixture.Classes(3000, 6, k, 1), 1)
	rec := fixture.Classes(160, 6, k, 2).ToRecord(mem)
	defer rec.Release()
	r1, r2 := rec.NewSlice(0, 70), rec.NewSlice(70, 160)
	defer r1.Release()
	defer r2.Release()
	recs := []arrow.Record{r1, r2}
	all, err := m.Score(recs, scoring.Options{Probs: scoring.ProbsAll, Source: "s", Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(all)
	if got := all[0].NumCols(); got != 5+k {
		t.Fatalf("all: %d columns, want %d", got, 5+k)
	}
	ties := 0
	for _, c := range []struct {
		probs scoring.Probs
		top   int
		note  bool
	}{
		{scoring.ProbsTop(1), 1, false},
		{scoring.ProbsTop(7), 7, false},
		{scoring.ProbsAuto, scoring.DefaultTopK, true},
		{"auto", scoring.DefaultTopK, true},
		{scoring.ProbsTop(k), k, false},
		{scoring.ProbsTop(5000), k, false},
	} {
		opts := scoring.Options{Probs: c.probs, Source: "s", Mem: mem}
		out, err := m.Score(recs, opts)
		if err != nil {
			t.Fatalf("%q: %v", c.probs, err)
		}
		want, err := m.PredictionSchema(rec.Schema(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.ResolveProbs(c.probs); err != nil || got != scoring.ProbsTop(c.top) {
			t.Errorf("%q resolves to %q, %v; want top%d", c.probs, got, err, c.top)
		}
		for j, o := range out {
			s := o.Schema()
			if !s.Equal(want) || !s.Metadata().Equal(want.Metadata()) {
				t.Fatalf("%q: record schema %v, PredictionSchema %v", c.probs, s, want)
			}
			if s.NumFields() != 5+2*c.top || s.Field(5).Name != "top1_class" || s.Field(4+2*c.top).Name != "top"+strconv.Itoa(c.top)+"_prob" {
				t.Fatalf("%q: columns %v", c.probs, s)
			}
			if metaValue(s, schemas.MetaProbs) != "top"+strconv.Itoa(c.top) || metaValue(s, schemas.MetaClasses) != "300" ||
				(metaValue(s, schemas.MetaProbsNote) != "") != c.note {
				t.Fatalf("%q: metadata %v", c.probs, s.Metadata())
			}
			if c.note && !strings.Contains(metaValue(s, schemas.MetaProbsNote), "300 classes, more than 256") {
				t.Errorf("%q: note %q", c.probs, metaValue(s, schemas.MetaProbsNote))
			}
			ties += checkTop(t, string(c.probs), all[j], o, c.top)
		}
		release(out)
	}
	if ties == 0 {
		t.Fatal("no equal probabilities among the ranks compared: the ties are not tested")
	}
}

// checkTop compares a top-k record with the record of every class's
// probabilities of the same rows and returns the number of adjacent ranks
// of equal probability it saw.
func checkTop(t *testing.T, name string, all, top arrow.Record, k int) int {
	t.Helper()
	if all.NumRows() != top.NumRows() {
		t.Fatalf("%s: %d rows, all has %d", name, top.NumRows(), all.NumRows())
	}
	for j := 0; j < 5; j++ { // model, source, row and prediction columns
		if !array.Equal(all.Column(j), top.Column(j)) {
			t.Fatalf("%s: column %s differs from the all output", name, top.ColumnName(j))
		}
	}
	nc := int(all.NumCols()) - 5
	pred := all.Column(4).(*array.String)
	ties := 0
	for i := 0; i < int(all.NumRows()); i++ {
		type cp struct {
			name string
			p    float32
		}
		row := make([]cp, nc)
		for q := range row {
			row[q] = cp{strings.TrimPrefix(all.ColumnName(5+q), schemas.ProbPrefix), all.Column(5 + q).(*array.Float32).Value(i)}
		}
		// stable: class order among equals, the prediction first
		sort.SliceStable(row, func(a, b int) bool {
			if row[a].p != row[b].p {
				return row[a].p > row[b].p
			}
			return row[a].name == pred.Value(i) && row[b].name != pred.Value(i)
		})
		for q := 0; q < k; q++ {
			c := top.Column(5 + 2*q).(*array.String).Value(i)
			p := top.Column(6 + 2*q).(*array.Float32).Value(i)
			if c != row[q].name || p != row[q].p {
				t.Fatalf("%s: row %d rank %d is %s %v, want %s %v", name, i, q+1, c, p, row[q].name, row[q].p)
			}
			if q > 0 && row[q].p == row[q-1].p {
				ties++
			}
		}
		if top.Column(5).(*array.String).Value(i) != pred.Value(i) {
			t.Fatalf("%s: row %d: top1_class is not the prediction", name, i)
		}
	}
	return ties
}

// TestScoreProbsNone: none writes prediction alone, the same predictions
// as with every probability, and says so in the metadata.
func TestScoreProbsNone(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, fixture.Classes(600, 4, 12, 1), 1)
	rec := fixture.Classes(50, 4, 12, 2).ToRecord(mem)
	defer rec.Release()
	all, err := m.Score([]arrow.Record{rec}, scoring.Options{Keep: []string{"y"}, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(all)
	none, err := m.Score([]arrow.Record{rec}, scoring.Options{Keep: []string{"y"}, Probs: scoring.ProbsNone, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(none)
	s := none[0].Schema()
	if s.NumFields() != 6 || s.Field(5).Name != schemas.ColPrediction || metaValue(s, schemas.MetaProbs) != "none" || metaValue(s, schemas.MetaClasses) != "12" {
		t.Fatalf("none: schema %v", s)
	}
	for j := 0; j < 6; j++ {
		if !array.Equal(all[0].Column(j), none[0].Column(j)) {
			t.Fatalf("column %s differs", s.Field(j).Name)
		}
	}
}

// TestScoreProbsAutoFewClasses: with at most 256 classes the default is
// today's output, metadata included, and all and auto are the same
// records.
func TestScoreProbsAutoFewClasses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, fixture.Classes(2000, 4, scoring.MaxAllProbs, 1), 1)
	rec := fixture.Classes(40, 4, scoring.MaxAllProbs, 2).ToRecord(mem)
	defer rec.Release()
	def, err := m.Score([]arrow.Record{rec}, scoring.Options{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(def)
	all, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: scoring.ProbsAll, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(all)
	s := def[0].Schema()
	if s.NumFields() != 5+scoring.MaxAllProbs || s.Field(5).Name != "prob_c0" || s.Metadata().Len() != 1 || metaValue(s, "forestd.schema") != "predictions/v1" {
		t.Fatalf("default schema of %d classes: %d columns, metadata %v", scoring.MaxAllProbs, s.NumFields(), s.Metadata())
	}
	if !array.RecordEqual(def[0], all[0]) || !s.Metadata().Equal(all[0].Schema().Metadata()) {
		t.Fatal("auto and all differ")
	}
	if p, err := m.ResolveProbs(scoring.ProbsAuto); err != nil || p != scoring.ProbsAll {
		t.Fatalf("auto resolves to %q, %v", p, err)
	}
}

// TestScoreProbsErrors: a probability choice that is not auto, all, none
// or top<k> fails Score, PredictionSchema and ResolveProbs with an error
// naming the option and the value, which is not an input error.
func TestScoreProbsErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := trainModel(t, trunk(t, 200, 1), 1)
	rec := trunk(t, 10, 2).ToRecord(mem)
	defer rec.Release()
	for _, bad := range []scoring.Probs{"top", "top0", "top-1", "top+5", "top05", "TOP5", "top5 ", "5", "some", "top1.5", scoring.ProbsTop(0), "top99999999999999999999"} {
		out, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: bad, Mem: mem})
		release(out)
		if err == nil || errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), "Probs: "+strconv.Quote(string(bad))) {
			t.Errorf("%q: Score error %v", bad, err)
		}
		if _, err := m.PredictionSchema(rec.Schema(), scoring.Options{Probs: bad}); err == nil || !strings.Contains(err.Error(), strconv.Quote(string(bad))) {
			t.Errorf("%q: PredictionSchema error %v", bad, err)
		}
		if _, err := m.ResolveProbs(bad); err == nil {
			t.Errorf("%q: ResolveProbs accepted it", bad)
		}
		if bad.Validate() == nil {
			t.Errorf("%q: Validate accepted it", bad)
		}
	}
	for _, good := range []scoring.Probs{"", "auto", "all", "none", "top1", "top10", "top256"} {
		if err := good.Validate(); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	if scoring.ProbsTop(7).TopK() != 7 || scoring.ProbsAll.TopK() != 0 || scoring.Probs("top0").TopK() != 0 {
		t.Error("TopK")
	}
	// top k of 2 classes: both, ranked
	if p, err := m.ResolveProbs(scoring.ProbsTop(5)); err != nil || p != scoring.ProbsTop(2) {
		t.Errorf("top5 of 2 classes resolves to %q, %v", p, err)
	}
}

// TestScoreProbsOtherModels: regression and multi-output models have no
// class probabilities: every valid choice gives their usual records.
func TestScoreProbsOtherModels(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sw, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := *sw
	reg.YReg, reg.Task, reg.LabelName = tg[0], frame.TaskRegression, "y0"
	y := make([]float64, 0, 600)
	for i := 0; i < 200; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	if err := sw.SetTargets([]string{"y0", "y1", "y2"}, y); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*scoring.Model{"regression": trainModel(t, &reg, 1), "multi-output": trainModel(t, sw, 1)} {
		rec := sw.ToRecord(mem)
		def, err := m.Score([]arrow.Record{rec}, scoring.Options{Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []scoring.Probs{scoring.ProbsAll, scoring.ProbsNone, scoring.ProbsTop(3)} {
			out, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: p, Mem: mem})
			if err != nil {
				t.Fatalf("%s, %q: %v", name, p, err)
			}
			if !array.RecordEqual(def[0], out[0]) || !out[0].Schema().Metadata().Equal(def[0].Schema().Metadata()) {
				t.Errorf("%s, %q: records differ from the default's", name, p)
			}
			if r, err := m.ResolveProbs(p); err != nil || r != scoring.ProbsNone {
				t.Errorf("%s, %q resolves to %q, %v", name, p, r, err)
			}
			release(out)
		}
		release(def)
		rec.Release()
	}
}

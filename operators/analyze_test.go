package operators

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/schemas"
)

// TestAnalyzerXOR3: on the dissertation's xor3 data (Table 6.1 iii: one
// marginal feature m0 and one XOR pair), the streaming analysis finds m0
// marginal and {x2a_0, x2a_1} as an MDS, reports both, and select forwards
// m0 plus the pair's mapped columns and the label.
func TestAnalyzerXOR3(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fr, err := synth.Generate(synth.XOR3, synth.Options{N: 600, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	rec := fr.ToRecord(mem)
	defer rec.Release()
	a, err := NewAnalyzer(AnalyzeOptions{Label: "y", Window: 600, MinRows: 100, Seed: 1}) // the default search: Holm at 0.05
	if err != nil {
		t.Fatal(err)
	}
	for lo := int64(0); lo < 600; lo += 200 {
		sl := rec.NewSlice(lo, lo+200)
		if _, err := a.Add(sl.Schema(), []arrow.Record{sl}); err != nil {
			t.Fatal(err)
		}
		sl.Release()
	}
	if !a.Due(time.Now()) {
		t.Fatal("analysis not due after a full window")
	}
	an, err := a.Analyze(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if a.Latest() != an || an.Seq != 1 {
		t.Fatal("latest analysis not kept")
	}
	names := func(idx []int) []string {
		var out []string
		for _, j := range idx {
			out = append(out, an.Names[j])
		}
		return out
	}
	if m := names(an.Result.Marginal); !slices.Equal(m, []string{"m0"}) {
		t.Fatalf("marginal set %v, want [m0]", m)
	}
	if len(an.Result.Groups) != 1 || !slices.Equal(names(an.Result.Groups[0].Features), []string{"x2a_0", "x2a_1"}) {
		t.Fatalf("groups %+v", an.Result.Groups)
	}
	rep, err := an.Report(mem)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NumRows() != 4 || rep.Schema().Field(0).Name != schemas.ColReportRecord {
		t.Fatalf("report %v", rep)
	}
	rep.Release()
	sel, err := an.Select(mem, rec.Schema(), []arrow.Record{rec}, []string{"y"})
	if err != nil {
		t.Fatal(err)
	}
	defer sel[0].Release()
	var cols []string
	for _, f := range sel[0].Schema().Fields() {
		cols = append(cols, f.Name)
	}
	want := append(append([]string{"m0"}, an.Transform.Names()[1:]...), "y")
	if !slices.Equal(cols, want) || sel[0].NumRows() != 600 {
		t.Fatalf("selected columns %v, want %v", cols, want)
	}
	// the mapped columns equal the transform applied offline
	mapped, err := an.Transform.Columns(fr)
	if err != nil {
		t.Fatal(err)
	}
	got := sel[0].Column(1).(*array.Float64)
	for i := 0; i < 600; i++ {
		if got.Value(i) != mapped[0][i] {
			t.Fatalf("row %d: mapped %v, offline %v", i, got.Value(i), mapped[0][i])
		}
	}
	// a batch without the pair is an input error
	noPair := array.NewRecord(arrow.NewSchema(rec.Schema().Fields()[:1], nil), rec.Columns()[:1], rec.NumRows())
	defer noPair.Release()
	if _, err := an.Select(mem, noPair.Schema(), []arrow.Record{noPair}, nil); err == nil {
		t.Fatal("batch without the mapped features accepted")
	}
}

// TestAnalyzerNumericLabel: a float label is numeric under TaskAuto (dCor_n
// with |y − y'|), and so is an integer label with more than
// frame.MaxAutoClasses values; the analysis finds the marginal feature
// and the product pair of y = 2·x0 + sign(x1·x2) + noise, its report says
// task regression with raw and adjusted p-values, and select maps the
// pair. TaskClassification keeps the float label as classes.
func TestAnalyzerNumericLabel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	n := 500
	r := rand.New(rand.NewPCG(9, 1))
	cols := make([][]float64, 4)
	for j := range cols {
		cols[j] = make([]float64, n)
		for i := range cols[j] {
			cols[j][i] = r.NormFloat64()
		}
	}
	y := make([]float64, n)
	yi := make([]int64, n)
	for i := range y {
		s := 1.0
		if cols[1][i]*cols[2][i] < 0 {
			s = -1
		}
		y[i] = 2*cols[0][i] + s + 0.1*r.NormFloat64()
		yi[i] = int64(math.Round(10 * y[i]))
	}
	build := func(label arrow.Array) arrow.Record {
		fields := []arrow.Field{{Name: "x0", Type: arrow.PrimitiveTypes.Float64}, {Name: "x1", Type: arrow.PrimitiveTypes.Float64},
			{Name: "x2", Type: arrow.PrimitiveTypes.Float64}, {Name: "x3", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: label.DataType()}}
		arrs := make([]arrow.Array, 0, 5)
		for _, c := range cols {
			b := array.NewFloat64Builder(mem)
			b.AppendValues(c, nil)
			arrs = append(arrs, b.NewArray())
			b.Release()
		}
		arrs = append(arrs, label)
		rec := array.NewRecord(arrow.NewSchema(fields, nil), arrs, int64(n))
		for _, a := range arrs {
			a.Release()
		}
		return rec
	}
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues(y, nil)
	ib := array.NewInt64Builder(mem)
	ib.AppendValues(yi, nil)
	floatRec, intRec := build(fb.NewArray()), build(ib.NewArray())
	fb.Release()
	ib.Release()
	defer floatRec.Release()
	defer intRec.Release()
	for name, rec := range map[string]arrow.Record{"float": floatRec, "int": intRec} {
		a, err := NewAnalyzer(AnalyzeOptions{Label: "y", Window: n, MinRows: 100, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
			t.Fatal(err)
		}
		an, err := a.Analyze(context.Background(), time.Now())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res := an.Result
		if an.Task != frame.TaskRegression || res.Stat != dependence.StatDCor || res.Adjust != dependence.AdjustHolm {
			t.Fatalf("%s: task %v stat %s adjust %s", name, an.Task, res.Stat, res.Adjust)
		}
		if !slices.Equal(res.Marginal, []int{0}) || len(res.Groups) != 1 || !slices.Equal(res.Groups[0].Features, []int{1, 2}) {
			t.Fatalf("%s: marginal %v groups %+v", name, res.Marginal, res.Groups)
		}
		rep, err := an.Report(mem)
		if err != nil {
			t.Fatal(err)
		}
		md := rep.Schema().Metadata()
		if i := md.FindKey(schemas.MetaReportTask); i < 0 || md.Values()[i] != "regression" {
			t.Errorf("%s: report metadata %v", name, md)
		}
		if i := md.FindKey(schemas.MetaReportAdjust); i < 0 || md.Values()[i] != "holm" {
			t.Errorf("%s: report metadata %v", name, md)
		}
		if adj := rep.Column(7).(*array.Float64); adj.Value(0) != res.AdjPValue[0] || !(adj.Value(0) <= 0.05) || !(adj.Value(3) > 0.05) {
			t.Errorf("%s: adjusted p-values %v", name, adj)
		}
		rep.Release()
		sel, err := an.Select(mem, rec.Schema(), []arrow.Record{rec}, []string{"y"})
		if err != nil {
			t.Fatal(err)
		}
		if got := sel[0].NumCols(); got != 4 { // x0, two mapped columns, y
			t.Errorf("%s: %d selected columns", name, got)
		}
		sel[0].Release()
	}
	// classification by request: the float label's distinct values are classes
	a, err := NewAnalyzer(AnalyzeOptions{Label: "y", Task: frame.TaskClassification, Window: n, MinRows: 100, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(floatRec.Schema(), []arrow.Record{floatRec}); err != nil {
		t.Fatal(err)
	}
	s := dependence.DefaultSearchOptions()
	s.Method, s.Test.MaxPerms = dependence.MethodMarginal, 100
	a.opts.Search = &s
	an, err := a.Analyze(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if an.Task != frame.TaskClassification || len(an.Classes) != n {
		t.Errorf("classification: task %v, %d classes", an.Task, len(an.Classes))
	}
}

package operators

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
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
	s := dependence.DefaultSearchOptions()
	s.Alpha = 0 // the dissertation's FDM setting (§6.5.2): no permutation may reach the statistic
	s.Test.MaxPerms, s.Test.Threads = 500, 1
	a, err := NewAnalyzer(AnalyzeOptions{Label: "y", Window: 600, MinRows: 100, Search: &s, Seed: 1})
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
	an, err := a.Analyze(time.Now())
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

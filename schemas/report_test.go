package schemas

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func reportBatch() ReportBatch {
	return ReportBatch{
		Features: []ReportFeature{
			{Name: "m0", Group: -1, Test: ReportTest{Statistic: 0.3, PValue: 1.0 / 5001, AdjPValue: 4.0 / 5001, B: 0, N: 5000}},
			{Name: "a,1", Group: 1, Test: ReportTest{Statistic: -0.001, PValue: 0.6, B: 59, N: 100}},
			{Name: "b", Group: 1, Test: ReportTest{Statistic: 0.002, PValue: 0.3, B: 29, N: 100}},
			{Name: "c", Group: 0, Test: ReportTest{Statistic: math.NaN(), PValue: 1, B: 0, N: 0}},
		},
		Groups: []ReportGroup{{Features: []int{1, 2}, Kind: "mds", Test: ReportTest{Statistic: 0.07, PValue: 1.0 / 5001, N: 5000}}},
	}
}

func TestBuildDependenceReport(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := ReportSpec{Stat: "gcor", Method: "mdc-bottomup", Alpha: 0.05, Adjust: "holm", Task: "classification", Seed: 7, Rows: 1000}
	rec, err := BuildDependenceReport(mem, spec, reportBatch())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(DependenceReport(spec)) {
		t.Fatalf("schema %v", rec.Schema())
	}
	if rec.NumRows() != 5 {
		t.Fatalf("%d rows, want 4 features + 1 group", rec.NumRows())
	}
	md := rec.Schema().Metadata()
	for k, want := range map[string]string{"forestd.schema": "dependence-report/v2", MetaReportStat: "gcor",
		MetaReportMethod: "mdc-bottomup", MetaReportAlpha: "0.05", MetaReportAdjust: "holm", MetaReportTask: "classification",
		MetaReportSeed: "7", MetaReportRows: "1000"} {
		if i := md.FindKey(k); i < 0 || md.Values()[i] != want {
			t.Errorf("metadata %s missing or not %q", k, want)
		}
	}
	str := func(c, r int) string { return rec.Column(c).(*array.String).Value(r) }
	if str(0, 0) != RecordFeature || str(0, 4) != RecordGroup {
		t.Errorf("record kinds %q %q", str(0, 0), str(0, 4))
	}
	if str(1, 4) != "g1" || str(2, 4) != `["a,1","b"]` || str(2, 0) != `["m0"]` {
		t.Errorf("group row: name %q, features %q; feature row features %q", str(1, 4), str(2, 4), str(2, 0))
	}
	kinds := []string{"marginal", "mds", "mds", "none", "mds"}
	groups := []int32{-1, 1, 1, 0, 1}
	for r := range 5 {
		if str(4, r) != kinds[r] || rec.Column(3).(*array.Int32).Value(r) != groups[r] {
			t.Errorf("row %d: kind %q group %d, want %q %d", r, str(4, r), rec.Column(3).(*array.Int32).Value(r), kinds[r], groups[r])
		}
	}
	if v := rec.Column(6).(*array.Float64).Value(0); v != 1.0/5001 {
		t.Errorf("p_value %v", v)
	}
	if v := rec.Column(7).(*array.Float64).Value(0); rec.Schema().Field(7).Name != ColReportPAdjusted || v != 4.0/5001 {
		t.Errorf("%s %v", rec.Schema().Field(7).Name, v)
	}
	if !rec.Column(5).IsNull(3) {
		t.Error("a NaN statistic should be null")
	}
	if v := rec.Column(9).(*array.Int64).Value(1); v != 100 {
		t.Errorf("n_perms %d", v)
	}
}

func TestBuildDependenceReportRejects(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cases := map[string]func(*ReportBatch){
		"group out of range": func(b *ReportBatch) { b.Features[0].Group = 2 },
		"label below -1":     func(b *ReportBatch) { b.Features[0].Group = -2 },
		"not a member":       func(b *ReportBatch) { b.Features[3].Group = 1 },
		"kind":               func(b *ReportBatch) { b.Groups[0].Kind = "xyz" },
		"member index":       func(b *ReportBatch) { b.Groups[0].Features = []int{1, 9} },
		"empty group":        func(b *ReportBatch) { b.Groups[0].Features = nil; b.Features[1].Group = 0; b.Features[2].Group = 0 },
	}
	for name, mod := range cases {
		b := reportBatch()
		mod(&b)
		rec, err := BuildDependenceReport(mem, ReportSpec{}, b)
		if err == nil {
			rec.Release()
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "schemas: report: ") {
			t.Errorf("%s: error %q", name, err)
		}
	}
}

package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Dependence report column names.
const (
	ColReportRecord    = "record"
	ColReportName      = "name"
	ColReportMembers   = "features"
	ColReportGroup     = "group"
	ColReportKind      = "kind"
	ColReportStatistic = "statistic"
	ColReportPValue    = "p_value"
	ColReportPAdjusted = "p_adjusted"
	ColReportB         = "b"
	ColReportN         = "n_perms"
)

// Dependence report record kinds (column "record").
const (
	RecordFeature = "feature"
	RecordGroup   = "group"
)

// Dependence report metadata keys.
const (
	MetaReportStat   = "forestd.report.stat"
	MetaReportMethod = "forestd.report.method"
	MetaReportAlpha  = "forestd.report.alpha"
	MetaReportSeed   = "forestd.report.seed"
	MetaReportRows   = "forestd.report.rows"
	MetaReportAdjust = "forestd.report.adjust"
	MetaReportTask   = "forestd.report.task"
)

// ReportSpec is what a dependence report says about the whole analysis.
type ReportSpec struct {
	Stat   string  // gcor or dcor
	Method string  // marginal, mdc-topdown, mdc-dc, mdc-bottomup, sdc-bottomup
	Alpha  float64 // level: of the whole analysis (holm, bh) or of each test (none)
	Adjust string  // false-discovery control: holm, bh or none
	Task   string  // the label: classification or regression
	Seed   uint64
	Rows   int // labelled rows analysed
}

// DependenceReport returns the schema of a dependence report (ARCHITECTURE.md,
// §4, the `forestd analyze --out` table), one row per feature and then one
// row per discovered group:
//
//	record utf8       "feature" or "group"
//	name utf8         the feature's name, or the group's id "g1", "g2", …
//	features utf8     the group's member names as a JSON array ("[\"a\",\"b\"]");
//	                  for a feature row its own name in an array
//	group int32       feature rows: the labelling of dissertation Table 5.3
//	                  (−1 marginally dependent, 0 in no group, g ≥ 1 member
//	                  of group g); group rows: the group's number g
//	kind utf8         feature rows: "marginal", "none" or the group's kind;
//	                  group rows: "mds" or "sds"
//	statistic float64 gCor_n or dCor_n of the feature (marginal test) or of
//	                  the group (joint test)
//	p_value float64   the raw permutation p-value: (b+1)/(n_perms+1), or
//	                  b/n_perms for a sequential test stopped at its b-th
//	                  exceedance
//	p_adjusted float64 the p-value adjusted for the analysis' family on
//	                  the scale of α (a finding when ≤ α; the raw p-value
//	                  with adjustment "none")
//	b int64           permutations reaching the observed statistic
//	n_perms int64     permutations run
//
// with the statistic, method, α, adjustment, task, seed and row count in
// the metadata.
// (Flat columns rather than a list type so that every Parquet and CSV
// writer of forestd can carry it.)
func DependenceReport(spec ReportSpec) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColReportRecord, Type: arrow.BinaryTypes.String},
		{Name: ColReportName, Type: arrow.BinaryTypes.String},
		{Name: ColReportMembers, Type: arrow.BinaryTypes.String},
		{Name: ColReportGroup, Type: arrow.PrimitiveTypes.Int32},
		{Name: ColReportKind, Type: arrow.BinaryTypes.String},
		{Name: ColReportStatistic, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColReportPValue, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColReportPAdjusted, Type: arrow.PrimitiveTypes.Float64},
		{Name: ColReportB, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColReportN, Type: arrow.PrimitiveTypes.Int64},
	}
	md := arrow.NewMetadata(
		[]string{"forestd.schema", MetaReportStat, MetaReportMethod, MetaReportAlpha, MetaReportAdjust, MetaReportTask, MetaReportSeed, MetaReportRows},
		[]string{"dependence-report/v2", spec.Stat, spec.Method,
			strconv.FormatFloat(spec.Alpha, 'g', -1, 64), spec.Adjust, spec.Task, strconv.FormatUint(spec.Seed, 10), strconv.Itoa(spec.Rows)})
	return arrow.NewSchema(fields, &md)
}

// ReportTest is one permutation test in a report: the raw and the
// adjusted p-value.
type ReportTest struct {
	Statistic, PValue, AdjPValue float64
	B, N                         int
}

// ReportFeature is one feature's marginal test and its Table 5.3 label.
type ReportFeature struct {
	Name  string
	Group int // −1 marginal, 0 none, g ≥ 1
	Test  ReportTest
}

// ReportGroup is one discovered MDS or SDS; Features index ReportBatch.Features.
type ReportGroup struct {
	Features []int
	Kind     string // "mds" or "sds"
	Test     ReportTest
}

// ReportBatch holds the content of a report.
type ReportBatch struct {
	Features []ReportFeature
	Groups   []ReportGroup
}

// BuildDependenceReport assembles a record following DependenceReport(spec).
// A feature label or group member outside the lists, or an unknown kind,
// is an error.
func BuildDependenceReport(mem memory.Allocator, spec ReportSpec, b ReportBatch) (arrow.Record, error) {
	nf := len(b.Features)
	for j, f := range b.Features {
		if f.Group < -1 || f.Group > len(b.Groups) {
			return nil, fmt.Errorf("schemas: report: feature %q has group %d, want -1..%d", f.Name, f.Group, len(b.Groups))
		}
		if f.Group > 0 && !containsInt(b.Groups[f.Group-1].Features, j) {
			return nil, fmt.Errorf("schemas: report: feature %q is labelled group %d but is not a member", f.Name, f.Group)
		}
	}
	for g, gr := range b.Groups {
		if gr.Kind != "mds" && gr.Kind != "sds" {
			return nil, fmt.Errorf("schemas: report: group %d has kind %q, want mds or sds", g+1, gr.Kind)
		}
		if len(gr.Features) == 0 {
			return nil, fmt.Errorf("schemas: report: group %d is empty", g+1)
		}
		for _, j := range gr.Features {
			if j < 0 || j >= nf {
				return nil, fmt.Errorf("schemas: report: group %d names feature %d of %d", g+1, j, nf)
			}
		}
	}
	schema := DependenceReport(spec)
	n := nf + len(b.Groups)
	rec := array.NewStringBuilder(mem)
	name := array.NewStringBuilder(mem)
	members := array.NewStringBuilder(mem)
	group := array.NewInt32Builder(mem)
	kind := array.NewStringBuilder(mem)
	stat := array.NewFloat64Builder(mem)
	pv := array.NewFloat64Builder(mem)
	pa := array.NewFloat64Builder(mem)
	bb := array.NewInt64Builder(mem)
	nb := array.NewInt64Builder(mem)
	builders := []array.Builder{rec, name, members, group, kind, stat, pv, pa, bb, nb}
	defer func() {
		for _, x := range builders {
			x.Release()
		}
	}()
	for _, x := range builders {
		x.Reserve(n)
	}
	test := func(t ReportTest) {
		appendFloat(stat, t.Statistic)
		appendFloat(pv, t.PValue)
		appendFloat(pa, t.AdjPValue)
		bb.Append(int64(t.B))
		nb.Append(int64(t.N))
	}
	for _, f := range b.Features {
		rec.Append(RecordFeature)
		name.Append(f.Name)
		members.Append(jsonNames([]string{f.Name}))
		group.Append(int32(f.Group))
		switch {
		case f.Group < 0:
			kind.Append("marginal")
		case f.Group == 0:
			kind.Append("none")
		default:
			kind.Append(b.Groups[f.Group-1].Kind)
		}
		test(f.Test)
	}
	for g, gr := range b.Groups {
		rec.Append(RecordGroup)
		name.Append("g" + strconv.Itoa(g+1))
		names := make([]string, len(gr.Features))
		for i, j := range gr.Features {
			names[i] = b.Features[j].Name
		}
		members.Append(jsonNames(names))
		group.Append(int32(g + 1))
		kind.Append(gr.Kind)
		test(gr.Test)
	}
	cols := make([]arrow.Array, len(builders))
	for i, x := range builders {
		cols[i] = x.NewArray()
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecord(schema, cols, int64(n)), nil
}

// appendFloat writes NaN (an undefined statistic) as null.
func appendFloat(b *array.Float64Builder, v float64) {
	if math.IsNaN(v) {
		b.AppendNull()
		return
	}
	b.Append(v)
}

func jsonNames(names []string) string {
	out, _ := json.Marshal(names) // a []string always marshals
	return string(out)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

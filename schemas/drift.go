package schemas

import (
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
)

// DriftReport returns the schema of a drift report (the `forestd drift
// --out` table; arrowforest/drift's Report.Record builds it), one row per
// test:
//
//	test utf8          the feature's name, or "(joint)"
//	kind utf8          "numeric", "categorical" or "joint"
//	method utf8        "exact" or "projections" (what the p-value permuted)
//	statistic float64  the two-sample energy statistic of energy::eqdist.e
//	projected float64  the joint test's random-projection statistic (null
//	                   for the other rows)
//	p_value float64    the permutation p-value
//	p_adjusted float64 adjusted across the report's tests (scale of α)
//	drift bool         p_adjusted ≤ α
//	rows int64         pooled rows tested
//	perms int64        permutations run
//
// with α and the adjustment in the metadata.
func DriftReport(alpha float64, adjust string) *arrow.Schema {
	f64 := arrow.PrimitiveTypes.Float64
	fields := []arrow.Field{
		{Name: "test", Type: arrow.BinaryTypes.String},
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "method", Type: arrow.BinaryTypes.String},
		{Name: "statistic", Type: f64},
		{Name: "projected", Type: f64, Nullable: true},
		{Name: "p_value", Type: f64},
		{Name: "p_adjusted", Type: f64},
		{Name: "drift", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
		{Name: "perms", Type: arrow.PrimitiveTypes.Int64},
	}
	md := arrow.NewMetadata([]string{"forestd.schema", "forestd.drift.alpha", "forestd.drift.adjust"},
		[]string{"drift-report/v1", strconv.FormatFloat(alpha, 'g', -1, 64), adjust})
	return arrow.NewSchema(fields, &md)
}

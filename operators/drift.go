package operators

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/schemas"
)

// DriftRecord returns a drift report (arrowforest/drift.Test) as a table
// of schemas.DriftReport, one row per test: the features in order, then
// the joint test named "(joint)". A feature's method is "exact" and its
// projected statistic null. The command's --out, the daemon and the
// Benthos processor emit this one table.
func DriftRecord(r drift.Report, mem memory.Allocator) arrow.Record {
	b := array.NewRecordBuilder(mem, schemas.DriftReport(r.Alpha, string(r.Adjust)))
	defer b.Release()
	add := func(name, kind, method string, stat float64, proj *float64, p, pa float64, drift bool, rows, perms int) {
		b.Field(0).(*array.StringBuilder).Append(name)
		b.Field(1).(*array.StringBuilder).Append(kind)
		b.Field(2).(*array.StringBuilder).Append(method)
		b.Field(3).(*array.Float64Builder).Append(stat)
		if proj == nil {
			b.Field(4).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(4).(*array.Float64Builder).Append(*proj)
		}
		b.Field(5).(*array.Float64Builder).Append(p)
		b.Field(6).(*array.Float64Builder).Append(pa)
		b.Field(7).(*array.BooleanBuilder).Append(drift)
		b.Field(8).(*array.Int64Builder).Append(int64(rows))
		b.Field(9).(*array.Int64Builder).Append(int64(perms))
	}
	for _, f := range r.Features {
		add(f.Name, f.Kind, "exact", f.Statistic, nil, f.PValue, f.PAdjusted, f.Drift, f.RefRows+f.CurRows, f.Perms)
	}
	if j := r.Joint; j != nil {
		var proj *float64
		if j.Method == "projections" {
			proj = &j.Projected
		}
		add("(joint)", "joint", j.Method, j.Statistic, proj, j.PValue, j.PAdjusted, j.Drift, j.Rows, j.Perms)
	}
	return b.NewRecord()
}

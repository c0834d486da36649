package operators

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/schemas"
)

// TestDriftRecord: a drift report as a schemas.DriftReport table, the joint row
// last with its projected statistic, the features' null; no memory left.
func TestDriftRecord(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	mk := func(n int, shift float64) []arrow.Record {
		b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Float64}, {Name: "b", Type: arrow.PrimitiveTypes.Float64}, {Name: "c", Type: arrow.PrimitiveTypes.Float64}}, nil))
		defer b.Release()
		for range n {
			for f := range 3 {
				b.Field(f).(*array.Float64Builder).Append(r.NormFloat64() + shift)
			}
		}
		return []arrow.Record{b.NewRecord()}
	}
	rep, err := drift.Test(mk(50, 0), mk(40, 1), drift.Options{Perms: 99})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := DriftRecord(rep, mem)
	defer rec.Release()
	if !rec.Schema().Equal(schemas.DriftReport(rep.Alpha, string(rep.Adjust))) || rec.NumRows() != 4 {
		t.Fatalf("schema %v, %d rows", rec.Schema(), rec.NumRows())
	}
	names, proj := rec.Column(0).(*array.String), rec.Column(4).(*array.Float64)
	if names.Value(3) != "(joint)" || proj.IsValid(0) || proj.Value(3) != rep.Joint.Projected ||
		rec.Column(3).(*array.Float64).Value(0) != rep.Features[0].Statistic || rec.Column(7).(*array.Boolean).Value(0) != rep.Features[0].Drift {
		t.Errorf("record %v for report %+v", rec, rep)
	}
}

package manifold

import (
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
)

// TestReadTraining: the responses' columns are no features, a row whose
// response is null or NaN is dropped from the frame and the responses
// alike and counted.
func TestReadTraining(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y0", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "y1", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{1, 2, 3, 4}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{10, 0, 30, 40}, []bool{true, false, true, true})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{5, 6, math.NaN(), 8}, nil)
	rec := b.NewRecord()
	defer rec.Release()
	fr, resp, skipped, err := ReadTraining(schema, []arrow.Record{rec}, []string{"y0", "y1"}, frame.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 2 || fr.NRows != 2 || resp.Rows != 2 || !slices.Equal(fr.Names, []string{"x"}) {
		t.Fatalf("skipped %d, %d rows, %d responses, features %v", skipped, fr.NRows, resp.Rows, fr.Names)
	}
	if !slices.Equal(fr.Cols[0], []float32{1, 4}) || !slices.Equal(resp.Y, []float64{10, 5, 40, 8}) {
		t.Fatalf("features %v responses %v", fr.Cols[0], resp.Y)
	}
}

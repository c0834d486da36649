package servedemo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/schemas"
)

// TestWatchCountsPerVersion: watch counts each model version's
// predictions and errors against the truth column, whether the numbers
// come as integers (Arrow) or floats (JSON), shows two lines per version,
// and leaves out what a record lacks instead of failing.
func TestWatchCountsPerVersion(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: schemas.ColModelVersion, Type: arrow.PrimitiveTypes.Float64},
		{Name: schemas.ColPrediction, Type: arrow.BinaryTypes.String},
		{Name: "truth", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{1, 1, 1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b", "a", "b"}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"a", "a", "a", "b"}, nil)
	rec := b.NewRecord()
	defer rec.Release()
	st := &demoStats{rows: map[int64]int{}, correct: map[int64]int{}, classed: map[int64]int{}, regressed: map[int64]int{}, sqErr: map[int64]float64{}, shown: map[int64]int{}}
	st.watch(rec, "truth")
	if st.rows[1] != 3 || st.rows[2] != 1 || st.correct[1] != 2 || st.classed[1] != 3 || st.correct[2] != 1 {
		t.Fatalf("rows %v correct %v classed %v", st.rows, st.correct, st.classed)
	}
	var out bytes.Buffer
	st.flush(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "model v1") || !strings.Contains(lines[0], "class a (truth a)") || !strings.Contains(lines[2], "model v2") {
		t.Fatalf("lines:\n%s", out.String())
	}
	// a record without the prediction column: counted, shown as such
	vb := array.NewFloat64Builder(mem)
	defer vb.Release()
	vb.Append(3)
	v3 := vb.NewArray()
	defer v3.Release()
	bare := array.NewRecord(arrow.NewSchema(schema.Fields()[:1], nil), []arrow.Array{v3}, 1)
	defer bare.Release()
	out.Reset()
	st.watch(bare, "truth")
	st.flush(&out)
	if st.rows[3] != 1 || st.classed[3] != 0 || !strings.Contains(out.String(), "model v3 → (no prediction column)") {
		t.Fatalf("rows %v, out:\n%s", st.rows, out.String())
	}
}

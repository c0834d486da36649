package schemas

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Prediction column names.
const (
	ColModelID      = "model_id"
	ColModelVersion = "model_version"
	ColSource       = "source"
	ColRow          = "row"
	ColPrediction   = "prediction"
	ProbPrefix      = "prob_"
)

// PredictionSpec describes one batch of predictions.
type PredictionSpec struct {
	ModelID      string
	ModelVersion int64
	// Classes names the classes (classification); nil for regression.
	Classes []string
	// Keep are passthrough columns copied from the input (e.g. a key).
	Keep []arrow.Field
}

// Predictions returns the schema of a prediction batch:
//
//	model_id utf8, model_version int64, source utf8, row int64,
//	<keep columns>, prediction (utf8 class name | float64 value),
//	prob_<class> float32 per class (classification only).
//
// source and row are the coordinates of the scored row (file path or
// topic/partition/offset, and the row within it), so downstream consumers
// can join predictions back and drop duplicates after a restart.
func Predictions(spec PredictionSpec) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColModelID, Type: arrow.BinaryTypes.String},
		{Name: ColModelVersion, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColSource, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: arrow.PrimitiveTypes.Int64},
	}
	fields = append(fields, spec.Keep...)
	if spec.Classes != nil {
		fields = append(fields, arrow.Field{Name: ColPrediction, Type: arrow.BinaryTypes.String})
		for _, c := range spec.Classes {
			fields = append(fields, arrow.Field{Name: ProbPrefix + c, Type: arrow.PrimitiveTypes.Float32})
		}
	} else {
		fields = append(fields, arrow.Field{Name: ColPrediction, Type: arrow.PrimitiveTypes.Float64})
	}
	md := arrow.NewMetadata([]string{"forestd.schema"}, []string{"predictions/v1"})
	return arrow.NewSchema(fields, &md)
}

// PredictionBatch holds the values of one batch; Class and Prob (row-major,
// len(Classes) per row) for classification, Value for regression.
type PredictionBatch struct {
	Source   string
	FirstRow int64
	Keep     []arrow.Array // one per spec.Keep field, already sliced to the batch
	Class    []int32
	Prob     []float32
	Value    []float64
}

// leadColumns builds the columns every prediction record starts with —
// model_id, model_version, source and row for n rows from firstRow — and
// appends the passthrough arrays keep after them. owned holds the arrays
// it built (the caller releases them, also on error); cols is owned plus
// keep, in schema order.
func leadColumns(mem memory.Allocator, spec PredictionSpec, source string, firstRow int64, n int, keep []arrow.Array) (owned, cols []arrow.Array, err error) {
	if len(keep) != len(spec.Keep) {
		return nil, nil, fmt.Errorf("schemas: %d passthrough arrays for %d fields", len(keep), len(spec.Keep))
	}
	id := array.NewStringBuilder(mem)
	ver := array.NewInt64Builder(mem)
	src := array.NewStringBuilder(mem)
	row := array.NewInt64Builder(mem)
	id.Reserve(n)
	ver.Reserve(n)
	src.Reserve(n)
	row.Reserve(n)
	for i := 0; i < n; i++ {
		id.Append(spec.ModelID)
		ver.UnsafeAppend(spec.ModelVersion)
		src.Append(source)
		row.UnsafeAppend(firstRow + int64(i))
	}
	for _, bld := range []array.Builder{id, ver, src, row} {
		owned = append(owned, bld.NewArray())
		bld.Release()
	}
	cols = append(cols, owned...)
	for k, a := range keep {
		if a.Len() != n {
			return owned, nil, fmt.Errorf("schemas: passthrough column %s has %d rows, want %d", spec.Keep[k].Name, a.Len(), n)
		}
		cols = append(cols, a)
	}
	return owned, cols, nil
}

// BuildPredictions assembles a record following Predictions(spec).
func BuildPredictions(mem memory.Allocator, spec PredictionSpec, b PredictionBatch) (arrow.Record, error) {
	schema := Predictions(spec)
	n := len(b.Value)
	if spec.Classes != nil {
		n = len(b.Class)
		if len(b.Prob) != n*len(spec.Classes) {
			return nil, fmt.Errorf("schemas: %d probabilities for %d rows × %d classes", len(b.Prob), n, len(spec.Classes))
		}
	}
	owned, cols, err := leadColumns(mem, spec, b.Source, b.FirstRow, n, b.Keep)
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	if err != nil {
		return nil, err
	}
	nFixed := len(owned)
	if spec.Classes != nil {
		sb := array.NewStringBuilder(mem)
		sb.Reserve(n)
		for _, c := range b.Class {
			if c < 0 || int(c) >= len(spec.Classes) {
				sb.Release()
				return nil, fmt.Errorf("schemas: class index %d outside 0..%d", c, len(spec.Classes)-1)
			}
			sb.Append(spec.Classes[c])
		}
		owned = append(owned, sb.NewArray())
		sb.Release()
		k := len(spec.Classes)
		for q := 0; q < k; q++ {
			fb := array.NewFloat32Builder(mem)
			fb.Reserve(n)
			for i := 0; i < n; i++ {
				fb.UnsafeAppend(b.Prob[i*k+q])
			}
			owned = append(owned, fb.NewArray())
			fb.Release()
		}
	} else {
		fb := array.NewFloat64Builder(mem)
		fb.AppendValues(b.Value, nil)
		owned = append(owned, fb.NewArray())
		fb.Release()
	}
	cols = append(cols, owned[nFixed:]...)
	return array.NewRecord(schema, cols, int64(n)), nil
}

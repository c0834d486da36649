package schemas

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Importance column names (Importances documents them).
const (
	colFeature = "feature"
	colKind    = "kind"
	colValue   = "value"
)

// Importances returns the schema of a feature-importance table
// (ARCHITECTURE.md, Formats: "importances carry model version, feature name, kind
// (projection-count, impurity, permutation) and value"):
//
//	model_id utf8, model_version int64, feature utf8, kind utf8, value float64
//
// one row per (feature, kind).
func Importances() *arrow.Schema {
	md := arrow.NewMetadata([]string{"forestd.schema"}, []string{"importances/v1"})
	return arrow.NewSchema([]arrow.Field{
		{Name: ColModelID, Type: arrow.BinaryTypes.String},
		{Name: ColModelVersion, Type: arrow.PrimitiveTypes.Int64},
		{Name: colFeature, Type: arrow.BinaryTypes.String},
		{Name: colKind, Type: arrow.BinaryTypes.String},
		{Name: colValue, Type: arrow.PrimitiveTypes.Float64},
	}, &md)
}

// ImportanceRow is one feature's importance of one kind.
type ImportanceRow struct {
	Feature string
	Kind    string
	Value   float64
}

// BuildImportances assembles a record following Importances().
func BuildImportances(mem memory.Allocator, modelID string, version int64, rows []ImportanceRow) (arrow.Record, error) {
	id := array.NewStringBuilder(mem)
	ver := array.NewInt64Builder(mem)
	feat := array.NewStringBuilder(mem)
	kind := array.NewStringBuilder(mem)
	val := array.NewFloat64Builder(mem)
	bs := []array.Builder{id, ver, feat, kind, val}
	defer func() {
		for _, b := range bs {
			b.Release()
		}
	}()
	for _, r := range rows {
		if r.Feature == "" || r.Kind == "" {
			return nil, fmt.Errorf("schemas: importance row without a feature or kind: %+v", r)
		}
		id.Append(modelID)
		ver.Append(version)
		feat.Append(r.Feature)
		kind.Append(r.Kind)
		val.Append(r.Value)
	}
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.NewArray()
	}
	rec := array.NewRecord(Importances(), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

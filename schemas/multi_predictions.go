package schemas

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// MultiPredictions returns the schema of a batch of multivariate
// predictions (distance random forests, package arrowforest/manifold):
//
//	model_id utf8, model_version int64, source utf8, row int64,
//	<keep columns>, one float64 column per response coordinate,
//	named after its target.
//
// A target or keep column named like one of the fixed columns, or like
// each other, is an error (see CheckMultiNames).
func MultiPredictions(spec PredictionSpec, targets []string) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColModelID, Type: arrow.BinaryTypes.String},
		{Name: ColModelVersion, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColSource, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: arrow.PrimitiveTypes.Int64},
	}
	fields = append(fields, spec.Keep...)
	for _, t := range targets {
		fields = append(fields, arrow.Field{Name: t, Type: arrow.PrimitiveTypes.Float64})
	}
	md := arrow.NewMetadata([]string{"forestd.schema"}, []string{"multi-predictions/v1"})
	return arrow.NewSchema(fields, &md)
}

// CheckNames fails when two output columns would share a name: those of
// Predictions(spec) when targets is nil, those of MultiPredictions(spec,
// targets) otherwise. A kept column may not repeat another kept column,
// a fixed column (model_id, model_version, source, row) or a predicted
// one (prediction and the probability columns spec.Probs chooses, or the
// targets). A spec whose probability columns are undefined (TopK out of
// 1..len(Classes) with ProbsTop) is an error too.
func CheckNames(spec PredictionSpec, targets []string) error {
	seen := map[string]string{ColModelID: "a fixed column", ColModelVersion: "a fixed column",
		ColSource: "a fixed column", ColRow: "a fixed column"}
	add := func(name, what string) error {
		if prev, ok := seen[name]; ok {
			if prev == what { // --keep x,x
				return fmt.Errorf("schemas: %s %s is listed twice", strings.TrimPrefix(what, "a "), name)
			}
			return fmt.Errorf("schemas: output column %s would be both %s and %s", name, prev, what)
		}
		seen[name] = what
		return nil
	}
	for _, k := range spec.Keep {
		if err := add(k.Name, "a kept column"); err != nil {
			return err
		}
	}
	predicted := targets
	if targets == nil {
		if err := spec.check(); err != nil {
			return err
		}
		predicted = []string{ColPrediction}
		for _, f := range probFields(spec) {
			predicted = append(predicted, f.Name)
		}
	}
	for _, t := range predicted {
		if err := add(t, "a predicted column"); err != nil {
			return err
		}
	}
	return nil
}

// BuildMultiPredictions assembles a record following
// MultiPredictions(spec, targets) from values (rows×len(targets),
// row-major) of rows FirstRow.. of source.
func BuildMultiPredictions(mem memory.Allocator, spec PredictionSpec, targets []string, source string, firstRow int64, keep []arrow.Array, values []float64) (arrow.Record, error) {
	q := len(targets)
	if q == 0 || len(values)%q != 0 {
		return nil, fmt.Errorf("schemas: %d values for %d targets", len(values), q)
	}
	if err := CheckNames(spec, targets); err != nil {
		return nil, err
	}
	n := len(values) / q
	owned, cols, err := leadColumns(mem, spec, source, firstRow, n, keep)
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	if err != nil {
		return nil, err
	}
	for r := 0; r < q; r++ {
		fb := array.NewFloat64Builder(mem)
		fb.Reserve(n)
		for i := 0; i < n; i++ {
			fb.UnsafeAppend(values[i*q+r])
		}
		a := fb.NewArray()
		fb.Release()
		owned = append(owned, a)
		cols = append(cols, a)
	}
	return array.NewRecord(MultiPredictions(spec, targets), cols, int64(n)), nil
}

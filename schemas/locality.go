package schemas

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Locality edge table column names (LocalityEdges documents them).
const (
	colSourceFeature = "source"
	colTargetFeature = "target"
	colSourceIndex   = "source_index"
	colTargetIndex   = "target_index"
	colRank          = "rank"
	colDistance      = "distance"
)

// Locality edge table metadata keys (LocalityEdges documents them).
const (
	metaLocalityMetric = "forestd.locality.metric"
	metaLocalityK      = "forestd.locality.k"
)

// LocalitySpec describes a feature-locality graph (dissertation ch. 3).
type LocalitySpec struct {
	// Features names the graph's nodes; edges index into it.
	Features []string
	// Metric is the feature distance: corr (1 − ρ²), euclidean, pca or
	// geodesic (arrowforest/locality).
	Metric string
	// K is the neighbour count of the k-nearest-neighbour graph behind
	// geodesic distances (0 when not applicable).
	K int
}

// LocalityEdges returns the schema of a locality edge table, one row per
// directed neighbour relation (target is the rank-th nearest feature of
// source):
//
//	source utf8, target utf8, source_index int32, target_index int32,
//	rank int32, distance float64
//
// with the metric and k in the schema metadata (keys
// forestd.locality.metric and forestd.locality.k).
func LocalityEdges(spec LocalitySpec) *arrow.Schema {
	fields := []arrow.Field{
		{Name: colSourceFeature, Type: arrow.BinaryTypes.String},
		{Name: colTargetFeature, Type: arrow.BinaryTypes.String},
		{Name: colSourceIndex, Type: arrow.PrimitiveTypes.Int32},
		{Name: colTargetIndex, Type: arrow.PrimitiveTypes.Int32},
		{Name: colRank, Type: arrow.PrimitiveTypes.Int32},
		{Name: colDistance, Type: arrow.PrimitiveTypes.Float64},
	}
	md := arrow.NewMetadata(
		[]string{"forestd.schema", metaLocalityMetric, metaLocalityK},
		[]string{"locality/v1", spec.Metric, strconv.Itoa(spec.K)})
	return arrow.NewSchema(fields, &md)
}

// LocalityBatch holds the edges of one batch as parallel slices.
type LocalityBatch struct {
	Source, Target []int32
	Rank           []int32
	Distance       []float64
}

// BuildLocalityEdges assembles a record following LocalityEdges(spec).
// Indices outside spec.Features and ragged slices are errors.
func BuildLocalityEdges(mem memory.Allocator, spec LocalitySpec, b LocalityBatch) (arrow.Record, error) {
	n := len(b.Source)
	if len(b.Target) != n || len(b.Rank) != n || len(b.Distance) != n {
		return nil, fmt.Errorf("schemas: locality edges: %d sources, %d targets, %d ranks, %d distances",
			n, len(b.Target), len(b.Rank), len(b.Distance))
	}
	p := int32(len(spec.Features))
	for i := 0; i < n; i++ {
		if b.Source[i] < 0 || b.Source[i] >= p || b.Target[i] < 0 || b.Target[i] >= p {
			return nil, fmt.Errorf("schemas: locality edge %d joins %d and %d, outside 0..%d", i, b.Source[i], b.Target[i], p-1)
		}
	}
	src := array.NewStringBuilder(mem)
	dst := array.NewStringBuilder(mem)
	si := array.NewInt32Builder(mem)
	ti := array.NewInt32Builder(mem)
	rk := array.NewInt32Builder(mem)
	ds := array.NewFloat64Builder(mem)
	src.Reserve(n)
	dst.Reserve(n)
	for i := 0; i < n; i++ {
		src.Append(spec.Features[b.Source[i]])
		dst.Append(spec.Features[b.Target[i]])
	}
	si.AppendValues(b.Source, nil)
	ti.AppendValues(b.Target, nil)
	rk.AppendValues(b.Rank, nil)
	ds.AppendValues(b.Distance, nil)
	cols := make([]arrow.Array, 0, 6)
	for _, bld := range []array.Builder{src, dst, si, ti, rk, ds} {
		cols = append(cols, bld.NewArray())
		bld.Release()
	}
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	return array.NewRecord(LocalityEdges(spec), cols, int64(n)), nil
}

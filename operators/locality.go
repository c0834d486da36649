package operators

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/locality"
	"github.com/forestd/forestd/schemas"
)

// LocalityEdges is the locality graph of a trained lfs forest on its
// training frame (forestd train --lfs-graph; dissertation ch. 3): every
// feature's LFSK nearest features (locality.DefaultK when unset) under
// the forest's distance, as a schemas.LocalityEdges record. The caller
// releases it.
func LocalityEdges(mem memory.Allocator, f *forest.Forest, fr *frame.Frame) (arrow.Record, error) {
	d, err := forest.LFSLocality(fr.Cols, f.Params)
	if err != nil {
		return nil, err
	}
	k := f.Params.LFSK
	if k == 0 {
		k = locality.DefaultK
	}
	spec := schemas.LocalitySpec{Features: f.Features, Metric: d.Metric}
	if d.Metric == locality.Geodesic {
		spec.K = k
	}
	var b schemas.LocalityBatch
	for _, e := range d.Edges(k) {
		b.Source, b.Target = append(b.Source, e.Source), append(b.Target, e.Target)
		b.Rank, b.Distance = append(b.Rank, e.Rank), append(b.Distance, e.Distance)
	}
	return schemas.BuildLocalityEdges(mem, spec, b)
}

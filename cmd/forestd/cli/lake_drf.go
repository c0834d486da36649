package cli

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/schemas"
)

// Lake scoring of distance random forests (dRF paper §2.3, package
// manifold): each output file carries one float64 column per response
// coordinate, named after its target (schemas.MultiPredictions), exactly
// as `forestd score` writes one output file (scoreDRF in drf.go), with
// the model identity and the source coordinates (file, row) that other
// predictions carry.

// setupDRF prepares ls for a drf model: the predictor (which rebuilds the
// training distance matrix once for the whole run) replaces the compiled
// forest.
func (ls *lakeScorer) setupDRF() error {
	p, err := manifold.NewPredictor(ls.f, ls.threads)
	if err != nil {
		return fmt.Errorf("%s: %w", ls.model, err)
	}
	ls.drf = p
	return nil
}

// drfRowBytes is a drf model's working memory per scored row beyond what
// the single-output estimate counts: the q predicted values (float64,
// twice: the prediction and the output column), the embedded point (m
// float64) and the nearest training row.
func (ls *lakeScorer) drfRowBytes() int64 {
	if ls.drf == nil {
		return 0
	}
	d := ls.f.DRF
	return int64(2*8*len(d.Targets) + 8*d.Dim() + 4)
}

// outSchema is the schema of every output file.
func (ls *lakeScorer) outSchema() *arrow.Schema {
	if ls.drf != nil {
		return schemas.MultiPredictions(ls.spec, ls.drf.Targets())
	}
	return schemas.Predictions(ls.spec)
}

// checkDRFNames fails when a --keep column is named like a fixed output
// column or a target of a drf model (single-output schemas need no check).
func (ls *lakeScorer) checkDRFNames() error {
	if ls.drf == nil {
		return nil
	}
	if err := schemas.CheckMultiNames(ls.spec, ls.drf.Targets()); err != nil {
		return fmt.Errorf("--keep: %w", err)
	}
	return nil
}

// scoreDRF predicts the chunk rec (rows r0.. of batch b, whose features
// are fr) on one thread and builds its multi-output predictions record.
// A prediction depends on its row alone, so chunking cannot change it.
func (ls *lakeScorer) scoreDRF(l *lake.Lake, b *lake.Batch, r0 int64, rec arrow.Record, fr *frame.Frame) (arrow.Record, error) {
	pred, err := ls.drf.Predict(fr, 1)
	if err != nil {
		return nil, err
	}
	var keep []arrow.Array
	for _, ix := range ls.keepIdx {
		keep = append(keep, rec.Column(ix))
	}
	return schemas.BuildMultiPredictions(memory.DefaultAllocator, ls.spec, ls.drf.Targets(),
		l.Files()[b.File].Path, b.FirstRow+r0, keep, pred.Values)
}

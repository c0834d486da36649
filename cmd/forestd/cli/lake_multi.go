package cli

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/schemas"
)

// Lake scoring of models with several outputs (forest.IsMultiOutput: a
// multi-output regression forest or a distance random forest, dRF paper
// §2.3, package manifold): each output file carries one float64 column per
// output, named after its target (schemas.MultiPredictions), exactly as
// `forestd score` writes one output file (scoreMulti in multi.go), with
// the model identity and the source coordinates (file, row) that other
// predictions carry.

// setupMulti prepares ls for a model with several outputs: its compiled
// forest, or for a drf model the predictor (which rebuilds the training
// distance matrix once for the whole run).
func (ls *lakeScorer) setupMulti() error {
	mo, _, err := newMultiOutput(ls.f, ls.c, ls.threads)
	if err != nil {
		return fmt.Errorf("%s: %w", ls.model, err)
	}
	ls.multi = mo
	return nil
}

// multiRowBytes is a multi-output model's working memory per scored row
// beyond what the single-output estimate counts: the q predicted values
// (float64, twice: the prediction and the output column), and for a drf
// model the embedded point (m float64) and the nearest training row.
func (ls *lakeScorer) multiRowBytes() int64 {
	if ls.multi == nil {
		return 0
	}
	b := int64(2 * 8 * len(ls.multi.Targets()))
	if d := ls.f.DRF; d != nil {
		b += int64(8*d.Dim() + 4)
	}
	return b
}

// outSchema is the schema of every output file.
func (ls *lakeScorer) outSchema() *arrow.Schema {
	if ls.multi != nil {
		return schemas.MultiPredictions(ls.spec, ls.multi.Targets())
	}
	return schemas.Predictions(ls.spec)
}

// checkMultiNames fails when a --keep column is named like a fixed output
// column or a target of a multi-output model (single-output schemas need
// no check).
func (ls *lakeScorer) checkMultiNames() error {
	if ls.multi == nil {
		return nil
	}
	if err := schemas.CheckMultiNames(ls.spec, ls.multi.Targets()); err != nil {
		return fmt.Errorf("--keep: %w", err)
	}
	return nil
}

// scoreMulti predicts the chunk rec (rows r0.. of batch b, whose features
// are fr) on one thread and builds its multi-output predictions record.
// A prediction depends on its row alone, so chunking cannot change it.
func (ls *lakeScorer) scoreMulti(l *lake.Lake, b *lake.Batch, r0 int64, rec arrow.Record, fr *frame.Frame) (arrow.Record, error) {
	values, err := ls.multi.PredictValues(fr, 1)
	if err != nil {
		return nil, err
	}
	var keep []arrow.Array
	for _, ix := range ls.keepIdx {
		keep = append(keep, rec.Column(ix))
	}
	return schemas.BuildMultiPredictions(memory.DefaultAllocator, ls.spec, ls.multi.Targets(),
		l.Files()[b.File].Path, b.FirstRow+r0, keep, values)
}

package operators

import (
	"fmt"
	"runtime"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/schemas"
)

// Scoring models with several outputs (forest.MultiOutput): a multi-output
// regression forest (the mean over trees of the leaves' q means) or a
// distance random forest (Tsagkrasoulis & Montana, dRF paper §2.3, package
// manifold: similarity vector a, distance prediction, MDS out-of-sample
// point, eqs. 2–3, backscoring, eq. 7) predicts a vector per row, so the
// predictions follow schemas.MultiPredictions: one float64 column per
// output, named after its target, with the model identity and the message
// coordinates that single-output predictions carry.

// newDRFModel prepares a drf forest for scoring: manifold.NewPredictor
// rebuilds the training distance matrix from the stored responses once
// per model (on all CPUs; the result does not depend on the count).
func newDRFModel(f *forest.Forest, meta model.Meta, data []byte) (*Model, error) {
	p, err := manifold.NewPredictor(f, runtime.NumCPU())
	if err != nil {
		return nil, fmt.Errorf("operators: preparing drf model %s: %w", meta.ID, err)
	}
	return &Model{Forest: f, Multi: p, Meta: meta, Bytes: data}, nil
}

// scoreMulti scores the frame fr of the message's records recs with the
// multi-output model m: one schemas.MultiPredictions record per input
// record, rows counted across the message from 0. A key column named like
// a fixed output column or a target is an ErrInput error.
func (s *Scorer) scoreMulti(m *Model, fr *frame.Frame, spec schemas.PredictionSpec, keyIdx int, recs []arrow.Record, source string) ([]arrow.Record, error) {
	targets := m.Multi.Targets()
	if err := schemas.CheckMultiNames(spec, targets); err != nil {
		return nil, fmt.Errorf("%w: key column: %w", ErrInput, err)
	}
	values, err := m.Multi.PredictValues(fr, s.opts.Threads)
	if err != nil {
		return nil, fmt.Errorf("operators: scoring: %w", err)
	}
	q := len(targets)
	out := make([]arrow.Record, 0, len(recs))
	row := 0
	for _, r := range recs {
		n := int(r.NumRows())
		var keep []arrow.Array
		if keyIdx >= 0 {
			keep = []arrow.Array{r.Column(keyIdx)}
		}
		rec, err := schemas.BuildMultiPredictions(s.opts.Mem, spec, targets, source, int64(row), keep, values[row*q:(row+n)*q])
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		out = append(out, rec)
		row += n
	}
	return out, nil
}

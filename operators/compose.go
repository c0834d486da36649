package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Selection returns the FDM_RF transform of the latest analysis that
// selected something (dissertation §6.3), with the analysis' sequence
// number; nil before the first such analysis. It is what the select stage
// applies to every batch, and what a composed select → train pipeline
// trains behind.
func (a *Analyzer) Selection() (*fdm.Transform, int64) {
	an := a.Latest()
	if an == nil || an.Transform == nil {
		return nil, 0
	}
	return an.Transform, an.Seq
}

// TrainMapped trains on the window snapshot fr as the select stage maps
// it — X' = [X_{S_m}, f(X_{S_1}; θ*_1), …] by the FDM_RF transform tr
// (dissertation §6.3, fdm.Transform.Apply) — and pins a private copy of tr
// in the forest (forest.Mapping), so that the model scores raw feature
// batches through exactly the mapping it was trained on, whatever later
// analyses find. A nil tr trains on fr as it is (Train).
//
// Mapping the whole window at training time, rather than adding each
// batch's select output to the window, keeps every row of one model under
// one mapping: a window filled across two analyses would otherwise mix
// columns of the same name (fdm_g1_1, …) computed with different
// projections.
func (t *Trainer) TrainMapped(ctx context.Context, fr *frame.Frame, tr *fdm.Transform, threads int) (*forest.Forest, error) {
	if tr == nil {
		return t.Train(ctx, fr, threads)
	}
	pinned, err := cloneTransform(tr)
	if err != nil {
		return nil, fmt.Errorf("operators: pinning the mapping: %w", err)
	}
	mapped, err := pinned.Apply(fr)
	if err != nil {
		return nil, fmt.Errorf("operators: mapping the training window: %w", err)
	}
	f, err := t.Train(ctx, mapped, threads)
	if err != nil {
		return nil, err
	}
	f.Mapping = pinned
	return f, nil
}

// cloneTransform deep-copies a transform through its mapping-file form
// (and so validates it).
func cloneTransform(tr *fdm.Transform) (*fdm.Transform, error) {
	b, err := json.Marshal(tr)
	if err != nil {
		return nil, err
	}
	return fdm.ReadTransform(strings.NewReader(string(b)))
}

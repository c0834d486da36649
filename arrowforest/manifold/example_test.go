package manifold_test

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
)

// Example trains a distance random forest on the swiss roll of the dRF
// paper (§3.1) with Isomap distances — σ_G and γ_G of the backscoring map
// chosen by their out-of-bag error on the training rows, as by default —
// stores it as a model, and predicts the three response coordinates of new rows with
// the decoded model.
func Example() {
	x, targets, names, err := synth.GenerateMulti("swissroll", synth.Options{N: 400, Seed: 1})
	if err != nil {
		panic(err)
	}
	// the first 300 rows train, the rest are new
	train := &frame.Frame{Names: x.Names, NRows: 300}
	test := &frame.Frame{Names: x.Names, NRows: 100}
	for _, c := range x.Cols {
		train.Cols = append(train.Cols, c[:300])
		test.Cols = append(test.Cols, c[300:])
	}
	y := make([]float64, 0, 300*3) // row-major responses
	for i := 0; i < 300; i++ {
		y = append(y, targets[0][i], targets[1][i], targets[2][i])
	}

	opts := manifold.DefaultOptions() // Isomap distance, k = 7; weighted prediction
	opts.Trees, opts.MaxFeatures, opts.EmbedDim = 30, "3", 2
	f, err := manifold.Train(train, y, names, opts)
	if err != nil {
		panic(err)
	}
	b, _, err := model.EncodeBytes(f, model.Meta{Version: 1})
	if err != nil {
		panic(err)
	}
	g, _, err := model.DecodeBytes(b)
	if err != nil {
		panic(err)
	}
	p, err := manifold.NewPredictor(g, 2)
	if err != nil {
		panic(err)
	}
	pred, err := p.Predict(test, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println("forest:", g.Kind, "targets:", p.Targets())
	fmt.Println("embedding dimension:", g.DRF.Dim(), "predictions:", len(pred.Values)/pred.Q, "rows ×", pred.Q)
	fmt.Println("prediction:", g.DRF.Predict, "sigma_g, gamma_g chosen by:", g.DRF.SelectedBy)
	// Output:
	// forest: drf targets: [y0 y1 y2]
	// embedding dimension: 2 predictions: 100 rows × 3
	// prediction: weighted sigma_g, gamma_g chosen by: oob
}

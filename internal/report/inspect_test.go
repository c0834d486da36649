package report

import (
	"math"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/testmodel"
	"github.com/forestd/forestd/scoring"
)

// TestInspectModel: inspect's description counts the trees' nodes and
// leaves, names the importances by feature and lists the features by
// decreasing primary importance.
func TestInspectModel(t *testing.T) {
	m := testmodel.Wide(t, 3, 2, 4)
	f, meta, err := model.DecodeBytes(m.Bytes()) // with its trees
	if err != nil {
		t.Fatal(err)
	}
	rep := Inspect(f, meta)
	nodes := 0
	for _, tr := range f.Trees {
		nodes += tr.NumNodes()
	}
	if nodes == 0 || rep["nodes"] != nodes || rep["trees"] != len(f.Trees) || rep["model_version"] != int64(3) || rep["importance_kind"] != "impurity" {
		t.Fatalf("nodes %v trees %v version %v kind %v", rep["nodes"], rep["trees"], rep["model_version"], rep["importance_kind"])
	}
	imp := rep["importance"].(map[string]float64)
	top := rep["top_features"].([]string)
	if len(top) != len(f.Features) || len(imp) != len(f.Features) {
		t.Fatalf("top %v importance %v", top, imp)
	}
	if !slices.IsSortedFunc(top, func(a, b string) int {
		switch {
		case imp[a] > imp[b]:
			return -1
		case imp[a] < imp[b]:
			return 1
		}
		return 0
	}) {
		t.Fatalf("top features %v not by decreasing importance %v", top, imp)
	}
	if _, ok := rep["drf"]; ok {
		t.Fatal("a dRF part for a classification forest")
	}
}

// TestTotalVariation: a flat map has none, a checkerboard the most a map
// of its size can have, and a smooth gradient lies between.
func TestTotalVariation(t *testing.T) {
	g := projection.Topology{C: 1, H: 4, W: 4}
	flat, checker, ramp := make([]float64, 16), make([]float64, 16), make([]float64, 16)
	for r := 0; r < 4; r++ {
		for q := 0; q < 4; q++ {
			flat[g.Feature(0, r, q)] = 1
			checker[g.Feature(0, r, q)] = float64((r + q) % 2)
			ramp[g.Feature(0, r, q)] = float64(q)
		}
	}
	tf, tc, tr := TotalVariation(g, flat), TotalVariation(g, checker), TotalVariation(g, ramp)
	// checkerboard: 24 adjacent pairs differ by 1, over a sum of 8
	if tf != 0 || math.Abs(tc-3) > 1e-12 || !(tr > 0 && tr < tc) {
		t.Fatalf("flat %v checkerboard %v ramp %v", tf, tc, tr)
	}
}

// TestEvalSummary: a classification's summary carries accuracy and error
// (and unknown classes when there are some), a regression's RMSE, MAE and
// MSE, never the other task's keys.
func TestEvalSummary(t *testing.T) {
	cl := EvalSummary(&scoring.Evaluation{Rows: 10, Seconds: 2, Classification: true, Accuracy: 0.9, Error: 0.1, UnknownClassRows: 1})
	if cl["accuracy"] != 0.9 || cl["error"] != 0.1 || cl["unknown_class_rows"] != 1 || cl["rows_per_second"] != 5.0 {
		t.Fatalf("classification %v", cl)
	}
	if _, ok := cl["rmse"]; ok {
		t.Fatalf("classification with rmse: %v", cl)
	}
	rg := EvalSummary(&scoring.Evaluation{Rows: 4, Seconds: 1, RMSE: 2, MAE: 1, MSE: 4})
	if rg["rmse"] != 2.0 || rg["mse"] != 4.0 || rg["mae"] != 1.0 {
		t.Fatalf("regression %v", rg)
	}
	if _, ok := rg["accuracy"]; ok {
		t.Fatalf("regression with accuracy: %v", rg)
	}
}

// TestTrainSummary: train's summary counts the forest's nodes and leaves
// out the out-of-bag estimates a forest has none of.
func TestTrainSummary(t *testing.T) {
	f := testmodel.Wide(t, 1, 2, 4).Forest()
	nodes := 0
	for _, tr := range f.Trees {
		nodes += tr.NumNodes()
	}
	f.OOB = nil
	rep := TrainSummary(f, "id1", 200, 3, 4, 0.5)
	if rep["nodes"] != nodes || rep["model_id"] != "id1" || rep["skipped_labels"] != 3 || rep["trees"] != len(f.Trees) {
		t.Fatalf("summary %v", rep)
	}
	if _, ok := rep["oob"]; ok {
		t.Fatalf("oob without estimates: %v", rep)
	}
}

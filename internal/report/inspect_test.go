package report

import (
	"math"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/testmodel"
)

// TestInspectModel: inspect's description counts the trees' nodes and
// leaves, names the importances by feature and lists the features by
// decreasing primary importance.
func TestInspectModel(t *testing.T) {
	m := testmodel.Wide(t, 3, 2, 4)
	rep := Inspect(m)
	f := m.Forest()
	nodes := 0
	for _, tr := range f.Trees {
		nodes += tr.NumNodes()
	}
	if rep["nodes"] != nodes || rep["trees"] != len(f.Trees) || rep["model_version"] != int64(3) || rep["importance_kind"] != "impurity" {
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

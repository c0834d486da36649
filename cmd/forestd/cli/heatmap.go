package cli

import (
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/report"
)

// gridMap is a feature importance vector laid out on a feature topology
// (C channels of H×W).
type gridMap struct {
	projection.Topology
	V []float64 // one value per feature
}

func (g gridMap) at(c, r, q int) float64 { return g.V[g.Feature(c, r, q)] }

// totalVariation is Σ |m_a − m_b| over horizontally and vertically adjacent
// cells of the map normalised to sum 1 (per channel, summed): lower means a
// smoother map (the MORF paper's Fig. 5 claim, made a number).
func (g gridMap) totalVariation() float64 {
	var s float64
	for _, v := range g.V {
		s += math.Abs(v)
	}
	if s == 0 {
		return 0
	}
	var tv float64
	for c := 0; c < g.C; c++ {
		for r := 0; r < g.H; r++ {
			for q := 0; q < g.W; q++ {
				v := g.at(c, r, q)
				if q+1 < g.W {
					tv += math.Abs(v - g.at(c, r, q+1))
				}
				if r+1 < g.H {
					tv += math.Abs(v - g.at(c, r+1, q))
				}
			}
		}
	}
	return tv / s
}

// writeHeatmap renders the map as a PNG (report.HeatmapPNG) to path
// (writeOut, creating path's directory).
func writeHeatmap(path string, g gridMap, title string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeOut(path, func(w io.Writer) error {
		return report.HeatmapPNG(w, g.Topology, g.V, title)
	})
}

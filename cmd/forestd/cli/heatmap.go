package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/report"
)

// writeHeatmap renders v on the feature topology as a PNG
// (report.HeatmapPNG) to path (writeOut, creating path's directory).
func writeHeatmap(path string, top projection.Topology, v []float64, title string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeOut(path, func(w io.Writer) error {
		return report.HeatmapPNG(w, top, v, title)
	})
}

// heatmapOf is the importance a heatmap PNG draws — --kind, or the
// model's primary kind — and its title.
func heatmapOf(imps map[string][]float64, primary, kind, forestKind string, trees int) ([]float64, string, error) {
	if kind == "" {
		kind = primary
	}
	v, ok := imps[kind]
	if !ok {
		return nil, "", usagef("--kind %q: the model has importances %v", kind, slices.Sorted(maps.Keys(imps)))
	}
	return v, fmt.Sprintf("%s importance, %s forest, %d trees", kind, forestKind, trees), nil
}

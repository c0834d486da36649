package cli

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/internal/report"
)

// drfFlags are the flags of `forestd train --forest drf` (distance random
// forests for manifold-valued responses, package manifold).
type drfFlags struct {
	distance   *string
	isomapK    *int
	embedDim   *int
	sigmaG     *float64
	gammaG     *float64
	maxRows    *int
	projection *string
	predict    *string
	center     *bool
	sel        *string
}

func addDRFFlags(fs *flags) *drfFlags {
	d := manifold.DefaultOptions()
	return &drfFlags{
		distance:   fs.String("distance", d.Distance, "drf: response distance, isomap (geodesic on the k-nearest-neighbour graph) or euclidean"),
		isomapK:    fs.Int("isomap-k", d.IsomapK, "drf: neighbours of the isomap graph"),
		embedDim:   fs.Int("embed-dim", d.EmbedDim, "drf: MDS embedding dimension m (0 = chosen out of bag among 2,3,4,6,8,12,16,24,32,48: one sigma_g/gamma_g search per candidate)"),
		sigmaG:     fs.Float64("sigma-g", d.SigmaG, "drf: backscoring kernel bandwidth σ_G of exp(-‖v-w‖²/σ_G) (0 = chosen, see --backscore-select)"),
		gammaG:     fs.Float64("gamma-g", d.GammaG, "drf: backscoring weight γ_G, regulariser N/γ_G (0 = chosen, see --backscore-select)"),
		sel:        fs.String("backscore-select", d.Select, "drf: how σ_G/γ_G left 0 are chosen: oob (error at the training rows' out-of-bag predictions) or loo (leave-one-out of the map on the training pairs)"),
		center:     fs.Bool("backscore-center", d.Center, "drf: fit the backscoring map to the responses minus their mean and add it back (false: the paper's eq. 7 alone)"),
		maxRows:    fs.Int("max-rows", d.MaxRows, "drf: training rows kept for the N×N distance matrix (more are subsampled)"),
		projection: fs.String("projection", forest.ProjectionAxis, "drf: split atoms, axis or sparse (SPORF; --lambda non-zeros)"),
		predict:    fs.String("drf-predict", d.Predict, "drf: distance prediction, weighted (a-weighted mean on the embedding) or algorithm1 (the paper's Algorithm 1, which uses argmax a only)"),
	}
}

func flagValue[T any](fs *flags, name string) T {
	return fs.Lookup(name).Value.(flag.Getter).Get().(T)
}

// labelColumns splits --label into column names (frame.SplitLabel); an
// empty or repeated name among several is a usage error.
func labelColumns(label string) ([]string, error) {
	cols := frame.SplitLabel(label)
	switch {
	case len(cols) == 1 && cols[0] == "":
		return nil, usagef("--label is required: the response columns, comma-separated (or one fixed-size list column)")
	case len(cols) > 1:
		if err := frame.CheckTargets(cols, nil, nil); err != nil {
			return nil, usagef("--label %s: %v", label, err)
		}
	}
	return cols, nil
}

// readDRFInput reads paths into a feature frame and the responses named by
// labels (manifold.ReadTraining: rows whose response has a null or NaN
// dropped and counted); features lists the features (nil: every column
// but labels and exclude).
func readDRFInput(paths, labels, features, exclude []string) (*frame.Frame, *manifold.Responses, int, error) {
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	defer release(recs)
	fr, resp, skipped, err := manifold.ReadTraining(schema, recs, labels, frame.Options{Features: features, Exclude: exclude})
	if err != nil {
		return nil, nil, 0, inPaths(paths, err)
	}
	if fr.NRows == 0 {
		return nil, nil, 0, fmt.Errorf("no rows with a complete response in %v", paths)
	}
	return fr, resp, skipped, nil
}

// train runs `forestd train --forest drf`.
func (d *drfFlags) train(fs *flags, env Env, paths []string) error {
	labels, err := labelColumns(flagValue[string](fs, "label"))
	if err != nil {
		return err
	}
	o := manifold.DefaultOptions()
	o.Trees, o.Seed, o.Threads = flagValue[int](fs, "trees"), flagValue[uint64](fs, "seed"), flagValue[int](fs, "threads")
	o.MaxFeatures = flagValue[string](fs, "max-features")
	o.MinLeaf, o.MaxDepth = flagValue[int](fs, "min-leaf"), flagValue[int](fs, "max-depth")
	if ms := flagValue[int](fs, "min-split"); ms != 0 {
		o.MinSplit = ms
	}
	o.Sample, o.SampleFraction = flagValue[string](fs, "sample"), flagValue[float64](fs, "sample-fraction")
	o.Lambda, o.Projection = flagValue[float64](fs, "lambda"), *d.projection
	o.Distance, o.IsomapK, o.EmbedDim = *d.distance, *d.isomapK, *d.embedDim
	o.SigmaG, o.GammaG, o.MaxRows, o.Predict, o.Center = *d.sigmaG, *d.gammaG, *d.maxRows, *d.predict, *d.center
	o.Select = *d.sel
	switch {
	case o.Select != manifold.SelectOOB && o.Select != manifold.SelectLOO:
		return usagef("--backscore-select %q: want oob or loo", o.Select)
	case o.Predict != forest.PredictWeighted && o.Predict != forest.PredictAlgorithm1:
		return usagef("--drf-predict %q: want weighted or algorithm1", o.Predict)
	case o.Distance != forest.DistanceIsomap && o.Distance != forest.DistanceEuclidean:
		return usagef("--distance %q: want isomap or euclidean", o.Distance)
	case o.Distance == forest.DistanceIsomap && o.IsomapK < 1:
		return usagef("--isomap-k must be at least 1, got %d", o.IsomapK)
	case o.EmbedDim < 0:
		return usagef("--embed-dim must not be negative (0 = chosen out of bag), got %d", o.EmbedDim)
	case o.SigmaG < 0 || math.IsNaN(o.SigmaG) || math.IsInf(o.SigmaG, 0):
		return usagef("--sigma-g must be positive (or 0: chosen, see --backscore-select), got %v", o.SigmaG)
	case o.GammaG < 0 || math.IsNaN(o.GammaG) || math.IsInf(o.GammaG, 0):
		return usagef("--gamma-g must be positive (or 0: chosen, see --backscore-select), got %v", o.GammaG)
	case o.MaxRows < 2:
		return usagef("--max-rows must be at least 2, got %d", o.MaxRows)
	case o.Projection != forest.ProjectionAxis && o.Projection != forest.ProjectionSparse:
		return usagef("--projection %q: want axis or sparse", o.Projection)
	}
	var features, exclude listFlag
	if v, ok := fs.Lookup("features").Value.(*listFlag); ok {
		features = *v
	}
	if v, ok := fs.Lookup("exclude").Value.(*listFlag); ok {
		exclude = *v
	}
	fr, resp, skipped, err := readDRFInput(paths, labels, features.vals, exclude.vals)
	if err != nil {
		return err
	}
	if env.isTTY() {
		bar := newBar(env, int64(o.Trees), "training drf", 100*time.Millisecond)
		o.Progress = func(done, _ int) { _ = bar.Set(done) }
		defer bar.Finish()
	}
	t0 := time.Now()
	f, err := manifold.Train(fr, resp.Y, resp.Targets, o)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	f.LabelName = strings.Join(labels, ",")
	meta, err := saveModel(flagValue[string](fs, "out"), f, model.Meta{Version: flagValue[int64](fs, "model-version"), CreatedBy: "forestd"})
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	nodes := 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
	}
	info := report.DRFInfo(f)
	// how m was set (the model stores the embedding only, so train alone
	// reports this): the candidates' out-of-bag errors when chosen
	info["embed_dim_selected_by"] = "flags"
	if f.DRF.EmbedDims != nil {
		info["embed_dim_selected_by"] = "out-of-bag"
		info["embed_dim_candidates"] = f.DRF.EmbedDims
	}
	return writeJSON(env.Stdout, map[string]any{
		"model": flagValue[string](fs, "out"), "model_id": meta.ID, "forest": f.Kind, "task": f.Task.String(),
		"trees": len(f.Trees), "rows": fr.NRows, "skipped_labels": skipped, "features": fr.P(),
		"targets": resp.Targets, "nodes": nodes, "seconds": secs, "params": f.Params, "drf": info,
	})
}

package cli

import (
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
// forests for manifold-valued responses, package manifold), bound to the
// options they set; train adds the flags drf shares with the tree kinds.
type drfFlags struct{ o manifold.Options }

func addDRFFlags(fs *flags) *drfFlags {
	d := &drfFlags{o: manifold.DefaultOptions()}
	o := &d.o
	fs.StringVar(&o.Distance, "distance", o.Distance, "drf: response distance, isomap (geodesic on the k-nearest-neighbour graph) or euclidean")
	fs.IntVar(&o.IsomapK, "isomap-k", o.IsomapK, "drf: neighbours of the isomap graph")
	fs.IntVar(&o.EmbedDim, "embed-dim", o.EmbedDim, "drf: MDS embedding dimension m (0 = chosen out of bag among 2,3,4,6,8,12,16,24,32,48: one sigma_g/gamma_g search per candidate)")
	fs.Float64Var(&o.SigmaG, "sigma-g", o.SigmaG, "drf: backscoring kernel bandwidth σ_G of exp(-‖v-w‖²/σ_G) (0 = chosen, see --backscore-select)")
	fs.Float64Var(&o.GammaG, "gamma-g", o.GammaG, "drf: backscoring weight γ_G, regulariser N/γ_G (0 = chosen, see --backscore-select)")
	fs.StringVar(&o.Select, "backscore-select", o.Select, "drf: how σ_G/γ_G left 0 are chosen: oob (error at the training rows' out-of-bag predictions) or loo (leave-one-out of the map on the training pairs)")
	fs.BoolVar(&o.Center, "backscore-center", o.Center, "drf: fit the backscoring map to the responses minus their mean and add it back (false: the paper's eq. 7 alone)")
	fs.IntVar(&o.MaxRows, "max-rows", o.MaxRows, "drf: training rows kept for the N×N distance matrix (more are subsampled)")
	fs.StringVar(&o.Projection, "projection", forest.ProjectionAxis, "drf: split atoms, axis or sparse (SPORF; --lambda non-zeros)")
	fs.StringVar(&o.Predict, "drf-predict", o.Predict, "drf: distance prediction, weighted (a-weighted mean on the embedding) or algorithm1 (the paper's Algorithm 1, which uses argmax a only)")
	return d
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

// train runs `forestd train --forest drf` with train's flags t.
func (d *drfFlags) train(t *trainFlags, env Env, paths []string) error {
	labels, err := labelColumns(t.label)
	if err != nil {
		return err
	}
	o := d.o
	o.Trees, o.Seed, o.Threads, o.MaxFeatures = t.trees, t.seed, t.threads, t.maxFeat
	o.MinLeaf, o.MaxDepth = t.minLeaf, t.maxDepth
	if t.minSplit != 0 {
		o.MinSplit = t.minSplit
	}
	o.Sample, o.SampleFraction, o.Lambda = t.sample, t.frac, t.lambda
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
	fr, resp, skipped, err := readDRFInput(paths, labels, t.features.vals, t.exclude.vals)
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
	meta, err := saveModel(t.out, f, model.Meta{Version: t.version, CreatedBy: "forestd"})
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	rep := report.DRFTrainSummary(f, meta.ID, fr.NRows, skipped, fr.P(), resp.Targets, secs)
	rep["model"] = t.out
	return writeJSON(env.Stdout, rep)
}

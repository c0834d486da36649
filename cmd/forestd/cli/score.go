package cli

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
)

// keepColumns resolves the --keep columns in schema (the first column of
// each name), adding their fields to spec.Keep, and returns their indices.
func keepColumns(schema *arrow.Schema, keep []string, spec *schemas.PredictionSpec) ([]int, error) {
	var idx []int
	for _, k := range keep {
		ix := schema.FieldIndices(k)
		if len(ix) == 0 {
			return nil, fmt.Errorf("--keep: no column %q in the input", k)
		}
		idx = append(idx, ix[0])
		spec.Keep = append(spec.Keep, schema.Field(ix[0]))
	}
	return idx, nil
}

// sourceName is the source column of `forestd score`'s predictions: the
// input path, or the list of them.
func sourceName(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprint(paths)
}

// timedPredict scores fr and returns the seconds spent in scoring alone
// (the "seconds" that eval and score report).
func timedPredict(c *forest.Compiled, fr *frame.Frame, threads int) (*forest.Prediction, float64, error) {
	t0 := time.Now()
	pred, err := c.Predict(fr, threads)
	return pred, time.Since(t0).Seconds(), err
}

func runEval(args []string, env Env) error {
	fs := newFlagSet("eval", "--model MODEL --in PATH... --label COL", env)
	var in listFlag
	fs.Var(&in, "in", "input file or directory (repeatable)")
	modelPath := fs.String("model", "", "model file")
	label := fs.String("label", "", "label column")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := checkThreads(*threads); err != nil {
		return err
	}
	f, meta, c, err := loadModelOrDRF(*modelPath)
	if err != nil {
		return err
	}
	if forest.IsMultiOutput(f) { // several outputs (multi.go)
		return evalMulti(env, f, meta, c, *modelPath, append(in.vals, pos...), *label, *threads)
	}
	fr, err := loadLabelled(append(in.vals, pos...), sourceOptions(f, *label)) // source.go
	if err == nil {
		fr, err = f.FromSource(fr)
	}
	if err != nil {
		return err
	}
	pred, secs, err := timedPredict(c, fr, *threads)
	if err != nil {
		return err
	}
	rep := map[string]any{
		"model": *modelPath, "model_id": meta.ID, "rows": fr.NRows, "seconds": secs,
		"rows_per_second": float64(fr.NRows) / math.Max(secs, 1e-9), "skipped_labels": fr.SkippedLabels,
	}
	if f.Task == frame.TaskClassification {
		// map the data's class names onto the model's class indices
		idx := map[string]int32{}
		for i, c := range f.Classes {
			idx[c] = int32(i)
		}
		wrong, unknown := 0, 0
		for i, y := range fr.Y {
			mi, ok := idx[fr.Classes[y]]
			if !ok {
				unknown++
			}
			if !ok || pred.Class[i] != mi {
				wrong++
			}
		}
		e := float64(wrong) / float64(fr.NRows)
		rep["accuracy"], rep["error"] = 1-e, e
		if unknown > 0 {
			rep["unknown_class_rows"] = unknown
		}
	} else {
		var se, ae float64
		for i, y := range fr.YReg {
			d := pred.Value[i] - y
			se += d * d
			ae += math.Abs(d)
		}
		n := float64(fr.NRows)
		rep["rmse"], rep["mae"], rep["mse"] = math.Sqrt(se/n), ae/n, se/n
	}
	return writeJSON(env.Stdout, rep)
}

func runScore(args []string, env Env) error {
	fs := newFlagSet("score", "--model MODEL --in PATH... --out PATH", env)
	var in, keep listFlag
	keep.split = true
	fs.Var(&in, "in", "input file or directory (repeatable)")
	fs.Var(&keep, "keep", "input columns to copy into the output (comma-separated), e.g. an id")
	modelPath := fs.String("model", "", "model file")
	out := fs.String("out", "", "output file: .parquet (default zstd), .arrow, .arrows, .csv, .csv.gz; or a directory: score the inputs as a lake, one output per file (see the lake flags)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	lakeFlags := addScoreLakeFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := checkThreads(*threads); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if lakeFlags.wanted(*out) {
		return runScoreLake(env, lakeFlags, *modelPath, append(in.vals, pos...), *out, keep.vals, *threads)
	}
	f, meta, c, err := loadModelOrDRF(*modelPath)
	if err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	if forest.IsMultiOutput(f) { // one column per output (multi.go)
		return scoreMulti(env, f, meta, c, *modelPath, paths, keep.vals, *out, *threads)
	}
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	fr, err := sourceFrame(f, schema, recs) // source.go: the model's mapping applied
	if err != nil {
		return err
	}
	pred, secs, err := timedPredict(c, fr, *threads)
	if err != nil {
		return err
	}
	spec := schemas.PredictionSpec{ModelID: meta.ID, ModelVersion: meta.Version, Classes: f.Classes}
	var outRecs []arrow.Record
	defer func() { release(outRecs) }()
	keepIdx, err := keepColumns(schema, keep.vals, &spec)
	if err != nil {
		return err
	}
	src := sourceName(paths)
	row := int64(0)
	k := f.NumClasses()
	for _, r := range recs {
		n := int(r.NumRows())
		b := schemas.PredictionBatch{Source: src, FirstRow: row}
		for _, ix := range keepIdx {
			b.Keep = append(b.Keep, r.Column(ix))
		}
		if k > 0 {
			b.Class = pred.Class[row : row+int64(n)]
			b.Prob = pred.Prob[int(row)*k : (int(row)+n)*k]
		} else {
			b.Value = pred.Value[row : row+int64(n)]
		}
		rec, err := schemas.BuildPredictions(memory.DefaultAllocator, spec, b)
		if err != nil {
			return err
		}
		outRecs = append(outRecs, rec)
		row += int64(n)
	}
	if err := files.WriteFile(*out, schemas.Predictions(spec), outRecs, files.WriteOptions{}); err != nil {
		return err
	}
	return writeJSON(env.Stdout, map[string]any{
		"model": *modelPath, "model_id": meta.ID, "rows": fr.NRows, "out": *out, "seconds": secs,
		"rows_per_second": float64(fr.NRows) / math.Max(secs, 1e-9),
	})
}

func runInspect(args []string, env Env) error {
	fs := newFlagSet("inspect", "--model MODEL [--png FILE [--grid WxH] [--kind KIND]]", env)
	modelPath := fs.String("model", "", "model file")
	pngPath := fs.String("png", "", "render the importances of grid-shaped features as a heatmap PNG")
	grid := fs.String("grid", "", "feature layout WxH for --png when the model has none (e.g. an rf on images)")
	kind := fs.String("kind", "", "importance kind for --png: impurity, projection-count or permutation (default: the model's primary)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	f, meta, _, err := loadModelOrDRF(*modelPath)
	if err != nil {
		return err
	}
	nodes, leaves, depth := 0, 0, 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
		leaves += t.NumLeaves()
		depth = max(depth, t.Depth())
	}
	imps := map[string]map[string]float64{}
	for kind, v := range f.Importances {
		imps[kind] = byName(f.Features, v)
	}
	primary := forest.ImportanceImpurity
	if _, ok := f.Importances[forest.ImportancePermutation]; ok {
		primary = forest.ImportancePermutation
	}
	rep := map[string]any{
		"model": *modelPath, "model_id": meta.ID, "model_version": meta.Version,
		"forest": f.Kind, "task": f.Task.String(), "label": f.LabelName,
		"trees": len(f.Trees), "features": f.Features, "n_features": len(f.Features),
		"classes": f.Classes, "targets": f.Targets, "nodes": nodes, "leaves": leaves, "max_depth": depth,
		"params":          f.Params,
		"importance_kind": primary, "importance": byName(f.Features, f.Importances[primary]),
		"importances": imps, "top_features": topNames(f.Features, f.Importances[primary]),
	}
	if f.OOB != nil {
		rep["oob"] = f.OOB
	} else {
		rep["oob"] = nil
	}
	if f.DRF != nil {
		rep["drf"] = drfInfo(f)
	}
	if f.Kind == forest.KindFDM { // RF_FDM: which mapping the trees draw (inspect_fdm.go)
		rep["fdm"] = fdmInfo(f)
	}
	if f.Mapping != nil { // the FDM mapping the trees read through (forestd serve select → train)
		rep["mapping"] = f.Mapping
	}
	if g, ok, err := modelGrid(f.Params, *grid, len(f.Features)); err != nil {
		return err
	} else if ok {
		tv := map[string]float64{}
		for k, v := range f.Importances {
			g.V = v
			tv[k] = g.totalVariation()
		}
		rep["importance_total_variation"] = tv
		if *pngPath != "" {
			k := primary
			if *kind != "" {
				k = *kind
			}
			v, ok := f.Importances[k]
			if !ok {
				return usagef("--kind %q: the model has importances %v", k, keys(f.Importances))
			}
			g.V = v
			title := fmt.Sprintf("%s importance, %s forest, %d trees", k, f.Kind, len(f.Trees))
			if err := writeHeatmap(*pngPath, g, title); err != nil {
				return fmt.Errorf("writing %s: %w", *pngPath, err)
			}
			rep["png"] = *pngPath
		}
	} else if *pngPath != "" {
		return usagef("--png needs grid-shaped features: give --grid WxH (the model has no grid layout)")
	}
	return writeJSON(env.Stdout, rep)
}

// modelGrid returns the layout of the features for heatmaps: the flag's
// WxH (with the model's channels), else the model's MORF layout (a series
// is a 1-row grid); ok is false when there is neither.
func modelGrid(p forest.Params, flagGrid string, nFeatures int) (gridMap, bool, error) {
	if flagGrid != "" {
		gw, gh, err := dims(flagGrid, "--grid")
		if err != nil {
			return gridMap{}, false, err
		}
		top := projection.Topology{H: gh, W: gw, C: max(p.Channels, 1), Interleaved: p.Interleaved}
		if top.Validate(nFeatures) != nil {
			return gridMap{}, false, usagef("--grid %s covers %d features, the model has %d", flagGrid, gw*gh*top.C, nFeatures)
		}
		return gridMap{Topology: top}, true, nil
	}
	if p.Layout == "" {
		return gridMap{}, false, nil
	}
	top, err := p.Topology(nFeatures)
	if err != nil {
		return gridMap{}, false, err
	}
	return gridMap{Topology: top}, true, nil
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

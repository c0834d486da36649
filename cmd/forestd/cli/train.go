package cli

import (
	"fmt"
	"runtime"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
)

func runTrain(args []string, env Env) error {
	fs := newFlagSet("train", "--in PATH... --label COL --out MODEL [flags]", env)
	var in, features, exclude listFlag
	features.split, exclude.split = true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	label := fs.String("label", "", "label column")
	out := fs.String("out", "", "model file to write")
	kind := fs.String("forest", "rf", "forest kind: rf")
	task := fs.String("task", "auto", "auto, classification or regression")
	trees := fs.Int("trees", 100, "number of trees")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same model bytes at any thread count)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	maxFeat := fs.String("max-features", "", "candidate features per node: sqrt, log2, all, a count or a fraction (default sqrt for classification, p/3 for regression)")
	criterion := fs.String("criterion", "", "gini or entropy (classification), mse (regression)")
	minLeaf := fs.Int("min-leaf", 1, "minimum in-bag rows per leaf")
	minSplit := fs.Int("min-split", 0, "nodes with fewer in-bag rows are not split (default 2 classification, 5 regression)")
	maxDepth := fs.Int("max-depth", 0, "maximum depth (0 = unlimited)")
	sample := fs.String("sample", "bootstrap", "bootstrap or subsample")
	frac := fs.Float64("sample-fraction", 0, "rows drawn per tree as a fraction of n (default 1 for bootstrap, 0.632 for subsample)")
	split := fs.String("split", "binned", "split search: binned (histogram, default) or exact (sorted)")
	bins := fs.Int("bins", 255, "quantile bins per feature in binned mode (2..255)")
	importance := fs.String("importance", "impurity", "importances to compute: impurity (always, with projection counts) or permutation (adds OOB permutation importance)")
	fs.Var(&features, "features", "feature columns (comma-separated; default every numeric column but the label)")
	fs.Var(&exclude, "exclude", "columns to leave out (comma-separated)")
	version := fs.Int64("model-version", 1, "version number recorded in the model")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	if *out == "" {
		return usagef("--out is required")
	}
	if *kind != "rf" {
		return usagef("--forest %s is not available in this build (available: rf)", *kind)
	}
	tk, err := frame.ParseTask(*task)
	if err != nil {
		return usageError{err}
	}
	var perm bool
	switch *importance {
	case "impurity":
	case "permutation":
		perm = true
	default:
		return usagef("--importance %q: want impurity or permutation", *importance)
	}
	fr, err := loadLabelled(paths, frame.Options{Label: *label, Task: tk, Features: features.vals, Exclude: exclude.vals})
	if err != nil {
		return err
	}
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Seed, p.Threads = *trees, *seed, *threads
	p.MaxFeatures, p.MaxDepth, p.Sample, p.SampleFraction = *maxFeat, *maxDepth, *sample, *frac
	p.Split, p.Bins, p.Permutation = *split, *bins, perm
	if *criterion != "" {
		p.Criterion = *criterion
	}
	p.MinLeaf = *minLeaf
	if *minSplit != 0 {
		p.MinSplit = *minSplit
	}
	var opts forest.TrainOptions
	if env.isTTY() {
		bar := progressbar.NewOptions(p.Trees,
			progressbar.OptionSetWriter(env.Stderr),
			progressbar.OptionSetDescription("training"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond))
		opts.Progress = func(done, total int) { _ = bar.Set(done) }
		defer bar.Finish()
	}
	t0 := time.Now()
	f, err := forest.Train(fr, p, opts)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	meta := model.Meta{Version: *version, CreatedBy: "forestd"}
	meta, err = model.WriteFile(*out, f, meta)
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	nodes := 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
	}
	rep := map[string]any{
		"model": *out, "model_id": meta.ID, "forest": f.Kind, "task": f.Task.String(),
		"trees": len(f.Trees), "rows": fr.NRows, "skipped_labels": fr.SkippedLabels,
		"features": fr.P(), "classes": f.Classes, "nodes": nodes, "seconds": secs,
		"params": f.Params,
	}
	if f.OOB != nil {
		rep["oob"] = f.OOB
	}
	return writeJSON(env.Stdout, rep)
}

package cli

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/internal/report"
)

func runTrain(args []string, env Env) error {
	fs := newFlagSet("train", "--in PATH... --label COL --out MODEL [flags]", env)
	var in, features, exclude listFlag
	features.split, exclude.split = true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	label := fs.String("label", "", "label column; several, comma-separated, train one multi-output regression forest (or, with --forest drf, a distance forest)")
	out := fs.String("out", "", "model file to write")
	kind := fs.String("forest", "rf", "forest kind: rf (Breiman), sporf (sparse oblique), morf (manifold oblique patches), lfs (local feature sampling), fdm (RF_FDM), drf (distance RF for multivariate responses: --label y0,y1,y2)")
	local := addLocalFlags(fs)
	drf := addDRFFlags(fs) // --forest drf (drf.go)
	lambda := fs.Float64("lambda", 0, "sporf: mean non-zeros per atom, Poisson rate (default 1.5)")
	meanDiff := fs.Bool("mean-diff", false, "sporf: add class-mean-difference atoms, RerF(δ); morf: add each patch weighted by the class-mean difference over it")
	rank := fs.Bool("rank", false, "sporf: train on marginal ranks and rank new data the same way, RerF(r)")
	grid := fs.String("grid", "", "morf: features form WxH images (row-major), e.g. 28x28")
	series := fs.Bool("series", false, "morf: features form a 1-D series")
	cyclic := fs.Bool("cyclic", false, "morf: features form a 1-D cycle (patches wrap around)")
	channels := fs.Int("channels", 1, "morf: channels per image/series")
	chanOrder := fs.String("channel-order", "planar", "morf: planar (channel-major) or interleaved (pixel-major) features")
	patchMin := fs.String("patch-min", "", "morf: smallest patch HxW (default 1x1)")
	patchMax := fs.String("patch-max", "", "morf: largest patch HxW (default 3x3, clipped to the layout)")
	honest := fs.Float64("honest", 0, "share of each tree's rows kept out of structure learning and used for the leaves (0 = off)")
	task := fs.String("task", "auto", "auto, classification or regression")
	trees := fs.Int("trees", 100, "number of trees")
	seed := fs.Uint64("seed", 1, "random seed (same seed, same model bytes at any thread count)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	maxFeat := fs.String("max-features", "", "candidate features per node: sqrt, log2, all, a count or a fraction (default sqrt for classification, p/3 for regression)")
	criterion := fs.String("criterion", "", "gini or entropy (classification), mse (regression)")
	minLeaf := fs.Int("min-leaf", 1, "minimum in-bag rows per leaf")
	minSplit := fs.Int("min-split", 0, "nodes with fewer in-bag rows are not split (default 2 classification, 5 regression)")
	maxDepth := fs.Int("max-depth", 0, "maximum depth (0 = unlimited)")
	sample := fs.String("sample", "bootstrap", "bootstrap or subsample (per tree); or a row count N: train on N rows sampled from the inputs read as a lake (see --sample-mode, --max-memory, --on-error)")
	lakeSample := addTrainSampleFlags(fs)
	frac := fs.Float64("sample-fraction", 0, "rows drawn per tree as a fraction of n (default 1 for bootstrap, 0.632 for subsample)")
	split := fs.String("split", "binned", "split search: binned (histogram, default) or exact (sorted)")
	bins := fs.Int("bins", 255, "quantile bins per feature in binned mode (2..255)")
	tuneFlag := fs.Bool("tune", false, "choose hyperparameters out of bag before training (rf: max-features, min-leaf; sporf: lambda, max-features, mean-diff; morf: patch sizes on the layout, max-features, min-leaf, mean-diff): successive halving over a fixed candidate set on a fraction of the trees, then the winner trained with --trees; a flag set to a non-default value holds its dimension fixed")
	importance := fs.String("importance", "impurity", "importances to compute: impurity (always, with projection counts) or permutation (adds OOB permutation importance)")
	fs.Var(&features, "features", "feature columns (comma-separated; default every numeric column but the label)")
	fs.Var(&exclude, "exclude", "columns to leave out (comma-separated)")
	version := fs.Int64("model-version", 1, "version number recorded in the model")
	refRows := fs.Int("reference-rows", model.DefaultReferenceRows, "training rows (a seeded sample) kept in the model for drift tests of its traffic (0: none)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := checkThreads(*threads); err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	if *out == "" {
		return usagef("--out is required")
	}
	if *refRows < 0 {
		return usagef("--reference-rows %d: a row count, 0 for none", *refRows)
	}
	if err := checkOutFile("--out", *out, paths...); err != nil {
		return err
	}
	if err := local.checkGraphOut(*out, paths); err != nil {
		return err
	}
	kd, err := forest.ParseKind(*kind)
	if err != nil {
		return usagef("--forest %s is not available in this build (available: rf, sporf, morf, lfs, fdm, drf)", *kind)
	}
	if err := kindFlags(fs, kd); err != nil {
		return err
	}
	if kd == forest.KindDRF {
		return drf.train(fs, env, paths)
	}
	fopts, err := trainFrameOptions(*label, *task, kd, features.vals, exclude.vals)
	if err != nil {
		return err
	}
	tk := fopts.Task
	var perm bool
	switch *importance {
	case "impurity":
	case "permutation":
		perm = true
	default:
		return usagef("--importance %q: want impurity or permutation", *importance)
	}
	nSample, isRows, err := sampleRows(*sample)
	if err != nil {
		return err
	}
	if isRows {
		*sample = "bootstrap"
	}
	// params are the flags' training parameters for a task; checked once
	// before any data is read, and again (every one) by forest.Train.
	params := func(task frame.Task) forest.Params {
		p := forest.DefaultParams(task)
		p.Trees, p.Seed, p.Threads = *trees, *seed, *threads
		p.MaxFeatures, p.MaxDepth, p.Sample, p.SampleFraction = *maxFeat, *maxDepth, *sample, *frac
		p.Split, p.Bins, p.Permutation = *split, *bins, perm
		p.Forest, p.Lambda, p.MeanDiff, p.Rank, p.Honest = kd, *lambda, *meanDiff, *rank, *honest
		if *criterion != "" {
			p.Criterion = *criterion
		}
		p.MinLeaf = *minLeaf
		if *minSplit != 0 {
			p.MinSplit = *minSplit
		}
		return p
	}
	if err := params(tk).Check(); err != nil {
		return paramUsage(err)
	}
	maxMemSet := false
	fs.Visit(func(f *flag.Flag) { maxMemSet = maxMemSet || f.Name == "max-memory" })
	if maxMemSet {
		// --max-memory bounds the whole run: the Go runtime's soft memory
		// limit keeps the garbage collector from letting the heap grow to
		// twice what reading and training hold (issue 31)
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(lakeSample.maxMemory)))
	}
	// Training keeps what it allocates (the trees) and makes little
	// garbage, so a collection at a quarter's growth instead of the
	// default doubling costs no measurable CPU and keeps the peak near
	// what is live (100k × 50 Trunk, 100 trees: 161 → 127 MiB; issue 31).
	defer debug.SetGCPercent(debug.SetGCPercent(trainGCPercent))
	fr, sampled, err := lakeSample.loadTraining(paths, fopts, nSample, *seed)
	if err != nil {
		return err
	}
	p := params(fr.Task)
	if p.Tune = *tuneFlag; p.Tune && !kd.Tunable() {
		return usagef("--tune chooses the hyperparameters of rf, sporf and morf, not --forest %s", kd)
	}
	if err := layoutFlags(&p, *grid, *series, *cyclic, *channels, *chanOrder, *patchMin, *patchMax); err != nil {
		return err
	}
	if err := local.apply(&p, fr); err != nil {
		return err
	}
	var opts forest.TrainOptions
	// the frame's feature columns are not needed past training (but for
	// --lfs-graph): rf in binned mode grows on their bin codes (issue 31)
	opts.DropColumns = *local.lfsGraph == ""
	var bound string
	opts.MaxBytes, bound = memoryBound(maxMemSet, int64(lakeSample.maxMemory))
	defer trainProgress(env, p, &opts)()
	// Training may release fr's columns (DropColumns): the reference sample
	// of drift tests is drawn from them first, and kept if they are gone.
	var early arrow.Record
	if *refRows > 0 && opts.DropColumns {
		early = model.SampleReference(fr, nil, *refRows, *seed)
	}
	t0 := time.Now()
	f, err := forest.Train(fr, p, opts)
	if err != nil {
		return paramUsage(memoryErr(err, p.Trees, bound))
	}
	secs := time.Since(t0).Seconds()
	// The training frame is not needed past here (but for --lfs-graph):
	// dropping it lets the model's encoding reuse its memory (issue 31).
	rows, skipped, nFeatures := fr.NRows, fr.SkippedLabels, fr.P()
	graphFrame := fr
	if *local.lfsGraph == "" {
		graphFrame = nil
	}
	meta := model.Meta{Version: *version, CreatedBy: "forestd"}
	switch { // the reference sample of drift tests (model/reference.go)
	case *refRows > 0 && slices.ContainsFunc(fr.Cols, func(c []float32) bool { return c == nil }):
		meta.Reference = early
	case *refRows > 0:
		meta.Reference = model.SampleReference(fr, f, *refRows, *seed)
	}
	fr = nil
	meta, err = saveModel(*out, f, meta)
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	if err := local.writeGraph(f, graphFrame); err != nil {
		return err
	}
	rep := report.TrainSummary(f, meta.ID, rows, skipped, nFeatures, secs)
	rep["model"] = *out
	if sampled != nil {
		rep["sample"] = sampled
	}
	return writeJSON(env.Stdout, rep)
}

// trainFrameOptions reads --label (one column, or several: a multi-output
// regression target) and --task into the training frame's options.
func trainFrameOptions(label, task string, kd forest.Kind, features, exclude []string) (frame.Options, error) {
	fopts := frame.Options{Label: label, Features: features, Exclude: exclude}
	if strings.Contains(label, ",") { // one multi-output regression forest
		cols, err := labelColumns(label)
		if err != nil {
			return fopts, err
		}
		if fopts.Label = cols[0]; len(cols) > 1 {
			fopts.Label, fopts.Targets = "", cols
			if kd == forest.KindFDM {
				return fopts, usagef("--label %s names several columns: --forest fdm learns one label (the others learn several as one multi-output regression forest, and --forest drf as a distance forest)", label)
			}
			if task == "classification" {
				return fopts, usagef("--label %s names several columns, a multi-output regression target; --task classification takes one label", label)
			}
		}
	}
	tk, err := frame.ParseTask(task)
	if err != nil {
		return fopts, usageError{err}
	}
	fopts.Task = tk
	return fopts, nil
}

// trainProgress shows training's progress on a terminal: a bar of the
// trees (of the --tune search's, then the forest's) and, for an RF_FDM
// forest that searches its groups first, the search's bars. It returns
// the function that ends them.
func trainProgress(env Env, p forest.Params, opts *forest.TrainOptions) func() {
	if !env.isTTY() {
		return func() {}
	}
	bar := newBar(env, int64(p.Trees), "training", 100*time.Millisecond)
	opts.Progress = func(done, total int) {
		if total != bar.GetMax() { // --tune: the search's trees, then the forest's
			bar.ChangeMax(total)
		}
		_ = bar.Set(done)
	}
	if p.Forest != forest.KindFDM || p.FDMGroups != "" || p.FDMMarginal != "" {
		return func() { _ = bar.Finish() }
	}
	// the group search runs before the first tree: its bars, cleared when
	// the trees' starts
	search, clear := searchBar(env)
	var once sync.Once
	trees := opts.Progress
	opts.SearchProgress = search
	opts.Progress = func(done, total int) { once.Do(clear); trees(done, total) }
	return func() { once.Do(clear); _ = bar.Finish() }
}

// trainGCPercent is the garbage collector's percentage while train runs.
const trainGCPercent = 25

// Forest kinds that flags of train apply to (trainFlagKinds).
var (
	treeKinds   = []forest.Kind{forest.KindRF, forest.KindSPORF, forest.KindMORF, forest.KindLFS, forest.KindFDM}
	layoutKinds = []forest.Kind{forest.KindMORF, forest.KindLFS}
	morfKinds   = []forest.Kind{forest.KindMORF}
	lfsKinds    = []forest.Kind{forest.KindLFS}
	fdmKinds    = []forest.Kind{forest.KindFDM}
	drfKinds    = []forest.Kind{forest.KindDRF}
)

// trainFlagKinds lists the train flags that apply to some forest kinds
// only, with those kinds; every other flag applies to every kind. A flag
// given (flag.Visit: set on the command line, whatever its value) for
// another kind is a usage error (kindFlags), never ignored.
var trainFlagKinds = map[string][]forest.Kind{
	// the tree learner's own flags, which --forest drf (package manifold) does not take
	"task": treeKinds, "honest": treeKinds, "criterion": treeKinds, "split": treeKinds, "bins": treeKinds,
	"importance": treeKinds, "max-memory": treeKinds, "on-error": treeKinds, "readers": treeKinds, "sample-mode": treeKinds,
	"tune": {forest.KindRF, forest.KindSPORF, forest.KindMORF},
	// sporf (lambda: drf's --projection sparse too) and morf
	"lambda": {forest.KindSPORF, forest.KindDRF}, "rank": {forest.KindSPORF},
	"mean-diff": {forest.KindSPORF, forest.KindMORF},
	"grid":      layoutKinds, "series": layoutKinds, "cyclic": layoutKinds, "channels": layoutKinds, "channel-order": layoutKinds,
	"patch-min": morfKinds, "patch-max": morfKinds,
	"lfs-size": lfsKinds, "lfs-min": lfsKinds, "lfs-random": lfsKinds, "lfs-distance": lfsKinds, "lfs-k": lfsKinds,
	"lfs-components": lfsKinds, "lfs-graph": lfsKinds,
	"fdm-map": fdmKinds, "fdm-candidates": fdmKinds, "fdm-groups": fdmKinds, "fdm-marginal": fdmKinds,
	"fdm-search": fdmKinds, "fdm-adjust": fdmKinds, "fdm-alpha": fdmKinds, "fdm-max-perms": fdmKinds,
	"distance": drfKinds, "isomap-k": drfKinds, "embed-dim": drfKinds, "sigma-g": drfKinds, "gamma-g": drfKinds,
	"max-rows": drfKinds, "projection": drfKinds, "drf-predict": drfKinds, "backscore-center": drfKinds,
	"backscore-select": drfKinds,
}

// kindFlags refuses, as a usage error naming it and the kinds it applies
// to, the first flag given on the command line that does not apply to
// the forest kind kd (trainFlagKinds).
func kindFlags(fs *flags, kd forest.Kind) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		kinds, ok := trainFlagKinds[f.Name]
		if err != nil || !ok || slices.Contains(kinds, kd) {
			return
		}
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		err = usagef("--%s applies to --forest %s, not --forest %s", f.Name, orList(names), kd)
	})
	return err
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// layoutFlags applies MORF's layout and patch flags to p.
func layoutFlags(p *forest.Params, grid string, series, cyclic bool, channels int, order, pmin, pmax string) error {
	n := 0
	for _, on := range []bool{grid != "", series, cyclic} {
		if on {
			n++
		}
	}
	if n > 1 {
		return usagef("--grid, --series and --cyclic exclude each other")
	}
	switch {
	case grid != "":
		w, h, err := dims(grid, "--grid")
		if err != nil {
			return err
		}
		p.Layout, p.Width, p.Height = "grid", w, h
	case series:
		p.Layout = "series"
	case cyclic:
		p.Layout = "cyclic"
	}
	if channels < 1 {
		return usagef("--channels must be at least 1, got %d", channels)
	}
	if channels > 1 {
		p.Channels = channels
	}
	switch order {
	case "planar":
	case "interleaved":
		p.Interleaved = true
	default:
		return usagef("--channel-order %q: want planar or interleaved", order)
	}
	if pmin != "" {
		h, w, err := dims(pmin, "--patch-min")
		if err != nil {
			return err
		}
		p.PatchHMin, p.PatchWMin = h, w
	}
	if pmax != "" {
		h, w, err := dims(pmax, "--patch-max")
		if err != nil {
			return err
		}
		p.PatchHMax, p.PatchWMax = h, w
	}
	return nil
}

// dims parses "AxB" into two positive integers.
func dims(s, flag string) (int, int, error) {
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || x < 1 || y < 1 {
		return 0, 0, usagef("%s %q: want two positive sizes like 28x28", flag, s)
	}
	return x, y, nil
}

// paramUsage turns a training parameter forest refuses (*forest.ParamError)
// into a usage error naming the flag that set it: the flags are the
// parameters' JSON keys with dashes (max_features: --max-features).
func paramUsage(err error) error {
	var pe *forest.ParamError
	if errors.As(err, &pe) {
		if pe.Param == "layout" { // Params.Layout is set by three flags
			return usagef("--grid, --series or --cyclic: %v", pe.Err)
		}
		return usagef("--%s: %v", strings.ReplaceAll(pe.Param, "_", "-"), pe.Err)
	}
	return err
}

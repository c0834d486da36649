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
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/internal/report"
)

// trainFlags are train's flags; drf holds --forest drf's own (drf.go),
// local --forest lfs's and fdm's (train_local.go), lakeSample --sample N's.
type trainFlags struct {
	in, features, exclude                                           listFlag
	label, out, kind, task, maxFeat, criterion, sample, split, impo string
	honest, lambda, frac                                            float64
	meanDiff, rank, tune                                            bool
	trees, threads, minLeaf, minSplit, maxDepth, bins, refRows      int
	seed                                                            uint64
	version                                                         int64
	layout                                                          layoutFlags
	local                                                           *localFlags
	drf                                                             *drfFlags
	lakeSample                                                      *trainSample
}

func addTrainFlags(fs *flags) *trainFlags {
	t := &trainFlags{features: listFlag{split: true}, exclude: listFlag{split: true}}
	fs.Var(&t.in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	fs.StringVar(&t.label, "label", "", "label column; several, comma-separated, train one multi-output regression forest (or, with --forest drf, a distance forest)")
	fs.StringVar(&t.out, "out", "", "model file to write")
	fs.StringVar(&t.kind, "forest", "rf", "forest kind: rf (Breiman), sporf (sparse oblique), morf (manifold oblique patches), lfs (local feature sampling), fdm (RF_FDM), drf (distance RF for multivariate responses: --label y0,y1,y2)")
	t.local = addLocalFlags(fs)
	t.drf = addDRFFlags(fs) // --forest drf (drf.go)
	fs.Float64Var(&t.lambda, "lambda", 0, "sporf: mean non-zeros per atom, Poisson rate (default 1.5)")
	fs.BoolVar(&t.meanDiff, "mean-diff", false, "sporf: add class-mean-difference atoms, RerF(δ); morf: add each patch weighted by the class-mean difference over it")
	fs.BoolVar(&t.rank, "rank", false, "sporf: train on marginal ranks and rank new data the same way, RerF(r)")
	t.layout.add(fs)
	fs.Float64Var(&t.honest, "honest", 0, "share of each tree's rows kept out of structure learning and used for the leaves (0 = off)")
	fs.StringVar(&t.task, "task", "auto", "auto, classification or regression")
	fs.IntVar(&t.trees, "trees", 100, "number of trees")
	fs.Uint64Var(&t.seed, "seed", 1, "random seed (same seed, same model bytes at any thread count)")
	fs.IntVar(&t.threads, "threads", runtime.NumCPU(), "worker threads")
	fs.StringVar(&t.maxFeat, "max-features", "", "candidate features per node: sqrt, log2, all, a count or a fraction (default sqrt for classification, p/3 for regression)")
	fs.StringVar(&t.criterion, "criterion", "", "gini or entropy (classification), mse (regression)")
	fs.IntVar(&t.minLeaf, "min-leaf", 1, "minimum in-bag rows per leaf")
	fs.IntVar(&t.minSplit, "min-split", 0, "nodes with fewer in-bag rows are not split (default 2 classification, 5 regression)")
	fs.IntVar(&t.maxDepth, "max-depth", 0, "maximum depth (0 = unlimited)")
	fs.StringVar(&t.sample, "sample", "bootstrap", "bootstrap or subsample (per tree); or a row count N: train on N rows sampled from the inputs read as a lake (see --sample-mode, --max-memory, --on-error)")
	t.lakeSample = addTrainSampleFlags(fs)
	fs.Float64Var(&t.frac, "sample-fraction", 0, "rows drawn per tree as a fraction of n (default 1 for bootstrap, 0.632 for subsample)")
	fs.StringVar(&t.split, "split", "binned", "split search: binned (histogram, default) or exact (sorted)")
	fs.IntVar(&t.bins, "bins", 255, "quantile bins per feature in binned mode (2..255)")
	fs.BoolVar(&t.tune, "tune", false, "choose hyperparameters out of bag before training (rf: max-features, min-leaf; sporf: lambda, max-features, mean-diff; morf: patch sizes on the layout, max-features, min-leaf, mean-diff): successive halving over a fixed candidate set on a fraction of the trees, then the winner trained with --trees; a flag set to a non-default value holds its dimension fixed")
	fs.StringVar(&t.impo, "importance", "impurity", "importances to compute: impurity (always, with projection counts) or permutation (adds OOB permutation importance)")
	fs.Var(&t.features, "features", "feature columns (comma-separated; default every numeric column but the label)")
	fs.Var(&t.exclude, "exclude", "columns to leave out (comma-separated)")
	fs.Int64Var(&t.version, "model-version", 1, "version number recorded in the model")
	fs.IntVar(&t.refRows, "reference-rows", model.DefaultReferenceRows, "training rows (a seeded sample) kept in the model for drift tests of its traffic (0: none)")
	return t
}

// runTrain is forestd train: parse and check the flags, read the training
// frame (whole, or a lake sample), train, write the model, print JSON.
func runTrain(args []string, env Env) error {
	fs := newFlagSet("train", "--in PATH... --label COL --out MODEL [flags]", env)
	t := addTrainFlags(fs)
	paths, kd, err := t.parse(fs, args)
	if err != nil {
		return err
	}
	if kd == forest.KindDRF {
		return t.drf.train(t, env, paths)
	}
	fopts, err := trainFrameOptions(t.label, t.task, kd, t.features.vals, t.exclude.vals)
	if err != nil {
		return err
	}
	perm, nSample, err := t.sampling()
	if err != nil {
		return err
	}
	// checked once before any data is read, and again (every one) by forest.Train
	if err := t.params(fopts.Task, kd, perm).Check(); err != nil {
		return paramUsage(err)
	}
	maxMemSet := isSet(fs, "max-memory")
	if maxMemSet {
		// --max-memory bounds the whole run: the Go runtime's soft memory
		// limit keeps the garbage collector from letting the heap grow to
		// twice what reading and training hold (issue 31)
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(t.lakeSample.maxMemory)))
	}
	// Training keeps what it allocates (the trees) and makes little
	// garbage, so a collection at a quarter's growth instead of the
	// default doubling costs no measurable CPU and keeps the peak near
	// what is live (100k × 50 Trunk, 100 trees: 161 → 127 MiB; issue 31).
	defer debug.SetGCPercent(debug.SetGCPercent(trainGCPercent))
	fr, sampled, err := t.lakeSample.loadTraining(paths, fopts, nSample, t.seed)
	if err != nil {
		return err
	}
	p, opts, err := t.trainParams(fr, kd, perm, maxMemSet)
	if err != nil {
		return err
	}
	defer trainProgress(env, p, &opts)()
	// Training may release fr's columns (DropColumns, from CodesOnlyRows
	// rows): the reference sample of drift tests is drawn from them first.
	var early arrow.Record
	if t.refRows > 0 && opts.DropColumns && fr.NRows >= forest.CodesOnlyRows {
		early = model.SampleReference(fr, nil, t.refRows, t.seed)
	}
	t0 := time.Now()
	f, err := forest.Train(fr, p, opts)
	if err != nil {
		return paramUsage(memoryErr(err, p.Trees, maxMemSet))
	}
	return t.save(env, f, fr, early, sampled, time.Since(t0).Seconds())
}

// parse parses and checks the flags before any data is read: the output,
// the forest kind and the flags that apply to it (kindFlags).
func (t *trainFlags) parse(fs *flags, args []string) ([]string, forest.Kind, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, "", err
	}
	paths := append(t.in.vals, pos...)
	if t.out == "" {
		return nil, "", usagef("--out is required")
	}
	if t.refRows < 0 {
		return nil, "", usagef("--reference-rows %d: a row count, 0 for none", t.refRows)
	}
	if err := checkOutFile("--out", t.out, paths...); err != nil {
		return nil, "", err
	}
	if err := t.local.checkGraphOut(t.out, paths); err != nil {
		return nil, "", err
	}
	kd, err := forest.ParseKind(t.kind)
	if err != nil {
		return nil, "", usagef("--forest %s is not available in this build (available: rf, sporf, morf, lfs, fdm, drf)", t.kind)
	}
	return paths, kd, kindFlags(fs, kd)
}

// sampling reads --importance and --sample: permutation importances or
// not, and the rows of a lake sample (0: the inputs read whole).
func (t *trainFlags) sampling() (perm bool, rows int, err error) {
	switch t.impo {
	case "impurity":
	case "permutation":
		perm = true
	default:
		return false, 0, usagef("--importance %q: want impurity or permutation", t.impo)
	}
	rows, isRows, err := sampleRows(t.sample)
	if isRows {
		t.sample = "bootstrap"
	}
	return perm, rows, err
}

// params are the flags' training parameters for a task.
func (t *trainFlags) params(task frame.Task, kd forest.Kind, perm bool) forest.Params {
	p := forest.DefaultParams(task)
	p.Trees, p.Seed, p.Threads = t.trees, t.seed, t.threads
	p.MaxFeatures, p.MaxDepth, p.Sample, p.SampleFraction = t.maxFeat, t.maxDepth, t.sample, t.frac
	p.Split, p.Bins, p.Permutation = t.split, t.bins, perm
	p.Forest, p.Lambda, p.MeanDiff, p.Rank, p.Honest = kd, t.lambda, t.meanDiff, t.rank, t.honest
	if t.criterion != "" {
		p.Criterion = t.criterion
	}
	p.MinLeaf = t.minLeaf
	if t.minSplit != 0 {
		p.MinSplit = t.minSplit
	}
	return p
}

// trainParams completes the parameters with what needs the frame (--tune,
// the layout, lfs's and fdm's feature sets) and sets the training options.
func (t *trainFlags) trainParams(fr *frame.Frame, kd forest.Kind, perm, maxMemSet bool) (forest.Params, forest.TrainOptions, error) {
	var opts forest.TrainOptions
	p := t.params(fr.Task, kd, perm)
	if p.Tune = t.tune; p.Tune && !kd.Tunable() {
		return p, opts, usagef("--tune chooses the hyperparameters of rf, sporf and morf, not --forest %s", kd)
	}
	if err := t.layout.apply(&p); err != nil {
		return p, opts, err
	}
	if err := t.local.apply(&p, fr); err != nil {
		return p, opts, err
	}
	// the frame's feature columns are not needed past training (but for
	// --lfs-graph): rf in binned mode grows on their bin codes (issue 31)
	opts.DropColumns = *t.local.lfsGraph == ""
	opts.MaxBytes, _ = memoryBound(maxMemSet, int64(t.lakeSample.maxMemory))
	return p, opts, nil
}

// save writes the model (with its reference sample) and the --lfs-graph
// and prints the training summary.
func (t *trainFlags) save(env Env, f *forest.Forest, fr *frame.Frame, early arrow.Record, sampled *lake.SampleReport, secs float64) error {
	// The training frame is not needed past here (but for --lfs-graph):
	// dropping it lets the model's encoding reuse its memory (issue 31).
	rows, skipped, nFeatures := fr.NRows, fr.SkippedLabels, fr.P()
	graphFrame := fr
	if *t.local.lfsGraph == "" {
		graphFrame = nil
	}
	meta := model.Meta{Version: t.version, CreatedBy: "forestd"}
	switch { // the reference sample of drift tests (model/reference.go)
	case t.refRows > 0 && slices.ContainsFunc(fr.Cols, func(c []float32) bool { return c == nil }):
		meta.Reference = early
	case t.refRows > 0:
		meta.Reference = model.SampleReference(fr, f, t.refRows, t.seed)
	}
	fr = nil
	meta, err := saveModel(t.out, f, meta)
	if err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	if err := t.local.writeGraph(f, graphFrame); err != nil {
		return err
	}
	rep := report.TrainSummary(f, meta.ID, rows, skipped, nFeatures, secs)
	rep["model"] = t.out
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

// layoutFlags are MORF's (and LFS's) layout and patch flags.
type layoutFlags struct {
	grid, order, pmin, pmax string
	series, cyclic          bool
	channels                int
}

func (l *layoutFlags) add(fs *flags) {
	fs.StringVar(&l.grid, "grid", "", "morf: features form WxH images (row-major), e.g. 28x28")
	fs.BoolVar(&l.series, "series", false, "morf: features form a 1-D series")
	fs.BoolVar(&l.cyclic, "cyclic", false, "morf: features form a 1-D cycle (patches wrap around)")
	fs.IntVar(&l.channels, "channels", 1, "morf: channels per image/series")
	fs.StringVar(&l.order, "channel-order", "planar", "morf: planar (channel-major) or interleaved (pixel-major) features")
	fs.StringVar(&l.pmin, "patch-min", "", "morf: smallest patch HxW (default 1x1)")
	fs.StringVar(&l.pmax, "patch-max", "", "morf: largest patch HxW (default 3x3, clipped to the layout)")
}

// apply copies the layout and patch flags into p.
func (l *layoutFlags) apply(p *forest.Params) error {
	n := 0
	for _, on := range []bool{l.grid != "", l.series, l.cyclic} {
		if on {
			n++
		}
	}
	if n > 1 {
		return usagef("--grid, --series and --cyclic exclude each other")
	}
	switch {
	case l.grid != "":
		w, h, err := dims(l.grid, "--grid")
		if err != nil {
			return err
		}
		p.Layout, p.Width, p.Height = "grid", w, h
	case l.series:
		p.Layout = "series"
	case l.cyclic:
		p.Layout = "cyclic"
	}
	if l.channels < 1 {
		return usagef("--channels must be at least 1, got %d", l.channels)
	}
	if l.channels > 1 {
		p.Channels = l.channels
	}
	switch l.order {
	case "planar":
	case "interleaved":
		p.Interleaved = true
	default:
		return usagef("--channel-order %q: want planar or interleaved", l.order)
	}
	var err error
	if l.pmin != "" {
		if p.PatchHMin, p.PatchWMin, err = dims(l.pmin, "--patch-min"); err != nil {
			return err
		}
	}
	if l.pmax != "" {
		if p.PatchHMax, p.PatchWMax, err = dims(l.pmax, "--patch-max"); err != nil {
			return err
		}
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

package cli

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/schollz/progressbar/v3"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/operators"
)

// runAnalyze is forestd analyze (ARCHITECTURE.md, Command line): dependence analysis of
// labelled data, dissertation ch. 2 and 5. Every feature is tested alone
// against the label (the marginal set S_m, Algorithm 1), then the chosen
// search finds minimum or stronger dependence sets among the rest
// (Algorithms 3–6), all with seeded permutation tests of gCor_n or dCor_n,
// with false discoveries controlled across the whole analysis
// (dependence.SearchLabel). It prints one JSON object and, with --out,
// writes the report as a table (schemas.DependenceReport).
func runAnalyze(args []string, env Env) error {
	fs := newFlagSet("analyze", "--in PATH... --label COL [--task auto|classification|regression] [--stat auto|gcor|dcor] [--method M] [--adjust holm|bh|none] [--alpha A] [--max-perms N] [--perms N] [--exact] [--max-rows N] [--seed S] [--threads T] [--progress auto|always|never] [--out FILE]", env)
	var in, features, exclude listFlag
	features.split, exclude.split = true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	label := fs.String("label", "", "label column")
	fs.Var(&features, "features", "feature columns (comma-separated; default every numeric column but the label)")
	fs.Var(&exclude, "exclude", "columns to leave out (comma-separated)")
	sf := addSearchFlags(fs)
	method := fs.String("method", string(dependence.MethodMDCBottomUp), "search: marginal (Alg. 1), mdc-topdown (Alg. 3), mdc-dc (Alg. 4), mdc-bottomup (Alg. 5) or sdc-bottomup (Alg. 6)")
	maxRows := fs.Int("max-rows", dependence.DefaultSetRows, "test feature sets on a seeded subsample of N rows (0 = all rows; features alone always use every row)")
	maxSize := fs.Int("max-size", dependence.DefaultMaxSize, "largest set the bottom-up methods try: 2 or 3")
	seed := fs.Uint64("seed", 1, "random seed of the permutations (same seed, same report at any thread count)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	out := fs.String("out", "", "also write the report as a table: .parquet, .arrow, .arrows, .csv or .csv.gz")
	lakeIn := addLakeInputFlags(fs) // --sample N over a lake (lake_select.go)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	if *label == "" {
		return usagef("--label is required")
	}
	if err := checkDataOut("--out", *out, false, paths...); err != nil {
		return err
	}
	opt := dependence.DefaultSearchOptions()
	if opt.Method, err = dependence.ParseMethod(*method); err != nil {
		return usagef("--method: %w", err)
	}
	switch {
	case *maxRows < 0 || *maxRows == 1:
		return usagef("--max-rows must be 0 (all rows) or at least 2, got %d", *maxRows)
	case *maxSize != 2 && *maxSize != 3:
		return usagef("--max-size must be 2 or 3, got %d", *maxSize)
	}
	if err := sf.apply(&opt); err != nil {
		return err
	}
	opt.MaxSize = *maxSize
	opt.Test.MaxRows, opt.Test.Seed, opt.Test.Threads = *maxRows, *seed, *threads

	fr, err := lakeIn.loadLabelled(paths, frame.Options{Label: *label, Task: sf.task, Features: features.vals, Exclude: exclude.vals}, *seed)
	if err != nil {
		return err
	}
	if fr.P() == 0 {
		return fmt.Errorf("no feature columns in %v", paths)
	}
	lab, err := sf.label(fr, &opt)
	if err != nil {
		return err
	}
	done := searchProgress(env, &opt, sf.progressMode)
	t0 := time.Now()
	res, err := operators.SearchFrame(fr, lab, opt)
	done()
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	rep := operators.SearchSummary(fr, res, opt)
	rep["seconds"] = secs
	for _, n := range rep["notes"].([]string) {
		fmt.Fprintf(env.Stderr, "forestd analyze: %s\n", n)
	}
	if lakeIn.report != nil {
		rep["sample"] = lakeIn.report
	}
	if *out != "" {
		if err := writeReport(*out, fr, res, opt); err != nil {
			return err
		}
		rep["out"] = *out
	}
	return writeJSON(env.Stdout, rep)
}

// searchFlags are the flags analyze and select share: the label's task,
// the statistic and the false-discovery control.
type searchFlags struct {
	taskName, stat, adjust *string
	alpha                  *float64
	maxPerms, perms        *int
	exact                  *bool
	progress               *string
	task                   frame.Task
	progressMode           progressMode
}

func addSearchFlags(fs *flags) *searchFlags {
	return &searchFlags{
		taskName: fs.String("task", "auto", "the label: classification (classes), regression (numbers) or auto: a float label is numeric, and so is a label of more than 32 distinct numbers; every other label is classes"),
		stat:     fs.String("stat", "auto", "test statistic: gcor (Gini correlation, Def. 12; classes only), dcor (distance correlation, Defs. 8-9, not squared) or auto: gcor for classes, dcor for numbers"),
		adjust:   fs.String("adjust", string(dependence.AdjustHolm), "false-discovery control across the analysis: holm (chance of any false feature or group ≤ --alpha), bh (expected share of false findings ≤ --alpha) or none (every test at --alpha alone, as the dissertation)"),
		alpha:    fs.Float64("alpha", dependence.DefaultAlpha, "level of the analysis (holm, bh) or of every test (none; 0 then means no permutation reached the statistic after the maximum count)"),
		maxPerms: fs.Int("max-perms", 0, "most permutations per test (default 200000; 5000 with --adjust none, whose adaptive count starts at 100 and doubles while none reaches the statistic)"),
		perms:    fs.Int("perms", 0, "run exactly N permutations per test instead of the sequential or adaptive count (0 = not fixed)"),
		exact:    fs.Bool("exact", false, "holm, bh: decide every test by permutations alone, without the chi-square approximation that settles tests far from their threshold (slower)"),
		progress: fs.String("progress", "auto", "progress on stderr: auto (a bar on a terminal, else a line every few seconds once the search has run that long), always (lines at each stage too, even for short runs) or never"),
	}
}

// apply checks the flags and sets them on opt.
func (sf *searchFlags) apply(opt *dependence.SearchOptions) error {
	var err error
	if sf.task, err = frame.ParseTask(*sf.taskName); err != nil {
		return usagef("--task: %w", err)
	}
	opt.Stat = ""
	if *sf.stat != "auto" {
		if opt.Stat, err = dependence.ParseStat(*sf.stat); err != nil {
			return usagef("--stat: %w (or auto)", err)
		}
	}
	if opt.Adjust, err = dependence.ParseAdjust(*sf.adjust); err != nil {
		return usagef("--adjust: %w", err)
	}
	switch a := *sf.alpha; {
	case math.IsNaN(a) || a < 0 || a > 1:
		return usagef("--alpha must be in [0, 1], got %v", a)
	case a == 0 && opt.Adjust != dependence.AdjustNone:
		return usagef("--alpha 0 (no permutation may reach the statistic) is a per-test rule: use it with --adjust none")
	case *sf.maxPerms < 0:
		return usagef("--max-perms must not be negative, got %d", *sf.maxPerms)
	case *sf.perms < 0:
		return usagef("--perms must not be negative, got %d", *sf.perms)
	}
	if sf.progressMode, err = parseProgress(*sf.progress); err != nil {
		return usagef("--progress: %w", err)
	}
	opt.Alpha = *sf.alpha
	opt.Test.MaxPerms, opt.Test.Perms, opt.Test.Exact = *sf.maxPerms, *sf.perms, *sf.exact
	return nil
}

// label is the label of fr the search tests against: with --task auto a
// label of more than frame.MaxAutoClasses numbers is numeric. It refuses
// gCor_n for a numeric label, and a class label of fewer than two classes,
// in one line that says what to do.
func (sf *searchFlags) label(fr *frame.Frame, opt *dependence.SearchOptions) (dependence.Label, error) {
	fr.ResolveAuto(sf.task)
	if fr.Task == frame.TaskRegression {
		if opt.Stat == dependence.StatGCor {
			return dependence.Label{}, usagef("--stat gcor needs a class label, and label %q is numeric (regression): use --stat dcor, or --task classification to treat its values as classes", fr.LabelName)
		}
	} else if fr.NumClasses() < 2 {
		return dependence.Label{}, fmt.Errorf("label %q has %d class(es); dependence analysis needs at least two", fr.LabelName, fr.NumClasses())
	}
	return fdm.LabelOf(fr)
}

// searchProgress sets the search's progress on opt (progress.go): a bar
// when stderr is a terminal (searchBar), lines every few seconds
// otherwise, nothing with --progress never. It returns the function that
// ends it.
func searchProgress(env Env, opt *dependence.SearchOptions, mode progressMode) func() {
	if mode == progressNever {
		return func() {}
	}
	if env.isTTY() {
		var done func()
		opt.Progress, done = searchBar(env)
		return done
	}
	var done func()
	opt.Progress, done = searchLines(env, mode == progressAlways)
	return done
}

// searchBar is the progress of an MDS/SDS search when stderr is a
// terminal: the tests done and the most still to do, with an ETA, one bar
// per stage (the marginal tests, then the set tests). It returns the
// search's progress callback (nil without a terminal) and the function
// that clears the bar.
func searchBar(env Env) (func(dependence.SearchProgress), func()) {
	if !env.isTTY() {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	stage := ""
	progress := func(p dependence.SearchProgress) {
		if p.Stage != stage {
			if bar != nil {
				_ = bar.Finish()
			}
			stage = p.Stage
			bar = newBar(env, int64(p.Total), p.Stage+" tests", 100*time.Millisecond)
			_ = bar.RenderBlank() // each stage shows at once, however short
		}
		if bar.GetMax() != p.Total {
			bar.ChangeMax(p.Total)
		}
		_ = bar.Set(p.Done)
	}
	return progress, func() {
		if bar != nil {
			_ = bar.Finish()
		}
	}
}

func writeReport(path string, fr *frame.Frame, res *dependence.SearchResult, opt dependence.SearchOptions) error {
	rec, err := operators.DependenceReport(memory.DefaultAllocator, fr.Names, fr.NRows, opt.Test.Seed, fr.Task, res)
	if err != nil {
		return err
	}
	if err := writeRecord(path, rec); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

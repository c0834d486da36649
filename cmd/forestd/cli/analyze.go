package cli

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
)

// runAnalyze is forestd analyze (ARCHITECTURE.md, Command line): dependence analysis of
// labelled data, dissertation ch. 2 and 5. Every feature is tested alone
// against the label (the marginal set S_m, Algorithm 1), then the chosen
// search finds minimum or stronger dependence sets among the rest
// (Algorithms 3–6), all with seeded permutation tests of gCor_n or dCor_n.
// It prints one JSON object and, with --out, writes the report as a table
// (schemas.DependenceReport).
func runAnalyze(args []string, env Env) error {
	fs := newFlagSet("analyze", "--in PATH... --label COL [--stat gcor|dcor] [--method M] [--alpha A] [--max-perms N] [--perms N] [--max-rows N] [--seed S] [--threads T] [--out FILE]", env)
	var in, features, exclude listFlag
	features.split, exclude.split = true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	label := fs.String("label", "", "label column (categorical)")
	fs.Var(&features, "features", "feature columns (comma-separated; default every numeric column but the label)")
	fs.Var(&exclude, "exclude", "columns to leave out (comma-separated)")
	stat := fs.String("stat", string(dependence.StatGCor), "test statistic: gcor (Gini correlation, Def. 12) or dcor (distance correlation, Defs. 8-9, not squared)")
	method := fs.String("method", string(dependence.MethodMDCBottomUp), "search: marginal (Alg. 1), mdc-topdown (Alg. 3), mdc-dc (Alg. 4), mdc-bottomup (Alg. 5) or sdc-bottomup (Alg. 6)")
	alpha := fs.Float64("alpha", dependence.DefaultAlpha, "significance level; 0 means no permutation reached the statistic after the maximum count")
	maxPerms := fs.Int("max-perms", dependence.DefaultMaxPerms, "adaptive permutations: start at 100, double while none reaches the statistic, stop here")
	perms := fs.Int("perms", 0, "run exactly N permutations per test instead of the adaptive count (0 = adaptive)")
	maxRows := fs.Int("max-rows", 0, "test feature sets on a seeded subsample of N rows (0 = all rows)")
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
	if err := notInput("--out", *out, paths...); err != nil {
		return err
	}
	opt := dependence.DefaultSearchOptions()
	if opt.Stat, err = dependence.ParseStat(*stat); err != nil {
		return usagef("--stat: %w", err)
	}
	if opt.Method, err = dependence.ParseMethod(*method); err != nil {
		return usagef("--method: %w", err)
	}
	switch {
	case math.IsNaN(*alpha) || *alpha < 0 || *alpha > 1:
		return usagef("--alpha must be in [0, 1], got %v", *alpha)
	case *maxPerms < 1:
		return usagef("--max-perms must be at least 1, got %d", *maxPerms)
	case *perms < 0:
		return usagef("--perms must not be negative, got %d", *perms)
	case *maxRows < 0 || *maxRows == 1:
		return usagef("--max-rows must be 0 (all rows) or at least 2, got %d", *maxRows)
	case *maxSize != 2 && *maxSize != 3:
		return usagef("--max-size must be 2 or 3, got %d", *maxSize)
	case *threads < 1:
		return checkThreads(*threads)
	}
	if *out != "" && !reportExt(*out) {
		return usagef("--out %s: unknown format (want .parquet, .arrow, .arrows, .csv or .csv.gz)", *out)
	}
	opt.Alpha, opt.MaxSize = *alpha, *maxSize
	opt.Test = dependence.TestOptions{Perms: *perms, MaxPerms: *maxPerms, MaxRows: *maxRows, Seed: *seed, Threads: *threads}

	fr, err := lakeIn.loadLabelled(paths, frame.Options{Label: *label, Task: frame.TaskClassification, Features: features.vals, Exclude: exclude.vals}, *seed)
	if err != nil {
		return err
	}
	if fr.P() == 0 {
		return fmt.Errorf("no feature columns in %v", paths)
	}
	if fr.NumClasses() < 2 {
		return fmt.Errorf("label %q has %d class(es); dependence analysis needs at least two", *label, fr.NumClasses())
	}
	x := make([][]float64, fr.P())
	for j, c := range fr.Cols {
		x[j] = make([]float64, len(c))
		for i, v := range c {
			x[j][i] = float64(v)
		}
	}
	t0 := time.Now()
	res, err := dependence.Search(x, fr.Y, fr.NumClasses(), opt)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	rep := analyzeReport(fr, res, opt)
	rep["seconds"] = secs
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

// reportExt reports whether path names a format files.WriteFile writes.
func reportExt(path string) bool {
	p := strings.ToLower(path)
	for _, ext := range []string{".parquet", ".arrow", ".feather", ".ipc", ".arrows", ".csv", ".csv.gz"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// jsonNum maps NaN (an undefined statistic) to null.
func jsonNum(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func analyzeReport(fr *frame.Frame, res *dependence.SearchResult, opt dependence.SearchOptions) map[string]any {
	feats := make([]map[string]any, fr.P())
	for j, name := range fr.Names {
		feats[j] = map[string]any{
			"name": name, "statistic": jsonNum(res.Statistic[j]), "p_value": res.PValue[j],
			"b": res.B[j], "N": res.N[j], "group": res.Label[j],
		}
	}
	names := func(idx []int) []string {
		out := make([]string, len(idx))
		for i, j := range idx {
			out[i] = fr.Names[j]
		}
		return out
	}
	groups := make([]map[string]any, len(res.Groups))
	for g, gr := range res.Groups {
		groups[g] = map[string]any{
			"group": g + 1, "features": names(gr.Features), "kind": gr.Kind,
			"statistic": jsonNum(gr.Statistic), "p_value": gr.PValue, "b": gr.B, "N": gr.N,
		}
	}
	rep := map[string]any{
		"rows": fr.NRows, "skipped_labels": fr.SkippedLabels, "label": fr.LabelName, "classes": fr.Classes,
		"stat": res.Stat, "method": res.Method, "alpha": res.Alpha, "seed": opt.Test.Seed,
		"max_perms": opt.Test.MaxPerms, "perms": opt.Test.Perms, "max_rows": opt.Test.MaxRows, "set_rows": res.SetRows,
		"features": feats, "marginal": names(res.Marginal), "groups": groups, "tests": res.Tests,
	}
	if res.Rest != nil {
		var rest []int
		for j, l := range res.Label {
			if l == 0 {
				rest = append(rest, j)
			}
		}
		rep["rest"] = map[string]any{"features": names(rest), "statistic": jsonNum(res.Rest.Statistic),
			"p_value": res.Rest.PValue, "b": res.Rest.B, "N": res.Rest.N}
	}
	return rep
}

func writeReport(path string, fr *frame.Frame, res *dependence.SearchResult, opt dependence.SearchOptions) error {
	var b schemas.ReportBatch
	for j, name := range fr.Names {
		b.Features = append(b.Features, schemas.ReportFeature{Name: name, Group: res.Label[j],
			Test: schemas.ReportTest{Statistic: res.Statistic[j], PValue: res.PValue[j], B: res.B[j], N: res.N[j]}})
	}
	for _, g := range res.Groups {
		b.Groups = append(b.Groups, schemas.ReportGroup{Features: g.Features, Kind: g.Kind,
			Test: schemas.ReportTest{Statistic: g.Statistic, PValue: g.PValue, B: g.B, N: g.N}})
	}
	spec := schemas.ReportSpec{Stat: string(res.Stat), Method: string(res.Method), Alpha: res.Alpha, Seed: opt.Test.Seed, Rows: fr.NRows}
	rec, err := schemas.BuildDependenceReport(memory.DefaultAllocator, spec, b)
	if err != nil {
		return err
	}
	defer rec.Release()
	if err := files.WriteFile(path, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{}); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

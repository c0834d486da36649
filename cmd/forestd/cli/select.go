package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/operators"
)

// runSelect is forestd select (ARCHITECTURE.md, Command line): the feature-selection stage
// of dissertation ch. 5–6. It finds the marginally dependent features and
// the jointly dependent groups (MDS/SDS search) on labelled data, maps
// every group with feature dependence mapping (FDM_RF, §6.3), and writes
// the marginal columns, the mapped columns, the label and any --keep
// columns. The mapping goes to a JSON file; --apply maps new data with a
// stored mapping, identically.
func runSelect(args []string, env Env) error {
	fs := newFlagSet("select", "--in PATH... --label COL --out PATH [--mapping FILE] | --in PATH... --apply MAPPING --out PATH", env)
	var in, keep, features, exclude listFlag
	keep.split, features.split, exclude.split = true, true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	fs.Var(&keep, "keep", "input columns copied to the output unchanged (comma-separated), e.g. an id; never features")
	fs.Var(&features, "features", "feature columns (comma-separated; default every numeric column but the label and --keep)")
	fs.Var(&exclude, "exclude", "columns to leave out (comma-separated)")
	label := fs.String("label", "", "label column (classes or numbers, see --task); copied to the output")
	out := fs.String("out", "", "output file: .parquet, .arrow, .arrows, .csv, .csv.gz")
	mapping := fs.String("mapping", "", "where to write the mapping (default: --out with extension .fdm.json)")
	apply := fs.String("apply", "", "map the input with this stored mapping instead of learning one")
	mapKind := fs.String("fdm-map", "rp", "mapping function: rp (random projection) or drl (distance to a random landmark)")
	cands := fs.Int("candidates", fdm.DefaultCandidates, "random mappings drawn per group; the best |group| by gCor (dCor for a numeric label) are kept")
	groups := fs.String("groups", "", "feature groups 'a,b;c,d,e' instead of the search (with --marginal)")
	marginal := fs.String("marginal", "", "marginally dependent features 'x,y' (with --groups)")
	method := fs.String("method", string(dependence.MethodMDCBottomUp), "search: marginal, mdc-topdown, mdc-dc, mdc-bottomup or sdc-bottomup")
	sf := addSearchFlags(fs) // --task, --stat, --adjust, --alpha, --max-perms, --perms (analyze.go)
	maxRows := fs.Int("max-rows", dependence.DefaultSetRows, "row subsample for tests of feature sets (0 = all rows)")
	seed := fs.Uint64("seed", 1, "random seed of the tests and the mappings")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads (results do not depend on it)")
	lakeIn := addLakeInputFlags(fs) // --sample N, and a directory --out: the mapped lake (lake_select.go)
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
	if err := noRepeats("--keep", keep.vals); err != nil {
		return err
	}
	lakeOut := dirOut(*out)
	if lakeOut { // the mapped lake: a tree of files
		if err := notInputDir("--out", *out, paths...); err != nil {
			return err
		}
	} else {
		if err := checkDataOut("--out", *out, true, append(paths, *apply)...); err != nil {
			return err
		}
	}
	if *apply != "" {
		if *groups != "" || *marginal != "" || *mapping != "" {
			return usagef("--apply uses a stored mapping: --groups, --marginal and --mapping do not apply")
		}
		if lakeOut {
			return lakeIn.selectApplyLake(paths, *apply, *label, keep.vals, *out, env)
		}
		return selectApply(paths, *apply, *label, keep.vals, *out, env)
	}
	if *label == "" {
		return usagef("--label is required to learn a mapping (or give --apply MAPPING)")
	}
	if *mapping == "" {
		o := strings.TrimSuffix(filepath.Clean(*out), ".gz") // a lake "o/lk/": o/lk.fdm.json
		*mapping = strings.TrimSuffix(o, filepath.Ext(o)) + ".fdm.json"
	}
	if err := checkOutFile("--mapping", *mapping, paths...); err != nil {
		return err
	}
	if err := distinctOuts("--out", *out, "--mapping", *mapping); err != nil {
		return err
	}
	if *marginal != "" && *groups == "" {
		return usagef("--marginal needs --groups")
	}
	opt := dependence.DefaultSearchOptions()
	if opt.Method, err = dependence.ParseMethod(*method); err != nil {
		return usageError{err}
	}
	if err := sf.apply(&opt); err != nil {
		return err
	}
	if *maxRows < 0 || *cands < 1 {
		return usagef("--candidates must be at least 1 and --max-rows not negative")
	}
	opt.Test.MaxRows, opt.Test.Seed, opt.Test.Threads = *maxRows, *seed, *threads
	fopts := fdm.Options{Map: *mapKind, Candidates: *cands}
	if *mapKind != fdm.MapRP && *mapKind != fdm.MapDRL {
		return usagef("--fdm-map %q: want rp or drl", *mapKind)
	}

	schema, recs, err := lakeIn.learnRecords(paths, *label, keep.vals, *seed)
	if err != nil {
		return err
	}
	defer release(recs)
	excl := append(slices.Clone(exclude.vals), keep.vals...)
	if len(features.vals) > 0 {
		excl = exclude.vals
	}
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: *label, Task: sf.task, Features: features.vals, Exclude: excl})
	if err != nil {
		return inPaths(paths, err)
	}
	if fr.NRows < 2 {
		return fmt.Errorf("select needs at least two labelled rows; %v has %d", paths, fr.NRows)
	}
	lab, err := sf.label(fr, &opt)
	if err != nil {
		return err
	}
	var plan fdm.Plan
	var res *dependence.SearchResult
	if *groups != "" {
		g, err := featureIndexSets(*groups, fr, "--groups")
		if err != nil {
			return err
		}
		m, err := featureIndexSets(*marginal, fr, "--marginal")
		if err != nil {
			return err
		}
		if plan.Groups, err = fdm.ParseSets(g); err != nil {
			return usageError{err}
		}
		ms, _ := fdm.ParseSets(m)
		for _, s := range ms {
			plan.Marginal = append(plan.Marginal, s...)
		}
	} else {
		done := searchProgress(env, &opt, sf.progressMode)
		plan, res, err = fdm.DiscoverLabel(fr.Cols, lab, opt)
		done()
		if err != nil {
			return err
		}
	}
	if err := plan.Validate(fr.P()); err != nil {
		if res != nil {
			return fmt.Errorf("the %s search found nothing to select: %w", res.Method, err)
		}
		return usageError{err}
	}
	t, err := fdm.Fit(fr, plan, fopts, *seed)
	if err != nil {
		return err
	}
	if res != nil {
		for g := range t.Groups {
			pv, pa := res.Groups[g].PValue, res.Groups[g].AdjPValue
			t.Groups[g].Kind, t.Groups[g].PValue, t.Groups[g].PAdjusted = res.Groups[g].Kind, &pv, &pa
		}
	}
	// The data first, then the mapping: a failed select leaves neither
	// file (a lake's committed files stay, as a failed lake run's do).
	rows, lakeRep, err := lakeIn.selectOut(paths, schema, recs, t, fr.Levels, fr.Names, *label, keep.vals, *out)
	if err != nil {
		return err
	}
	if err := writeMapping(*mapping, t); err != nil {
		if !lakeOut {
			os.Remove(*out)
		}
		return err
	}
	rep := map[string]any{"rows": rows, "out": *out, "mapping": *mapping, "columns": t.Names(),
		"marginal": t.Marginal, "groups": t.Groups, "fdm_map": t.Map, "candidates": t.Candidates}
	rep["task"] = fr.Task.String()
	if res != nil {
		rep["search"] = map[string]any{"method": res.Method, "stat": res.Stat, "alpha": res.Alpha, "adjust": res.Adjust,
			"tests": res.Tests, "unresolved": res.Unresolved}
	}
	if lakeRep != nil {
		rep["lake"] = lakeRep
	}
	if lakeIn.report != nil {
		rep["sample"] = lakeIn.report
	}
	return writeJSON(env.Stdout, rep)
}

// selectApply maps new data with a stored mapping.
func selectApply(paths []string, mappingPath, label string, keep []string, out string, env Env) error {
	fh, err := os.Open(mappingPath)
	if err != nil {
		return fmt.Errorf("--apply: %w", err)
	}
	t, err := fdm.ReadTransform(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", mappingPath, err)
	}
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	if label != "" && len(schema.FieldIndices(label)) == 0 {
		return fmt.Errorf("--label: no column %q in the input", label)
	}
	rows, err := selectWrite(schema, recs, t, nil, nil, label, keep, out)
	if err != nil {
		return err
	}
	return writeJSON(env.Stdout, map[string]any{"rows": rows, "out": out, "mapping": mappingPath, "columns": t.Names()})
}

// writeMapping writes the mapping file (writeOut).
func writeMapping(path string, t *fdm.Transform) error {
	if err := writeOut(path, func(w io.Writer) error {
		_, err := t.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("--mapping: writing the mapping: %w", err)
	}
	return nil
}

// selectWrite writes, for every input row: the --keep columns, the
// marginal features (the input arrays themselves), the mapped columns
// (float64) and the label when present, in that order. names/levels, when
// set, are the training frame's features and category levels, so that
// categorical group inputs are coded as in training.
func selectWrite(schema *arrow.Schema, recs []arrow.Record, t *fdm.Transform, levels [][]string, names []string, label string, keep []string, out string) (int, error) {
	outSchema, outRecs, rows, err := selectRecords(schema, recs, t, levels, names, label, keep)
	if err != nil {
		return 0, err
	}
	defer release(outRecs)
	if err := writeData(out, outSchema, outRecs, files.WriteOptions{}); err != nil {
		return 0, err
	}
	return rows, nil
}

// selectRecords maps recs into selectWrite's output records (one per input
// record) with operators.SelectRecords; the caller releases them.
func selectRecords(schema *arrow.Schema, recs []arrow.Record, t *fdm.Transform, levels [][]string, names []string, label string, keep []string) (*arrow.Schema, []arrow.Record, int, error) {
	outSchema, outRecs, err := operators.SelectRecords(t, schema, recs, operators.SelectOptions{Keep: keep, Label: label, Names: names, Levels: levels})
	if err != nil {
		return nil, nil, 0, err
	}
	rows := 0
	for _, r := range outRecs {
		rows += int(r.NumRows())
	}
	return outSchema, outRecs, rows, nil
}

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
	"github.com/forestd/forestd/lakescore"
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
	sel, err := parseSelect(args, env)
	if err != nil {
		return err
	}
	if sel.apply != "" {
		return sel.runApply(env)
	}
	schema, recs, err := sel.lakeIn.learnRecords(sel.paths, sel.label, sel.keep.vals, sel.seed)
	if err != nil {
		return err
	}
	defer release(recs)
	fr, t, res, err := sel.learn(schema, recs, env)
	if err != nil {
		return err
	}
	// The data first, then the mapping: a failed select leaves neither
	// file (a lake's committed files stay, as a failed lake run's do).
	rows, lakeSum, err := sel.lakeIn.selectOut(sel.paths, schema, recs, t,
		operators.SelectOptions{Keep: sel.keep.vals, Label: sel.label, Names: fr.Names, Levels: fr.Levels}, sel.out)
	if err != nil {
		return err
	}
	if err := writeMapping(sel.mapping, t); err != nil {
		if !dirOut(sel.out) {
			os.Remove(sel.out)
		}
		return err
	}
	return writeJSON(env.Stdout, sel.report(rows, fr, t, res, lakeSum))
}

// selectFlags are forestd select's flags, checked.
type selectFlags struct {
	paths                              []string
	keep, features, exclude            listFlag
	label, out, mapping, apply, groups string
	marginal                           string
	seed                               uint64
	opt                                dependence.SearchOptions
	fopts                              fdm.Options
	sf                                 *searchFlags
	lakeIn                             *lakeInput
}

// parseSelect parses and checks select's flags: the outputs, the search
// and the mapping's options.
func parseSelect(args []string, env Env) (*selectFlags, error) {
	fs := newFlagSet("select", "--in PATH... --label COL --out PATH [--mapping FILE] | --in PATH... --apply MAPPING --out PATH", env)
	sel := &selectFlags{}
	var in listFlag
	sel.keep.split, sel.features.split, sel.exclude.split = true, true, true
	fs.Var(&in, "in", "input file or directory (repeatable; Parquet, Arrow IPC, CSV)")
	fs.Var(&sel.keep, "keep", "input columns copied to the output unchanged (comma-separated), e.g. an id; never features")
	fs.Var(&sel.features, "features", "feature columns (comma-separated; default every numeric column but the label and --keep)")
	fs.Var(&sel.exclude, "exclude", "columns to leave out (comma-separated)")
	fs.StringVar(&sel.label, "label", "", "label column (classes or numbers, see --task); copied to the output")
	fs.StringVar(&sel.out, "out", "", "output file: .parquet, .arrow, .arrows, .csv, .csv.gz")
	fs.StringVar(&sel.mapping, "mapping", "", "where to write the mapping (default: --out with extension .fdm.json)")
	fs.StringVar(&sel.apply, "apply", "", "map the input with this stored mapping instead of learning one")
	mapKind := fs.String("fdm-map", "rp", "mapping function: rp (random projection) or drl (distance to a random landmark)")
	cands := fs.Int("candidates", fdm.DefaultCandidates, "random mappings drawn per group; the best |group| by gCor (dCor for a numeric label) are kept")
	fs.StringVar(&sel.groups, "groups", "", "feature groups 'a,b;c,d,e' instead of the search (with --marginal)")
	fs.StringVar(&sel.marginal, "marginal", "", "marginally dependent features 'x,y' (with --groups)")
	method := fs.String("method", string(dependence.MethodMDCBottomUp), "search: marginal, mdc-topdown, mdc-dc, mdc-bottomup or sdc-bottomup")
	sel.sf = addSearchFlags(fs) // --task, --stat, --adjust, --alpha, --max-perms, --perms (analyze.go)
	maxRows := fs.Int("max-rows", dependence.DefaultSetRows, "row subsample for tests of feature sets (0 = all rows)")
	fs.Uint64Var(&sel.seed, "seed", 1, "random seed of the tests and the mappings")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads (results do not depend on it)")
	sel.lakeIn = addLakeInputFlags(fs) // --sample N, and a directory --out: the mapped lake (lake_select.go)
	fs.BoolVar(&sel.lakeIn.resume, "resume", false, "with a directory --out: skip input files whose complete output with the same columns exists (written by the same mapping: give --apply MAPPING)")
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	sel.lakeIn.threads = *threads
	sel.paths = append(in.vals, pos...)
	if err := sel.checkOuts(); err != nil || sel.apply != "" {
		return sel, err
	}
	if sel.marginal != "" && sel.groups == "" {
		return nil, usagef("--marginal needs --groups")
	}
	sel.opt = dependence.DefaultSearchOptions()
	if sel.opt.Method, err = dependence.ParseMethod(*method); err != nil {
		return nil, usageError{err}
	}
	if err := sel.sf.apply(&sel.opt); err != nil {
		return nil, err
	}
	if *maxRows < 0 || *cands < 1 {
		return nil, usagef("--candidates must be at least 1 and --max-rows not negative")
	}
	sel.opt.Test.MaxRows, sel.opt.Test.Seed, sel.opt.Test.Threads = *maxRows, sel.seed, *threads
	sel.fopts = fdm.Options{Map: *mapKind, Candidates: *cands}
	if *mapKind != fdm.MapRP && *mapKind != fdm.MapDRL {
		return nil, usagef("--fdm-map %q: want rp or drl", *mapKind)
	}
	return sel, nil
}

// checkOuts checks --out, --apply and --mapping (given or derived from
// --out) against the inputs and each other.
func (sel *selectFlags) checkOuts() error {
	if sel.out == "" {
		return usagef("--out is required")
	}
	if err := noRepeats("--keep", sel.keep.vals); err != nil {
		return err
	}
	if dirOut(sel.out) { // the mapped lake: a tree of files
		if err := notInputDir("--out", sel.out, sel.paths...); err != nil {
			return err
		}
	} else if err := checkDataOut("--out", sel.out, true, append(sel.paths, sel.apply)...); err != nil {
		return err
	}
	if sel.apply != "" {
		if sel.groups != "" || sel.marginal != "" || sel.mapping != "" {
			return usagef("--apply uses a stored mapping: --groups, --marginal and --mapping do not apply")
		}
		return nil
	}
	if sel.label == "" {
		return usagef("--label is required to learn a mapping (or give --apply MAPPING)")
	}
	if sel.mapping == "" {
		o := strings.TrimSuffix(filepath.Clean(sel.out), ".gz") // a lake "o/lk/": o/lk.fdm.json
		sel.mapping = strings.TrimSuffix(o, filepath.Ext(o)) + ".fdm.json"
	}
	if err := checkOutFile("--mapping", sel.mapping, sel.paths...); err != nil {
		return err
	}
	return distinctOuts("--out", sel.out, "--mapping", sel.mapping)
}

// runApply maps the inputs with the stored mapping --apply: into one file
// or, for a directory --out, a lake (lakescore.Select).
func (sel *selectFlags) runApply(env Env) error {
	t, err := readMapping(sel.apply)
	if err != nil {
		return err
	}
	sopts := operators.SelectOptions{Label: sel.label, Keep: sel.keep.vals}
	rep := map[string]any{"out": sel.out, "mapping": sel.apply, "columns": t.Names()}
	if dirOut(sel.out) {
		rows, sum, err := sel.lakeIn.selectOut(sel.paths, nil, nil, t, sopts, sel.out)
		if err != nil {
			return err
		}
		rep["rows"], rep["lake"] = rows, sum
		return writeJSON(env.Stdout, rep)
	}
	schema, recs, err := readRecords(sel.paths, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	if sel.label != "" && len(schema.FieldIndices(sel.label)) == 0 {
		return fmt.Errorf("--label: no column %q in the input", sel.label)
	}
	if rep["rows"], err = selectWrite(schema, recs, t, sopts, sel.out); err != nil {
		return err
	}
	return writeJSON(env.Stdout, rep)
}

// readMapping reads the stored mapping of --apply.
func readMapping(path string) (*fdm.Transform, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--apply: %w", err)
	}
	defer fh.Close()
	t, err := fdm.ReadTransform(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// learn reads the training frame from the records and learns the mapping:
// the --groups given, or those the search finds (operators.FitSelection).
func (sel *selectFlags) learn(schema *arrow.Schema, recs []arrow.Record, env Env) (*frame.Frame, *fdm.Transform, *dependence.SearchResult, error) {
	excl := append(slices.Clone(sel.exclude.vals), sel.keep.vals...)
	if len(sel.features.vals) > 0 {
		excl = sel.exclude.vals
	}
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: sel.label, Task: sel.sf.task, Features: sel.features.vals, Exclude: excl})
	if err != nil {
		return nil, nil, nil, inPaths(sel.paths, err)
	}
	if fr.NRows < 2 {
		return nil, nil, nil, fmt.Errorf("select needs at least two labelled rows; %v has %d", sel.paths, fr.NRows)
	}
	lab, err := sel.sf.label(fr, &sel.opt)
	if err != nil {
		return nil, nil, nil, err
	}
	var plan *fdm.Plan
	done := func() {}
	if sel.groups != "" {
		if plan, err = sel.givenPlan(fr); err != nil {
			return nil, nil, nil, err
		}
	} else {
		done = searchProgress(env, &sel.opt, sel.sf.progressMode)
	}
	t, res, err := operators.FitSelection(fr, lab, plan, sel.opt, sel.fopts, sel.seed)
	done()
	return fr, t, res, err
}

// givenPlan is the plan of --groups and --marginal.
func (sel *selectFlags) givenPlan(fr *frame.Frame) (*fdm.Plan, error) {
	var plan fdm.Plan
	g, err := featureIndexSets(sel.groups, fr, "--groups")
	if err != nil {
		return nil, err
	}
	m, err := featureIndexSets(sel.marginal, fr, "--marginal")
	if err != nil {
		return nil, err
	}
	if plan.Groups, err = fdm.ParseSets(g); err != nil {
		return nil, usageError{err}
	}
	ms, _ := fdm.ParseSets(m)
	for _, s := range ms {
		plan.Marginal = append(plan.Marginal, s...)
	}
	if err := plan.Validate(fr.P()); err != nil {
		return nil, usageError{err}
	}
	return &plan, nil
}

// report is what select prints.
func (sel *selectFlags) report(rows int, fr *frame.Frame, t *fdm.Transform, res *dependence.SearchResult, lakeSum *lakescore.SelectSummary) map[string]any {
	rep := map[string]any{"rows": rows, "out": sel.out, "mapping": sel.mapping, "columns": t.Names(),
		"marginal": t.Marginal, "groups": t.Groups, "fdm_map": t.Map, "candidates": t.Candidates}
	rep["task"] = fr.Task.String()
	if res != nil {
		rep["search"] = map[string]any{"method": res.Method, "stat": res.Stat, "alpha": res.Alpha, "adjust": res.Adjust,
			"tests": res.Tests, "unresolved": res.Unresolved}
	}
	if lakeSum != nil {
		rep["lake"] = lakeSum
	}
	if sel.lakeIn.report != nil {
		rep["sample"] = sel.lakeIn.report
	}
	return rep
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
// (float64) and the label when present, in that order
// (operators.SelectRecords). Names and Levels, when set, are the training
// frame's features and category levels, so that categorical group inputs
// are coded as in training.
func selectWrite(schema *arrow.Schema, recs []arrow.Record, t *fdm.Transform, sopts operators.SelectOptions, out string) (int, error) {
	outSchema, outRecs, err := operators.SelectRecords(t, schema, recs, sopts)
	if err != nil {
		return 0, err
	}
	defer release(outRecs)
	rows := 0
	for _, r := range outRecs {
		rows += int(r.NumRows())
	}
	if err := writeData(out, outSchema, outRecs, files.WriteOptions{}); err != nil {
		return 0, err
	}
	return rows, nil
}

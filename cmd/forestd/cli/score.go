package cli

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/internal/bytefmt"
	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// loadModel reads the --model file (any kind).
func loadModel(path string) (*scoring.Model, error) {
	if path == "" {
		return nil, usagef("--model is required")
	}
	return scoring.Load(path, scoring.LoadOptions{NoBytes: true}) // no command publishes it
}

// sourceName is the source column of `forestd score`'s predictions: the
// input path, or the list of them.
func sourceName(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprint(paths)
}

func runEval(args []string, env Env) error {
	fs := newFlagSet("eval", "--model MODEL --in PATH... --label COL", env)
	var in listFlag
	fs.Var(&in, "in", "input file or directory (repeatable)")
	modelPath := fs.String("model", "", "model file")
	label := fs.String("label", "", "label column (several, comma-separated, for a model with several outputs; default: the column(s) the model was trained on)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	m, err := loadModel(*modelPath)
	if err != nil {
		return err
	}
	var labels []string // nil: the model's own (as report's --label)
	switch {
	case *label != "":
		if labels, err = labelColumns(*label); err != nil {
			return err
		}
	case m.Targets() == nil && m.Forest().LabelName == "":
		return usagef("--label is required: the model does not record the label it was trained on")
	}
	paths := append(in.vals, pos...)
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	if labels == nil && schema != nil { // the model's own label(s), which the input must have
		own := m.Targets()
		if own == nil {
			own = []string{m.Forest().LabelName}
		}
		for _, c := range own {
			if len(schema.FieldIndices(c)) == 0 {
				return usagef("the input has no column %s, the label the model was trained on, which --label defaults to: give --label COL for the column holding the truth", c)
			}
		}
	}
	ev, err := m.Evaluate(recs, labels, *threads)
	if errors.Is(err, scoring.ErrNoRows) {
		return fmt.Errorf("no labelled rows in %v", paths)
	}
	if err != nil {
		if ferr := labelFlagErr(err, m); ferr != err {
			return ferr // about --label, not the files
		}
		return inPaths(paths, err)
	}
	rep := report.EvalSummary(ev)
	rep["model"], rep["model_id"] = *modelPath, m.ID()
	return writeJSON(env.Stdout, rep)
}

// labelFlagErr turns Evaluate's error about the label columns given
// (scoring.LabelsError) into a usage error naming --label, what the model
// predicts and what to give instead; other errors pass unchanged.
func labelFlagErr(err error, m *scoring.Model) error {
	var le *scoring.LabelsError
	if !errors.As(err, &le) {
		return err
	}
	give := strings.Join(le.Columns, ",")
	if slices.Equal(slices.Sorted(slices.Values(le.Given)), slices.Sorted(slices.Values(le.Columns))) {
		give += " (in that order)"
	}
	if m.Targets() != nil { // the model's own columns are the default
		give += ", or leave --label out"
	}
	return usagef("--label %s: the model predicts %s: give --label %s", strings.Join(le.Given, ","), le.Predicts(), give)
}

// noRepeats refuses a column listed twice in flag's values.
func noRepeats(flag string, vals []string) error {
	for i, k := range vals {
		if slices.Contains(vals[:i], k) {
			return usagef("%s lists %s twice", flag, k)
		}
	}
	return nil
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
	probs := fs.String("probs", "auto", probsUsage)
	lakeFlags := addScoreLakeFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := scoring.Probs(*probs).Validate(); err != nil {
		return usageError{fmt.Errorf("--probs: %w", err)}
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if err := noRepeats("--keep", keep.vals); err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	so := scoring.Options{Keep: keep.vals, Source: sourceName(paths), Threads: *threads, Probs: scoring.Probs(*probs)}
	if lakeFlags.wanted(*out) {
		if err := cmp.Or(checkLakeOut(*out), notInputDir("--out", *out, paths...)); err != nil {
			return err
		}
		return runScoreLake(env, lakeFlags, *modelPath, paths, *out, so)
	}
	if err := checkDataOut("--out", *out, true, append(paths, *modelPath)...); err != nil {
		return err
	}
	var m *scoring.Model
	var resolved scoring.Probs
	load := sync.OnceValues(func() (_ *scoring.Model, err error) { // ScoreFile's while it reads, or here
		if m, err = loadModel(*modelPath); err == nil {
			resolved, err = modelProbs(m, so.Probs)
		}
		return m, err
	})
	check := func(schema *arrow.Schema) (*arrow.Schema, error) {
		if err := m.CheckInput(schema); err != nil {
			return nil, err // Score checks records; a file of no rows gives none
		}
		outSchema, err := m.PredictionSchema(schema, so)
		if err != nil {
			return nil, inPaths(paths, fmt.Errorf("--keep: %w", err))
		}
		return outSchema, nil
	}
	ctx, stop := interruptible()
	bound, what := memoryBound(isSet(fs, "max-memory"), int64(lakeFlags.maxMemory))
	rows, secs, piped, err := lakescore.ScoreFile(ctx, load, paths, *out, bound, so, check) // one Parquet file, streamed
	if stop(); err == nil && !piped {
		_, err = load()
	}
	if err != nil {
		return err
	} else if !piped { // read whole: the decoded input, then about as much again for the features and predictions
		if need := 2 * files.DecodedBytes(paths); bound > 0 && need > bound {
			return fmt.Errorf("--in: scoring into one file would hold about %s at once (the decoded input, its features and the predictions), more than %s, the bound being %s: score it as a lake (--out DIR), which reads a row group at a time within --max-memory",
				bytefmt.Format(need), bytefmt.Format(bound), what)
		}
		schema, recs, err := readRecords(paths, nil)
		if err != nil {
			return err
		}
		defer release(recs)
		outSchema, err := check(schema)
		if err != nil {
			return err
		}
		t0 := time.Now()
		preds, err := m.Score(recs, so)
		if err != nil {
			return inPaths(paths, err)
		}
		defer release(preds)
		secs = time.Since(t0).Seconds()
		for _, r := range recs {
			rows += r.NumRows()
		}
		if err := writeData(*out, outSchema, preds, files.WriteOptions{}); err != nil {
			return err
		}
	}
	rep := map[string]any{
		"model": *modelPath, "model_id": m.ID(), "rows": rows, "out": *out, "seconds": secs,
		"rows_per_second": float64(rows) / math.Max(secs, 1e-9),
	}
	if t := m.Targets(); t != nil {
		rep["targets"] = t
	}
	if resolved != "" {
		rep["probs"] = resolved
	}
	return writeJSON(env.Stdout, rep)
}

// probsChoices are the values of --probs (score, serve).
const probsChoices = "auto (all up to 256 classes, else top5), all (prob_<class> per class), " +
	"top<k> (e.g. top5: top1_class, top1_prob … of the k most probable classes; k above the classes: every class, ranked), none (prediction only)"

const probsUsage = "class probabilities written: " + probsChoices

// modelProbs returns the probabilities m's predictions carry under --probs
// p: all, top<k> or none for a classification model, "" for another,
// which has none. Asking such a model for its top classes is a usage
// error (the daemon and the processors ignore it instead, as their model
// may change to a classifier).
func modelProbs(m *scoring.Model, p scoring.Probs) (scoring.Probs, error) {
	resolved, err := m.ResolveProbs(p)
	if err != nil {
		return "", usageError{fmt.Errorf("--probs: %w", err)}
	}
	if m.Classes() != nil {
		return resolved, nil
	}
	if p.TopK() > 0 {
		what := "is a regression model"
		if t := m.Targets(); t != nil {
			what = fmt.Sprintf("predicts %d outputs (%s), not classes", len(t), strings.Join(t, ", "))
		}
		return "", usagef("--probs %s: the model %s: it has no class probabilities", p, what)
	}
	return "", nil
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
	if isSet(fs, "kind") && *pngPath == "" {
		return usagef("--kind goes with --png (the JSON lists the importances of every kind)")
	}
	if err := checkOut("--png", *pngPath, *modelPath); err != nil {
		return err
	}
	if *pngPath != "" {
		if err := parentCreatable("--png", *pngPath); err != nil {
			return err
		}
	}
	if *modelPath == "" {
		return usagef("--model is required")
	}
	// the trees themselves (scoring.Load keeps a format-5 model compiled,
	// without them)
	f, meta, err := model.ReadFile(*modelPath)
	if err != nil {
		return err
	}
	rep := report.Inspect(f, meta)
	rep["model"] = *modelPath
	primary := rep["importance_kind"].(string)
	if g, ok, err := modelGrid(f.Params, *grid, len(f.Features)); err != nil {
		return err
	} else if ok {
		tv := map[string]float64{}
		for k, v := range f.Importances {
			tv[k] = report.TotalVariation(g, v)
		}
		rep["importance_total_variation"] = tv
		if *pngPath != "" {
			v, title, err := heatmapOf(f.Importances, primary, *kind, string(f.Kind), len(f.Trees))
			if err != nil {
				return err
			}
			if err := writeHeatmap(*pngPath, g, v, title); err != nil {
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
func modelGrid(p forest.Params, flagGrid string, nFeatures int) (top projection.Topology, ok bool, err error) {
	if flagGrid != "" {
		gw, gh, err := dims(flagGrid, "--grid")
		if err != nil {
			return top, false, err
		}
		top = projection.Topology{H: gh, W: gw, C: max(p.Channels, 1), Interleaved: p.Interleaved}
		if top.Validate(nFeatures) != nil {
			return top, false, usagef("--grid %s covers %d features, the model has %d", flagGrid, gw*gh*top.C, nFeatures)
		}
		return top, true, nil
	}
	if p.Layout == "" {
		return top, false, nil
	}
	top, err = p.Topology(nFeatures)
	return top, err == nil, err
}

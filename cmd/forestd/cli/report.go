package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/scoring"
)

// runReport is forestd report: a self-contained HTML report (inline SVG,
// no script) of a model — with --in and --label its evaluation too — or of
// a dependence report written by `forestd analyze --out`; or, with --out
// FILE.png, the model's importance heatmap as a PNG (as inspect --png).
// The pictures are package report's.
func runReport(args []string, env Env) error {
	fs := newFlagSet("report", "(--model MODEL [--in PATH... --label COL] [--grid WxH] | --analysis REPORT) --out FILE.html|FILE.png", env)
	var in listFlag
	fs.Var(&in, "in", "labelled data to evaluate the model on (repeatable): a confusion matrix or a residual plot")
	modelPath := fs.String("model", "", "model file")
	analysis := fs.String("analysis", "", "dependence report table written by forestd analyze --out (.parquet, .arrow, .arrows, .csv)")
	label := fs.String("label", "", "label column of --in (default: the model's)")
	grid := fs.String("grid", "", "feature layout WxH for the importance heatmap when the model has none")
	kind := fs.String("kind", "", "importance kind of a PNG heatmap (default: the model's primary)")
	threads := fs.Int("threads", runtime.NumCPU(), "worker threads for the evaluation")
	out := fs.String("out", "", "output file: .html, or .png for a model's importance heatmap")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	paths := append(in.vals, pos...)
	switch {
	case *out == "":
		return usagef("--out is required")
	case (*modelPath == "") == (*analysis == ""):
		return usagef("give --model or --analysis (one of them)")
	case *threads < 1:
		return usagef("--threads must be at least 1, got %d", *threads)
	case *analysis != "" && (len(paths) > 0 || *label != "" || *grid != ""):
		return usagef("--in, --label and --grid go with --model")
	}
	png := strings.EqualFold(filepath.Ext(*out), ".png")
	if !png && !strings.EqualFold(filepath.Ext(*out), ".html") && !strings.EqualFold(filepath.Ext(*out), ".htm") {
		return usagef("--out %s: want .html or .png", *out)
	}
	if *kind != "" && !png {
		return usagef("--kind goes with a PNG --out (an HTML report draws every importance kind)")
	}
	if err := checkOut("--out", *out, append(append(paths, *modelPath), *analysis)...); err != nil {
		return err
	}
	if err := parentCreatable("--out", *out); err != nil {
		return err
	}
	var buf bytes.Buffer
	rep := map[string]any{"out": *out}
	if *analysis != "" {
		if png {
			return usagef("--analysis writes HTML (--out FILE.html)")
		}
		_, recs, err := readRecords([]string{*analysis}, nil)
		if err != nil {
			return err
		}
		defer release(recs)
		d, err := report.ReadDependence(recs)
		if err != nil {
			return fmt.Errorf("%s: %w", *analysis, err)
		}
		if err := report.DependenceHTML(&buf, d); err != nil {
			return err
		}
		rep["analysis"], rep["features"], rep["marginal"], rep["groups"] = *analysis, len(d.Features), len(d.Marginal()), len(d.Groups)
		return writeReportFile(*out, buf.Bytes(), rep, env)
	}
	m, err := loadModel(*modelPath)
	if err != nil {
		return err
	}
	var top projection.Topology
	if *grid != "" {
		g, _, err := modelGrid(m.Forest().Params, *grid, len(m.Forest().Features))
		if err != nil {
			return err
		}
		top = g.Topology
	}
	mf, err := report.DescribeModel(m, top)
	if err != nil {
		return err
	}
	rep["model"], rep["model_id"], rep["model_version"] = *modelPath, mf.ID, mf.Version
	if png {
		if len(paths) > 0 {
			return usagef("--in goes with an HTML report (a PNG is the importance heatmap alone)")
		}
		if mf.Layout == nil {
			return usagef("--out %s: a PNG is an importance heatmap and needs grid-shaped features: give --grid WxH (the model has no layout), or write .html", *out)
		}
		v, title, err := heatmapOf(mf.Importances, mf.ImportanceKind, *kind, string(mf.Kind), mf.Trees)
		if err != nil {
			return err
		}
		if err := report.HeatmapPNG(&buf, mf.Layout.Topology(), v, title); err != nil {
			return err
		}
		return writeReportFile(*out, buf.Bytes(), rep, env)
	}
	o := report.ModelOptions{}
	if len(paths) > 0 {
		lbl := *label
		if lbl == "" && m.Targets() == nil {
			lbl = m.Forest().LabelName
		}
		_, recs, err := readRecords(paths, nil)
		if err != nil {
			return err
		}
		defer release(recs)
		ev, err := report.Evaluate(m, recs, lbl, *threads)
		if errors.Is(err, scoring.ErrNoRows) {
			return fmt.Errorf("no labelled rows in %v", paths)
		}
		if err != nil {
			return labelFlagErr(err, m)
		}
		o.Eval, o.In = ev, sourceName(paths)
		rep["rows"] = ev.Summary.Rows
		if ev.Summary.Classification {
			rep["accuracy"] = ev.Summary.Accuracy
		} else {
			rep["rmse"] = ev.Summary.RMSE
		}
	} else if *label != "" {
		return usagef("--label goes with --in")
	}
	if err := report.ModelHTML(&buf, mf, o); err != nil {
		return err
	}
	return writeReportFile(*out, buf.Bytes(), rep, env)
}

// writeReportFile writes data to path (writeOut, creating path's
// directory) and prints rep.
func writeReportFile(path string, data []byte, rep map[string]any, env Env) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeOut(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return err
	}
	rep["bytes"] = len(data)
	return writeJSON(env.Stdout, rep)
}

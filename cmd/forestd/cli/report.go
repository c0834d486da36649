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
	r := reportFlags{env: env}
	fs.Var(&r.in, "in", "labelled data to evaluate the model on (repeatable): a confusion matrix or a residual plot")
	fs.StringVar(&r.model, "model", "", "model file")
	fs.StringVar(&r.analysis, "analysis", "", "dependence report table written by forestd analyze --out (.parquet, .arrow, .arrows, .csv)")
	fs.StringVar(&r.label, "label", "", "label column of --in (default: the model's)")
	fs.StringVar(&r.grid, "grid", "", "feature layout WxH for the importance heatmap when the model has none")
	fs.StringVar(&r.kind, "kind", "", "importance kind of a PNG heatmap (default: the model's primary)")
	fs.IntVar(&r.threads, "threads", runtime.NumCPU(), "worker threads for the evaluation")
	fs.StringVar(&r.out, "out", "", "output file: .html, or .png for a model's importance heatmap")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	r.paths = append(r.in.vals, pos...)
	if err := r.check(); err != nil {
		return err
	}
	if r.analysis != "" {
		return r.analysisHTML()
	}
	return r.modelReport()
}

// reportFlags are forestd report's flags.
type reportFlags struct {
	in                                      listFlag
	paths                                   []string
	model, analysis, label, grid, kind, out string
	threads                                 int
	png                                     bool
	env                                     Env
}

// check refuses a combination of flags that does not make one report,
// and an --out that cannot be written, before any work.
func (r *reportFlags) check() error {
	switch {
	case r.out == "":
		return usagef("--out is required")
	case (r.model == "") == (r.analysis == ""):
		return usagef("give --model or --analysis (one of them)")
	case r.threads < 1:
		return usagef("--threads must be at least 1, got %d", r.threads)
	case r.analysis != "" && (len(r.paths) > 0 || r.label != "" || r.grid != ""):
		return usagef("--in, --label and --grid go with --model")
	}
	ext := strings.ToLower(filepath.Ext(r.out))
	if r.png = ext == ".png"; !r.png && ext != ".html" && ext != ".htm" {
		return usagef("--out %s: want .html or .png", r.out)
	}
	if r.kind != "" && !r.png {
		return usagef("--kind goes with a PNG --out (an HTML report draws every importance kind)")
	}
	if err := checkOut("--out", r.out, append(append(r.paths, r.model), r.analysis)...); err != nil {
		return err
	}
	return parentCreatable("--out", r.out)
}

// analysisHTML is the report of a dependence analysis (--analysis).
func (r *reportFlags) analysisHTML() error {
	if r.png {
		return usagef("--analysis writes HTML (--out FILE.html)")
	}
	_, recs, err := readRecords([]string{r.analysis}, nil)
	if err != nil {
		return err
	}
	defer release(recs)
	d, err := report.ReadDependence(recs)
	if err != nil {
		return fmt.Errorf("%s: %w", r.analysis, err)
	}
	var buf bytes.Buffer
	if err := report.DependenceHTML(&buf, d); err != nil {
		return err
	}
	rep := map[string]any{"out": r.out, "analysis": r.analysis, "features": len(d.Features), "marginal": len(d.Marginal()), "groups": len(d.Groups)}
	return writeReportFile(r.out, buf.Bytes(), rep, r.env)
}

// modelReport is a model's report: its importance heatmap (a PNG), or
// the HTML page, with its evaluation on --in.
func (r *reportFlags) modelReport() error {
	m, err := loadModel(r.model)
	if err != nil {
		return err
	}
	var top projection.Topology
	if r.grid != "" {
		if top, _, err = modelGrid(m.Forest().Params, r.grid, len(m.Forest().Features)); err != nil {
			return err
		}
	}
	mf, err := report.DescribeModel(m, top)
	if err != nil {
		return err
	}
	rep := map[string]any{"out": r.out, "model": r.model, "model_id": mf.ID, "model_version": mf.Version}
	var buf bytes.Buffer
	if r.png {
		if err := r.heatmap(&buf, mf); err != nil {
			return err
		}
		return writeReportFile(r.out, buf.Bytes(), rep, r.env)
	}
	o := report.ModelOptions{}
	if len(r.paths) > 0 {
		if o.Eval, err = r.evaluate(m); err != nil {
			return err
		}
		o.In = sourceName(r.paths)
		rep["rows"] = o.Eval.Summary.Rows
		if o.Eval.Summary.Classification {
			rep["accuracy"] = o.Eval.Summary.Accuracy
		} else {
			rep["rmse"] = o.Eval.Summary.RMSE
		}
	} else if r.label != "" {
		return usagef("--label goes with --in")
	}
	if err := report.ModelHTML(&buf, mf, o); err != nil {
		return err
	}
	return writeReportFile(r.out, buf.Bytes(), rep, r.env)
}

// heatmap draws the model's importance heatmap PNG (--kind, or its
// primary importances) to w.
func (r *reportFlags) heatmap(w io.Writer, mf report.ModelFacts) error {
	if len(r.paths) > 0 {
		return usagef("--in goes with an HTML report (a PNG is the importance heatmap alone)")
	}
	if mf.Layout == nil {
		return usagef("--out %s: a PNG is an importance heatmap and needs grid-shaped features: give --grid WxH (the model has no layout), or write .html", r.out)
	}
	v, title, err := heatmapOf(mf.Importances, mf.ImportanceKind, r.kind, string(mf.Kind), mf.Trees)
	if err != nil {
		return err
	}
	return report.HeatmapPNG(w, mf.Layout.Topology(), v, title)
}

// evaluate scores the model on --in against --label (default: the
// model's).
func (r *reportFlags) evaluate(m *scoring.Model) (*report.Evaluation, error) {
	lbl := r.label
	if lbl == "" && m.Targets() == nil {
		lbl = m.Forest().LabelName
	}
	_, recs, err := readRecords(r.paths, nil)
	if err != nil {
		return nil, err
	}
	defer release(recs)
	ev, err := report.Evaluate(m, recs, lbl, r.threads)
	if errors.Is(err, scoring.ErrNoRows) {
		return nil, fmt.Errorf("no labelled rows in %v", r.paths)
	}
	if err != nil {
		return nil, labelFlagErr(err, m)
	}
	return ev, nil
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

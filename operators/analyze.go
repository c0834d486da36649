package operators

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/schemas"
)

// AnalyzeOptions configure an Analyzer.
type AnalyzeOptions struct {
	// Label is the label column of the analysed batches (required).
	Label string
	// Task says what the label is: frame.TaskClassification (classes),
	// frame.TaskRegression (numbers: the analysis uses dCor_n with
	// |y − y'|), or frame.TaskAuto (default): a float label is numeric, and
	// so is one whose values are all numbers when the window holds more
	// than frame.MaxAutoClasses of them; every other label is classes.
	Task     frame.Task
	Features []string
	Exclude  []string
	// Window bounds the labelled rows analysed (default 2000; the set
	// tests cost O(n²) each, see Search.Test.MaxRows), Kind is count or
	// reservoir.
	Window int
	Kind   string
	// Every re-analyses after this many new rows (default Window), or
	// EveryDuration after the last analysis.
	Every         int
	EveryDuration time.Duration
	// MinRows is the least number of rows to analyse (default 200).
	MinRows int
	// Search configures the MDS/SDS search (dissertation ch. 5); nil means
	// dependence.DefaultSearchOptions — Holm's control of the whole
	// analysis at α = 0.05: each analysis reports any false feature or
	// group with probability at most 5% — with the statistic chosen by the
	// label (gCor_n for classes, dCor_n for numbers) and set tests on at
	// most 1000 rows. A Stat of "" chooses by the label too.
	Search *dependence.SearchOptions
	// FDM configures the feature dependence mapping of the groups found
	// (dissertation ch. 6).
	FDM fdm.Options
	// Seed seeds the mapping and the reservoir.
	Seed uint64
}

// Analysis is one dependence analysis of the window: the marginal tests,
// the MDS/SDS groups (dissertation ch. 5, Algorithms 1–6) and the FDM_RF
// mapping of the groups (ch. 6, §6.3).
type Analysis struct {
	// Seq numbers the analyses of one Analyzer from 1.
	Seq   int64
	Rows  int
	Names []string
	// Task is the label's: classification (Classes names the classes) or
	// regression.
	Task    frame.Task
	Classes []string
	Result  *dependence.SearchResult
	// Transform maps a batch to the selected columns: the marginally
	// dependent features and the mapped groups. Nil when the search found
	// nothing to select.
	Transform *fdm.Transform
	Seed      uint64
}

// Analyzer keeps a bounded window of labelled rows and runs the dependence
// analysis on it on a schedule (the analyze stage), keeping the latest
// result for the select stage.
type Analyzer struct {
	opts   AnalyzeOptions
	win    *Trainer // the window and schedule; it never trains
	seq    atomic.Int64
	latest atomic.Pointer[Analysis]
}

// NewAnalyzer checks the options.
func NewAnalyzer(opts AnalyzeOptions) (*Analyzer, error) {
	if opts.Window == 0 {
		opts.Window = 2000
	}
	if opts.MinRows == 0 {
		opts.MinRows = min(200, opts.Window)
	}
	if opts.Every == 0 && opts.EveryDuration == 0 {
		opts.Every = opts.Window
	}
	if opts.Search == nil {
		s := dependence.DefaultSearchOptions()
		s.Stat = ""
		s.Test.MaxRows = 1000
		opts.Search = &s
	}
	if opts.FDM.Map == "" {
		opts.FDM.Map = fdm.MapRP
	}
	win, err := NewTrainer(TrainOptions{Label: opts.Label, Task: opts.Task, Features: opts.Features, Exclude: opts.Exclude,
		Window: opts.Window, Kind: opts.Kind, RetrainRows: opts.Every, RetrainEvery: opts.EveryDuration, MinRows: opts.MinRows, Seed: opts.Seed})
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	return &Analyzer{opts: opts, win: win}, nil
}

// Add appends a labelled batch to the window (see Trainer.Add).
func (a *Analyzer) Add(schema *arrow.Schema, recs []arrow.Record) (int, error) {
	n, _, err := a.win.Add(schema, recs)
	return n, err
}

// Due reports whether an analysis is due.
func (a *Analyzer) Due(now time.Time) bool { return a.win.Due(now) }

// Latest returns the latest analysis (nil before the first).
func (a *Analyzer) Latest() *Analysis { return a.latest.Load() }

// Analyze runs the search on a snapshot of the window (the marginal
// permutation tests and the MDS/SDS search of dissertation ch. 5 as
// package dependence implements them, then FDM_RF, §6.3, on the groups),
// stores the result as the latest and returns it. ctx stops the search
// early (an error wrapping ctx's, and the latest stays as it was).
func (a *Analyzer) Analyze(ctx context.Context, now time.Time) (*Analysis, error) {
	fr, err := a.win.Snapshot(now)
	if err != nil {
		return nil, err
	}
	fr.ResolveAuto(a.opts.Task)
	if fr.Task == frame.TaskClassification && len(fr.Classes) < 2 {
		return nil, fmt.Errorf("analyze: the window holds one class (%v)", fr.Classes)
	}
	lab, err := fdm.LabelOf(fr)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	opt := *a.opts.Search
	opt.Test.Seed = a.opts.Seed
	opt.Context = ctx
	plan, res, err := fdm.DiscoverLabel(fr.Cols, lab, opt)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	an := &Analysis{Seq: a.seq.Add(1), Rows: fr.NRows, Names: fr.Names, Task: fr.Task, Classes: fr.Classes, Result: res, Seed: a.opts.Seed}
	if plan.Validate(fr.P()) == nil {
		t, err := fitPlan(fr, plan, res, a.opts.FDM, a.opts.Seed)
		if err != nil {
			return nil, fmt.Errorf("analyze: mapping: %w", err)
		}
		an.Transform = t
	}
	a.latest.Store(an)
	return an, nil
}

// Report renders the analysis as a dependence report (DependenceReport).
func (an *Analysis) Report(mem memory.Allocator) (arrow.Record, error) {
	return DependenceReport(mem, an.Names, an.Rows, an.Seed, an.Task, an.Result)
}

// DependenceReport renders a search result as a dependence report
// (schemas.DependenceReport): each feature's statistic, raw and adjusted
// p-value and group label, and each group with its joint test, with the
// statistic, method, level, adjustment and task in the metadata. names are
// the features of res, rows the rows analysed. A nil mem is the default
// allocator.
func DependenceReport(mem memory.Allocator, names []string, rows int, seed uint64, task frame.Task, res *dependence.SearchResult) (arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var b schemas.ReportBatch
	for j, name := range names {
		b.Features = append(b.Features, schemas.ReportFeature{Name: name, Group: res.Label[j],
			Test: schemas.ReportTest{Statistic: res.Statistic[j], PValue: res.PValue[j], AdjPValue: res.AdjPValue[j], B: res.B[j], N: res.N[j]}})
	}
	for _, g := range res.Groups {
		b.Groups = append(b.Groups, schemas.ReportGroup{Features: g.Features, Kind: g.Kind,
			Test: schemas.ReportTest{Statistic: g.Statistic, PValue: g.PValue, AdjPValue: g.AdjPValue, B: g.B, N: g.N}})
	}
	spec := schemas.ReportSpec{Stat: string(res.Stat), Method: string(res.Method), Alpha: res.Alpha, Adjust: string(res.Adjust),
		Task: task.String(), Seed: seed, Rows: rows}
	return schemas.BuildDependenceReport(mem, spec, b)
}

// Select reduces each record of a batch to the analysis' selected columns
// (SelectRecords): the marginally dependent features as they are, then the
// FDM-mapped columns (float64), then the passthrough columns present in the
// batch (e.g. the label or a key), in that order (dissertation §6.3:
// X' = [X_{S_m}, f(X_{S_1}; θ*_1), …]). A batch without a column the
// mapping reads is a scoring.ErrInput error.
func (an *Analysis) Select(mem memory.Allocator, schema *arrow.Schema, recs []arrow.Record, passthrough []string) ([]arrow.Record, error) {
	if an.Transform == nil {
		return nil, errors.New("operators: the analysis selected nothing")
	}
	_, out, err := SelectRecords(an.Transform, schema, recs, SelectOptions{Passthrough: passthrough, Mem: mem})
	return out, err
}

// FitSelection learns a feature selection from a labelled frame, as
// forestd select does: the plan given or, when plan is nil, the one the
// search opt finds (fdm.DiscoverLabel: dissertation ch. 5), then the FDM
// mapping of its groups (fdm.Fit, §6.3), each group carrying the search's
// kind and p-values. A plan with nothing to select is an error. The
// search result is nil for a plan given.
func FitSelection(fr *frame.Frame, lab dependence.Label, plan *fdm.Plan, opt dependence.SearchOptions, fopts fdm.Options, seed uint64) (*fdm.Transform, *dependence.SearchResult, error) {
	var res *dependence.SearchResult
	if plan == nil {
		p, r, err := fdm.DiscoverLabel(fr.Cols, lab, opt)
		if err != nil {
			return nil, nil, err
		}
		plan, res = &p, r
	}
	if err := plan.Validate(fr.P()); err != nil {
		if res != nil {
			return nil, res, fmt.Errorf("the %s search found nothing to select: %w", res.Method, err)
		}
		return nil, nil, err
	}
	t, err := fitPlan(fr, *plan, res, fopts, seed)
	return t, res, err
}

// fitPlan maps the plan's groups (fdm.Fit) and gives each the kind and
// p-values the search res found for it (none when res is nil).
func fitPlan(fr *frame.Frame, plan fdm.Plan, res *dependence.SearchResult, fopts fdm.Options, seed uint64) (*fdm.Transform, error) {
	t, err := fdm.Fit(fr, plan, fopts, seed)
	if err != nil || res == nil {
		return t, err
	}
	for g := range t.Groups {
		if g < len(res.Groups) {
			pv, pa := res.Groups[g].PValue, res.Groups[g].AdjPValue
			t.Groups[g].Kind, t.Groups[g].PValue, t.Groups[g].PAdjusted = res.Groups[g].Kind, &pv, &pa
		}
	}
	return t, nil
}

package operators

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/scoring"
)

// Window kinds.
const (
	// WindowCount keeps the most recent Window labelled rows (a sliding
	// window: the oldest row is evicted first).
	WindowCount = "count"
	// WindowReservoir keeps a uniform random sample of Window rows out of
	// every row seen so far (Vitter's Algorithm R).
	WindowReservoir = "reservoir"
)

// TrainOptions configure a Trainer.
type TrainOptions struct {
	// Label is the label column of training batches. Exactly one of Label
	// and Labels is required.
	Label string
	// Labels names two or more numeric target columns learnt together as
	// one multi-output regression target (frame.Options.Targets: q values
	// per window row; a row with a null or NaN in any of them is skipped
	// like a row with a null label); the trained forest predicts all of
	// them (forest.Forest.Targets). A single name is the same as Label.
	// Several labels are regression: Task classification is an error, and
	// so are the forest kinds that learn one label (fdm) or are no
	// streaming training kind (drf).
	Labels []string
	// Task overrides how the label is learnt (frame.Task); auto by default:
	// a float label is numbers, a string or bool label classes, and a label
	// of integers classes when the first training window holds at most
	// frame.MaxAutoClasses distinct values, numbers when it holds more
	// (kept for every later window; Trainer.Snapshot).
	Task frame.Task
	// Features lists the feature columns; empty means every column of the
	// first labelled batch except the label(s) and Exclude.
	Features []string
	Exclude  []string
	// Window bounds the rows kept for training (default 50,000): the
	// daemon's training memory is Window × features × 4 bytes, plus 8 bytes
	// per target (one, or len(Labels)) for a regression window.
	Window int
	// Kind is WindowCount (default) or WindowReservoir.
	Kind string
	// RetrainRows retrains after this many new labelled rows; RetrainEvery
	// retrains at this interval if any new row arrived. At least one of the
	// two must be set (default RetrainRows = Window/2).
	RetrainRows  int
	RetrainEvery time.Duration
	// MinRows is the least number of rows to train on (default 100).
	MinRows int
	// Params are the forest's training parameters (forest.DefaultParams of
	// the task when Trees is 0; an empty Criterion is the task's default,
	// gini or mse, once the labels tell the task). Params.Seed seeds
	// training; the same window and seed give the same model. With
	// Params.Tune (kept when Trees is 0) every retrain chooses the
	// hyperparameters out of bag on its window first (forest.Tuning;
	// rf, sporf and morf).
	Params forest.Params
	// Seed seeds the reservoir's sampling (and the reference sample).
	Seed uint64
	// ReferenceRows bounds the reference sample each model keeps of its
	// training rows for drift tests (Trainer.Reference; default
	// model.DefaultReferenceRows, negative: none).
	ReferenceRows int
}

// ParseRetrain parses a retrain schedule: a positive row count ("10000",
// TrainOptions.RetrainRows) or a positive duration ("30s",
// TrainOptions.RetrainEvery).
func ParseRetrain(s string) (rows int, every time.Duration, err error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return 0, 0, &ScheduleError{Key: "retrain_every", Value: s, reason: ": a row count must be positive"}
		}
		return n, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, 0, &ScheduleError{Key: "retrain_every", Value: s, reason: " is neither a row count (10000) nor a duration (30s)"}
	}
	return 0, d, nil
}

// ScheduleError is a schedule that ParseRetrain refuses. Key names the
// setting ("retrain_every"; a caller with other keys — the daemon's
// train.retrain_every, drift.window — sets its own, rather than editing
// the error's text).
type ScheduleError struct {
	Key, Value string
	reason     string // the text after the quoted value
}

func (e *ScheduleError) Error() string { return e.Key + " " + strconv.Quote(e.Value) + e.reason }

// Trainer keeps a bounded window of labelled rows and decides when to
// retrain (ARCHITECTURE.md, The daemon's promises: "training windows are bounded by configuration").
// Add is called from the pipeline's workers; Snapshot from the training
// loop. All methods are safe for concurrent use.
type Trainer struct {
	opts TrainOptions

	mu     sync.Mutex
	names  []string
	task   frame.Task
	cols   [][]float32 // Window capacity each; ring buffer for WindowCount
	labels []string    // classification: class name per slot
	yreg   []float64   // regression: q targets per slot (slot s at s*q)
	q      int         // targets per row: len(opts.Labels), or 1
	n      int         // rows held
	head   int         // WindowCount: slot of the oldest row
	seen   int64       // rows offered in total
	since  int         // rows added since the last snapshot
	last   time.Time   // time of the last snapshot
	rng    *rand.Rand
	skip   int64 // rows skipped for a null label
	// numeric is how TaskAuto reads a label whose values are all numbers,
	// decided by the first Snapshot and kept (autoUndecided until then)
	numeric autoLabel
	evict   int64 // rows evicted from the window
}

// CheckParams checks the forest parameters of opts that do not depend on
// the data (forest.Params.Check; an empty criterion is the label's task's
// at training), so that a caller can refuse a bad setting before any row
// arrives. Errors are *forest.ParamError.
func (opts TrainOptions) CheckParams() error {
	p := opts.Params
	if p.Criterion == "" {
		p.Criterion = "gini"
	}
	return p.Check()
}

// NewTrainer checks the options.
func NewTrainer(opts TrainOptions) (*Trainer, error) {
	if len(opts.Labels) == 1 && opts.Label == "" {
		opts.Label, opts.Labels = opts.Labels[0], nil
	}
	if opts.Label != "" && len(opts.Labels) > 0 {
		return nil, fmt.Errorf("operators: a label (%q) and several labels (%v) exclude each other", opts.Label, opts.Labels)
	}
	if opts.Label == "" && len(opts.Labels) == 0 {
		return nil, errors.New("operators: training needs a label column")
	}
	if len(opts.Labels) > 0 {
		opts.Labels = slices.Clone(opts.Labels)
		if err := checkLabels(opts); err != nil {
			return nil, err
		}
	}
	for i, f := range opts.Features {
		if slices.Contains(opts.Features[:i], f) {
			return nil, fmt.Errorf("operators: feature %s listed twice", f)
		}
	}
	if opts.Params.Tune && opts.Params.Forest != "" && !opts.Params.Forest.Tunable() {
		return nil, fmt.Errorf("operators: tuning chooses the hyperparameters of rf, sporf and morf, not %s", opts.Params.Forest)
	}
	if opts.Window == 0 {
		opts.Window = 50000
	}
	if opts.Window < 2 {
		return nil, fmt.Errorf("operators: training window of %d rows", opts.Window)
	}
	switch opts.Kind {
	case "":
		opts.Kind = WindowCount
	case WindowCount, WindowReservoir:
	default:
		return nil, fmt.Errorf("operators: window kind %q is not count or reservoir", opts.Kind)
	}
	if opts.RetrainRows < 0 || opts.RetrainEvery < 0 {
		return nil, errors.New("operators: negative retrain schedule")
	}
	if opts.RetrainRows == 0 && opts.RetrainEvery == 0 {
		opts.RetrainRows = max(opts.Window/2, 1)
	}
	if opts.MinRows == 0 {
		opts.MinRows = 100
	}
	if opts.MinRows < 2 || opts.MinRows > opts.Window {
		return nil, fmt.Errorf("operators: minimum of %d training rows for a window of %d", opts.MinRows, opts.Window)
	}
	for _, f := range opts.Features {
		if f == opts.Label {
			return nil, fmt.Errorf("operators: the label %q is also listed as a feature", f)
		}
	}
	return &Trainer{opts: opts, q: max(len(opts.Labels), 1), rng: rand.New(rand.NewPCG(opts.Seed, 0x7e5e4701)), last: time.Now()}, nil
}

// checkLabels checks the target columns of a multi-output trainer: named,
// distinct, neither features nor excluded (frame.CheckTargets), learnt by
// regression with a forest kind that takes several targets (as forestd
// train --label a,b,c requires).
func checkLabels(opts TrainOptions) error {
	all := strings.Join(opts.Labels, ",")
	if err := frame.CheckTargets(opts.Labels, opts.Features, opts.Exclude); err != nil {
		return fmt.Errorf("operators: labels: %w", err)
	}
	if opts.Task == frame.TaskClassification {
		return fmt.Errorf("operators: labels %q name several columns, a multi-output regression target; classification takes one label", all)
	}
	switch opts.Params.Forest {
	case forest.KindFDM:
		return fmt.Errorf("operators: labels %q name several columns: forest fdm learns one label (rf, sporf, morf and lfs learn several as one multi-output regression forest)", all)
	case forest.KindDRF:
		return fmt.Errorf("operators: labels %q: forest drf is not a streaming training kind (a distance forest needs the N×N distance matrix of its training rows; rf, sporf, morf and lfs learn several labels as one multi-output regression forest, and forestd train --forest drf trains a drf model the score stage takes)", all)
	}
	return nil
}

// labelName names the label column(s) in messages: Label, or Labels
// joined by commas.
func (t *Trainer) labelName() string {
	if len(t.opts.Labels) > 0 {
		return strings.Join(t.opts.Labels, ",")
	}
	return t.opts.Label
}

// Options returns the resolved options (a single entry of Labels moved to
// Label).
func (t *Trainer) Options() TrainOptions {
	o := t.opts
	o.Labels = slices.Clone(o.Labels)
	return o
}

// Add appends the labelled rows of one message to the window. It returns
// the rows added and the rows skipped for a null label (with several
// labels: a null or NaN in any of them). A batch whose columns do not fit
// the window (a missing or unusable feature, a categorical feature, a
// label of another kind than earlier batches, a missing or non-numeric
// target column) is a scoring.ErrInput error and adds nothing.
func (t *Trainer) Add(schema *arrow.Schema, recs []arrow.Record) (added, skipped int, err error) {
	t.mu.Lock()
	names := t.names
	t.mu.Unlock()
	if names == nil && len(t.opts.Features) > 0 {
		names = t.opts.Features
	}
	fo := frame.Options{Label: t.opts.Label, Task: t.opts.Task, Features: names, Exclude: t.opts.Exclude}
	if len(t.opts.Labels) > 0 {
		fo.Label, fo.Targets = "", t.opts.Labels
	}
	fr, err := frame.FromRecords(schema, recs, fo)
	if err != nil {
		return 0, 0, scoring.InputError(err)
	}
	for j, l := range fr.Levels {
		if l != nil {
			return 0, 0, inputErr("feature %q is categorical; streaming training takes numeric features only", fr.Names[j])
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names != nil && names == nil && !slices.Equal(fr.Names, t.names) {
		// another worker fixed the feature set first, from a batch with
		// other columns: read this batch again with that feature set
		t.mu.Unlock()
		a, s, err := t.Add(schema, recs)
		t.mu.Lock()
		return a, s, err
	}
	if t.names == nil {
		if fr.P() == 0 {
			return 0, 0, inputErr("no feature columns besides the label %q", t.labelName())
		}
		t.names = slices.Clone(fr.Names)
		t.task = fr.Task
		t.cols = make([][]float32, len(t.names))
	} else if fr.Task != t.task {
		return 0, 0, inputErr("label %q is %v here but %v in earlier batches", t.labelName(), fr.Task, t.task)
	}
	q := t.q
	for i := 0; i < fr.NRows; i++ {
		slot := t.slot()
		if slot < 0 {
			continue
		}
		t.grow(slot)
		for j := range t.cols {
			t.cols[j][slot] = fr.Cols[j][i]
		}
		if t.task == frame.TaskClassification {
			t.labels[slot] = fr.Classes[fr.Y[i]]
		} else {
			copy(t.yreg[slot*q:(slot+1)*q], fr.YReg[i*q:(i+1)*q])
		}
	}
	t.since += fr.NRows
	t.skip += int64(fr.SkippedLabels)
	return fr.NRows, fr.SkippedLabels, nil
}

// grow makes the window's columns hold slot. They grow with the rows
// (doubling, at most to the window) rather than being allocated whole: a
// window of millions of rows costs its memory only once it holds them.
// While the window fills, slots come in order, so slot is at most the
// current length. t.mu is held.
func (t *Trainer) grow(slot int) {
	have := len(t.cols[0]) // a window has at least one feature (Add)
	if slot < have {
		return
	}
	n := min(max(2*have, slot+1, 1024), t.opts.Window)
	for j := range t.cols {
		t.cols[j] = append(t.cols[j], make([]float32, n-len(t.cols[j]))...)
	}
	if t.task == frame.TaskClassification {
		t.labels = append(t.labels, make([]string, n-len(t.labels))...)
	} else {
		t.yreg = append(t.yreg, make([]float64, n*t.q-len(t.yreg))...)
	}
}

// slot returns where the next row goes (-1: the reservoir drops it).
// t.mu is held.
func (t *Trainer) slot() int {
	t.seen++
	w := t.opts.Window
	if t.n < w {
		t.n++
		if t.opts.Kind == WindowCount {
			return (t.head + t.n - 1) % w
		}
		return t.n - 1
	}
	t.evict++
	if t.opts.Kind == WindowCount {
		s := t.head
		t.head = (t.head + 1) % w
		return s
	}
	// Algorithm R (J. S. Vitter, "Random sampling with a reservoir",
	// ACM TOMS 11(1), 1985): the k-th row (k = seen) replaces a uniformly
	// chosen slot with probability w/k, so every row seen so far is in the
	// reservoir with probability w/k.
	j := t.rng.Int64N(t.seen)
	if j < int64(w) {
		return int(j)
	}
	return -1
}

// Stats are the window's counters.
type Stats struct {
	Rows    int   // rows in the window
	Seen    int64 // rows offered in total
	Since   int   // rows added since the last training
	Skipped int64 // rows skipped for a null label
	Evicted int64 // rows evicted (or not taken) by the bounded window
}

// Stats returns the window's counters.
func (t *Trainer) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Rows: t.n, Seen: t.seen, Since: t.since, Skipped: t.skip, Evicted: t.evict}
}

// Due reports whether a retrain is due at now: enough rows in the window
// and RetrainRows new rows, or RetrainEvery elapsed with at least one new
// row.
func (t *Trainer) Due(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n < t.opts.MinRows || t.since == 0 {
		return false
	}
	if t.opts.RetrainRows > 0 && t.since >= t.opts.RetrainRows {
		return true
	}
	return t.opts.RetrainEvery > 0 && now.Sub(t.last) >= t.opts.RetrainEvery
}

// Snapshot copies the window into a training frame (oldest row first for a
// count window, slot order for a reservoir) and restarts the retrain
// schedule. Class names are ordered numerically when they all parse as
// numbers, else lexicographically, as frame.FromRecords orders them. With
// several labels the frame is a multi-output regression frame
// (frame.Frame.SetTargets: Targets are the labels, YReg q values per row).
func (t *Trainer) Snapshot(now time.Time) (*frame.Frame, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n < t.opts.MinRows {
		return nil, fmt.Errorf("operators: %d rows in the training window, need %d", t.n, t.opts.MinRows)
	}
	fr := &frame.Frame{Names: slices.Clone(t.names), NRows: t.n, LabelName: t.opts.Label, Task: t.task,
		Cols: make([][]float32, len(t.names))}
	order := func(i int) int { return i }
	if t.opts.Kind == WindowCount {
		order = func(i int) int { return (t.head + i) % t.opts.Window }
	}
	for j := range fr.Cols {
		c := make([]float32, t.n)
		for i := range c {
			c[i] = t.cols[j][order(i)]
		}
		fr.Cols[j] = c
	}
	if t.task == frame.TaskClassification {
		set := map[string]bool{}
		for i := 0; i < t.n; i++ {
			set[t.labels[order(i)]] = true
		}
		fr.Classes = sortClasses(set)
		idx := make(map[string]int32, len(fr.Classes))
		for k, c := range fr.Classes {
			idx[c] = int32(k)
		}
		fr.Y = make([]int32, t.n)
		for i := range fr.Y {
			fr.Y[i] = idx[t.labels[order(i)]]
		}
		if err := t.autoNumeric(fr); err != nil {
			return nil, err
		}
	} else {
		q := t.q
		y := make([]float64, t.n*q)
		for i := 0; i < t.n; i++ {
			s := order(i)
			copy(y[i*q:(i+1)*q], t.yreg[s*q:(s+1)*q])
		}
		if len(t.opts.Labels) > 0 {
			if err := fr.SetTargets(t.opts.Labels, y); err != nil {
				return nil, fmt.Errorf("operators: training window: %w", err)
			}
		} else {
			fr.YReg = y
		}
	}
	t.since = 0
	t.last = now
	return fr, nil
}

// autoLabel records how TaskAuto reads a class label of numbers.
type autoLabel int8

const (
	autoUndecided autoLabel = iota
	autoClasses
	autoNumbers
)

// autoNumeric applies TaskAuto's line between classes and numbers
// (frame.MaxAutoClasses, as forestd train and analyze draw it) to a
// classification window: the first snapshot decides, from its distinct
// labels, and every later one follows, so the model's task does not flip
// between retrains as a window's distinct values cross the line. A label
// decided numeric whose window now holds a value that is not a number is
// an error naming the label. t.mu is held.
func (t *Trainer) autoNumeric(fr *frame.Frame) error {
	if t.opts.Task != frame.TaskAuto {
		return nil
	}
	switch t.numeric {
	case autoUndecided:
		t.numeric = autoClasses
		if fr.ResolveAuto(t.opts.Task) {
			t.numeric = autoNumbers
		}
	case autoNumbers:
		if !fr.NumericIfManyClasses(0) {
			return fmt.Errorf("operators: label %q: its first training window held more than %d distinct numbers, so it is learnt as numbers (task auto), and this window holds a value that is not a number; set the task", t.labelName(), frame.MaxAutoClasses)
		}
	}
	return nil
}

func sortClasses(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	numeric := true
	for c := range set {
		out = append(out, c)
		if _, err := strconv.ParseFloat(c, 64); err != nil {
			numeric = false
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if numeric {
			x, _ := strconv.ParseFloat(out[a], 64)
			y, _ := strconv.ParseFloat(out[b], 64)
			if x != y {
				return x < y
			}
		}
		return out[a] < out[b]
	})
	return out
}

// Reference is the reference sample the model f trained on fr keeps
// (model.SampleReference: up to ReferenceRows of fr's rows, seeded by
// Seed, of f's source columns), for the drift tests of its traffic
// (arrowforest/drift, the daemon's drift stage); nil with ReferenceRows
// negative. Encode it with the model (model.Meta.Reference).
func (t *Trainer) Reference(f *forest.Forest, fr *frame.Frame) arrow.Record {
	return model.SampleReference(fr, f, t.opts.ReferenceRows, t.opts.Seed)
}

// Train trains a forest on fr with the trainer's parameters (Breiman's
// random forest and its oblique variants as forest.Train implements them;
// MORF paper §2.2, Randomer paper §2); a multi-output window (Snapshot of
// a trainer with several labels) gives a multi-output regression forest.
// A classification window holding a single class is an error: there is
// nothing to learn yet.
func (t *Trainer) Train(ctx context.Context, fr *frame.Frame, threads int) (*forest.Forest, error) {
	if fr.Task == frame.TaskClassification && len(fr.Classes) < 2 {
		return nil, fmt.Errorf("operators: the training window holds one class (%v)", fr.Classes)
	}
	p := t.opts.Params
	if p.Trees == 0 {
		def := forest.DefaultParams(fr.Task)
		def.Seed, def.Tune = p.Seed, p.Tune
		p = def
	}
	if p.Criterion == "" {
		p.Criterion = forest.DefaultParams(fr.Task).Criterion
	}
	p.Threads = threads
	f, err := forest.Train(fr, p, forest.TrainOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("operators: training on %d rows: %w", fr.NRows, err)
	}
	return f, nil
}

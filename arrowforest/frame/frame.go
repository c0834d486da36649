// Package frame owns the columnar feature matrix that every learner in
// forestd trains and scores on: column-major float32 feature buffers with
// their original names, plus the label column decoded into class indices
// (classification) or float64 values (regression).
//
// # Missing values
//
// A null or a NaN in a feature becomes NaN in the frame. Trees learn a
// default direction for missing values at every split (the side that gives
// the lower impurity when the node's missing rows are sent there; see
// package tree), and scoring sends NaN the same way, so a missing value
// never fails training or scoring. A feature with no value at all, missing
// in every training row, is another matter: training refuses it
// (Frame.CheckValues). A row whose label is null (or NaN for a regression
// target) is skipped during training and counted in Frame.SkippedLabels.
package frame

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Task says what the label is learnt as.
type Task int

const (
	// TaskAuto picks classification for integer, string, bool and
	// dictionary labels and regression for floating-point labels.
	TaskAuto Task = iota
	// TaskClassification treats every distinct label value as a class.
	TaskClassification
	// TaskRegression treats the label as a real-valued target.
	TaskRegression
)

func (t Task) String() string {
	switch t {
	case TaskClassification:
		return "classification"
	case TaskRegression:
		return "regression"
	default:
		return "auto"
	}
}

// ParseTask parses "auto", "classification" or "regression".
func ParseTask(s string) (Task, error) {
	switch s {
	case "", "auto":
		return TaskAuto, nil
	case "classification", "class", "classify":
		return TaskClassification, nil
	case "regression", "regress":
		return TaskRegression, nil
	}
	return TaskAuto, fmt.Errorf("unknown task %q (want auto, classification or regression)", s)
}

// Frame is a column-major feature matrix with an optional label.
//
// Cols[j][i] is feature j of row i; NaN marks a missing value. Features are
// always addressed by name in anything a user sees; the position j is only
// an index into Names.
type Frame struct {
	Names []string    // feature names, len p
	Cols  [][]float32 // p columns of NRows values
	NRows int

	// Levels[j], when non-nil, lists the category levels of a
	// dictionary- or string-coded feature j; the column then holds the
	// level index (0..len-1) as a float32. A scoring frame built with the
	// training frame's levels maps unseen levels to NaN.
	Levels [][]string

	// Label, present when the frame was built with a label column.
	LabelName string
	Task      Task      // TaskClassification or TaskRegression once built
	Classes   []string  // class names in index order (classification)
	Y         []int32   // class index per row (classification)
	YReg      []float64 // target per row (regression), or q per row (Targets)
	// Targets, for multi-output regression, names the q ≥ 2 target
	// columns; YReg then holds q values per row in row-major order
	// (YReg[i*q+o] is target o of row i). Nil for one label.
	Targets []string

	// SkippedLabels counts input rows dropped because their label was
	// null (or NaN for regression).
	SkippedLabels int
}

// P returns the number of features.
func (f *Frame) P() int { return len(f.Names) }

// NumClasses returns the number of classes (0 for regression or no label).
func (f *Frame) NumClasses() int { return len(f.Classes) }

// NumOutputs returns the number of regression targets per row: len(Targets)
// for multi-output regression, 1 otherwise.
func (f *Frame) NumOutputs() int { return max(len(f.Targets), 1) }

// HasLabel reports whether the frame carries a label.
func (f *Frame) HasLabel() bool { return f.Y != nil || f.YReg != nil }

// FeatureIndex returns the position of the named feature, or -1.
func (f *Frame) FeatureIndex(name string) int {
	for j, n := range f.Names {
		if n == name {
			return j
		}
	}
	return -1
}

// Validate checks the frame's internal consistency: every column has NRows
// values and the label, if any, has NRows entries with class indices in
// range. It returns a descriptive error, never panics.
func (f *Frame) Validate() error {
	if len(f.Cols) != len(f.Names) {
		return fmt.Errorf("frame: %d columns but %d names", len(f.Cols), len(f.Names))
	}
	for j, c := range f.Cols {
		if len(c) != f.NRows {
			return fmt.Errorf("frame: column %q has %d rows, want %d", f.Names[j], len(c), f.NRows)
		}
	}
	if f.Targets != nil && (f.YReg == nil || f.Y != nil) {
		return fmt.Errorf("frame: targets %v without a multi-output regression target", f.Targets)
	}
	if f.Levels != nil && len(f.Levels) != len(f.Names) {
		return fmt.Errorf("frame: %d level lists for %d features", len(f.Levels), len(f.Names))
	}
	switch {
	case f.Y != nil:
		if len(f.Y) != f.NRows {
			return fmt.Errorf("frame: label has %d rows, want %d", len(f.Y), f.NRows)
		}
		k := int32(len(f.Classes))
		for i, y := range f.Y {
			if y < 0 || y >= k {
				return fmt.Errorf("frame: row %d has class index %d outside 0..%d", i, y, k-1)
			}
		}
	case f.YReg != nil:
		if len(f.Targets) == 1 {
			return fmt.Errorf("frame: one named target %q; multi-output regression needs two or more", f.Targets[0])
		}
		if q := f.NumOutputs(); len(f.YReg) != f.NRows*q {
			return fmt.Errorf("frame: target has %d values, want %d rows × %d", len(f.YReg), f.NRows, q)
		}
		for i, y := range f.YReg {
			if math.IsNaN(y) || math.IsInf(y, 0) {
				return fmt.Errorf("frame: row %d has non-finite target %v", i, y)
			}
		}
	}
	return nil
}

// CheckValues fails when a feature has no value in any row: null or NaN
// everywhere. Trees never split on such a column, yet a model trained on
// it asks every scored row for it; a feature that is missing from every
// row of the training data is almost surely a misspelt or absent column
// (--features x1,nosuch; a JSON key no message carries). The error names
// the first such feature and the row count; errors.Is(err, ErrNoValues)
// holds.
// forest.Train and manifold.Train check their frames with it, so the
// command line, the daemon and the Benthos processor refuse such data
// alike. A frame without rows has nothing to check.
func (f *Frame) CheckValues() error {
	if f.NRows == 0 {
		return nil
	}
	for j, c := range f.Cols {
		empty := true
		for _, v := range c {
			if v == v { // not NaN
				empty = false
				break
			}
		}
		if empty && j < len(f.Names) {
			return &kindError{ErrNoValues, fmt.Sprintf("frame: feature %q has no value in any of the %d training rows (null or missing in every one): check its name, or exclude it", f.Names[j], f.NRows)}
		}
	}
	return nil
}

// SetTargets makes f a multi-output regression frame: y holds len(names)
// ≥ 2 finite targets per row in row-major order (y[i*q+o] is target o of
// row i), replacing any label. LabelName becomes the names joined by ",".
func (f *Frame) SetTargets(names []string, y []float64) error {
	q := len(names)
	if q < 2 {
		return fmt.Errorf("frame: %d targets; multi-output regression needs two or more", q)
	}
	seen := make(map[string]bool, q)
	for _, n := range names {
		if n == "" || seen[n] {
			return fmt.Errorf("frame: target name %q is empty or repeated", n)
		}
		seen[n] = true
	}
	if len(y) != f.NRows*q {
		return fmt.Errorf("frame: %d target values for %d rows × %d targets", len(y), f.NRows, q)
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("frame: row %d has non-finite target %s = %v", i/q, names[i%q], v)
		}
	}
	f.Targets = slices.Clone(names)
	f.YReg = y
	f.Y, f.Classes = nil, nil
	f.Task = TaskRegression
	f.LabelName = strings.Join(names, ",")
	return nil
}

// MaxAutoClasses is where dependence analysis draws the line between
// classes and a numeric label when the task is TaskAuto (see
// NumericIfManyClasses): a label with more distinct values than this,
// every one a number, is numeric. A floating-point label is numeric
// under TaskAuto whatever its count.
const MaxAutoClasses = 32

// ResolveAuto draws TaskAuto's line between classes and numbers on a frame
// read with task (every command and stage that reads a label the same
// way): with TaskAuto, a label of more than MaxAutoClasses classes that
// are all numbers becomes numeric (NumericIfManyClasses); with another
// task nothing changes. It reports whether the frame became numeric.
func (f *Frame) ResolveAuto(task Task) bool {
	return task == TaskAuto && f.NumericIfManyClasses(MaxAutoClasses)
}

// NumericIfManyClasses turns a classification frame whose label has more
// than limit classes, each named by a finite number (an integer label, or
// a dictionary of numbers), into a regression frame whose target is that
// number, and reports whether it did. A label of names (strings that are
// not all numbers, bool) stays classes whatever its count.
func (f *Frame) NumericIfManyClasses(limit int) bool {
	if f.Task != TaskClassification || len(f.Classes) <= limit || f.Targets != nil {
		return false
	}
	vals := make([]float64, len(f.Classes))
	for c, name := range f.Classes {
		v, err := strconv.ParseFloat(name, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		vals[c] = v
	}
	y := make([]float64, len(f.Y))
	for i, c := range f.Y {
		y[i] = vals[c]
	}
	f.YReg, f.Y, f.Classes = y, nil, nil
	f.Task = TaskRegression
	return true
}

package scoring

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/schemas"
)

// ErrNoRows is Evaluate's error when no input row has a complete label.
var ErrNoRows = errors.New("no labelled rows")

// Evaluation compares a model's predictions with known labels.
type Evaluation struct {
	// Rows is the number of rows evaluated; SkippedLabels the rows dropped
	// for a null or NaN label (with several labels: in any of them).
	Rows, SkippedLabels int
	// Seconds is the time spent predicting; SetupSeconds the model's
	// one-off preparation (a drf model's predictor, Model.Prepare).
	Seconds, SetupSeconds float64
	// Classification: Accuracy and Error = 1 − Accuracy. A row whose class
	// the model does not know counts as an error and in UnknownClassRows.
	Classification   bool
	Accuracy, Error  float64
	UnknownClassRows int
	// Regression: over rows (and outputs, for several), the root mean
	// squared, mean absolute and mean squared errors.
	RMSE, MAE, MSE float64
	// PerOutput holds the same per target of a model with several outputs.
	PerOutput map[string]OutputError
}

// OutputError is the error of one output of a model with several.
type OutputError struct {
	RMSE, MSE, MAE float64
}

// EvalRows are the rows an evaluation compared, in input order (those with
// a null or NaN label left out), for pictures such as a confusion matrix.
type EvalRows struct {
	// Classification: each row's actual class (a class name of the data)
	// and predicted class (one of the model's).
	Actual, Predicted []string
	// Regression: each row's actual and predicted value.
	ActualValues, PredictedValues []float64
}

// LabelsError is Evaluate's error when the label columns given are not
// what the model predicts: other targets, fewer or more of them, another
// order, or several columns for a model of one label. It wraps ErrInput.
type LabelsError struct {
	// Given are the label columns given.
	Given []string
	// Want are the model's targets: the one label of a single-output
	// model, every target of a model with several outputs.
	Want []string
	// Columns are the label columns the model was trained on, which give
	// Want: what to give (the same as Want, except for a drf model
	// trained on a list column or on columns whose targets it renamed).
	Columns []string
}

func (e *LabelsError) Error() string {
	return fmt.Sprintf("label columns %s: the model predicts %s; give its label columns %s",
		strings.Join(e.Given, ","), e.Predicts(), strings.Join(e.Columns, ","))
}

// Unwrap makes a LabelsError an ErrInput.
func (e *LabelsError) Unwrap() error { return ErrInput }

// Predicts says what the model predicts: "one label, y" or "3 targets
// (y0, y1, y2)", with the label columns they come from when these are
// named otherwise.
func (e *LabelsError) Predicts() string {
	if len(e.Want) == 1 {
		return "one label, " + e.Want[0]
	}
	s := fmt.Sprintf("%d targets (%s)", len(e.Want), strings.Join(e.Want, ", "))
	switch {
	case slices.Equal(e.Columns, e.Want):
	case len(e.Columns) == 1:
		s += " from its label column " + e.Columns[0]
	default:
		s += " from its label columns " + strings.Join(e.Columns, ",")
	}
	return s
}

// Evaluate scores recs (sharing one schema) through the same path as Score
// and compares the predictions with the label columns: one for a
// single-output model, the model's targets in order for a model with
// several outputs (nil: the model's own label columns). Rows with a null
// or NaN label are skipped and counted. threads is as Options.Threads.
func (m *Model) Evaluate(recs []arrow.Record, labels []string, threads int) (*Evaluation, error) {
	return m.evaluate(recs, labels, threads, nil)
}

// EvaluateRows is Evaluate for a single-output model and one label
// column that also returns the rows it compared, from the same prediction
// pass.
func (m *Model) EvaluateRows(recs []arrow.Record, label string, threads int) (*Evaluation, *EvalRows, error) {
	if m.multi != nil {
		return nil, nil, errors.New("scoring: EvaluateRows needs a single-output model")
	}
	rows := new(EvalRows)
	ev, err := m.evaluate(recs, []string{label}, threads, rows)
	if err != nil {
		return nil, nil, err
	}
	return ev, rows, nil
}

// evaluate is Evaluate; a non-nil rows receives the compared rows.
func (m *Model) evaluate(recs []arrow.Record, labels []string, threads int, rows *EvalRows) (*Evaluation, error) {
	if len(recs) == 0 {
		return nil, ErrNoRows
	}
	if threads < 0 {
		return nil, fmt.Errorf("scoring: %d threads", threads)
	}
	schema, err := sharedSchema(recs)
	if err != nil {
		return nil, err
	}
	if len(labels) == 0 {
		labels = []string{m.f.LabelName}
		if m.Targets() != nil {
			labels = m.labelColumns()
		}
	}
	t0 := time.Now()
	if err := m.Prepare(threads); err != nil {
		return nil, err
	}
	ev := &Evaluation{SetupSeconds: time.Since(t0).Seconds()}
	if m.multi != nil {
		return ev, m.evalMulti(ev, schema, recs, labels, threads)
	}
	if len(labels) != 1 {
		return nil, &LabelsError{Given: labels, Want: []string{m.f.LabelName}, Columns: []string{m.f.LabelName}}
	}
	fr, err := frame.FromRecords(schema, recs, m.sourceOptions(labels[0]))
	if err != nil {
		return nil, InputError(err)
	}
	if fr, err = m.f.FromSource(fr); err != nil {
		return nil, InputError(err)
	}
	if fr.NRows == 0 {
		return nil, ErrNoRows
	}
	t1 := time.Now()
	pred, err := m.predict(fr, threads, schemas.ProbsNone, 0)
	if err != nil {
		return nil, err
	}
	ev.Seconds = time.Since(t1).Seconds()
	ev.Rows, ev.SkippedLabels = fr.NRows, fr.SkippedLabels
	n := float64(fr.NRows)
	if m.f.Task == frame.TaskClassification {
		ev.Classification = true
		// map the data's class names onto the model's class indices
		idx := make(map[string]int32, len(m.f.Classes))
		for i, c := range m.f.Classes {
			idx[c] = int32(i)
		}
		wrong := 0
		for i, y := range fr.Y {
			mi, ok := idx[fr.Classes[y]]
			if !ok {
				ev.UnknownClassRows++
			}
			if !ok || pred.class[i] != mi {
				wrong++
			}
		}
		if rows != nil {
			rows.Actual, rows.Predicted = make([]string, fr.NRows), make([]string, fr.NRows)
			for i, y := range fr.Y {
				rows.Actual[i], rows.Predicted[i] = fr.Classes[y], m.f.Classes[pred.class[i]]
			}
		}
		ev.Error = float64(wrong) / n
		ev.Accuracy = 1 - ev.Error
		return ev, nil
	}
	var se, ae float64
	for i, y := range fr.YReg {
		d := pred.values[i] - y
		se += d * d
		ae += math.Abs(d)
	}
	if rows != nil {
		rows.ActualValues, rows.PredictedValues = slices.Clone(fr.YReg), slices.Clone(pred.values[:fr.NRows])
	}
	ev.RMSE, ev.MAE, ev.MSE = math.Sqrt(se/n), ae/n, se/n
	return ev, nil
}

// labelColumns are the label columns a model with several outputs was
// trained on (LabelName joins them with ",").
func (m *Model) labelColumns() []string { return frame.SplitLabel(m.f.LabelName) }

// sourceOptions are the frame options that read the model's source columns
// and the label.
func (m *Model) sourceOptions(label string) frame.Options {
	var lv map[string][]string
	for j, l := range m.levels {
		if l != nil {
			if lv == nil {
				lv = map[string][]string{}
			}
			lv[m.names[j]] = l
		}
	}
	return frame.Options{Label: label, Task: m.f.Task, Features: m.names, Levels: lv}
}

// evalMulti evaluates a model with several outputs: errors over rows and
// outputs, and per output.
func (m *Model) evalMulti(ev *Evaluation, schema *arrow.Schema, recs []arrow.Record, labels []string, threads int) error {
	var fr *frame.Frame
	var targets []string
	var y []float64
	if m.f.Kind == forest.KindDRF { // responses may be fixed-size list columns
		resp, err := manifold.ReadResponses(schema, recs, labels)
		if err != nil {
			return InputError(err)
		}
		if fr, err = frame.FeaturesFromRecords(schema, recs, m.f.Features, m.f.Levels); err != nil {
			return InputError(err)
		}
		if fr, err = manifold.KeepRows(fr, resp.Valid); err != nil {
			return err
		}
		for _, ok := range resp.Valid {
			if !ok {
				ev.SkippedLabels++
			}
		}
		targets, y = resp.Targets, manifold.KeepValues(resp.Y, len(resp.Targets), resp.Valid)
	} else {
		opts := m.sourceOptions("")
		if len(labels) > 1 {
			opts.Targets = labels
		} else {
			opts.Label = labels[0]
		}
		var err error
		if fr, err = frame.FromRecords(schema, recs, opts); err != nil {
			return InputError(err)
		}
		if fr, err = m.f.FromSource(fr); err != nil {
			return InputError(err)
		}
		targets, y, ev.SkippedLabels = fr.Targets, fr.YReg, fr.SkippedLabels
	}
	if fr.NRows == 0 {
		return ErrNoRows
	}
	if want := m.Targets(); !slices.Equal(targets, want) {
		return &LabelsError{Given: labels, Want: want, Columns: m.labelColumns()}
	}
	t1 := time.Now()
	pred, err := m.predict(fr, threads, schemas.ProbsNone, 0)
	if err != nil {
		return err
	}
	ev.Seconds = time.Since(t1).Seconds()
	ev.Rows = fr.NRows
	q := len(targets)
	se, ae := make([]float64, q), make([]float64, q)
	for i := 0; i < fr.NRows; i++ {
		for r := 0; r < q; r++ {
			d := pred.values[i*q+r] - y[i*q+r]
			se[r] += d * d
			ae[r] += math.Abs(d)
		}
	}
	n := float64(fr.NRows)
	ev.PerOutput = make(map[string]OutputError, q)
	var tse, tae float64
	for r, t := range targets {
		ev.PerOutput[t] = OutputError{RMSE: math.Sqrt(se[r] / n), MSE: se[r] / n, MAE: ae[r] / n}
		tse += se[r]
		tae += ae[r]
	}
	nq := n * float64(q)
	ev.RMSE, ev.MSE, ev.MAE = math.Sqrt(tse/nq), tse/nq, tae/nq
	return nil
}

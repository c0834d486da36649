package status

import (
	"html/template"
	"time"

	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/internal/report"
)

// maxDriftTests is how many of the latest drift tests the page keeps
// (its p-value chart).
const maxDriftTests = 200

// Drift is the drift stage's part of the page: how many tests ran and
// found drift, the latest tests (the chart of p-values over time) and the
// last alarm with its features. Null without the drift stage, and before
// its first test.
type Drift struct {
	Tests  int64 `json:"tests"`
	Alarms int64 `json:"alarms"`
	// Recent are the latest tests, oldest first (at most 200).
	Recent []DriftTest `json:"recent"`
	// LastAlarm is the latest test that found drift (null before any).
	LastAlarm *DriftTest `json:"last_alarm"`
}

// DriftTest is one drift test of the current window against the live
// model's reference sample (arrowforest/drift.Report, abridged).
type DriftTest struct {
	At           time.Time      `json:"at"`
	ModelVersion int64          `json:"model_version"`
	WindowRows   int            `json:"window_rows"`
	Drift        bool           `json:"drift"`
	Alpha        float64        `json:"alpha"`
	Features     []DriftFeature `json:"features"`
	// Joint is the joint test (null when there was none).
	Joint *DriftFeature `json:"joint"`
	// Skipped names the features left untested and why; Error says why
	// no test ran (an empty window, no feature with values).
	Skipped []drift.Skipped `json:"skipped"`
	Error   string          `json:"error,omitempty"`
}

// DriftFeature is one test of a drift report: its p-value, adjusted
// across the family, and whether it rejected.
type DriftFeature struct {
	Name      string `json:"name"`
	PValue    Float  `json:"p_value"`
	PAdjusted Float  `json:"p_adjusted"`
	Drift     bool   `json:"drift"`
}

// Drift records one drift test: rep tested a window of rows against the
// reference of model version version; errText says why it could not run
// (rep then names what it skipped).
func (r *Recorder) Drift(version int64, rows int, rep *drift.Report, errText string) {
	t := DriftTest{At: r.opts.Now(), ModelVersion: version, WindowRows: rows, Drift: rep.Drift, Alpha: rep.Alpha,
		Features: make([]DriftFeature, len(rep.Features)), Skipped: append([]drift.Skipped{}, rep.Skipped...), Error: errText}
	for i, f := range rep.Features {
		t.Features[i] = DriftFeature{Name: f.Name, PValue: Float(f.PValue), PAdjusted: Float(f.PAdjusted), Drift: f.Drift}
	}
	if j := rep.Joint; j != nil {
		t.Joint = &DriftFeature{Name: "joint", PValue: Float(j.PValue), PAdjusted: Float(j.PAdjusted), Drift: j.Drift}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drift == nil {
		r.drift = &driftState{recent: newRing[DriftTest](maxDriftTests)}
	}
	d := r.drift
	d.tests++
	if t.Drift {
		d.alarms++
		d.last = &t
	}
	d.recent.push(t)
	r.rev.Drift++
}

// driftState is what the Recorder keeps of the drift tests.
type driftState struct {
	tests, alarms int64
	recent        ring[DriftTest]
	last          *DriftTest
}

// status is the page's Drift part (r.mu held); nil before the first test.
func (d *driftState) status() *Drift {
	if d == nil {
		return nil
	}
	return &Drift{Tests: d.tests, Alarms: d.alarms, Recent: d.recent.items(), LastAlarm: d.last}
}

// driftChart draws the p-values of the latest drift tests over time
// (seconds before the latest test): one line per feature and the joint
// test, unadjusted, as the metric forestd_drift_p_value.
func driftChart(d *Drift) (template.HTML, error) {
	if d == nil || len(d.Recent) == 0 {
		return report.Bars(report.BarChart{Title: "no drift test yet", Class: "drift"})
	}
	n := len(d.Recent)
	x := make([]float64, n)
	var names []string
	seen := map[string]bool{}
	for i, t := range d.Recent {
		x[i] = t.At.Sub(d.Recent[n-1].At).Seconds()
		for _, f := range t.Features {
			if !seen[f.Name] && len(names) < maxDriftSeries {
				seen[f.Name] = true
				names = append(names, f.Name)
			}
		}
	}
	series := make([]report.Series, 0, len(names)+1)
	for _, name := range names {
		y := make([]float64, n)
		for i, t := range d.Recent {
			y[i] = float64(NaN())
			for _, f := range t.Features {
				if f.Name == name {
					y[i] = float64(f.PValue)
				}
			}
		}
		series = append(series, report.Series{Name: name, Y: y})
	}
	joint := make([]float64, n)
	hasJoint := false
	for i, t := range d.Recent {
		joint[i] = float64(NaN())
		if t.Joint != nil {
			joint[i], hasJoint = float64(t.Joint.PValue), true
		}
	}
	if hasJoint {
		series = append(series, report.Series{Name: "joint", Y: joint})
	}
	return report.Lines(report.LineChart{Title: "drift p-values (unadjusted) by test", Class: "drift", X: x, XUnit: " s",
		Series: series, Points: true, YMin0: true})
}

// maxDriftSeries bounds the chart's lines (the JSON has every feature).
const maxDriftSeries = 20

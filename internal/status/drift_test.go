package status

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/drift"
)

// TestDriftPanel: the drift part counts the tests and alarms, keeps the
// last alarm with its features while later tests find none, draws the
// p-values over time, and is left out of a poll that holds it.
func TestDriftPanel(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status().Drift != nil {
		t.Fatal("a drift part before any test")
	}
	if svg, err := r.Chart("drift"); err != nil || !strings.Contains(string(svg), "no drift test yet") {
		t.Fatalf("chart before a test: %v %s", err, svg)
	}
	quiet := &drift.Report{Alpha: 0.05, Features: []drift.Feature{{Name: "x0", PValue: 0.4, PAdjusted: 0.8}, {Name: "x1", PValue: 0.6, PAdjusted: 0.8}},
		Joint: &drift.Joint{PValue: 0.5, PAdjusted: 0.8}}
	alarm := &drift.Report{Alpha: 0.05, Drift: true, Features: []drift.Feature{{Name: "x0", PValue: 0.3, PAdjusted: 0.6}, {Name: "x1", PValue: 0.001, PAdjusted: 0.003, Drift: true}},
		Joint: &drift.Joint{PValue: 0.002, PAdjusted: 0.004, Drift: true}}
	r.Drift(1, 500, quiet, "")
	r.Drift(1, 500, alarm, "")
	r.Drift(2, 500, quiet, "")
	r.Drift(2, 0, &drift.Report{Skipped: []drift.Skipped{{Name: "x0", Reason: "the current window has no rows"}}}, "drift: empty sample")
	d := r.Status().Drift
	if d == nil || d.Tests != 4 || d.Alarms != 1 || len(d.Recent) != 4 || d.LastAlarm == nil || d.LastAlarm.ModelVersion != 1 ||
		!d.LastAlarm.Features[1].Drift || d.LastAlarm.Features[0].Drift || d.LastAlarm.Joint == nil || !d.LastAlarm.Joint.Drift {
		t.Fatalf("drift part: %+v", d)
	}
	if last := d.Recent[3]; last.Error == "" || len(last.Skipped) != 1 || last.Skipped[0].Name != "x0" {
		t.Fatalf("the empty window's test: %+v", last)
	}
	svg, err := r.Chart("drift")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drift p-values", "x0", "x1", "joint"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	// the page has the panel; a poll holding the part leaves it out
	w := httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(w.Body.String(), `id="chart-drift"`) || !strings.Contains(w.Body.String(), `id="drift-features"`) {
		t.Fatal("the page has no drift panel")
	}
	s := r.Status()
	w = httptest.NewRecorder()
	r.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/status?instance="+s.Instance+"&drift=4", nil))
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["drift"]; ok || !strings.Contains(string(doc["unchanged"]), `"drift"`) {
		t.Fatalf("held drift part sent again: %s", doc["unchanged"])
	}
}

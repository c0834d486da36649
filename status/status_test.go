package status

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/report"
	"github.com/forestd/forestd/scoring"
)

const evil = `<img src=x onerror=alert(1)>`

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func model(t *testing.T, version int64, trees int) *scoring.Model {
	t.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: 1, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	fr.Names[2] = evil
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = trees, 1, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, version, "status test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTrafficSample: rates are counter differences over the clock's
// interval, latency quantiles interpolate inside the delta histogram's
// bucket (decode excluded from batch latency), lag is per partition.
func TestTrafficSample(t *testing.T) {
	m := pipeline.NewMetrics()
	c := &clock{t: time.Unix(1000, 0)}
	r, err := New(Options{Gatherer: m.Registry, Now: c.now, Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m.RowsIn.WithLabelValues("features").Add(500) // before the first reading: not a rate
	r.Sample()
	if n := len(r.Status().Traffic.Samples); n != 0 {
		t.Fatalf("%d samples after one reading", n)
	}
	c.add(2 * time.Second)
	m.RowsIn.WithLabelValues("features").Add(1000)
	m.RowsIn.WithLabelValues("training").Add(200)
	m.RowsOut.WithLabelValues("predictions").Add(1000)
	// buckets are 0.5 ms · 2^k: 100 observations in (1 ms, 2 ms]
	for i := 0; i < 100; i++ {
		m.BatchLatency.WithLabelValues("score").Observe(0.0015)
		m.BatchLatency.WithLabelValues("decode").Observe(5) // excluded
	}
	m.EndToEnd.Observe(0.003) // in (2 ms, 4 ms]
	m.CommitLag.WithLabelValues("features", "1").Set(7)
	m.CommitLag.WithLabelValues("features", "0").Set(3)
	r.Sample()
	s := r.Status().Traffic
	if len(s.Samples) != 1 {
		t.Fatalf("%d samples, want 1", len(s.Samples))
	}
	got := s.Samples[0]
	if got.RowsInPerSecond != 600 || got.RowsOutPerSecond != 500 {
		t.Fatalf("rates in %v out %v, want 600 and 500", got.RowsInPerSecond, got.RowsOutPerSecond)
	}
	// rank 50 of 100 in (0.001, 0.002]: 0.001 + 0.001 × 50/100
	if math.Abs(float64(got.BatchP50)-0.0015) > 1e-12 || math.Abs(float64(got.BatchP99)-0.00199) > 1e-12 {
		t.Fatalf("batch p50 %v p99 %v, want 0.0015 and 0.00199", got.BatchP50, got.BatchP99)
	}
	if math.Abs(float64(got.EndToEndP50)-0.003) > 1e-12 {
		t.Fatalf("end-to-end p50 %v, want 0.003", got.EndToEndP50)
	}
	if got.Lag["features/0"] != 3 || got.Lag["features/1"] != 7 || strings.Join(s.Partitions, ",") != "features/0,features/1" {
		t.Fatalf("lag %v partitions %v", got.Lag, s.Partitions)
	}
	// nothing observed in the next interval: quantiles are null in JSON
	c.add(time.Second)
	r.Sample()
	b, _ := json.Marshal(r.Status().Traffic.Samples[1])
	if !strings.Contains(string(b), `"batch_p50_seconds":null`) || !strings.Contains(string(b), `"rows_in_per_second":0`) {
		t.Fatalf("idle sample %s", b)
	}
	// the ring holds Window/Interval = 3 samples
	for i := 0; i < 5; i++ {
		c.add(time.Second)
		r.Sample()
	}
	if n := len(r.Status().Traffic.Samples); n != 3 {
		t.Fatalf("%d samples kept, want 3", n)
	}
}

// TestModelsAndDeadLetters: the live model's facts with its training time
// and rows, the bounded history oldest first, dead letters by stage and
// the latest newest first in a bounded ring.
func TestModelsAndDeadLetters(t *testing.T) {
	c := &clock{t: time.Unix(2000, 0).UTC()}
	r, err := New(Options{Now: c.now, History: 3, DeadLetters: 2, Ready: func() error { return errors.New("no model yet") }})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Status()
	if s.Model != nil || s.Ready || s.NotReady != "no model yet" || len(s.History) != 0 {
		t.Fatalf("empty status %+v", s)
	}
	seed := model(t, 1, 5)
	r.ModelLive(seed, "seed file m.model")
	s = r.Status()
	if s.Model == nil || s.Model.Version != 1 || s.Model.TrainedAt != nil || s.Model.TrainingRows != nil || s.Model.Origin != "seed file m.model" {
		t.Fatalf("seed model %+v", s.Model)
	}
	// what this daemon does not know is null, in the model and its history
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"trained_at":null,"training_rows":null,"training_seconds":null}`, `"trained_at":null,"training_rows":null,"training_seconds":null}]`} {
		if !strings.Contains(string(js), want) {
			t.Fatalf("status JSON lacks %s:\n%s", want, js)
		}
	}
	for v := int64(2); v <= 5; v++ {
		m := model(t, v, int(v)+5)
		c.add(time.Minute)
		r.ModelTrained(m, 100*int(v), 0.25)
		r.ModelLive(m, "trained")
	}
	s = r.Status()
	lm := s.Model
	if lm.Version != 5 || lm.Trees != 10 || len(lm.Features) != 4 || lm.Features[2] != evil || lm.Kind != "rf" ||
		lm.TrainingRows == nil || *lm.TrainingRows != 500 || lm.TrainedAt == nil || !lm.TrainedAt.Equal(c.now()) || lm.OOB == nil {
		t.Fatalf("live model %+v", lm)
	}
	if len(s.History) != 3 || s.History[0].Version != 3 || s.History[2].Version != 5 || s.History[2].TrainingRows == nil || *s.History[2].TrainingRows != 500 {
		t.Fatalf("history %+v", s.History)
	}
	if float64(s.History[2].OOBError) != lm.OOB.Error || !math.IsNaN(float64(s.History[2].OOBR2)) {
		t.Fatalf("history OOB %v, model %v", s.History[2].OOBError, lm.OOB.Error)
	}
	r.DeadLetter("features", 0, 10, "decode", "undecodable", "not Arrow")
	r.DeadLetter("features", 1, 11, "score", "missing column", "column "+evil+" missing")
	r.DeadLetter("training", 2, 12, "decode", "undecodable", "bad JSON")
	d := r.Status().DeadLetters
	if d.Total != 3 || d.ByStage["decode"] != 2 || d.ByStage["score"] != 1 || d.ByReason["undecodable"] != 2 ||
		d.ByReason["missing column"] != 1 || len(d.Last) != 2 || d.Last[0].Source != "training/2/12" ||
		d.Last[1].Reason != "column "+evil+" missing" || d.Last[1].Kind != "missing column" {
		t.Fatalf("dead letters %+v", d)
	}
}

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

// TestHandler: the page and its assets with the security headers, the
// JSON, every chart as well-formed SVG with data strings escaped, one bar
// per feature, 404 and 405.
func TestHandler(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Handler()
	page := get(t, h, "GET", "/")
	if page.Code != 200 || !strings.Contains(page.Body.String(), `src="/status/status.js"`) ||
		!strings.Contains(page.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("page: %d %v", page.Code, page.Header())
	}
	if strings.Contains(page.Body.String(), "http://") || strings.Contains(page.Body.String(), "https://") {
		t.Fatal("the page refers to another origin")
	}
	js := get(t, h, "GET", "/status/status.js").Body.String()
	if strings.Contains(js, "innerHTML") || strings.Contains(js, "outerHTML") || strings.Contains(js, "insertAdjacentHTML") ||
		strings.Contains(js, "eval(") || strings.Contains(js, "document.write") || !strings.Contains(js, "textContent") {
		t.Fatal("the script writes markup from strings")
	}
	if w := get(t, h, "POST", "/api/status"); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", w.Code)
	}
	if w := get(t, h, "GET", "/nothing"); w.Code != 404 {
		t.Fatalf("/nothing: %d", w.Code)
	}
	if w := get(t, h, "GET", "/status/chart/nothing.svg"); w.Code != 404 {
		t.Fatalf("unknown chart: %d", w.Code)
	}
	// before any model: every chart still draws
	for _, name := range Charts {
		w := get(t, h, "GET", "/status/chart/"+name+".svg")
		if w.Code != 200 || w.Header().Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("chart %s: %d", name, w.Code)
		}
		wellFormed(t, name, w.Body.String())
	}
	m := model(t, 4, 5)
	r.ModelLive(m, "trained")
	r.DeadLetter("features", 0, 1, "decode", evil, evil)
	d := &report.Dependence{Stat: "gcor", Method: "marginal", Alpha: 0.05, Rows: 10,
		Features: []report.DependenceFeature{{Name: evil, Group: -1, PValue: 0.01, Adjusted: 0.02}, {Name: "x", Group: 0, PValue: 0.5, Adjusted: 0.5}}}
	r.Analysis(1, d)
	w := get(t, h, "GET", "/api/status")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/api/status: %d", w.Code)
	}
	if strings.Contains(w.Body.String(), "<img") {
		t.Fatal("the JSON carries an unescaped <img")
	}
	var s Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Model.Version != 4 || s.Model.Features[2] != evil || s.DeadLetters.Last[0].Reason != evil || s.Analysis.Features[0].Name != evil {
		t.Fatalf("status %+v", s)
	}
	imp := get(t, h, "GET", "/status/chart/importances.svg").Body.String()
	wellFormed(t, "importances", imp)
	if n := strings.Count(imp, `<rect class="bar"`); n != 4 {
		t.Fatalf("%d importance bars for 4 features", n)
	}
	if !strings.Contains(imp, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Fatal("the evil feature name is not in the importance chart as text")
	}
	for _, name := range []string{"pvalues", "groups", "history"} {
		wellFormed(t, name, get(t, h, "GET", "/status/chart/"+name+".svg").Body.String())
	}
	// charts are cached per revision: the same bytes until the part changes
	a, _ := r.Chart("importances")
	b, _ := r.Chart("importances")
	if &a[0] != &b[0] {
		t.Fatal("the importance chart was redrawn without a change")
	}
	r.ModelLive(model(t, 5, 6), "trained")
	if c, _ := r.Chart("importances"); &c[0] == &a[0] {
		t.Fatal("the importance chart was not redrawn after a swap")
	}
}

func wellFormed(t *testing.T, name, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("chart %s is not well-formed: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "img" || se.Name.Local == "script") {
			t.Fatalf("chart %s has a <%s>", name, se.Name.Local)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{Interval: time.Millisecond}, {Interval: time.Second, Window: time.Millisecond}, {History: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

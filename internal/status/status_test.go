package status

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/internal/testmodel"
	"github.com/forestd/forestd/pipeline"
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
	for _, name := range Charts() {
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

// wideAnalysis is a dependence analysis of n marginal features.
func wideAnalysis(n int) *report.Dependence {
	d := &report.Dependence{Stat: "gcor", Method: "marginal", Alpha: 0.05, Adjust: "bh", Rows: 1000}
	for j := 0; j < n; j++ {
		d.Features = append(d.Features, report.DependenceFeature{Name: fmt.Sprintf("feature_%04d", j), Group: -1, Kind: "marginal",
			Statistic: 0.1, PValue: 0.001, Adjusted: 0.002})
	}
	return d
}

// keys returns the top-level keys of a JSON object, sorted, and the
// object with its values compacted.
func keys(t *testing.T, body []byte) (string, map[string]json.RawMessage) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	ks := make([]string, 0, len(m))
	for k, v := range m {
		ks = append(ks, k)
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			t.Fatal(err)
		}
		m[k] = b.Bytes()
	}
	sort.Strings(ks)
	return strings.Join(ks, ","), m
}

// TestConditionalStatus: without a query (or with unrelated parameters)
// /api/status is the whole document, field for field as Status's tags say;
// with the revisions a client holds it leaves out exactly the parts whose
// revision is current (named in "unchanged", absent rather than null),
// carries the changed ones whole, and only the traffic samples after the
// client's; revisions of another instance get the whole document.
func TestConditionalStatus(t *testing.T) {
	m := pipeline.NewMetrics()
	c := &clock{t: time.Unix(3000, 0).UTC()}
	r, err := New(Options{Gatherer: m.Registry, Now: c.now, Window: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sample := func(n int) {
		for i := 0; i < n; i++ {
			c.add(time.Second)
			m.RowsIn.WithLabelValues("features").Add(10)
			m.CommitLag.WithLabelValues("features", "0").Set(float64(i))
			r.Sample()
		}
	}
	h := r.Handler()
	body := func(path string) []byte {
		t.Helper()
		w := get(t, h, "GET", path)
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	decode := func(path string) Status {
		t.Helper()
		var s Status
		if err := json.Unmarshal(body(path), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	held := func(s Status, parts ...string) string {
		q := url.Values{"instance": {s.Instance}}
		for _, p := range parts {
			q.Set(p, strconv.FormatInt(s.Revisions.part(p), 10))
		}
		return "/api/status?" + q.Encode()
	}
	const wholeKeys = "analysis,dead_letters,drift,history,instance,model,now,ready,revisions,started,traffic"

	// before anything: the whole document has null model and analysis;
	// holding them at revision 0 leaves them out, which null never means
	whole := body("/api/status")
	if ks, doc := keys(t, whole); ks != wholeKeys || string(doc["model"]) != "null" || string(doc["analysis"]) != "null" {
		t.Fatalf("whole document before a model: keys %s, model %s", ks, doc["model"])
	}
	var s0 Status
	if err := json.Unmarshal(whole, &s0); err != nil || len(s0.Instance) < 16 {
		t.Fatalf("instance %q: %v", s0.Instance, err)
	}
	if ks, doc := keys(t, body(held(s0, PartModel, PartAnalysis))); ks != "dead_letters,drift,history,instance,now,ready,revisions,started,traffic,unchanged" ||
		string(doc["unchanged"]) != `["model","analysis"]` {
		t.Fatalf("held null model and analysis: keys %s, unchanged %s", ks, doc["unchanged"])
	}
	// a revision the recorder never had: the part is sent, null as it is
	if _, doc := keys(t, body("/api/status?model=7&instance="+s0.Instance)); string(doc["model"]) != "null" || doc["unchanged"] != nil {
		t.Fatalf("model held at revision 7 of 0: model %s, unchanged %s", doc["model"], doc["unchanged"])
	}

	r.ModelLive(model(t, 1, 5), "trained")
	r.DeadLetter("features", 0, 1, "decode", "undecodable", "not Arrow")
	r.Analysis(1, wideAnalysis(3))
	sample(4) // the first reading is no sample: 3 samples
	whole = body("/api/status")
	// the whole document is what Status's struct tags say, the same with
	// parameters that are not revisions (a cache buster)
	s := r.Status()
	type fields Status // without MarshalJSON
	want, err := json.MarshalIndent(fields(s), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if string(whole) != string(want)+"\n" {
		t.Fatalf("whole document differs from Status's fields:\n%s\nwant\n%s", whole, want)
	}
	if got := body("/api/status?_=12345&pretty"); string(got) != string(whole) {
		t.Fatalf("unrelated parameters changed the document:\n%s", got)
	}
	ks, doc := keys(t, whole)
	if ks != wholeKeys || strings.Contains(string(doc["traffic"]), `"since"`) {
		t.Fatalf("whole document keys %s, traffic %s", ks, doc["traffic"])
	}
	if err := json.Unmarshal(whole, &s); err != nil || len(s.Traffic.Samples) != 3 || s.Model == nil || s.Analysis == nil {
		t.Fatalf("whole document: %v, %d samples", err, len(s.Traffic.Samples))
	}

	// the steady state: everything held is current
	all := held(s, Parts()...)
	ks, doc = keys(t, body(all))
	if ks != "instance,now,ready,revisions,started,traffic,unchanged" || string(doc["unchanged"]) != `["model","history","dead_letters","analysis","drift"]` {
		t.Fatalf("all held: keys %s, unchanged %s", ks, doc["unchanged"])
	}
	cs := decode(all)
	if cs.Revisions != s.Revisions || cs.Traffic.Since == nil || *cs.Traffic.Since != s.Revisions.Traffic || len(cs.Traffic.Samples) != 0 {
		t.Fatalf("all held: revisions %+v (want %+v), traffic %+v", cs.Revisions, s.Revisions, cs.Traffic)
	}

	// a hot swap and a sample: model, history and one sample come, the rest not
	r.ModelLive(model(t, 2, 6), "trained")
	sample(1)
	ks, doc = keys(t, body(all))
	if ks != "history,instance,model,now,ready,revisions,started,traffic,unchanged" || string(doc["unchanged"]) != `["dead_letters","analysis","drift"]` {
		t.Fatalf("after a swap: keys %s, unchanged %s", ks, doc["unchanged"])
	}
	cs = decode(all)
	if cs.Model == nil || cs.Model.Version != 2 || len(cs.History) != 2 || len(cs.Traffic.Samples) != 1 || !cs.Traffic.Samples[0].At.Equal(c.now()) ||
		strings.Join(cs.Traffic.Partitions, ",") != "features/0" {
		t.Fatalf("after a swap: model %+v, history %d, traffic %+v", cs.Model, len(cs.History), cs.Traffic)
	}
	// held parts are independent: only the dead letters held, all else whole
	r.DeadLetter("features", 0, 2, "score", "missing column", "column x missing")
	if ks, _ := keys(t, body(held(s, PartAnalysis))); ks != "dead_letters,drift,history,instance,model,now,ready,revisions,started,traffic,unchanged" {
		t.Fatalf("analysis held: keys %s", ks)
	}
	if cs = decode(held(s, PartDeadLetters)); cs.DeadLetters.Total != 2 || len(cs.Unchanged) != 0 {
		t.Fatalf("dead letters held at an old revision: %+v, unchanged %q", cs.DeadLetters, cs.Unchanged)
	}

	// traffic held from before the ring's reach: the whole ring (5 samples)
	sample(10)
	if cs = decode(held(s, PartTraffic)); len(cs.Traffic.Samples) != 5 || cs.Traffic.Since == nil || *cs.Traffic.Since != s.Revisions.Traffic {
		t.Fatalf("old traffic revision: %+v", cs.Traffic)
	}
	// the ring has wrapped: the two newest samples, oldest first
	tr := r.Status().Revisions.Traffic
	if cs = decode(fmt.Sprintf("/api/status?traffic=%d&instance=%s", tr-2, s.Instance)); len(cs.Traffic.Samples) != 2 ||
		!cs.Traffic.Samples[1].At.Equal(c.now()) || !cs.Traffic.Samples[0].At.Equal(c.now().Add(-time.Second)) {
		t.Fatalf("two samples after a wrap: %+v", cs.Traffic.Samples)
	}
	// a traffic revision ahead of the recorder's: the whole ring, no since
	if cs = decode("/api/status?traffic=999&instance=" + s.Instance); len(cs.Traffic.Samples) != 5 || cs.Traffic.Since != nil {
		t.Fatalf("traffic revision ahead: %+v", cs.Traffic)
	}

	// another instance's revisions (a restart, another replica): whole
	q := url.Values{"instance": {"another"}}
	for _, p := range Parts() {
		q.Set(p, strconv.FormatInt(r.Status().Revisions.part(p), 10))
	}
	if ks, _ := keys(t, body("/api/status?"+q.Encode())); ks != wholeKeys {
		t.Fatalf("another instance's revisions: keys %s", ks)
	}
	other, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if other.Status().Instance == r.Status().Instance {
		t.Fatal("two recorders share an instance")
	}
}

// TestConditionalQuery: a query /api/status cannot read is 400 with a
// one-line reason naming the parameter.
func TestConditionalQuery(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Handler()
	inst := r.Status().Instance
	for query, want := range map[string]string{
		"model=abc&instance=" + inst:              "model=\"abc\" is not a revision",
		"model=-1&instance=" + inst:               "model=\"-1\" is not a revision",
		"analysis=1.5&instance=" + inst:           "analysis=\"1.5\" is not a revision",
		"traffic=99999999999999999999&instance=x": "traffic=",
		"model=1&model=2&instance=" + inst:        "model is given 2 times",
		"model=1":                                 "need the instance",
		"instance=":                               "instance must be given once",
		"instance=a&instance=b":                   "instance must be given once",
		"dead_letters=" + strings.Repeat("9x", 100) + "&instance=x": "…",
	} {
		w := get(t, h, "GET", "/api/status?"+query)
		b := w.Body.String()
		if w.Code != http.StatusBadRequest || !strings.Contains(b, want) || strings.Count(b, "\n") != 1 || len(b) > 200 {
			t.Errorf("?%s: %d %q, want 400 with %q on one line", query, w.Code, b, want)
		}
	}
	// an instance alone, or parameters of no meaning here, are no error
	for _, query := range []string{"instance=" + inst, "instance=gone", "rev=3", "x=1&x=2"} {
		if w := get(t, h, "GET", "/api/status?"+query); w.Code != 200 {
			t.Errorf("?%s: %d %s", query, w.Code, w.Body)
		}
	}
}

// TestConditionalPollSize: the page's steady-state poll is a small
// document whose size does not grow with the model's classes and
// features or the analysis' features: a model of 10,000 long class names
// and 1,000 features with a 1,000-feature analysis costs the same bytes
// per poll as a 4-feature model with a 3-feature analysis.
func TestConditionalPollSize(t *testing.T) {
	size := func(m *scoring.Model, d *report.Dependence) (first, steady int) {
		met := pipeline.NewMetrics()
		c := &clock{t: time.Unix(5000, 0).UTC()}
		r, err := New(Options{Gatherer: met.Registry, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		r.ModelLive(m, "trained")
		r.Analysis(1, d)
		for i := 0; i < 600; i++ {
			c.add(time.Second)
			met.RowsIn.WithLabelValues("features").Add(1000)
			met.CommitLag.WithLabelValues("features", "0").Set(7)
			r.Sample()
		}
		h := r.Handler()
		w := get(t, h, "GET", "/api/status")
		var s Status
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		q := url.Values{"instance": {s.Instance}}
		for _, p := range Parts() {
			q.Set(p, strconv.FormatInt(s.Revisions.part(p), 10))
		}
		c.add(time.Second)
		met.RowsIn.WithLabelValues("features").Add(1000)
		r.Sample()
		w2 := get(t, h, "GET", "/api/status?"+q.Encode())
		return w.Body.Len(), w2.Body.Len()
	}
	smallFirst, small := size(model(t, 1, 5), wideAnalysis(3))
	bigFirst, big := size(testmodel.Wide(t, 1, 10000, 1000), wideAnalysis(1000))
	t.Logf("bytes per poll: small model %d first, %d steady; 10,000 classes × 1,000 features %d first, %d steady", smallFirst, small, bigFirst, big)
	if big != small || big > 2048 || bigFirst < 4e6 {
		t.Fatalf("steady-state poll %d bytes for the large model, %d for the small one (want equal, ≤ 2 kB); first poll %d", big, small, bigFirst)
	}
}

// FuzzStatusQuery: any query to /api/status is answered with the JSON
// document of this instance (200) or one line saying what is wrong with
// the query (400), never a panic or another status.
func FuzzStatusQuery(f *testing.F) {
	r, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	inst := r.Status().Instance
	for _, q := range []string{"", "instance=" + inst + "&model=0&history=0&traffic=0&dead_letters=0&analysis=0",
		"instance=x&model=1", "model=1", "instance=&model=", "traffic=-1&instance=" + inst, "%zz", "a=b;c", "instance=" + inst + "&traffic=5"} {
		f.Add(q)
	}
	h := r.Handler()
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/api/status", nil)
		req.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		b := w.Body.String()
		switch w.Code {
		case http.StatusOK:
			var doc map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
				t.Fatalf("?%s: 200 with a body that is not JSON: %v", query, err)
			}
			if doc["instance"] != inst {
				t.Fatalf("?%s: instance %v", query, doc["instance"])
			}
		case http.StatusBadRequest:
			if strings.Count(b, "\n") != 1 || len(b) > 300 {
				t.Fatalf("?%s: 400 %q is not one short line", query, b)
			}
		default:
			t.Fatalf("?%s: status %d %q", query, w.Code, b)
		}
	})
}

// TestHistoryChartIntegerVersions: the history chart's x axis (model
// versions) is labelled at whole versions only — versions 1..10 drew
// ticks at 3.25, 5.5 and 7.75.
func TestHistoryChartIntegerVersions(t *testing.T) {
	r, err := New(Options{History: 10})
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(1); v <= 10; v++ {
		r.ModelLive(model(t, v, 5), "trained")
	}
	b, err := r.Chart("history")
	if err != nil {
		t.Fatal(err)
	}
	labels := regexp.MustCompile(`<text x="[0-9.]+" y="[0-9.]+" text-anchor="middle">([^<]*)</text>`).FindAllStringSubmatch(string(b), -1)
	var got []string
	for _, m := range labels {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != "1,4,7,10" {
		t.Fatalf("x labels %q, want 1,4,7,10:\n%s", got, b)
	}
}

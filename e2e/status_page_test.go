package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/pipeline"
)

// evilName is a feature name that runs a script if any page puts it into
// markup unescaped.
const evilName = `<img src=x onerror=alert(1)>`

// startRowProducer produces a JSON-lines message of rowsPer rows (row(id)
// for consecutive ids) to topic every interval until stopped.
func startRowProducer(t *testing.T, brokers, topic string, rowsPer int, interval time.Duration, row func(id int) string) *producer {
	t.Helper()
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: kafka.ClientOptions{Brokers: []string{brokers}},
		Topics: map[string]string{"t": topic}, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr := &producer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		defer sink.Close()
		next := 0
		for ctx.Err() == nil {
			var b strings.Builder
			for r := 0; r < rowsPer; r++ {
				b.WriteString(row(next + r))
				b.WriteByte('\n')
			}
			out := []pipeline.Output{{Stream: "t", Raw: []byte(b.String()),
				Headers: []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeNDJSON)}}}}
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			if sink.Write(wctx, out) == nil {
				next += rowsPer
			}
			wcancel()
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	t.Cleanup(pr.stop)
	return pr
}

// statusRow is a row with features f0, the evil name and f2 (f0 carries
// the label y = id mod 2) and, when labelled, y.
func statusRow(id int, labelled bool) string {
	evil, _ := json.Marshal(evilName)
	s := fmt.Sprintf(`{"id": %d, "f0": %g, %s: %g, "f2": %d`, id, float64(id%2)*2+float64(id%7)/10, evil, float64(id*7%13)/4, id%5)
	if labelled {
		s += fmt.Sprintf(`, "y": %d`, id%2)
	}
	return s + "}"
}

func apiStatus(t *testing.T, ops string) status.Status {
	t.Helper()
	resp, err := http.Get("http://" + ops + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s status.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// pageFacts is what the status page shows, read from its DOM.
type pageFacts struct {
	Version   string   `json:"version"`
	ID        string   `json:"id"`
	Trees     string   `json:"trees"`
	Features  string   `json:"features"`
	Rows      string   `json:"rows"`
	Bars      int      `json:"bars"`
	BarLabels []string `json:"barLabels"`
	DLTotal   string   `json:"dlTotal"`
	DLRows    []string `json:"dlRows"`
	DLReasons []string `json:"dlReasons"`
	Imgs      int      `json:"imgs"`
	Ready     string   `json:"ready"`
	Revision  string   `json:"revision"`
	Kind      string   `json:"kind"`
	Classes   string   `json:"classes"`
}

const readPage = `(() => {
  const t = id => document.getElementById(id).textContent;
  const bars = Array.from(document.querySelectorAll('#chart-importances rect.bar'));
  return {
    version: t('model-version'), id: t('model-id'), trees: t('model-trees'), features: t('model-features'),
    rows: t('model-training-rows'), bars: bars.length, barLabels: bars.map(b => b.getAttribute('data-label')),
    dlTotal: t('dl-total'), dlRows: Array.from(document.querySelectorAll('#dl-last tbody tr')).map(r => r.textContent),
    dlReasons: Array.from(document.querySelectorAll('#dl-reasons tbody tr')).map(r => r.textContent),
    imgs: document.getElementsByTagName('img').length, ready: t('ready'),
    revision: document.body.getAttribute('data-model-revision') || '',
    kind: t('model-kind'), classes: t('model-classes')
  };
})()`

// TestStatusPageBrowser: a daemon scores and retrains on the embedded
// broker while headless chromium shows its status page. The page shows the
// live model as /api/status does, and a newer version after a hot swap
// without a reload; the importance chart has one bar per feature; a dead
// letter appears with its reason; after its first poll the page asks
// with the revisions it holds and shows the model /api/status then leaves
// out; the feature named <img src=x
// onerror=alert(1)> is text (no <img> in the page, no dialog); nothing is
// logged as an error in the console. Screenshots go to FORESTD_SCREENSHOTS
// (or the test's temporary directory).
func TestStatusPageBrowser(t *testing.T) {
	t.Parallel()
	needKcat(t)
	br := newBrowser(t)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--stages", "train,score", "--output-format", "json", "--key", "id", "--label", "y",
		"--exclude", "id", "--retrain-every", "400", "--window", "2000", "--min-rows", "200", "--trees", "10")
	train := startRowProducer(t, brokers, "forestd.training", 50, 40*time.Millisecond, func(id int) string { return statusRow(id, true) })
	score := startRowProducer(t, brokers, featuresTopic, 20, 50*time.Millisecond, func(id int) string { return statusRow(id, false) })
	waitCond(t, 90*time.Second, "a first model", func() bool { return d.metric("forestd_model_version") >= 1 })
	br.run(t, 30*time.Second, chromedp.Navigate("http://"+d.ops+"/"), chromedp.WaitVisible("#model-version"))

	// the page shows what /api/status says, the model's features as bars
	var pf pageFacts
	var s status.Status
	waitCond(t, 30*time.Second, "the page to show the live model as /api/status does", func() bool {
		s = apiStatus(t, d.ops)
		br.eval(t, readPage, &pf)
		return s.Model != nil && pf.Version == strconv.FormatInt(s.Model.Version, 10) && pf.ID == s.Model.ID && pf.Bars == len(s.Model.Features)
	})
	if pf.Trees != "10" || pf.Features != "3" || pf.Rows != strconv.Itoa(*s.Model.TrainingRows) || *s.Model.TrainingRows < 200 {
		t.Fatalf("page shows %+v; /api/status model %+v", pf, s.Model)
	}
	if strings.Join(pf.BarLabels, "|") == "" || !contains(pf.BarLabels, evilName) || !contains(pf.BarLabels, "f0") || !contains(pf.BarLabels, "f2") {
		t.Fatalf("importance bars %q, want one per feature (f0, %s, f2)", pf.BarLabels, evilName)
	}
	first := pf.Version
	br.screenshot(t, "status-page-first.png")

	// a hot swap shows without a reload: the page's document is the same
	// (a marker set on window survives) and the version moves on
	br.run(t, 5*time.Second, chromedp.Evaluate(`window.__sameDocument = true`, nil))
	waitCond(t, 90*time.Second, "a hot swap", func() bool {
		v := d.metric("forestd_model_version")
		return v >= 1 && strconv.Itoa(int(v)) != first
	})
	var same bool
	waitCond(t, 30*time.Second, "the page to show the new version", func() bool {
		s = apiStatus(t, d.ops)
		br.eval(t, readPage, &pf)
		return pf.Version != first && pf.Version == strconv.FormatInt(s.Model.Version, 10) && pf.ID == s.Model.ID
	})
	br.eval(t, `window.__sameDocument === true`, &same)
	if !same {
		t.Fatal("the page was reloaded to show the new model")
	}
	if len(s.History) < 2 {
		t.Fatalf("history %+v after a swap", s.History)
	}

	// a dead letter appears with its reason and source coordinates
	kcatProduce(t, brokers, featuresTopic, nil, []byte("\x00\x01 not a record \xfe"))
	waitCond(t, 60*time.Second, "the dead letter on the page", func() bool {
		br.eval(t, readPage, &pf)
		return pf.DLTotal == "1" && len(pf.DLRows) == 1 && len(pf.DLReasons) == 1
	})
	s = apiStatus(t, d.ops)
	dl := s.DeadLetters.Last[0]
	if !strings.Contains(pf.DLRows[0], dl.Source) || !strings.Contains(pf.DLRows[0], "decode") || !strings.Contains(pf.DLRows[0], "no content-type header") ||
		!strings.HasPrefix(dl.Source, featuresTopic+"/") || s.DeadLetters.ByStage["decode"] != 1 || s.DeadLetters.ByReason["undecodable"] != 1 || dl.Kind != "undecodable" {
		t.Fatalf("dead letter row %q; /api/status %+v", pf.DLRows[0], s.DeadLetters)
	}
	if pf.DLReasons[0] != "undecodable1" {
		t.Fatalf("dead letters by reason on the page: %q", pf.DLReasons)
	}
	train.stop()
	score.stop()

	// after its first poll the page sends the instance and the revisions
	// it holds; asked so, /api/status leaves the unchanged model out, and
	// the page still shows it
	br.eval(t, `performance.clearResourceTimings()`, nil)
	var held url.Values
	waitCond(t, 30*time.Second, "the page to poll with the model revision it holds", func() bool {
		s = apiStatus(t, d.ops)
		var urls []string
		br.eval(t, `performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/api/status?'))`, &urls)
		for _, u := range urls {
			if pu, err := url.Parse(u); err == nil && pu.Query().Get("instance") == s.Instance && pu.Query().Get("model") == strconv.FormatInt(s.Revisions.Model, 10) {
				held = pu.Query()
				return true
			}
		}
		return false
	})
	resp, err := http.Get("http://" + d.ops + "/api/status?" + held.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if _, ok := doc["model"]; err != nil || ok || !strings.Contains(string(doc["unchanged"]), `"model"`) {
		t.Fatalf("/api/status?%s: %v, unchanged %s, model sent %v", held.Encode(), err, doc["unchanged"], ok)
	}
	br.eval(t, readPage, &pf)
	classes := "–" // y is numbers: a regression
	if len(s.Model.Classes) > 0 {
		classes = strconv.Itoa(len(s.Model.Classes))
	}
	if pf.Version != strconv.FormatInt(s.Model.Version, 10) || pf.Kind != s.Model.Kind || pf.Classes != classes || pf.Features != "3" || pf.ID != s.Model.ID {
		t.Fatalf("page shows %+v while polling without the model; /api/status model %+v", pf, s.Model)
	}

	// the evil feature name stayed text everywhere
	var evilTexts int
	br.eval(t, `Array.from(document.querySelectorAll('svg text')).filter(e => e.textContent === `+strconv.Quote(evilName)+`).length`, &evilTexts)
	if pf.Imgs != 0 || evilTexts == 0 || len(br.dialogsSeen()) > 0 {
		t.Fatalf("feature %q: %d <img> elements, %d SVG texts, dialogs %q", evilName, pf.Imgs, evilTexts, br.dialogsSeen())
	}
	if p := br.problems(); len(p) > 0 {
		t.Fatalf("the page logged errors: %q", p)
	}
	br.screenshot(t, "status-page.png")
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("daemon exit %d", code)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestReportBrowser: forestd report's HTML files render in chromium
// without console errors or scripts, with the expected SVG elements: a
// confusion matrix of k × k cells and one importance bar per feature for a
// model evaluated on iris, a heatmap cell per pixel for a MORF model on
// the digits, and one p-value bar per feature and the group graph for an
// analysis.
func TestReportBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(forestdBin(t), args...).CombinedOutput(); err != nil {
			t.Fatalf("forestd %v: %v\n%s", args, err, out)
		}
	}
	iris := filepath.Join(dataDir, "iris.parquet")
	run("train", "--in", iris, "--label", "label", "--out", filepath.Join(dir, "iris.model"), "--trees", "20")
	run("report", "--model", filepath.Join(dir, "iris.model"), "--in", iris, "--out", filepath.Join(dir, "iris.html"))
	digits := filepath.Join(dataDir, "digits.parquet")
	run("train", "--in", digits, "--label", "label", "--forest", "morf", "--grid", "8x8",
		"--out", filepath.Join(dir, "digits.model"), "--trees", "10")
	run("report", "--model", filepath.Join(dir, "digits.model"), "--out", filepath.Join(dir, "digits.html"))
	run("analyze", "--in", filepath.Join(dataDir, "breast_cancer.parquet"), "--label", "label", "--max-perms", "200", "--out", filepath.Join(dir, "an.arrow"))
	run("report", "--analysis", filepath.Join(dir, "an.arrow"), "--out", filepath.Join(dir, "an.html"))

	count := func(file, sel string) int {
		t.Helper()
		var n int
		br.run(t, 30*time.Second, chromedp.Navigate("file://"+filepath.Join(dir, file)), chromedp.WaitReady("body"),
			chromedp.Evaluate(`document.querySelectorAll(`+strconv.Quote(sel)+`).length`, &n))
		return n
	}
	var scripts int
	if n := count("iris.html", "svg.confusion rect.cell"); n != 9 {
		t.Fatalf("iris confusion matrix: %d cells, want 9", n)
	}
	if n := count("iris.html", "svg.importances:first-of-type rect.bar"); n != 4 {
		t.Fatalf("iris importances: %d bars, want 4", n)
	}
	br.eval(t, `document.scripts.length`, &scripts)
	br.screenshot(t, "report-model.png")
	if n := count("digits.html", "svg.heatmap rect.cell"); n == 0 || n%64 != 0 {
		t.Fatalf("digits heatmaps: %d cells, want 64 per importance kind", n)
	}
	feats := count("an.html", "table.features tr") - 1
	if n := count("an.html", "svg.pvalues rect.bar"); n != min(feats, 40) || feats < 2 {
		t.Fatalf("analysis: %d p-value bars for %d features", n, feats)
	}
	if n := count("an.html", "svg.groups circle.label-node"); n != 1 {
		t.Fatalf("analysis: %d label nodes in the graph", n)
	}
	br.screenshot(t, "report-analysis.png")
	if p := br.problems(); len(p) > 0 || scripts != 0 {
		t.Fatalf("the reports logged errors %q (%d scripts)", p, scripts)
	}
}

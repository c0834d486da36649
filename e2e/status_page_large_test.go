package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/internal/testmodel"
)

// apiPoll is one /api/status request the page made: its query, the bytes
// of the answer on the wire and whether they were gzipped.
type apiPoll struct {
	query url.Values
	bytes int
	gzip  bool
}

type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

// TestStatusPageLargeModelBrowser: headless chromium on the status page of
// an in-process recorder whose live model has 10,000 long class names and
// 1,000 features, with a 1,000-feature analysis. The first poll is the
// whole document (4.3 MB, gzipped on the wire); every later one sends the instance and the
// revisions the page holds and is answered in under 2 kB without the
// model, while the page still shows the model (version, forest, 10,000
// classes, 1,000 features) and does not redraw the unchanged analysis
// table, which shows 50 of its 1,000 rows and a note of the rest. A hot
// swap reaches the page through the same polls; a restarted daemon (a new
// recorder, another instance, behind the same address) gets the page a
// whole document and its own model, and no analysis.
func TestStatusPageLargeModelBrowser(t *testing.T) {
	t.Parallel()
	br := newBrowser(t)
	newRecorder := func() *status.Recorder {
		r, err := status.New(status.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := newRecorder()
	r.ModelLive(testmodel.Wide(t, 1, 10000, 1000), "trained")
	d := &report.Dependence{Stat: "gcor", Method: "marginal", Alpha: 0.05, Adjust: "bh", Rows: 1000}
	for j := 0; j < 1000; j++ {
		d.Features = append(d.Features, report.DependenceFeature{Name: fmt.Sprintf("feature_%04d", j), Group: -1, Kind: "marginal",
			Statistic: 0.1, PValue: 0.001, Adjusted: 0.002})
	}
	r.Analysis(1, d)

	var handler atomic.Pointer[http.Handler]
	h := r.Handler()
	handler.Store(&h)
	var mu sync.Mutex
	var polls []apiPoll
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		(*handler.Load()).ServeHTTP(cw, req)
		if req.URL.Path == "/api/status" {
			mu.Lock()
			polls = append(polls, apiPoll{query: req.URL.Query(), bytes: cw.n, gzip: cw.Header().Get("Content-Encoding") == "gzip"})
			mu.Unlock()
		}
	}))
	defer srv.Close()
	pollsSince := func(i int) []apiPoll {
		mu.Lock()
		defer mu.Unlock()
		if i > len(polls) {
			return nil
		}
		return append([]apiPoll(nil), polls[i:]...)
	}

	type facts struct {
		Version, Kind, Classes, Features, More string
		Marginal                               int
		Same                                   bool
	}
	const read = `(() => {
  const t = id => document.getElementById(id).textContent;
  const rows = Array.from(document.querySelectorAll('#marginal tbody tr'));
  const first = rows[0];
  return {Version: t('model-version'), Kind: t('model-kind'), Classes: t('model-classes'), Features: t('model-features'),
    More: rows.length ? rows[rows.length - 1].textContent : '', Marginal: rows.length, Same: !!(first && first.__mark)};
})()`
	var f facts
	br.run(t, 30*time.Second, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#model-version"))
	waitCond(t, 30*time.Second, "the page to show the large model and analysis", func() bool {
		br.eval(t, read, &f)
		return f.Classes == "10000"
	})
	if f.Version != "1" || f.Kind != "rf" || f.Features != "1000" || f.Marginal != 51 || f.More != "… and 950 more (all in /api/status)" {
		t.Fatalf("page shows %+v; want version 1, rf, 10000 classes, 1000 features, 50 marginal rows and a note of 950 more", f)
	}
	// mark the analysis table's first row: an unchanged analysis is not redrawn
	br.eval(t, `document.querySelector('#marginal tbody tr').__mark = true`, nil)
	start := len(pollsSince(0))
	waitCond(t, 20*time.Second, "three polls after the first", func() bool { return len(pollsSince(start)) >= 3 })
	all := pollsSince(0)
	// the whole document (4.3 MB of JSON) crosses gzipped: Chromium asks
	// for gzip, and the repeated class names compress to about 54 kB
	if len(all[0].query) != 0 || !all[0].gzip || all[0].bytes < 20e3 || all[0].bytes > 200e3 {
		t.Fatalf("first poll %v, %d bytes, gzip %v: want the whole document, gzipped to 20–200 kB", all[0].query, all[0].bytes, all[0].gzip)
	}
	inst := r.Status().Instance
	for _, p := range pollsSince(start) {
		if p.query.Get("instance") != inst || p.query.Get("model") != "1" || p.query.Get("analysis") != "1" || p.query.Get("history") != "1" ||
			p.query.Get("dead_letters") != "0" || p.query.Get("traffic") != "0" || p.bytes > 2048 {
			t.Fatalf("steady-state poll %v, %d bytes: want the held revisions of instance %s and under 2 kB", p.query, p.bytes, inst)
		}
	}
	br.eval(t, read, &f)
	if f.Version != "1" || f.Kind != "rf" || f.Classes != "10000" || f.Features != "1000" || f.Marginal != 51 || !f.Same {
		t.Fatalf("after polls without the model the page shows %+v", f)
	}
	t.Logf("bytes per poll: first %d, then %d", all[0].bytes, pollsSince(start)[0].bytes)
	br.screenshot(t, "status-page-large.png")

	// a hot swap: the next poll carries the new model, later ones hold it
	r.ModelLive(testmodel.Wide(t, 2, 3, 1000), "model topic")
	waitCond(t, 20*time.Second, "the page to show the swapped model", func() bool {
		br.eval(t, read, &f)
		return f.Version == "2"
	})
	if f.Classes != "3" || !f.Same {
		t.Fatalf("after the swap the page shows %+v (want 3 classes, the analysis table not redrawn)", f)
	}
	start = len(pollsSince(0))
	waitCond(t, 20*time.Second, "a poll holding the swapped model", func() bool {
		for _, p := range pollsSince(start) {
			if p.query.Get("model") == "2" {
				return true
			}
		}
		return false
	})

	// a restarted daemon behind the same address: another instance, whose
	// revisions start over; the page gets the whole document and shows it
	r2 := newRecorder()
	r2.ModelLive(testmodel.Wide(t, 7, 5, 10), "seed file m.model")
	h2 := r2.Handler()
	start = len(pollsSince(0))
	handler.Store(&h2)
	waitCond(t, 20*time.Second, "the page to show the restarted daemon's model", func() bool {
		br.eval(t, read, &f)
		return f.Version == "7"
	})
	if f.Classes != "5" || f.Features != "10" || f.Marginal != 0 {
		t.Fatalf("after the restart the page shows %+v (want 5 classes, 10 features, no analysis)", f)
	}
	waitCond(t, 20*time.Second, "a poll holding the restarted daemon's revisions", func() bool {
		for _, p := range pollsSince(start) {
			if p.query.Get("instance") == r2.Status().Instance && p.query.Get("model") == "1" {
				return true
			}
		}
		return false
	})
	if p := br.problems(); len(p) > 0 {
		t.Fatalf("the page logged errors: %q", p)
	}
}

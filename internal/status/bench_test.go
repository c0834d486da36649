package status

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/forestd/forestd/internal/testmodel"
	"github.com/forestd/forestd/pipeline"
)

// BenchmarkPollSecond is the daemon's CPU cost of one second of a browser
// watching the status page, on a full traffic window: the page's script
// fetches /api/status every second with the revisions it holds (after a
// first, whole document) and redraws the charts whose part of the status
// changed — with traffic flowing, the three traffic charts (rows,
// latency, lag) every second. One op is that second's requests, served by
// Handler to an in-process recorder. ns/op ÷ 1e9 is the share of
// one core the page costs; the end-to-end counterpart is e2e's
// BenchmarkServeStatusOverhead, whose ratio a shared machine makes noisy.
//
//	go test ./internal/status -run '^$' -bench PollSecond
func BenchmarkPollSecond(b *testing.B) {
	m := pipeline.NewMetrics()
	c := &clock{t: time.Unix(1000, 0)}
	r, err := New(Options{Gatherer: m.Registry, Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	r.ModelLive(model(t, 1, 50), "bench")
	for i := 0; i < 20; i++ {
		r.DeadLetter("features", int32(i%4), int64(i), "score", "missing_column", fmt.Sprintf("column f%d is missing", i))
	}
	// a full 10-minute window of samples on four partitions
	for s := 0; s <= 600; s++ {
		c.add(time.Second)
		m.RowsIn.WithLabelValues("features").Add(100000)
		m.RowsOut.WithLabelValues("predictions").Add(100000)
		for k := 0; k < 100; k++ {
			m.BatchLatency.WithLabelValues("score").Observe(0.002 + 0.0001*float64(k%7))
			m.EndToEnd.Observe(0.01 + 0.001*float64(k%5))
		}
		for p := 0; p < 4; p++ {
			m.CommitLag.WithLabelValues("features", fmt.Sprint(p)).Set(float64(s % 50))
		}
		r.Sample()
	}
	cl := getter(b, r.Handler())
	pg := &page{}
	pg.read(b, cl.get(pg.url()))
	cl.wire = 0
	b.ReportAllocs()
	b.ResetTimer()
	bytes := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.add(time.Second)
		m.RowsIn.WithLabelValues("features").Add(100000)
		r.Sample() // the daemon samples whether or not anyone looks
		b.StartTimer()
		doc := cl.get(pg.url())
		bytes += len(doc)
		for _, chart := range []string{"rows", "latency", "lag"} {
			bytes += len(cl.get("/status/chart/" + chart + ".svg"))
		}
		b.StopTimer()
		pg.read(b, doc) // the browser's work
		b.StartTimer()
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/poll")
	b.ReportMetric(float64(cl.wire)/float64(b.N), "wire_bytes/poll")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9*100, "%core")
}

// page holds what the page's script holds between polls: the instance
// and the revisions of the parts it has (nothing before the first poll,
// or when it polls as it did before the revisions: whole).
type page struct {
	whole    bool
	instance string
	rev      Revisions
}

// url is the page's next /api/status request.
func (p *page) url() string {
	if p.whole || p.instance == "" {
		return "/api/status"
	}
	q := url.Values{"instance": {p.instance}}
	for _, part := range Parts() {
		q.Set(part, strconv.FormatInt(p.rev.part(part), 10))
	}
	return "/api/status?" + q.Encode()
}

// read takes a document's instance and revisions.
func (p *page) read(tb testing.TB, doc []byte) {
	var s Status
	if err := json.Unmarshal(doc, &s); err != nil {
		tb.Fatal(err)
	}
	p.instance, p.rev = s.Instance, s.Revisions
}

// BenchmarkPollLargeModel is the bytes of the page's /api/status poll,
// each second of a full traffic window, with a live model of 10,000
// classes of about 380-byte names and 1,000 features and an analysis of
// 1,000 features: whole (the page before it held revisions, and any
// client without a query) and held (the page: after its first document,
// the instance and the revisions it holds, so the model, history, dead
// letters and analysis are left out while unchanged and one traffic
// sample comes per second). The held poll's bytes do not depend on the
// model or the analysis (TestConditionalPollSize).
//
//	go test ./internal/status -run '^$' -bench PollLargeModel -benchtime 20x
func BenchmarkPollLargeModel(b *testing.B) {
	for _, mode := range []string{"whole", "held"} {
		b.Run(mode, func(b *testing.B) {
			m := pipeline.NewMetrics()
			c := &clock{t: time.Unix(1000, 0)}
			r, err := New(Options{Gatherer: m.Registry, Now: c.now})
			if err != nil {
				b.Fatal(err)
			}
			r.ModelLive(testmodel.Wide(b, 1, 10000, 1000), "bench")
			r.Analysis(1, wideAnalysis(1000))
			for i := 0; i < 20; i++ {
				r.DeadLetter("features", int32(i%4), int64(i), "score", "missing_column", fmt.Sprintf("column f%d is missing", i))
			}
			sample := func() {
				c.add(time.Second)
				m.RowsIn.WithLabelValues("features").Add(100000)
				m.RowsOut.WithLabelValues("predictions").Add(100000)
				for p := 0; p < 4; p++ {
					m.CommitLag.WithLabelValues("features", fmt.Sprint(p)).Set(float64(p))
				}
				r.Sample()
			}
			for s := 0; s <= 600; s++ {
				sample()
			}
			cl := getter(b, r.Handler())
			pg := &page{whole: mode == "whole"}
			first := cl.get(pg.url())
			firstWire := cl.wire
			cl.wire = 0
			pg.read(b, first)
			b.ReportAllocs()
			b.ResetTimer()
			bytes := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sample()
				b.StartTimer()
				doc := cl.get(pg.url())
				bytes += len(doc)
				b.StopTimer()
				pg.read(b, doc)
				b.StartTimer()
			}
			b.ReportMetric(float64(len(first)), "first_bytes")
			b.ReportMetric(float64(firstWire), "first_wire_bytes")
			b.ReportMetric(float64(bytes)/float64(b.N), "bytes/poll")
			b.ReportMetric(float64(cl.wire)/float64(b.N), "wire_bytes/poll")
		})
	}
}

// client GETs paths from a handler as the page's browser does (asking
// for gzip), fails b unless the answer is 200, returns the decoded body
// (decoded off the timer) and counts the bytes that crossed the wire.
type client struct {
	b    *testing.B
	h    http.Handler
	wire int
}

func getter(b *testing.B, h http.Handler) *client { return &client{b: b, h: h} }

func (c *client) get(path string) []byte {
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	c.h.ServeHTTP(w, req)
	if w.Code != 200 {
		c.b.Fatalf("%s: %d %s", path, w.Code, w.Body)
	}
	c.wire += w.Body.Len()
	if w.Header().Get("Content-Encoding") != "gzip" {
		return w.Body.Bytes()
	}
	c.b.StopTimer() // decoding is the browser's work
	defer c.b.StartTimer()
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		c.b.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		c.b.Fatal(err)
	}
	return body
}

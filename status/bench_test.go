package status

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/forestd/forestd/pipeline"
)

// BenchmarkPollSecond is the daemon's CPU cost of one second of a browser
// watching the status page, on a full traffic window: the page's script
// fetches /api/status every second and redraws the charts whose part of
// the status changed — with traffic flowing, the three traffic charts
// (rows, latency, lag) every second. One op is that second's requests,
// served by Handler to an in-process recorder. ns/op ÷ 1e9 is the share of
// one core the page costs; the end-to-end counterpart is e2e's
// BenchmarkServeStatusOverhead, whose ratio a shared machine makes noisy.
//
//	go test ./status -run '^$' -bench PollSecond
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
	h := r.Handler()
	get := func(path string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		n, _ := io.Copy(io.Discard, w.Body)
		return int(n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	bytes := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.add(time.Second)
		m.RowsIn.WithLabelValues("features").Add(100000)
		r.Sample() // the daemon samples whether or not anyone looks
		b.StartTimer()
		bytes += get("/api/status")
		for _, chart := range []string{"rows", "latency", "lag"} {
			bytes += get("/status/chart/" + chart + ".svg")
		}
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/poll")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9*100, "%core")
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/internal/status"
)

// BenchmarkServeStatusOverhead measures what the status page costs the
// daemon: the end-to-end rate of BenchmarkServeEndToEnd's backlog (a
// 100-tree forest on 50-feature Trunk rows, 200 batches of 1000 rows)
// with nobody looking at the page, and with a client polling it as the
// page's script does (GET / once, then every second /api/status with the
// revisions it holds and each chart whose part of the status changed). Rounds alternate the two modes
// (seven each, on one broker, each round with fresh topics and group);
// the medians and their ratio are reported.
//
// Run it alone, once: go test ./e2e -run '^$' -bench ServeStatusOverhead -benchtime 1x
// Target: polled/unpolled ≥ 0.98.
func BenchmarkServeStatusOverhead(b *testing.B) {
	const (
		p       = 50
		batch   = 1000
		batches = 200
		trees   = 100
		rounds  = 7
	)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		tr, model := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "m.model")
		benchRun(b, "gen", "trunk", "--n", "10000", "--p", strconv.Itoa(p), "--seed", "1", "--out", tr)
		benchRun(b, "train", "--in", tr, "--label", "y", "--out", model, "--trees", strconv.Itoa(trees), "--seed", "2")
		recs := make([]arrow.Record, batches)
		for k := range recs {
			recs[k] = withID(wideRecord(k, batch, p), int64(k))
		}
		brokerProc := startProc(b, "broker", "broker", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "broker"), "--log-format", "json")
		brokers := brokerProc.logField("broker listening", "addr", 20*time.Second)
		rates := map[bool][]float64{}
		for r := 0; r < 2*rounds; r++ {
			poll := r%2 == 1
			rate := backlogRate(b, brokers, model, recs, fmt.Sprint("r", r), poll)
			rates[poll] = append(rates[poll], rate)
			fmt.Fprintf(os.Stderr, "status overhead round %d: polled=%v %.0f rows/s\n", r, poll, rate)
		}
		brokerProc.kill()
		for _, rec := range recs {
			rec.Release()
		}
		without, with := median(rates[false]), median(rates[true])
		b.ReportMetric(without, "unpolled_rows/s")
		b.ReportMetric(with, "polled_rows/s")
		b.ReportMetric(with/without, "ratio_polled")
		fmt.Fprintf(os.Stderr, "status page overhead: end to end %.0f rows/s unpolled, %.0f rows/s polled once a second (median of %d rounds each): ratio %.3f\n",
			without, with, rounds, with/without)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// backlogRate produces the batches to fresh topics, starts a daemon that
// scores them (optionally with a client polling its status page) and
// returns rows per second from the group join to the last prediction.
func backlogRate(b *testing.B, brokers, model string, recs []arrow.Record, tag string, poll bool) float64 {
	b.Helper()
	features, predictions := "feat."+tag, "pred."+tag
	_, seen, stop := startBacklog(b, brokers, features, predictions, recs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := startProc(b, "serve", "serve", "--brokers", brokers, "--model", model, "--stages", "score", "--key", "id",
		"--topic", "features="+features, "--topic", "predictions="+predictions, "--group", "g."+tag,
		"--http", "127.0.0.1:0", "--log-format", "json", "--session-timeout", "2s", "--commit-interval", "100ms")
	ops := d.logField("ops endpoint listening", "addr", 30*time.Second)
	d.logField("joined consumer group generation", "generation", 60*time.Second)
	start := time.Now()
	if poll {
		go pollStatusPage(ctx, "http://"+ops)
	}
	last := seen.wait(b, len(recs), 120*time.Second)
	cancel()
	stop()
	d.kill()
	rows := 0
	for _, r := range recs {
		rows += int(r.NumRows())
	}
	return float64(rows) / last.Sub(start).Seconds()
}

// pollStatusPage does what the page's script does until ctx ends: the
// page once, then every second /api/status (with the instance and the
// revisions of the previous document) and the charts whose part of the
// status changed.
func pollStatusPage(ctx context.Context, base string) {
	get := func(path string) []byte {
		req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if err != nil {
			return nil
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	get("/")
	get("/status/status.js")
	get("/status/status.css")
	parts := map[string]func(status.Revisions) int64{
		"importances": func(r status.Revisions) int64 { return r.Model }, "history": func(r status.Revisions) int64 { return r.History },
		"rows": func(r status.Revisions) int64 { return r.Traffic }, "latency": func(r status.Revisions) int64 { return r.Traffic },
		"lag": func(r status.Revisions) int64 { return r.Traffic }, "pvalues": func(r status.Revisions) int64 { return r.Analysis },
		"groups": func(r status.Revisions) int64 { return r.Analysis },
	}
	rev := map[string]int64{}
	query := "" // after the first document: the instance and the revisions held
	for ctx.Err() == nil {
		var s status.Status
		if json.Unmarshal(get("/api/status"+query), &s) == nil {
			q := url.Values{"instance": {s.Instance}}
			for _, v := range []struct {
				part string
				rev  int64
			}{{status.PartModel, s.Revisions.Model}, {status.PartHistory, s.Revisions.History}, {status.PartTraffic, s.Revisions.Traffic},
				{status.PartDeadLetters, s.Revisions.DeadLetters}, {status.PartAnalysis, s.Revisions.Analysis}} {
				q.Set(v.part, strconv.FormatInt(v.rev, 10))
			}
			query = "?" + q.Encode()
			for name, f := range parts {
				if v, ok := rev[name]; !ok || v != f(s.Revisions) {
					rev[name] = f(s.Revisions)
					get("/status/chart/" + name + ".svg")
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

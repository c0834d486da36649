package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// BenchmarkServeEndToEnd is the daemon benchmark of the Kafka issue: a
// 100-tree forest on 50-feature Trunk rows in 1000-row Arrow batches.
//
//  1. Offline: `forestd score` on the same rows and model (reported rate is
//     its scoring-only rows/s, and the command's wall-clock rows/s).
//  2. Maximum rate: the batches are produced first; the daemon starts and
//     scores the backlog; rows/s from readiness to the last prediction the
//     test's consumer receives.
//  3. Latency at half that rate: batches produced at 0.5 × the maximum
//     rate; per batch, produce-to-prediction latency from the produce call
//     to the consumer receiving its prediction; p50 and p99.
//
// Run it alone, once: go test ./e2e -run '^$' -bench ServeEndToEnd -benchtime 1x
// (FORESTD_BENCH_CPUPROFILE=FILE saves a 1 s CPU profile of the daemon
// scoring the backlog).
// Targets: end-to-end ≥ 0.5 × offline scoring; p99 ≤ 250 ms at half rate.
func BenchmarkServeEndToEnd(b *testing.B) {
	const (
		p       = 50
		batch   = 1000
		batches = 200
		trees   = 100
	)
	for i := 0; i < b.N; i++ {
		r := runServeBench(b, p, batch, batches, trees)
		b.ReportMetric(r.offlineScoreRate, "offline_score_rows/s")
		b.ReportMetric(r.offlineWallRate, "offline_wall_rows/s")
		b.ReportMetric(r.e2eRate, "e2e_rows/s")
		b.ReportMetric(r.e2eRate/r.offlineScoreRate, "ratio_vs_score")
		b.ReportMetric(r.e2eRate/r.offlineWallRate, "ratio_vs_wall")
		b.ReportMetric(r.p50*1000, "p50_ms")
		b.ReportMetric(r.p99*1000, "p99_ms")
		b.ReportMetric(r.halfRate, "half_rate_rows/s")
	}
}

type benchResult struct {
	offlineScoreRate, offlineWallRate, e2eRate, p50, p99, halfRate float64
}

func runServeBench(b *testing.B, p, batch, batches, trees int) benchResult {
	b.Helper()
	var res benchResult
	dir := b.TempDir()
	// model: Trunk p=50, 10,000 training rows, 100 trees
	tr, model := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "m.model")
	benchRun(b, "gen", "trunk", "--n", "10000", "--p", strconv.Itoa(p), "--seed", "1", "--out", tr)
	benchRun(b, "train", "--in", tr, "--label", "y", "--out", model, "--trees", strconv.Itoa(trees), "--seed", "2")
	// the scored rows, as batches and as one Arrow file
	recs := make([]arrow.Record, batches)
	for i := range recs {
		recs[i] = withID(wideRecord(i, batch, p), int64(i))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	rows := filepath.Join(dir, "rows.arrows")
	if err := files.WriteFile(rows, recs[0].Schema(), recs, files.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	// 1. offline
	t0 := time.Now()
	out := benchRun(b, "score", "--model", model, "--in", rows, "--out", filepath.Join(dir, "p.arrows"))
	wall := time.Since(t0).Seconds()
	var sc map[string]any
	json.Unmarshal([]byte(out), &sc)
	res.offlineScoreRate = sc["rows_per_second"].(float64)
	res.offlineWallRate = float64(batch*batches) / wall

	// 2. maximum rate against a backlog
	brokerProc := startProc(b, "broker", "broker", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "broker"), "--log-format", "json")
	brokers := brokerProc.logField("broker listening", "addr", 20*time.Second)
	sink, seen, stop := startBacklog(b, brokers, featuresTopic, "forestd.predictions", recs)
	defer stop()
	d := startProc(b, "serve", "serve", "--brokers", brokers, "--model", model, "--stages", "score", "--key", "id",
		"--http", "127.0.0.1:0", "--log-format", "json", "--session-timeout", "2s", "--commit-interval", "100ms")
	d.logField("joined consumer group generation", "generation", 60*time.Second)
	start := time.Now()
	if prof := os.Getenv("FORESTD_BENCH_CPUPROFILE"); prof != "" {
		// profile the daemon while it scores the backlog
		ops := d.logField("ops endpoint listening", "addr", time.Second)
		go func() {
			resp, err := http.Get("http://" + ops + "/debug/pprof/profile?seconds=1")
			if err != nil {
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(prof)
			if err == nil {
				io.Copy(f, resp.Body)
				f.Close()
			}
		}()
	}
	last := seen.wait(b, batches, 120*time.Second)
	res.e2eRate = float64(batch*batches) / last.Sub(start).Seconds()

	// 3. latency at half the maximum rate
	res.halfRate = res.e2eRate / 2
	interval := time.Duration(float64(time.Second) * float64(batch) / res.halfRate)
	n := max(20, int(8*time.Second/interval))
	sent := make([]time.Time, n)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		rec := withID(wideRecord(batches+i, batch, p), int64(batches+i))
		sent[i] = time.Now()
		go func(rec arrow.Record, i int) {
			defer rec.Release()
			if err := sink.Write(context.Background(), []pipeline.Output{{Stream: "in", Key: []byte(strconv.Itoa(batches + i)), Record: rec}}); err != nil {
				b.Error(err)
			}
		}(rec, i)
	}
	seen.wait(b, batches+n, 60*time.Second)
	lat := make([]float64, n)
	for i := 0; i < n; i++ {
		lat[i] = seen.at(int64(batches + i)).Sub(sent[i]).Seconds()
	}
	sort.Float64s(lat)
	res.p50 = lat[n/2]
	res.p99 = lat[min(n-1, int(float64(n)*0.99))]
	fmt.Fprintf(os.Stderr, "serve benchmark: offline score %.0f rows/s (wall %.0f); end to end %.0f rows/s = %.2f× offline scoring (%.2f× wall); at %.0f rows/s (%d batches): p50 %.1f ms, p99 %.1f ms\n",
		res.offlineScoreRate, res.offlineWallRate, res.e2eRate, res.e2eRate/res.offlineScoreRate, res.e2eRate/res.offlineWallRate,
		res.halfRate, n, res.p50*1000, res.p99*1000)
	d.kill()
	brokerProc.kill()
	return res
}

// startBacklog creates the features and predictions topics (4
// partitions), produces the batches to features and starts tailing
// predictions; stop closes the sink and the tail.
func startBacklog(b *testing.B, brokers, features, predictions string, recs []arrow.Record) (sink *kafka.Sink, seen *arrivals, stop func()) {
	b.Helper()
	co := kafka.ClientOptions{Brokers: []string{brokers}}
	if err := kafka.EnsureTopics(context.Background(), co, []kafka.TopicSpec{{Name: features, Partitions: 4}, {Name: predictions, Partitions: 4}}); err != nil {
		b.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: co, Topics: map[string]string{"in": features}})
	if err != nil {
		b.Fatal(err)
	}
	produceBatches(b, sink, recs)
	ctx, cancel := context.WithCancel(context.Background())
	return sink, tailArrivals(ctx, co, predictions), func() { cancel(); sink.Close() }
}

// produceBatches writes the batches to sink's "in" stream, ten per call,
// batch k keyed by k.
func produceBatches(b *testing.B, sink *kafka.Sink, recs []arrow.Record) {
	b.Helper()
	for i := 0; i < len(recs); i += 10 {
		var outs []pipeline.Output
		for k := i; k < min(i+10, len(recs)); k++ {
			recs[k].Retain()
			outs = append(outs, pipeline.Output{Stream: "in", Key: []byte(strconv.Itoa(k)), Record: recs[k]})
		}
		if err := sink.Write(context.Background(), outs); err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			o.Record.Release()
		}
	}
}

// arrivals records when the first prediction of each batch (by its id
// column) reached a consumer of the predictions topic.
type arrivals struct {
	mu   sync.Mutex
	seen map[int64]time.Time
}

// tailArrivals consumes topic until ctx ends, recording arrivals.
func tailArrivals(ctx context.Context, co kafka.ClientOptions, topic string) *arrivals {
	a := &arrivals{seen: map[int64]time.Time{}}
	go kafka.Tail(ctx, co, topic, func(env *pipeline.Envelope) {
		now := time.Now()
		ct, _ := env.Header(kafka.HeaderContentType)
		_, prs, err := codec.Decode(env.Value, string(ct), memory.DefaultAllocator)
		if err != nil {
			return
		}
		for _, r := range prs {
			id := r.Column(r.Schema().FieldIndices("id")[0]).(*array.Int64).Value(0)
			a.mu.Lock()
			if _, ok := a.seen[id]; !ok {
				a.seen[id] = now
			}
			a.mu.Unlock()
			r.Release()
		}
	})
	return a
}

// wait waits until n batches have a prediction and returns the latest
// arrival.
func (a *arrivals) wait(b *testing.B, n int, limit time.Duration) time.Time {
	b.Helper()
	deadline := time.Now().Add(limit)
	for {
		a.mu.Lock()
		c := len(a.seen)
		var last time.Time
		for _, at := range a.seen {
			if at.After(last) {
				last = at
			}
		}
		a.mu.Unlock()
		if c >= n {
			return last
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d batches predicted", c, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// at returns the arrival of batch id's first prediction.
func (a *arrivals) at(id int64) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[id]
}

// benchRun runs the forestd binary and returns its stdout.
func benchRun(b *testing.B, args ...string) string {
	b.Helper()
	cmd := exec.Command(forestdBin(b), args...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("forestd %v: %v", args, err)
	}
	return string(out)
}

// withID appends a constant int64 column "id" to rec (releasing rec).
func withID(rec arrow.Record, id int64) arrow.Record {
	defer rec.Release()
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 0; i < int(rec.NumRows()); i++ {
		bld.Append(id)
	}
	col := bld.NewArray()
	bld.Release()
	defer col.Release()
	fields := append(append([]arrow.Field(nil), rec.Schema().Fields()...), arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64})
	return array.NewRecord(arrow.NewSchema(fields, nil), append(append([]arrow.Array(nil), rec.Columns()...), col), rec.NumRows())
}

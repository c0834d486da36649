package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// wideRecord is a batch of n rows of p float64 features named x1..xp, the
// Trunk layout of `forestd gen trunk --p p`.
func wideRecord(seed, n, p int) arrow.Record {
	mem := memory.DefaultAllocator
	fields := make([]arrow.Field, p)
	cols := make([]arrow.Array, p)
	for j := 0; j < p; j++ {
		fields[j] = arrow.Field{Name: "x" + strconv.Itoa(j+1), Type: arrow.PrimitiveTypes.Float64}
		b := array.NewFloat64Builder(mem)
		b.Reserve(n)
		for i := 0; i < n; i++ {
			b.UnsafeAppend(float64((seed*7919+i*31+j*17)%1000)/250 - 2)
		}
		cols[j] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// trunkModel trains a forest on Trunk with p features.
func trunkModel(t *testing.T, p, trees int) string {
	t.Helper()
	dir := t.TempDir()
	tr, out := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "m.model")
	forestdJSON(t, "gen", "trunk", "--n", "2000", "--p", strconv.Itoa(p), "--seed", "1", "--out", tr)
	forestdJSON(t, "train", "--in", tr, "--label", "y", "--out", out, "--trees", strconv.Itoa(trees), "--seed", "2")
	return out
}

// peakRSS reads the peak resident set size (VmHWM) of a process, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestServeOverloadMemoryBound produces far faster than the daemon scores
// (a 400-tree forest on 50 features, 1000-row Arrow batches, one worker): the backlog in
// the broker grows to several times the configured memory bound while the
// daemon's peak resident memory stays under it — backpressure slows
// consumption instead of growing memory (ARCHITECTURE.md, The daemon's promises).
func TestServeOverloadMemoryBound(t *testing.T) {
	// not parallel: it needs the producer to outrun the daemon by a margin,
	// which other tests' load beside it can take away
	const bound = 192 << 20
	model := trunkModel(t, 50, 400)
	b := startBroker(t, "", t.TempDir())
	brokers := b.logField("broker listening", "addr", time.Second)
	d := startServe(t, brokers, "--model", model, "--stages", "score", "--workers", "1",
		"--max-inflight-bytes", strconv.Itoa(8<<20), "--max-uncommitted", "64", "--memory-limit", strconv.Itoa(bound*3/4))
	d.waitReady(30 * time.Second)
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: kafka.ClientOptions{Brokers: []string{brokers}},
		Topics: map[string]string{"in": featuresTopic}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	var produced atomic.Int64
	// the producer stops at 3× the bound; the deadline only caps a slow machine
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil && produced.Load() < 3*bound; i++ {
			var outs []pipeline.Output
			for k := 0; k < 8; k++ {
				outs = append(outs, pipeline.Output{Stream: "in", Key: []byte(strconv.Itoa(i*8 + k)), Record: wideRecord(i*8+k, 1000, 50)})
			}
			if err := sink.Write(ctx, outs); err != nil {
				return
			}
			for _, o := range outs {
				produced.Add(int64(o.Record.NumRows() * 50 * 8))
				o.Record.Release()
			}
		}
	}()
	// the largest backlog seen while producing and for 3 s after: the
	// peak RSS below is a high-water mark too, so both cover the same span
	// (a lag read once at the end depends on how fast this machine scored)
	var lag float64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		end, producing := time.Time{}, done
		for {
			select {
			case <-producing:
				end = time.Now().Add(3 * time.Second) // keep consuming against the backlog
				producing = nil
			case <-tick.C:
			}
			if l := d.metric("forestd_commit_lag"); l > lag {
				lag = l
			}
			if !end.IsZero() && time.Now().After(end) {
				return
			}
		}
	}()
	<-sampled
	pid := d.cmd.Process.Pid
	peak := peakRSS(t, pid)
	scored := d.metric("forestd_rows_out_total")
	t.Logf("produced %.0f MiB of features; daemon scored %.0f rows, largest commit lag %.0f messages, peak RSS %.1f MiB (bound %d MiB)",
		float64(produced.Load())/(1<<20), scored, lag, float64(peak)/(1<<20), bound>>20)
	if produced.Load() < 2*bound {
		t.Fatalf("only %d bytes produced: the overload never exceeded the bound", produced.Load())
	}
	const msgBytes = 1000 * 50 * 8
	if scored <= 0 || lag*msgBytes < bound {
		t.Fatalf("scored %.0f rows with a backlog of %.0f messages: the daemon was not overloaded beyond the bound", scored, lag)
	}
	if peak > bound {
		t.Fatalf("peak resident memory %.1f MiB exceeds the %d MiB bound", float64(peak)/(1<<20), bound>>20)
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

package lakescore_test

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/lakescore"
)

// liveHeapPeak runs f while sampling the live heap (runtime/metrics
// /gc/heap/live:bytes: the heap marked live by the latest collection, the
// third number of GODEBUG=gctrace=1's "A->B->C MB") every 100µs, and
// returns the largest value seen and the live heap before f.
func liveHeapPeak(f func()) (peak, before uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(sample)
	before = sample[0].Value.Uint64()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	runtime.GC() // the heap live at the end of the run
	close(stop)
	wg.Wait()
	return peak, before
}

// TestRunLiveHeapWithinMaxMemory: a lake run's live heap stays within
// MaxMemory whatever the output's compression, with the Go runtime's soft
// memory limit set to MaxMemory as forestd score sets it. At 36 MiB the
// chunks are of 2,048 rows, whose model_id column alone (64 bytes a row)
// is a page larger than a zstd block (128 KiB), so that a zstd encoder at
// parquet-go's settings allocated its 16 MiB history, and parquet.Zstd's
// pool kept one such encoder per P the writer had run on: the live heap
// reached 42.5 MiB with GOMAXPROCS=1 and 55–58 MiB with 2, against 24 and
// 27 MiB without compression. A writer's compressor is now its own, with
// a 1 MiB window, and the plan counts it (files.WriterCodecBytes): 26–27
// MiB with one P, 28–30 with 2, at most 33 with 4 (where the run without
// compression reaches 30: the lake's readers' buffers grow with the Ps).
func TestRunLiveHeapWithinMaxMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("scores 100,000 rows five times")
	}
	const maxMemory = 36 << 20
	m := letterModel(t)
	lake := map[string]string{}
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		lake["part="+p+"/x.parquet"] = "letter_recognition.parquet"
	}
	root := lakeOf(t, lake)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(maxMemory))
	for _, c := range []string{"zstd", "gzip", "snappy", "lz4", "none"} {
		opts := lakescore.Options{Threads: 2, Readers: 2, MaxMemory: maxMemory, Compression: c}
		chunk, work, rowGroups, err := lakescore.Plan(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		var sum *lakescore.Summary
		peak, before := liveHeapPeak(func() {
			sum, err = lakescore.Run(context.Background(), m, []string{root}, filepath.Join(t.TempDir(), "out"), opts)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-6s live heap peak %5.1f MiB of max_memory %d MiB, %4.1f MiB before the run (chunks of %d rows; set aside: %.1f MiB for scoring and writing, of it %.1f MiB the writer's compressor, %.1f MiB for row groups)",
			c, float64(peak)/(1<<20), maxMemory>>20, float64(before)/(1<<20), chunk, float64(work)/(1<<20), float64(files.WriterCodecBytes(c))/(1<<20), float64(rowGroups)/(1<<20))
		if sum.Rows != 100000 || len(sum.OverBudget) != 0 {
			t.Fatalf("%s: summary %+v", c, sum)
		}
		if peak > maxMemory {
			t.Errorf("%s: the live heap reached %.1f MiB, past max_memory %d MiB", c, float64(peak)/(1<<20), maxMemory>>20)
		}
	}
}

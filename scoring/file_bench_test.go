package scoring_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
)

// BenchmarkPredictFile scores 100,000 trunk rows (p = 50, seed 2) on 2
// threads with the compiled forest of the model file named by
// $FORESTD_BENCH_MODEL (a trunk p = 50 model, e.g. of `forestd train` on
// `forestd gen trunk --n 100000 --p 50`), so that two builds score one
// file side by side (issue 31):
//
//	FORESTD_BENCH_MODEL=trunk.model go test ./scoring -run '^$' -bench PredictFile
func BenchmarkPredictFile(b *testing.B) {
	path := os.Getenv("FORESTD_BENCH_MODEL")
	if path == "" {
		b.Skip("FORESTD_BENCH_MODEL names no model file")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	_, c, _, err := model.DecodeCompiled(data)
	if err != nil {
		b.Fatal(err)
	}
	te, err := synth.Generate("trunk", synth.Options{N: 100000, P: 50, Seed: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := c.Predict(te, 2); err != nil {
			b.Fatal(err)
		}
	}
	rows := float64(te.NRows) * float64(b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/rows, "cpu-ns/row")
}

// BenchmarkLoadFile is scoring.Decode of the model file named by
// $FORESTD_BENCH_MODEL (the load of a 1M-row forest, issue 31).
func BenchmarkLoadFile(b *testing.B) {
	path := os.Getenv("FORESTD_BENCH_MODEL")
	if path == "" {
		b.Skip("FORESTD_BENCH_MODEL names no model file")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, _, _, err := model.DecodeCompiled(data); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time counts the work under a shared machine's load (wall time
	// counts the waits too)
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// moves far less than wall time when other work competes for the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

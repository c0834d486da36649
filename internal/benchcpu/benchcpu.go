// Package benchcpu measures a benchmark's CPU time per row, a figure the
// other processes of a shared machine disturb less than wall time (ns/op).
// Only benchmarks import it.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// PerRow reports the process's CPU time (user and system, GC included)
// per row, as the metric cpu-ns/row, between its call and the call of the
// function it returns; rowsPerOp is the rows one b.N iteration handles.
func PerRow(b *testing.B, rowsPerOp int) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	t0 := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-t0)/float64(b.N*rowsPerOp), "cpu-ns/row")
	}
}

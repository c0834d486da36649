package forest

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forestd/forestd/arrowforest/frame"
)

var (
	benchOnce   sync.Once
	benchForest *Forest
	benchTest   *frame.Frame
)

// benchTrunk trains the reference forest once: trunk p=50,
// n=100,000, 100 trees, defaults.
func benchTrunk(b *testing.B) (*Forest, *frame.Frame) {
	benchOnce.Do(func() {
		p := DefaultParams(frame.TaskClassification)
		p.Threads = 2
		f, err := Train(trunkFrame(100000, 50, 1), p, TrainOptions{})
		if err != nil {
			b.Fatal(err)
		}
		benchForest, benchTest = f, trunkFrame(100000, 50, 2)
	})
	return benchForest, benchTest
}

// BenchmarkPredictTrunk scores 100,000 rows with a 100-tree forest on 2
// threads; rows/s is reported as a custom metric.
func BenchmarkPredictTrunk(b *testing.B) {
	f, te := benchTrunk(b)
	c, err := Compile(f)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := c.Predict(te, 2); err != nil {
			b.Fatal(err)
		}
	}
	rows := float64(te.NRows) * float64(b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/rows, "cpu-ns/row")
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

// BenchmarkTrainTrunk trains 100 trees on trunk p=50, n=100,000 with 2
// threads (binned split search, the default).
func BenchmarkTrainTrunk(b *testing.B) {
	tr := trunkFrame(100000, 50, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Threads = 2
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Train(tr, p, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

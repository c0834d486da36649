package tree

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/benchcpu"
)

// BenchmarkGrowCodes grows two-class Gini trees on the bin codes alone
// (codes-only mode, as forestd train from 250,000 rows) of Trunk-like data
// of p = 50 features (feature j of class ±1 is normal with mean
// ±1/√(j+1)), from a bootstrap-like sample of about 63 % of the rows, at
// 100,000 and 1,000,000 rows: the histogram and partition passes of issue
// 31's training. Two builders grow a tree each at once, as on forestd
// train's two threads. cpu-ns/row is per in-bag row of one tree;
// work/row is Builder.Work per in-bag row, the split search's work, which
// grows with the trees' depth: where cpu-ns/row grows by as much from one
// size to the next, the cost follows the work and not the memory.
func BenchmarkGrowCodes(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { benchGrowCodes(b, n) })
	}
}

func benchGrowCodes(b *testing.B, n int) {
	const p, workers = 50, 2
	rng := rand.New(rand.NewPCG(3, 1))
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(rng.IntN(2))
	}
	cols := make([][]float32, p)
	for j := range cols {
		mu := 1 / math.Sqrt(float64(j+1))
		c := make([]float32, n)
		for i := range c {
			c[i] = float32(rng.NormFloat64() + mu*float64(2*y[i]-1))
		}
		cols[j] = c
	}
	bins := NewBinned(cols, 255, workers)
	var rows []int32
	var w []float64
	for i := 0; i < n; i++ {
		if c := rng.IntN(8); c > 2 {
			rows, w = append(rows, int32(i)), append(w, float64(c-2))
		}
	}
	d := &Data{Y: y, K: 2, Bins: bins}
	builders := make([]*Builder, workers)
	for t := range builders {
		smp, err := projection.NewAxis(p, 7)
		if err != nil {
			b.Fatal(err)
		}
		if builders[t], err = NewBuilder(d, Config{Criterion: Gini, MinLeaf: 1, MinSplit: 2}, smp); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	defer benchcpu.PerRow(b, workers*len(rows))()
	var work int64
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for t, bl := range builders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := bl.Grow(rand.New(rand.NewPCG(uint64(i), uint64(t))), rows, w); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, bl := range builders {
			work += bl.Work()
		}
	}
	b.ReportMetric(float64(work)/float64(b.N*workers*len(rows)), "work/row")
}

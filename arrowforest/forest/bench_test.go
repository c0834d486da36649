package forest

import (
	"fmt"
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

// BenchmarkWalk compares the two walks of one 32,768-row block of trunk
// rows through all 100 trees, rows ordered by their tree-0 leaf as Predict
// orders them: Compiled.leaf (branchy, one row at a time) and the
// branch-free axis layout (eight rows in lock step, axiswalk.go).
func BenchmarkWalk(b *testing.B) {
	f, te := benchTrunk(b)
	c, err := Compile(f)
	if err != nil || c.axis == nil {
		b.Fatal("no axis layout", err)
	}
	const bs = 32768
	w, p := c.axis, c.p
	x := make([]float32, bs*p)
	c.transpose(te.Cols, 0, bs, x)
	kx := make([]uint32, bs*w.stride)
	w.keys(te.Cols, nil, 0, bs, kx)
	s0 := make([]int32, bs)
	w.leaves(c.roots[0], kx, bs, s0)
	keys := sortByLeaf(s0, make([]uint64, bs))
	y := make([]float32, bs*p)
	ky := make([]uint32, bs*w.stride)
	for q, k := range keys {
		i := int(uint32(k))
		copy(y[q*p:(q+1)*p], x[i*p:(i+1)*p])
		copy(ky[q*w.stride:(q+1)*w.stride], kx[i*w.stride:(i+1)*w.stride])
	}
	out := make([]int32, bs)
	run := func(name string, fn func(root int32)) {
		b.Run(name, func(b *testing.B) {
			cpu0 := cpuTime()
			for range b.N {
				for _, root := range c.roots {
					fn(root)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(bs*b.N), "cpu-ns/row")
		})
	}
	run("leaf", func(root int32) {
		for q := range bs {
			out[q] = c.leaf(root, y[q*p:(q+1)*p])
		}
	})
	run("axis8", func(root int32) { w.leaves(root, ky, bs, out) })
	run("axis8go", func(root int32) {
		for q := 0; q+8 <= bs; q += 8 {
			w.walk8Go(root, ky[q*w.stride:(q+8)*w.stride], out[q:q+8])
		}
	})
}

// BenchmarkTrainMultiOutput grows 50 multi-output regression trees (three
// targets, 20,000 rows, 5 features) on 2 threads with the histogram
// search; compare BenchmarkTrainSingleOutput, the same forest on one of
// the targets.
func BenchmarkTrainMultiOutput(b *testing.B) { benchTrainOutputs(b, true) }

// BenchmarkTrainSingleOutput is BenchmarkTrainMultiOutput on target y2.
func BenchmarkTrainSingleOutput(b *testing.B) { benchTrainOutputs(b, false) }

func benchTrainOutputs(b *testing.B, multi bool) {
	fr := multiFrame(20000, 1, 0.01)
	if !multi {
		fr = output(fr, 2)
	}
	p := DefaultParams(frame.TaskRegression)
	p.Trees, p.Threads = 50, 2
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Train(fr, p, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTreeWalkLeaves walks the out-of-bag-like rows (about 37 %, as a
// bootstrap leaves out) of blocks of bs rows down every tree of the
// reference forest, as the out-of-bag pass does: "four" is the four-row
// walk any tree takes (leaves4), "axis8" the eight-row walk of axis trees.
func BenchmarkTreeWalkLeaves(b *testing.B) {
	f, te := benchTrunk(b)
	w := newTreeWalk(f)
	const n = 16384
	x := make([]float32, n*w.p)
	w.transpose(te.Cols, 0, n, x)
	for _, bs := range []int{4096, 16384} {
		var rows [][]int32
		nr := 0
		for r0 := 0; r0 < n; r0 += bs {
			var rs []int32
			for i := int32(0); i < int32(bs); i++ {
				if uint32(r0+int(i))*2654435761%100 < 37 {
					rs = append(rs, i)
				}
			}
			rows = append(rows, rs)
			nr += len(rs)
		}
		out := make([]int32, bs)
		var nodes []axisNode
		run := func(name string, fn func(t int, xb []float32, rs []int32)) {
			b.Run(fmt.Sprintf("%s/bs=%d", name, bs), func(b *testing.B) {
				cpu0 := cpuTime()
				for range b.N {
					for k, rs := range rows {
						xb := x[k*bs*w.p : (k+1)*bs*w.p]
						for t := range w.trees {
							fn(t, xb, rs)
						}
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(nr*b.N), "cpu-ns/row")
			})
		}
		run("four", func(t int, xb []float32, rs []int32) { w.leaves4(t, xb, rs, out) })
		run("axis8", func(t int, xb []float32, rs []int32) { w.axisLeaves(t, xb, rs, out, &nodes) })
	}
}

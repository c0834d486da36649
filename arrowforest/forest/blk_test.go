package forest

import (
	"fmt"
	"testing"
)

func BenchmarkBlockRows(b *testing.B) {
	f, te := benchTrunk(b)
	c, _ := Compile(f)
	n := te.NRows
	for _, bs := range []int{256, 4096, 32768} {
		x := make([]float32, bs*c.p)
		out := make([]int32, bs)
		b.Run(fmt.Sprint(bs), func(b *testing.B) {
			cpu0 := cpuTime()
			for it := 0; it < b.N; it++ {
				for r0 := 0; r0+bs <= n; r0 += bs {
					c.transpose(te.Cols, r0, r0+bs, x)
					for _, root := range c.roots {
						for i := 0; i < bs; i++ {
							out[i] = c.leaf(root, x[i*c.p:(i+1)*c.p])
						}
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(n/bs*bs*b.N), "cpu-ns/row")
		})
	}
}

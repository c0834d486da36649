package forest

import (
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// BenchmarkTrainObliqueTrunk compares RF, SPORF and MORF training on trunk
// p=50, n=20,000, 100 trees, 2 threads (issue: oblique within 2× of RF).
func BenchmarkTrainObliqueTrunk(b *testing.B) {
	tr := trunkFrame(20000, 50, 1)
	for _, kind := range []Kind{KindRF, KindSPORF, KindMORF} {
		b.Run(string(kind), func(b *testing.B) {
			p := DefaultParams(frame.TaskClassification)
			p.Forest, p.Threads = kind, 2
			if kind == "morf" {
				p.Layout, p.PatchHMax, p.PatchWMax = "series", 1, 5
			}
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := Train(tr, p, TrainOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

package forest

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// gaussClassFrame draws n rows of k equally likely classes, class c with
// its own mean μ_c ~ N(0, 0.25·I_p) and x ~ N(μ_c, I_p): the data of
// e2e/bench/manyclass.sh (gen_manyclass.py draws the same distribution
// with numpy), where only k changes between runs.
func gaussClassFrame(n, p, k int, seed uint64) *frame.Frame {
	rng := rand.New(rand.NewPCG(seed, 13))
	f := classFrame(n, p, "x", "label")
	f.Classes = f.Classes[:0]
	for c := 0; c < k; c++ {
		f.Classes = append(f.Classes, strconv.Itoa(c))
	}
	mu := make([]float64, k*p)
	for i := range mu {
		mu[i] = 0.5 * rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		c := rng.IntN(k)
		f.Y[i] = int32(c)
		for j := 0; j < p; j++ {
			f.Cols[j][i] = float32(mu[c*p+j] + rng.NormFloat64())
		}
	}
	return f
}

// BenchmarkTrainGaussClasses trains the random forest of manyclass.sh —
// 20,000 rows, 40 features, defaults (binned search, √p candidates,
// bootstrap, out-of-bag error) on 2 threads — with k = 4, 26, 100 and 500
// classes, 20 trees instead of 100; only k changes between the
// sub-benchmarks, so their ratios are forestd's growth with the class
// count (compare ranger's in e2e/bench/results/manyclass-*.md).
// cpu-s/op is the process CPU per forest, steadier than wall time on a
// shared machine.
func BenchmarkTrainGaussClasses(b *testing.B) {
	for _, k := range []int{4, 26, 100, 500} {
		fr := gaussClassFrame(20000, 40, k, 1)
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				trainForest(b, fr, 20)
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

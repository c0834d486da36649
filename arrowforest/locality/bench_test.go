package locality

import "testing"

// BenchmarkCompute: the four distances on sonar (208 rows × 60 features)
// and the geodesic distance on 784 features × 500 rows (an MNIST-sized
// feature set, the dissertation's §3.3 experiment).
func BenchmarkCompute(b *testing.B) {
	_, sonar := readCSV(b, "sonar")
	wide := synthCols(500, 784, 9)
	for _, c := range []struct {
		name string
		cols [][]float32
		m    string
	}{
		{"sonar/corr", sonar, Correlation}, {"sonar/euclidean", sonar, Euclidean},
		{"sonar/pca", sonar, PCA}, {"sonar/geodesic", sonar, Geodesic},
		{"p784/geodesic", wide, Geodesic},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Compute(c.cols, Options{Metric: c.m}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

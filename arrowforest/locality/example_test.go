package locality_test

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/locality"
)

// Four features: b is a noisy copy of a, d of c. Under every distance each
// feature's nearest neighbour is its partner.
func Example() {
	cols := [][]float32{
		{1, 2, 3, 4, 5, 6},         // a
		{1.1, 2, 2.9, 4.2, 5, 6.1}, // b ≈ a
		{3, 1, 4, 1, 5, 9},         // c
		{3, 1.2, 4, 0.8, 5.1, 9},   // d ≈ c
	}
	for _, m := range []string{locality.Correlation, locality.Euclidean, locality.PCA, locality.Geodesic} {
		d, err := locality.Compute(cols, locality.Options{Metric: m, K: 1})
		if err != nil {
			panic(err)
		}
		nb, _ := d.Neighbourhood(0, 2)
		fmt.Printf("%-9s neighbourhood of a: %v, d(a,b)=%.3f\n", m, nb, d.At(0, 1))
	}
	// Output:
	// corr      neighbourhood of a: [0 1], d(a,b)=0.003
	// euclidean neighbourhood of a: [0 1], d(a,b)=0.265
	// pca       neighbourhood of a: [0 1], d(a,b)=0.265
	// geodesic  neighbourhood of a: [0 1], d(a,b)=0.265
}

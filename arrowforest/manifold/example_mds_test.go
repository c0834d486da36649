package manifold_test

import (
	"fmt"
	"math"

	"github.com/forestd/forestd/arrowforest/manifold"
)

// ExampleClassicalMDS embeds the 100 points of a 10×10 grid in the plane
// from their squared Euclidean distances alone. K = −½·H·D⁽²⁾·H has rank
// 2 with a double eigenvalue (the grid looks the same along both axes),
// N·Var = 100·8.25 = 825, which the block Lanczos solver finds twice; the
// 2-D embedding keeps every distance.
func ExampleClassicalMDS() {
	const n = 100
	pts := make([][2]float64, n)
	for i := range pts {
		pts[i] = [2]float64{float64(i % 10), float64(i / 10)}
	}
	d2 := make([]float64, n*n)
	for i, p := range pts {
		for j, q := range pts {
			d2[i*n+j] = (p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1])
		}
	}
	e, err := manifold.ClassicalMDS(d2, n, 5, 2)
	if err != nil {
		panic(err)
	}
	worst := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			dz0 := e.Z[i*e.M] - e.Z[j*e.M]
			dz1 := e.Z[i*e.M+1] - e.Z[j*e.M+1]
			worst = math.Max(worst, math.Abs(dz0*dz0+dz1*dz1-d2[i*n+j]))
		}
	}
	fmt.Printf("dimensions kept: %d of 5\n", e.M)
	fmt.Printf("eigenvalues: %.6f %.6f\n", e.Lambda[0], e.Lambda[1])
	fmt.Println("largest distance² error below 1e-9:", worst < 1e-9)
	// Output:
	// dimensions kept: 2 of 5
	// eigenvalues: 825.000000 825.000000
	// largest distance² error below 1e-9: true
}

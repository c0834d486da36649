package tree

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// TestSparseClassesSameTrees: tracking each node's classes (Builder.sparse,
// on from sparseClasses classes) grows the same trees to the bit as
// scanning every class — the same splits, thresholds, leaf values and
// impurity decreases — for both criteria, binned and sorted search, axis
// and oblique atoms, missing values and bootstrap weights, with classes
// both more and fewer than the rows of a deep node, some never drawn.
func TestSparseClassesSameTrees(t *testing.T) {
	const n, p = 800, 5
	for _, k := range []int{3, 20, 300, 2000} {
		rng := rand.New(rand.NewPCG(uint64(k), 3))
		cols := make([][]float32, p)
		for j := range cols {
			cols[j] = make([]float32, n)
			for i := range cols[j] {
				if rng.IntN(20) == 0 {
					cols[j][i] = float32(math.NaN())
					continue
				}
				cols[j][i] = float32(rng.IntN(50)) + rng.Float32() // some ties
			}
		}
		y := make([]int32, n)
		for i := range y {
			y[i] = int32(min(int(cols[0][i]/50*float32(k)), k-1))
			if y[i] < 0 || rng.IntN(5) == 0 { // NaN row, or noise
				y[i] = int32(rng.IntN(k))
			}
		}
		// a bootstrap sample: multiplicities as weights
		counts := make([]float64, n)
		for i := 0; i < n; i++ {
			counts[rng.IntN(n)]++
		}
		var rows []int32
		var w []float64
		for i, c := range counts {
			if c > 0 {
				rows, w = append(rows, int32(i)), append(w, c)
			}
		}
		for _, crit := range []Criterion{Gini, Entropy} {
			for _, binned := range []bool{false, true} {
				for _, oblique := range []bool{false, true} {
					name := "k=" + strconv.Itoa(k) + "/" + crit.String()
					if binned {
						name += "/binned"
					}
					if oblique {
						name += "/oblique"
					}
					d := &Data{Cols: cols, Y: y, K: k}
					if binned {
						d.Bins = NewBinned(cols, 255, 1)
					}
					grow := func(sparse bool) (*Tree, []float64) {
						var smp projection.Sampler
						var err error
						if oblique {
							smp, err = projection.NewSparse(p, 3, 1.5, false)
						} else {
							smp, err = projection.NewAxis(p, 2)
						}
						if err != nil {
							t.Fatal(err)
						}
						b, err := NewBuilder(d, Config{Criterion: crit, MinLeaf: 1}, smp)
						if err != nil {
							t.Fatal(err)
						}
						b.sparse = sparse
						tr, imp, err := b.Grow(rand.New(rand.NewPCG(7, uint64(k))), rows, w)
						if err != nil {
							t.Fatal(err)
						}
						return tr, imp
					}
					t0, i0 := grow(false)
					t1, i1 := grow(true)
					if t0.NumNodes() < 50 {
						t.Fatalf("%s: %d nodes: the test needs deep trees", name, t0.NumNodes())
					}
					if !reflect.DeepEqual(t0, t1) || !reflect.DeepEqual(i0, i1) {
						t.Fatalf("%s: tracking the node's classes grew another tree (%d nodes, %d scanning every class)",
							name, t1.NumNodes(), t0.NumNodes())
					}
				}
			}
		}
	}
}

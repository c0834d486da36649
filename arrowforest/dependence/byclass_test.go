package dependence

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// TestByClassSameStatistic: summing the within-class distances class by
// class (setWorker.withinByClass, used from byClassMin classes) gives the
// same bits as the masked dot products — for gCor_n and dCor_n, with the
// distance triangle cached and recomputed, for the observed labels and
// for permutations, from two classes to one class per row — and a worker
// of a label with a class per row takes memory in proportion to the rows,
// not to rows × classes.
func TestByClassSameStatistic(t *testing.T) {
	const n = 700
	rng := rand.New(rand.NewPCG(9, 9))
	x := make([][]float64, 3)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = rng.NormFloat64()
		}
	}
	for _, k := range []int{2, 3, 8, 40, n} {
		y := make([]int32, n)
		for i := range y {
			if k == n {
				y[i] = int32(i)
			} else {
				y[i] = int32(min(int(math.Abs(x[0][i])*float64(k)/2.5), k-1))
			}
		}
		for _, stat := range []Stat{StatGCor, StatDCor} {
			for _, cache := range []int64{0, 1 << 30} {
				name := "k=" + strconv.Itoa(k) + "/" + string(stat) + "/cache=" + strconv.FormatBool(cache > 0)
				p := newSetProblem(x, y, k, stat, cache, nil)
				if (p.tri != nil) != (cache > 0) {
					t.Fatalf("%s: cache %v", name, p.tri != nil)
				}
				p.byClass = false
				masked := p.newWorker().(*setWorker)
				p.byClass = true
				byClass := p.newWorker().(*setWorker)
				if a, b := masked.eval(p.y), byClass.eval(p.y); a != b || math.IsNaN(a) {
					t.Fatalf("%s: observed %v masked, %v by class", name, a, b)
				}
				if a := masked.eval(p.y); math.Abs(a-p.exact) > 1e-5*math.Max(1, math.Abs(p.exact)) {
					t.Fatalf("%s: observed %v from the float32 sums, %v exact", name, a, p.exact)
				}
				for idx := 0; idx < 20; idx++ {
					if a, b := masked.perm(3, idx), byClass.perm(3, idx); a != b {
						t.Fatalf("%s: permutation %d: %v masked, %v by class", name, idx, a, b)
					}
				}
			}
		}
	}

	// an identifier as the label: 20,000 rows, a class each; masks would
	// take 20,000 × 20,000 float32 (1.6 GB)
	const ids = 20000
	xi := [][]float64{make([]float64, ids)}
	yi := make([]int32, ids)
	for i := range yi {
		xi[0][i], yi[i] = rng.Float64(), int32(i)
	}
	p := newSetProblem(xi, yi, ids, StatGCor, 0, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := p.newWorker()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Fatalf("a worker for %d classes allocated %d bytes", ids, grew)
	}
	if v := w.perm(1, 0); v != 1 { // every class has one row: no pairs within a class, gCor_n = 1
		t.Fatalf("gCor_n of a permuted identifier label: %v, want 1", v)
	}
}

// BenchmarkSetPermClasses times one permutation of a two-column set test
// on 3,000 rows (distance triangle cached) for k classes, within-class
// sums by masked dot products and class by class (byClassMin chooses).
func BenchmarkSetPermClasses(b *testing.B) {
	const n = 3000
	rng := rand.New(rand.NewPCG(2, 2))
	x := [][]float64{make([]float64, n), make([]float64, n)}
	for i := 0; i < n; i++ {
		x[0][i], x[1][i] = rng.NormFloat64(), rng.NormFloat64()
	}
	for _, k := range []int{3, 4, 8, 16, 100} {
		y := make([]int32, n)
		for i := range y {
			y[i] = int32(rng.IntN(k))
		}
		p := newSetProblem(x, y, k, StatGCor, 1<<30, nil)
		for _, byClass := range []bool{false, true} {
			p.byClass = byClass
			w := p.newWorker()
			name := "k=" + strconv.Itoa(k) + "/masked"
			if byClass {
				name = "k=" + strconv.Itoa(k) + "/by-class"
			}
			b.Run(name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					w.perm(1, i)
				}
			})
		}
	}
}

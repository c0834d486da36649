package dependence

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/forestd/forestd/internal/benchcpu"
)

// Statistics.

func BenchmarkGCorUnivariate(b *testing.B) {
	x, y := randCase(1, 10000, 1, 2, 0.1)
	for b.Loop() {
		GCor(x, y, 2)
	}
}

func BenchmarkDCor1(b *testing.B) {
	x, _ := randCase(1, 10000, 2, 2, 0)
	for b.Loop() {
		DCor1(x[0], x[1])
	}
}

func BenchmarkGCorMultivariate(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		x, y := randCase(1, n, 3, 2, 0.1)
		b.Run(fmt.Sprint("n=", n), func(b *testing.B) {
			for b.Loop() {
				GCor(x, y, 2)
			}
		})
	}
}

func BenchmarkDCorNum(b *testing.B) {
	x, _ := randCase(1, 2000, 4, 2, 0)
	for b.Loop() {
		DCorNum(x[:2], x[2:])
	}
}

// One permutation of the hot test paths.

func BenchmarkPermUnivariate(b *testing.B) {
	for _, stat := range []Stat{StatGCor, StatDCor} {
		x, y := randCase(1, 10000, 1, 2, 0.1)
		p := &uniProblem{u: newUniCol(x[0], y, 2, stat == StatDCor), stat: stat, k: 2}
		w := p.newWorker()
		b.Run(string(stat), func(b *testing.B) {
			i := 0
			for b.Loop() {
				w.perm(1, i)
				i++
			}
		})
	}
}

func BenchmarkPermSet(b *testing.B) {
	for _, k := range []int{2, 3} {
		x, y := randCase(1, 1000, 3, k, 0.1)
		p := newSetProblem(x, y, k, StatGCor, defaultMaxCacheBytes, nil)
		w := p.newWorker()
		b.Run(fmt.Sprintf("n=1000,k=%d", k), func(b *testing.B) {
			i := 0
			for b.Loop() {
				w.perm(1, i)
				i++
			}
		})
	}
}

func BenchmarkShuffle(b *testing.B) {
	lab := make([]int32, 10000)
	i := 0
	for b.Loop() {
		shuffle(lab, 1, i)
		i++
	}
}

// One permutation of a numeric label against one column (the Fenwick pass,
// uninum.go) and against a set (the packed triangle).
func BenchmarkPermNumeric(b *testing.B) {
	x, y := numCase(1, 5000, 1, func(r []float64, e float64) float64 { return r[0]*r[0] + e })
	p := newUniNumProblem(x[0], y)
	w := p.newWorker()
	b.Run("uni,n=5000", func(b *testing.B) {
		i := 0
		for b.Loop() {
			w.perm(1, i)
			i++
		}
	})
	xs, ys := numCase(2, 1000, 3, func(r []float64, e float64) float64 { return r[0]*r[1] + e })
	sp := newSetNumProblem(xs, ys, defaultMaxCacheBytes, nil)
	sw := sp.newWorker()
	b.Run("set,n=1000", func(b *testing.B) {
		i := 0
		for b.Loop() {
			sw.perm(1, i)
			i++
		}
	})
}

// The default search (Holm, bottom-up, sizes 2 and 3) on 40 features
// unrelated to the label, 300 rows: 40 marginal tests, 780 pairs and 9,880
// triples. Its set tests run ahead on the threads (data.prefetch).
func BenchmarkSearchBottomUp(b *testing.B) {
	x, y := randCase(1, 300, 40, 2, 0)
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprint("threads=", th), func(b *testing.B) {
			for b.Loop() {
				opt := DefaultSearchOptions()
				opt.Test.Threads = th
				if _, err := Search(x, y, 2, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Energy tests (energy.go, energyproj.go), CPU time per pooled row: one
// column at three sizes a decade apart (O(n log n) once, O(n) per
// permutation: the figure should grow no faster than log n), and the
// joint test of 1,500 + 1,500 rows × 10 columns, projected and exact,
// with 199 permutations as eqdist.etest's R = 199 (e2e/bench/drift.sh).
func BenchmarkEnergyTest(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		ref, cur := make([]float64, n/2), make([]float64, n/2)
		for i := range ref {
			ref[i], cur[i] = r.NormFloat64(), r.NormFloat64()
		}
		opt := EnergyOptions{Test: TestOptions{Perms: 99, Threads: 1}}
		b.Run(fmt.Sprint("n=", n), func(b *testing.B) {
			done := benchcpu.PerRow(b, n)
			for b.Loop() {
				if _, err := EnergyTest(ref, cur, opt); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

func BenchmarkEnergyJoint(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 3))
	ref, cur := energyCols(r, 1500, 10, 0), energyCols(r, 1500, 10, 0)
	for _, c := range []struct {
		name string
		dirs int
	}{{"projected", 64}, {"exact", 0}} {
		opt := EnergyOptions{Test: TestOptions{Perms: 199, Threads: 1}, Directions: c.dirs}
		b.Run(c.name, func(b *testing.B) {
			done := benchcpu.PerRow(b, 3000)
			for b.Loop() {
				if _, err := EnergyTestJoint(ref, cur, opt); err != nil {
					b.Fatal(err)
				}
				if _, _, err := EnergyStatJoint(ref, cur, opt); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

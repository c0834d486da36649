package dependence

import (
	"fmt"
	"testing"
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
		p := newSetProblem(x, y, k, StatGCor, DefaultMaxCacheBytes, nil)
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
	sp := newSetNumProblem(xs, ys, DefaultMaxCacheBytes, nil)
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

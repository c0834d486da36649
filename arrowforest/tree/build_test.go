package tree

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// bruteBestGini scans every threshold between distinct values of every
// feature and returns the largest weighted Gini decrease — the reference
// for the root split of a depth-1 tree with all features as candidates.
func bruteBestGini(cols [][]float32, y []int32, k int) float64 {
	n := len(y)
	gini := func(rows []int) float64 {
		c := make([]float64, k)
		for _, r := range rows {
			c[y[r]]++
		}
		s := 0.0
		for _, x := range c {
			s += x * x
		}
		m := float64(len(rows))
		return m - s/m
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	parent := gini(all)
	best := 0.0
	for _, col := range cols {
		for _, thr := range col {
			var l, r []int
			for i, v := range col {
				if v <= thr {
					l = append(l, i)
				} else {
					r = append(r, i)
				}
			}
			if len(l) == 0 || len(r) == 0 {
				continue
			}
			if d := parent - gini(l) - gini(r); d > best {
				best = d
			}
		}
	}
	return best
}

func TestRootSplitIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 20; trial++ {
		n, p, k := 60+rng.IntN(60), 1+rng.IntN(4), 2+rng.IntN(3)
		cols := make([][]float32, p)
		for j := range cols {
			cols[j] = make([]float32, n)
			for i := range cols[j] {
				cols[j][i] = float32(rng.IntN(20)) // ties on purpose
			}
		}
		y := make([]int32, n)
		for i := range y {
			y[i] = int32(rng.IntN(k))
		}
		want := bruteBestGini(cols, y, k)
		for _, binned := range []bool{false, true} {
			d := &Data{Cols: cols, Y: y, K: k}
			if binned {
				d.Bins = NewBinned(cols, 255, 1)
			}
			smp, _ := projection.NewAxis(p, p)
			b, err := NewBuilder(d, Config{Criterion: Gini, MinLeaf: 1, MaxDepth: 1}, smp)
			if err != nil {
				t.Fatal(err)
			}
			rows := make([]int32, n)
			w := make([]float64, n)
			for i := range rows {
				rows[i], w[i] = int32(i), 1
			}
			tr, imp, err := b.Grow(rand.New(rand.NewPCG(1, 1)), rows, w)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Validate(p, k); err != nil {
				t.Fatal(err)
			}
			got := 0.0
			for _, v := range imp {
				got += v
			}
			if math.Abs(got-want) > 1e-9 {
				t.Fatalf("trial %d binned=%v: root decrease %v, brute force %v", trial, binned, got, want)
			}
		}
	}
}

func TestTreeInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	n, p := 500, 6
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(rng.NormFloat64())
			if rng.IntN(20) == 0 {
				cols[j][i] = float32(math.NaN())
			}
		}
	}
	yr := make([]float64, n)
	for i := range yr {
		yr[i] = rng.NormFloat64()
	}
	d := &Data{Cols: cols, YReg: yr, Bins: NewBinned(cols, 32, 1)}
	smp, _ := projection.NewAxis(p, 2)
	b, _ := NewBuilder(d, Config{Criterion: MSE, MinLeaf: 5}, smp)
	rows := make([]int32, n)
	w := make([]float64, n)
	for i := range rows {
		rows[i], w[i] = int32(i), float64(1+i%3)
	}
	tr, _, err := b.Grow(rand.New(rand.NewPCG(2, 2)), rows, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Validate(p, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < tr.NumNodes(); i++ {
		if !tr.IsLeaf(i) {
			if int(tr.Left[i]) != i+1 {
				t.Fatalf("node %d: left child %d, want preorder %d", i, tr.Left[i], i+1)
			}
			if c := tr.Count[tr.Left[i]] + tr.Count[tr.Right[i]]; math.Abs(float64(c-tr.Count[i])) > 1e-3 {
				t.Fatalf("node %d: children weights %v do not add to %v", i, c, tr.Count[i])
			}
		} else if tr.Count[i] < 5 {
			t.Fatalf("leaf %d weight %v < min leaf", i, tr.Count[i])
		}
	}
}

// TestWork: a tree's work (Builder.Work) is the cost model summed over the
// atoms searched — for a stump of axis atoms, sorted search on n rows
// costs n·(⌈log₂ n⌉ + 5) + 48 + n per atom — and depends only on the
// sample and the random stream: the same tree grown again has the same
// work, and more candidates per node cost more.
func TestWork(t *testing.T) {
	const n, p = 300, 6
	rng := rand.New(rand.NewPCG(5, 5))
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(rng.NormFloat64())
		}
	}
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(rng.IntN(2))
	}
	rows := make([]int32, n)
	wts := make([]float64, n)
	for i := range rows {
		rows[i], wts[i] = int32(i), 1
	}
	grow := func(mtry int, cfg Config) int64 {
		smp, err := projection.NewAxis(p, mtry)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBuilder(&Data{Cols: cols, Y: y, K: 2}, cfg, smp)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Grow(rand.New(rand.NewPCG(1, 2)), rows, wts); err != nil {
			t.Fatal(err)
		}
		return b.Work()
	}
	stump := Config{Criterion: Gini, MinLeaf: 1, MaxDepth: 1}
	if got, want := grow(4, stump), int64(4*(n*(bits.Len(uint(n))+5)+48+n)); got != want {
		t.Fatalf("stump of 4 sorted axis atoms on %d rows: work %d, want %d", n, got, want)
	}
	full := Config{Criterion: Gini, MinLeaf: 1}
	w2, w2again, w6 := grow(2, full), grow(2, full), grow(6, full)
	if w2 != w2again {
		t.Fatalf("the same tree grown twice: work %d then %d", w2, w2again)
	}
	if w6 <= w2 {
		t.Fatalf("6 candidates per node: work %d, not more than 2's %d", w6, w2)
	}
}

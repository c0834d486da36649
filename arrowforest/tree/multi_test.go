package tree

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// multiData draws n rows of p features (5% missing, values on a coarse
// grid so that bins hold ties) and q targets per row.
func multiData(n, p, q int, seed uint64) ([][]float32, []float64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(math.Round(rng.NormFloat64() * 4))
			if rng.IntN(20) == 0 {
				cols[j][i] = float32(math.NaN())
			}
		}
	}
	y := make([]float64, n*q)
	for i := range y {
		y[i] = float64(cols[0][i/q])*float64(i%q+1) + rng.NormFloat64()
		if y[i] != y[i] {
			y[i] = rng.NormFloat64()
		}
	}
	return cols, y
}

// prepare loads rows [0, n) of d into b's node arrays, as Grow does, with
// weights 1..3 and the rows in a shuffled order.
func prepare(t *testing.T, d *Data, minLeaf float64) *Builder {
	t.Helper()
	smp, err := projection.NewAxis(len(d.Cols), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(d, Config{Criterion: MSE, MinLeaf: minLeaf}, smp)
	if err != nil {
		t.Fatal(err)
	}
	n := d.Rows()
	q := d.outputs()
	perm := rand.New(rand.NewPCG(3, 3)).Perm(n)
	for _, r := range perm {
		b.idx = append(b.idx, int32(r))
		b.w = append(b.w, float64(1+r%3))
		b.yr = append(b.yr, d.YReg[r*q:r*q+q]...)
	}
	return b
}

// TestMultiSearchMatchesSingleOnCopies: on two copies of one target the
// multi-output searches score every candidate at exactly twice the
// single-output proxy, so they choose the same split (threshold and
// missing-value direction): the histogram search per feature and the
// sorted search on an oblique atom, over a whole node and a sub-range.
func TestMultiSearchMatchesSingleOnCopies(t *testing.T) {
	cols, y := multiData(400, 4, 1, 1)
	y2 := make([]float64, 2*len(y))
	for i, v := range y {
		y2[2*i], y2[2*i+1] = v, v
	}
	bins := NewBinned(cols, 16, 1)
	bs := prepare(t, &Data{Cols: cols, YReg: y, Bins: bins}, 3)
	bm := prepare(t, &Data{Cols: cols, YReg: y2, Outputs: 2, Bins: bins}, 3)
	same := func(what string, a, b split) {
		t.Helper()
		if a.ok != b.ok || a.thr != b.thr || a.missLeft != b.missLeft || (a.ok && 2*a.proxy != b.proxy) {
			t.Fatalf("%s: single %+v, two copies %+v", what, a, b)
		}
		if !a.ok {
			t.Fatalf("%s: no split found", what)
		}
	}
	for _, rg := range [][2]int{{0, 400}, {37, 190}} {
		for j := range cols {
			same("binned", bs.searchBinned(j, rg[0], rg[1]), bm.searchBinnedMulti(j, rg[0], rg[1]))
		}
		idx, wts := []int32{0, 2}, []float32{1, -0.5}
		same("sorted", bs.searchSorted(idx, wts, rg[0], rg[1]), bm.searchSortedMulti(idx, wts, rg[0], rg[1]))
	}
}

// TestMultiSearchIsBestSplit checks the multi-output searches against a
// brute force over every threshold and missing-value side: the proxy
// Σ_sides Σ_o (Σ w·y_o)²/Σ w they return is the largest any split with
// both sides of weight ≥ minLeaf reaches, for q = 3 different targets.
func TestMultiSearchIsBestSplit(t *testing.T) {
	const q = 3
	cols, y := multiData(300, 3, q, 2)
	d := &Data{Cols: cols, YReg: y, Outputs: q, Bins: NewBinned(cols, 255, 1)}
	b := prepare(t, d, 4)
	s, e := 20, 260
	brute := func(val func(k int) float32) float64 {
		best := math.Inf(-1)
		var cands []float32
		for k := s; k < e; k++ {
			if v := val(k); v == v {
				cands = append(cands, v)
			}
		}
		for _, thr := range cands {
			for _, missLeft := range []bool{false, true} {
				var nl, nr float64
				sl, sr := make([]float64, q), make([]float64, q)
				for k := s; k < e; k++ {
					v := val(k)
					left := v <= thr
					if v != v {
						left = missLeft
					}
					w := b.w[k]
					for o := 0; o < q; o++ {
						if left {
							sl[o] += w * b.yr[k*q+o]
						} else {
							sr[o] += w * b.yr[k*q+o]
						}
					}
					if left {
						nl += w
					} else {
						nr += w
					}
				}
				if nl < 4 || nr < 4 {
					continue
				}
				var p float64
				for o := 0; o < q; o++ {
					p += sl[o]*sl[o]/nl + sr[o]*sr[o]/nr
				}
				best = max(best, p)
			}
		}
		return best
	}
	check := func(what string, got split, want float64) {
		t.Helper()
		if !got.ok || math.Abs(got.proxy-want) > 1e-9*math.Abs(want) {
			t.Fatalf("%s: proxy %v (ok %v), brute force %v", what, got.proxy, got.ok, want)
		}
	}
	for j := range cols {
		want := brute(func(k int) float32 { return cols[j][b.idx[k]] })
		check("binned", b.searchBinnedMulti(j, s, e), want)
		check("sorted", b.searchSortedMulti([]int32{int32(j)}, []float32{1}, s, e), want)
	}
	idx, wts := []int32{0, 1}, []float32{0.5, 2}
	check("oblique", b.searchSortedMulti(idx, wts, s, e), brute(func(k int) float32 { return project(cols, idx, wts, b.idx[k]) }))
}

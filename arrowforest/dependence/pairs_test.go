package dependence

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// pairPassRef is pairPass before the class masks (a comparison per pair).
func pairPassRef(x [][]float64, y []int32, k int, wantRow bool, tri []float32) pairSums {
	n := len(y)
	ps := pairSums{n: n, within: make([]float64, k)}
	if wantRow {
		ps.row = make([]float64, n)
	}
	d := make([]float64, n)
	off := 0
	for i := 1; i < n; i++ {
		di := d[:i]
		distRow(x, i, di)
		ci := y[i]
		var s, s2, w float64
		for j, v := range di {
			s += v
			s2 += v * v
			if y[j] == ci {
				w += v
			}
		}
		ps.tot += s
		ps.sq += s2
		ps.within[ci] += w
		if wantRow {
			ps.row[i] += s
			r := ps.row[:i]
			for j, v := range di {
				r[j] += v
			}
		}
		if tri != nil {
			t := tri[off : off+i]
			for j, v := range di {
				t[j] = float32(v)
			}
			off += i
		}
	}
	return ps
}

// TestPairPassSameBits checks that the masked within-class sums of
// pairPass, and its one loop over a row's distances and sums, equal the
// compared ones over distRow's rows to the bit, for 1 to 9 classes and 1
// to 4 columns.
func TestPairPassSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 30))
	for _, k := range []int{1, 2, 3, 8, 9} {
		for cols := 1; cols <= 4; cols++ {
			const n = 301
			x := make([][]float64, cols)
			for c := range x {
				x[c] = make([]float64, n)
			}
			y := make([]int32, n)
			for i := range n {
				for c := range x {
					if c%2 == 0 {
						x[c][i] = r.NormFloat64()
					} else {
						x[c][i] = r.ExpFloat64()
					}
				}
				y[i] = int32(r.IntN(k))
			}
			got, want := pairPass(x, y, k, true, nil), pairPassRef(x, y, k, true, nil)
			if got.tot != want.tot || got.sq != want.sq || !slices.Equal(got.within, want.within) || !slices.Equal(got.row, want.row) {
				t.Fatalf("k = %d, %d columns: pairPass %+v, want %+v", k, cols, got.within, want.within)
			}
		}
	}
}

// BenchmarkPairPass runs the pass of one set test (3 columns, 2,000
// rows: DefaultSetRows) with and without the class masks, side by side.
func BenchmarkPairPass(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 30))
	const n = DefaultSetRows
	x := [][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	y := make([]int32, n)
	for i := range n {
		for _, c := range x {
			c[i] = r.NormFloat64()
		}
		y[i] = int32(r.IntN(2))
	}
	b.Run("compare", func(b *testing.B) {
		for range b.N {
			pairPassRef(x, y, 2, true, nil)
		}
	})
	b.Run("mask", func(b *testing.B) {
		for range b.N {
			pairPass(x, y, 2, true, nil)
		}
	})
}

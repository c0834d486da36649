package tree

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// The two-class Gini scans (gini2.go) must grow the trees classAcc's
// scans grow, to the bit: binned (one-pass and per-candidate histograms,
// nodes sorted on values), exact, and codes only; with missing values and
// without, with fractional weights and bootstrap counts, at min leaf 1
// and 3.
func TestGini2SameTrees(t *testing.T) {
	const n, p = 4000, 10
	cols, y, _ := codesData(n, p, 2, 5000, 11)
	dense := make([][]float32, p) // no missing values: the scans' other case
	for j, c := range cols {
		dense[j] = make([]float32, n)
		for i, v := range c {
			if v != v {
				v = float32(i%7) * 0.37
			}
			dense[j][i] = v
		}
	}
	rng := rand.New(rand.NewPCG(3, 8))
	var rows []int32
	var frac, counts []float64
	for i := 0; i < n; i++ {
		if c := rng.IntN(4); c > 0 {
			rows = append(rows, int32(i))
			frac = append(frac, 0.25+rng.Float64()*2)
			counts = append(counts, float64(c))
		}
	}
	grow := func(d *Data, w []float64, minLeaf float64, plain bool) *Tree {
		t.Helper()
		smp, err := projection.NewAxis(p, 3)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBuilder(d, Config{Criterion: Gini, MinLeaf: minLeaf, MinSplit: 2}, smp)
		if err != nil {
			t.Fatal(err)
		}
		if !plain && !b.useGini2() {
			t.Fatal("a two-class Gini builder does not take the gini2 scans")
		}
		b.plainScan = plain
		tr, _, err := b.Grow(rand.New(rand.NewPCG(1, 2)), rows, w)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, cs := range []struct {
		name string
		cols [][]float32
	}{{"missing", cols}, {"dense", dense}} {
		bins := NewBinned(cs.cols, 255, 2)
		for _, dc := range []struct {
			name string
			d    *Data
		}{
			{"binned", &Data{Cols: cs.cols, Y: y, K: 2, Bins: bins}},
			{"per-candidate", &Data{Cols: cs.cols, Y: y, K: 2, Bins: &Binned{Codes: bins.Codes, Upper: bins.Upper}}},
			{"exact", &Data{Cols: cs.cols, Y: y, K: 2}},
			{"codes", &Data{Y: y, K: 2, Bins: bins}},
		} {
			for _, w := range [][]float64{frac, counts} {
				for _, minLeaf := range []float64{1, 3} {
					want := grow(dc.d, w, minLeaf, true)
					got := grow(dc.d, w, minLeaf, false)
					if len(want.Left) < 50 {
						t.Fatalf("%s %s: only %d nodes", cs.name, dc.name, len(want.Left))
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s %s, min leaf %v, weights %v...: gini2's tree (%d nodes) differs from classAcc's (%d nodes)",
							cs.name, dc.name, minLeaf, w[:2], len(got.Left), len(want.Left))
					}
				}
			}
		}
	}
}

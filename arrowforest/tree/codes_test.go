package tree

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// codesData returns n rows of p features, each with distinct values per
// feature (few: at most 200 values, so 255 bins are exact), some missing,
// and k classes that depend on the first features.
func codesData(n, p, k, distinct int, seed uint64) ([][]float32, []int32, []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			if rng.IntN(50) == 0 {
				cols[j][i] = float32(math.NaN())
				continue
			}
			cols[j][i] = float32(rng.IntN(distinct)) * 0.37
		}
	}
	y := make([]int32, n)
	reg := make([]float64, n)
	for i := range y {
		s := float64(cols[0][i]) - float64(cols[1][i]) + rng.NormFloat64()*5
		if s != s {
			s = rng.NormFloat64()
		}
		y[i] = int32(min(max(int(s/10)+k/2, 0), k-1))
		reg[i] = s
	}
	return cols, y, reg
}

func growOn(t *testing.T, d *Data, crit Criterion, n int) *Tree {
	t.Helper()
	smp, err := projection.NewAxis(d.features(), 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(d, Config{Criterion: crit, MinLeaf: 1, MinSplit: 2}, smp)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var rows []int32
	var w []float64
	for i := 0; i < n; i++ {
		if c := rng.IntN(3); c > 0 {
			rows, w = append(rows, int32(i)), append(w, float64(c))
		}
	}
	tr, _, err := b.Grow(rand.New(rand.NewPCG(9, 9)), rows, w)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// With at most 255 distinct values per feature the bins are exact, so a
// tree grown on the codes alone (Cols nil) must split as the tree grown
// with the columns, whose small nodes sort the raw values.
func TestCodesOnlySameTreeWhenBinsExact(t *testing.T) {
	cols, y, reg := codesData(3000, 6, 3, 200, 1)
	bins := NewBinned(cols, 255, 2)
	for _, c := range []struct {
		name string
		d    func() *Data
		crit Criterion
	}{
		{"gini", func() *Data { return &Data{Cols: cols, Y: y, K: 3, Bins: bins} }, Gini},
		{"mse", func() *Data { return &Data{Cols: cols, YReg: reg, Bins: bins} }, MSE},
	} {
		want := growOn(t, c.d(), c.crit, len(y))
		d := c.d()
		d.Cols = nil
		got := growOn(t, d, c.crit, len(y))
		if got.NumNodes() < 50 {
			t.Fatalf("%s: only %d nodes", c.name, got.NumNodes())
		}
		// the thresholds differ (a bin edge is the midpoint of values
		// next to each other in the whole column, the sorted search's of
		// values next to each other in the node); the same counts and
		// leaves say both split the in-bag rows the same way
		got.Threshold, want.Threshold = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: codes-only tree (%d nodes) differs from the tree grown on the columns (%d nodes)", c.name, got.NumNodes(), want.NumNodes())
		}
	}
}

// With many distinct values, a codes-only tree splits only at bin edges,
// and its leaves' counts are the in-bag weights that reach them by the
// raw values — the partition followed the thresholds — and by the
// bins' stand-in values (Binned.Value).
func TestCodesOnlyRoutesRawValues(t *testing.T) {
	const n = 4000
	cols, y, _ := codesData(n, 5, 2, 1<<20, 2)
	bins := NewBinned(cols, 64, 2)
	tr := growOn(t, &Data{Y: y, K: 2, Bins: bins}, Gini, n)
	if tr.NumNodes() < 50 {
		t.Fatalf("only %d nodes", tr.NumNodes())
	}
	for i := 0; i < tr.NumNodes(); i++ {
		if tr.IsLeaf(i) {
			continue
		}
		j := tr.AtomFeature[tr.AtomStart[i]]
		if _, ok := slices.BinarySearch(bins.Upper[j], tr.Threshold[i]); !ok {
			t.Fatalf("node %d: threshold %v of feature %d is no bin edge", i, tr.Threshold[i], j)
		}
	}
	walk := func(val func(j int32, r int) float32, r int) int {
		i := 0
		for !tr.IsLeaf(i) {
			v := val(tr.AtomFeature[tr.AtomStart[i]], r)
			if v <= tr.Threshold[i] || (v != v && tr.MissingLeft[i]) {
				i = int(tr.Left[i])
			} else {
				i = int(tr.Right[i])
			}
		}
		return i
	}
	raw := func(j int32, r int) float32 { return cols[j][r] }
	stand := func(j int32, r int) float32 { return bins.Value(int(j), bins.Codes[j][r]) }
	rng := rand.New(rand.NewPCG(3, 4)) // growOn's sample
	count := make([]float64, tr.NumNodes())
	for r := 0; r < n; r++ {
		c := rng.IntN(3)
		l := walk(raw, r)
		if s := walk(stand, r); s != l {
			t.Fatalf("row %d: raw values reach leaf %d, stand-ins leaf %d", r, l, s)
		}
		count[l] += float64(c)
	}
	for i := 0; i < tr.NumNodes(); i++ {
		if tr.IsLeaf(i) && float64(tr.Count[i]) != count[i] {
			t.Fatalf("leaf %d: count %v, but in-bag weight %v reaches it", i, tr.Count[i], count[i])
		}
	}
}

// A codes-only builder refuses oblique atoms (it has no values to
// project) with an error, not a panic.
func TestCodesOnlyRefusesOblique(t *testing.T) {
	cols, y, _ := codesData(500, 4, 2, 1000, 3)
	d := &Data{Y: y, K: 2, Bins: NewBinned(cols, 255, 1)}
	smp, err := projection.NewSparse(4, 3, 2, false)
	if err != nil {
		t.Skip(err)
	}
	b, err := NewBuilder(d, Config{Criterion: Gini, MinLeaf: 1, MinSplit: 2}, smp)
	if err != nil {
		return // refused up front: fine
	}
	rows := make([]int32, 500)
	w := make([]float64, 500)
	for i := range rows {
		rows[i], w[i] = int32(i), 1
	}
	if _, _, err := b.Grow(rand.New(rand.NewPCG(1, 1)), rows, w); err == nil {
		t.Fatal("a codes-only builder grew a tree of oblique atoms")
	}
}

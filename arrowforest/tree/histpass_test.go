package tree

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// The one-pass histograms (buildHists, from the row-major codes) must give
// the trees of one histogram per candidate from the columns' codes, to the
// bit: quantile bins (many distinct values), missing values, fractional
// weights, classification of several class counts and regression.
func TestHistPassSameTree(t *testing.T) {
	const n = 4000
	cols, y, reg := codesData(n, 12, 5, 5000, 2)
	bins := NewBinned(cols, 255, 2)
	if bins.rows == nil {
		t.Fatal("NewBinned kept no row-major codes")
	}
	byCol := &Binned{Codes: bins.Codes, Upper: bins.Upper} // rows nil: one pass per candidate
	rng := rand.New(rand.NewPCG(5, 6))
	var rows []int32
	var w []float64
	for i := 0; i < n; i++ {
		if rng.IntN(3) > 0 {
			rows, w = append(rows, int32(i)), append(w, 0.25+rng.Float64()*2)
		}
	}
	grow := func(d *Data, crit Criterion) (*Tree, *Builder) {
		t.Helper()
		smp, err := projection.NewAxis(12, 4)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBuilder(d, Config{Criterion: crit, MinLeaf: 1, MinSplit: 2}, smp)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := b.Grow(rand.New(rand.NewPCG(9, 9)), rows, w)
		if err != nil {
			t.Fatal(err)
		}
		return tr, b
	}
	y2 := make([]int32, n)
	for i := range y2 {
		y2[i] = y[i] % 2
	}
	for _, c := range []struct {
		name string
		d    func(*Binned) *Data
		crit Criterion
	}{
		{"gini-2", func(bn *Binned) *Data { return &Data{Cols: cols, Y: y2, K: 2, Bins: bn} }, Gini},
		{"gini-5", func(bn *Binned) *Data { return &Data{Cols: cols, Y: y, K: 5, Bins: bn} }, Gini},
		{"entropy-5", func(bn *Binned) *Data { return &Data{Cols: cols, Y: y, K: 5, Bins: bn} }, Entropy},
		{"mse", func(bn *Binned) *Data { return &Data{Cols: cols, YReg: reg, Bins: bn} }, MSE},
		{"codes-gini", func(bn *Binned) *Data { return &Data{Y: y, K: 5, Bins: bn} }, Gini},
		{"codes-mse", func(bn *Binned) *Data { return &Data{YReg: reg, Bins: bn} }, MSE},
	} {
		want, _ := grow(c.d(byCol), c.crit)
		got, b := grow(c.d(bins), c.crit)
		if len(b.hfeat) == 0 && cap(b.hbuf) == 0 {
			t.Fatalf("%s: the one-pass histograms were not used", c.name)
		}
		if len(want.Left) < 50 {
			t.Fatalf("%s: only %d nodes", c.name, len(want.Left))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the one-pass tree (%d nodes) differs from the per-candidate tree (%d nodes)", c.name, len(got.Left), len(want.Left))
		}
	}
}

// rowMajor must put feature j of row i at i·p + j across block edges.
func TestRowMajor(t *testing.T) {
	const n, p = 10000, 3
	codes := make([][]uint8, p)
	for j := range codes {
		codes[j] = make([]uint8, n)
		for i := range codes[j] {
			codes[j][i] = uint8((i*7 + j*31) % 251)
		}
	}
	rows := rowMajor(codes)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			if rows[i*p+j] != codes[j][i] {
				t.Fatalf("row %d feature %d: %d, want %d", i, j, rows[i*p+j], codes[j][i])
			}
		}
	}
}

// Partitioning on a histogram split's codes (code ≤ bin) must move the
// rows exactly as partitioning on the float32 values at its threshold
// (x ≤ Upper[bin]), missing rows to either side.
func TestPartitionCodesSameRows(t *testing.T) {
	const n = 3000
	cols, y, _ := codesData(n, 4, 3, 5000, 3)
	bins := NewBinned(cols, 255, 1)
	d := &Data{Cols: cols, Y: y, K: 3, Bins: bins}
	smp, err := projection.NewAxis(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(d, Config{Criterion: Gini, MinLeaf: 1, MinSplit: 2}, smp)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	start := make([]int32, n)
	for i := range start {
		start[i] = int32(rng.IntN(n))
	}
	reset := func() {
		b.idx = append(b.idx[:0], start...)
		b.w, b.y = b.w[:0], b.y[:0]
		for k, r := range start {
			b.w = append(b.w, float64(k))
			b.y = append(b.y, y[r])
		}
	}
	for trial := 0; trial < 200; trial++ {
		j := int32(rng.IntN(4))
		bin := uint8(rng.IntN(bins.NBins(int(j)) - 1))
		sp := split{ok: true, thr: bins.Upper[j][bin], missLeft: trial%2 == 0, binned: true, bin: bin}
		s, e := rng.IntN(n/2), n/2+rng.IntN(n/2)
		idx, wts := []int32{j}, []float32{1}
		reset()
		got := b.partition(s, e, idx, wts, sp)
		gotIdx, gotW := append([]int32(nil), b.idx...), append([]float64(nil), b.w...)
		reset()
		sp.binned = false
		want := b.partition(s, e, idx, wts, sp)
		if got != want || !reflect.DeepEqual(gotIdx, b.idx) || !reflect.DeepEqual(gotW, b.w) {
			t.Fatalf("feature %d bin %d missLeft %v: codes partition at %d, values at %d, or other row orders", j, bin, sp.missLeft, got, want)
		}
	}
}

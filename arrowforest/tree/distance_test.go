package tree

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
)

// randDist returns n random responses in R^q and their squared Euclidean
// distances, optionally distorted so the distance is not Euclidean.
func randDist(rng *rand.Rand, n, q int, distort bool) ([]float64, *Distances) {
	y := make([]float64, n*q)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	d2 := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for c := 0; c < q; c++ {
				x := y[i*q+c] - y[j*q+c]
				s += x * x
			}
			if distort {
				s = math.Sqrt(s) // d² = Euclidean distance: still a metric
			}
			d2[i*n+j] = s
		}
	}
	return y, &Distances{N: n, D2: d2}
}

// bruteG evaluates eq. (1) of the dRF paper literally for one split of the
// weighted rows: G = P(S)/2N − P(L)/2N_L − P(R)/2N_R with
// P(A) = Σ_{i∈A} Σ_{j∈A} w_i w_j d²_ij.
func bruteG(d *Distances, rows []int32, w []float64, left []bool) float64 {
	pair := func(sel func(int) bool) (float64, float64) {
		var p, nw float64
		for a := range rows {
			if !sel(a) {
				continue
			}
			nw += w[a]
			for b := range rows {
				if sel(b) {
					p += w[a] * w[b] * d.D2[int(rows[a])*d.N+int(rows[b])]
				}
			}
		}
		return p, nw
	}
	pS, nS := pair(func(int) bool { return true })
	pL, nL := pair(func(a int) bool { return left[a] })
	pR, nR := pair(func(a int) bool { return !left[a] })
	return pS/(2*nS) - pL/(2*nL) - pR/(2*nR)
}

// TestDistanceIncrementalEqualsBruteForce checks the incremental scan of
// searchDistance against eq. (1) evaluated from scratch at every split
// point, with bootstrap weights, ties, a non-Euclidean distance and
// missing values (sent to whichever side is better).
func TestDistanceIncrementalEqualsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := 0; trial < 40; trial++ {
		n := 8 + rng.IntN(40)
		_, dist := randDist(rng, n, 1+rng.IntN(3), trial%2 == 1)
		col := make([]float32, n)
		for i := range col {
			col[i] = float32(rng.IntN(12)) // ties
			if trial%3 == 2 && rng.IntN(5) == 0 {
				col[i] = float32(math.NaN())
			}
		}
		d := &Data{Cols: [][]float32{col}, Dist: dist}
		minLeaf := float64(1 + rng.IntN(2))
		b, err := NewBuilder(d, Config{Criterion: Distance, MinLeaf: minLeaf, MinSplit: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// a bootstrap-like sample: distinct rows with weights 1..3
		var rows []int32
		var w []float64
		for i := 0; i < n; i++ {
			if rng.IntN(4) > 0 {
				rows = append(rows, int32(i))
				w = append(w, float64(1+rng.IntN(3)))
			}
		}
		if len(rows) < 4 {
			continue
		}
		b.idx, b.w = append(b.idx[:0], rows...), append(b.w[:0], w...)
		_, base, _ := b.distNode(0, len(rows))
		got := b.searchDistance([]int32{0}, []float32{1}, 0, len(rows))

		// brute force: every threshold between distinct values, both
		// placements of the missing rows
		want, wantOK := math.Inf(-1), false
		var vals []float32
		for _, r := range rows {
			if v := col[r]; v == v {
				vals = append(vals, v)
			}
		}
		for _, thr := range vals {
			for _, missLeft := range []bool{false, true} {
				left := make([]bool, len(rows))
				var nl, nr float64
				for a, r := range rows {
					v := col[r]
					left[a] = v <= thr || (v != v && missLeft)
					if left[a] {
						nl += w[a]
					} else {
						nr += w[a]
					}
				}
				if nl < minLeaf || nr < minLeaf {
					continue
				}
				// a threshold equal to the largest value moves nothing right
				if !hasNonMissingRight(rows, col, thr) {
					continue
				}
				if g := bruteG(dist, rows, w, left); g > want {
					want, wantOK = g, true
				}
			}
		}
		if got.ok != wantOK {
			t.Fatalf("trial %d: found=%v, brute force found=%v", trial, got.ok, wantOK)
		}
		if !got.ok {
			continue
		}
		g := got.proxy - base
		if math.Abs(g-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("trial %d: incremental G %.15g, brute force %.15g", trial, g, want)
		}
		// and the reported split really has that G
		left := make([]bool, len(rows))
		for a, r := range rows {
			v := col[r]
			left[a] = v <= got.thr || (v != v && got.missLeft)
		}
		if g2 := bruteG(dist, rows, w, left); math.Abs(g2-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("trial %d: split at %v (missing left %v) has G %.15g, want %.15g", trial, got.thr, got.missLeft, g2, want)
		}
	}
}

func hasNonMissingRight(rows []int32, col []float32, thr float32) bool {
	for _, r := range rows {
		if v := col[r]; v == v && v > thr {
			return true
		}
	}
	return false
}

// TestDistanceEuclideanEqualsMSE: with squared Euclidean distances of a
// scalar response, G of eq. (1) is the decrease of the within-node sum of
// squares, so a distance tree must equal the exact MSE tree node for node.
func TestDistanceEuclideanEqualsMSE(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 9))
	n, p := 300, 4
	y, dist := randDist(rng, n, 1, false)
	cols := make([][]float32, p)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(rng.NormFloat64()) + float32(j)*float32(y[i])
		}
	}
	rows := make([]int32, n)
	w := make([]float64, n)
	for i := range rows {
		rows[i], w[i] = int32(i), float64(1+i%2)
	}
	grow := func(d *Data, crit Criterion) *Tree {
		smp, err := projection.NewAxis(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBuilder(d, Config{Criterion: crit, MinLeaf: 1, MinSplit: 2}, smp)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := b.Grow(rand.New(rand.NewPCG(4, 4)), rows, w)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Validate(p, 0); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	mse := grow(&Data{Cols: cols, YReg: y}, MSE)
	dt := grow(&Data{Cols: cols, Dist: dist}, Distance)
	// Small nodes often have several atoms that induce the same partition
	// (or its mirror image) with mathematically equal gains, which
	// rounding may order either way, so the trees are compared by the
	// partition of the rows into leaves: it must be the same.
	if mse.NumNodes() != dt.NumNodes() {
		t.Fatalf("mse tree has %d nodes, distance tree %d", mse.NumNodes(), dt.NumNodes())
	}
	if mse.Threshold[0] != dt.Threshold[0] || mse.AtomFeature[0] != dt.AtomFeature[0] {
		t.Fatalf("root split differs: mse x%d ≤ %v, distance x%d ≤ %v", mse.AtomFeature[0], mse.Threshold[0], dt.AtomFeature[0], dt.Threshold[0])
	}
	fwd, back := map[int32]int32{}, map[int32]int32{}
	for i := 0; i < n; i++ {
		l, lm := dt.Leaf(cols, i), mse.Leaf(cols, i)
		if !dt.IsLeaf(int(l)) {
			t.Fatalf("row %d: Leaf returned internal node %d", i, l)
		}
		if x, ok := fwd[lm]; ok && x != l {
			t.Fatalf("rows of mse leaf %d fall in distance leaves %d and %d", lm, x, l)
		}
		if x, ok := back[l]; ok && x != lm {
			t.Fatalf("rows of distance leaf %d fall in mse leaves %d and %d", l, x, lm)
		}
		fwd[lm], back[l] = l, lm
	}
	if len(fwd) != mse.NumLeaves() {
		t.Fatalf("%d leaves reached, the tree has %d", len(fwd), mse.NumLeaves())
	}
}

func TestDistanceConfigChecks(t *testing.T) {
	_, dist := randDist(rand.New(rand.NewPCG(1, 1)), 5, 2, false)
	col := [][]float32{{1, 2, 3, 4, 5}}
	for _, c := range []struct {
		d    *Data
		crit Criterion
	}{
		{&Data{Cols: col, YReg: []float64{1, 2, 3, 4, 5}}, Distance},
		{&Data{Cols: col, Dist: dist}, MSE},
		{&Data{Cols: col, Dist: &Distances{N: 4, D2: make([]float64, 16)}}, Distance},
		{&Data{Cols: col, Dist: &Distances{N: 5, D2: make([]float64, 24)}}, Distance},
		{&Data{Cols: col, Dist: dist, Y: []int32{0, 1, 0, 1, 0}, K: 2}, Distance},
	} {
		if _, err := NewBuilder(c.d, Config{Criterion: c.crit, MinLeaf: 1}, nil); err == nil {
			t.Errorf("criterion %s with %+v accepted", c.crit, c.d)
		}
	}
	if c, err := ParseCriterion("distance"); err != nil || c != Distance || c.String() != "distance" {
		t.Fatalf("ParseCriterion(distance) = %v, %v", c, err)
	}
}

package manifold

import (
	"math"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// TestOOBPoints: the out-of-bag point of training row i is what the
// Predictor puts on the embedding for row i's features with a forest of
// only the trees for which row i was out of bag — in both prediction
// modes — and the rows left out are exactly those in bag for every tree.
func TestOOBPoints(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 200, 200, 5)
	for _, mode := range []string{forest.PredictWeighted, forest.PredictAlgorithm1} {
		o := smallOptions()
		o.Trees, o.Predict = 6, mode
		f, err := Train(tr, ytr, swissTargets, o)
		if err != nil {
			t.Fatal(err)
		}
		d := f.DRF
		n, m := d.Rows(), d.Dim()
		d2, err := SquaredDistances(d.Responses, n, 3, d.Distance, d.IsomapK, 2)
		if err != nil {
			t.Fatal(err)
		}
		emb := &Embedding{N: n, M: m, Z: d.Embedding, Lambda: d.Eigenvalues}
		pts := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, mode, n, 2)
		if again := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, mode, n, 1); !slices.Equal(again.Z, pts.Z) {
			t.Fatalf("%s: out-of-bag points differ between 1 and 2 threads", mode)
		}
		// a limit keeps evenly spaced points, unchanged
		few := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, mode, 10, 2)
		if len(few.Rows) != 10 || len(few.Z) != 10*m {
			t.Fatalf("%s: limit 10 keeps %d points", mode, len(few.Rows))
		}
		for k, r := range few.Rows {
			j := k * len(pts.Rows) / 10
			if r != pts.Rows[j] || !slices.Equal(few.Z[k*m:k*m+m], pts.Z[j*m:j*m+m]) {
				t.Fatalf("%s: limited point %d is row %d, want row %d of the full list", mode, k, r, pts.Rows[j])
			}
		}
		at := map[int32]int{}
		for k, r := range pts.Rows {
			at[r] = k
		}
		checked := 0
		for i := 0; i < n; i++ {
			var trees []*tree.Tree
			var leaves [][]int32
			for t2, l := range d.Leaves {
				if l[i] < 0 {
					trees, leaves = append(trees, f.Trees[t2]), append(leaves, l)
				}
			}
			k, ok := at[int32(i)]
			if ok != (len(trees) > 0) {
				t.Fatalf("%s: row %d out of bag for %d trees, listed %v", mode, i, len(trees), ok)
			}
			if !ok || i%7 != 0 {
				continue
			}
			g := *f
			gd := *d
			g.Trees, gd.Leaves, g.DRF = trees, leaves, &gd
			p, err := NewPredictor(&g, 1)
			if err != nil {
				t.Fatal(err)
			}
			row := &frame.Frame{Names: tr.Names, NRows: 1}
			for _, c := range tr.Cols {
				row.Cols = append(row.Cols, c[i:i+1])
			}
			pr, err := p.Predict(row, 1)
			if err != nil {
				t.Fatal(err)
			}
			for l := 0; l < m; l++ {
				if got, want := pts.Z[k*m+l], pr.Embedded[l]; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("%s: row %d coordinate %d: out-of-bag point %v, predictor on its out-of-bag trees %v", mode, i, l, got, want)
				}
			}
			checked++
		}
		if checked < 10 || len(pts.Rows) == n {
			t.Fatalf("%s: %d rows checked, %d of %d out of bag somewhere (6 trees: some rows should be in bag everywhere)", mode, checked, len(pts.Rows), n)
		}
	}
}

package manifold

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
)

// TestEmbedDimChosenOutOfBag: with EmbedDim 0 every candidate is scored,
// and each candidate's error equals an independent computation — a fresh
// MDS in exactly m dimensions, fresh out-of-bag points on it, and the
// out-of-bag σ_G/γ_G search —; the model keeps the candidate of least
// error (its embedding has that many columns, its σ_G, γ_G and error are
// that candidate's), the same at 1 and 3 threads; written and read back,
// it predicts the same.
func TestEmbedDimChosenOutOfBag(t *testing.T) {
	tr, te, ytr, _, _ := swissSplit(t, 450, 300, 6)
	o := smallOptions()
	o.EmbedDim, o.SigmaG, o.GammaG, o.Trees = 0, 0, 0, 30
	f, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	d := f.DRF
	n := d.Rows()
	var dims []int
	for _, e := range d.EmbedDims {
		dims = append(dims, e.Dim)
	}
	if !slices.Equal(dims, EmbedDimCandidates()) {
		t.Fatalf("candidates scored: %v, want %v", dims, EmbedDimCandidates())
	}
	d2, err := SquaredDistances(d.Responses, n, 3, d.Distance, d.IsomapK, 2)
	if err != nil {
		t.Fatal(err)
	}
	yc, _ := centred(d.Responses, n, 3, true)
	best := -1
	var want Selection
	for k, e := range d.EmbedDims {
		emb, err := ClassicalMDS(d2, n, e.Dim, 2)
		if err != nil || emb.M != e.Dim {
			t.Fatalf("m=%d: MDS gives %d dimensions (%v)", e.Dim, emb.M, err)
		}
		oob := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, d.Predict, maxOOBPoints, 2)
		sel, err := selectBackscoreOOB(emb.Z, n, emb.M, yc, 3, *oob, 0, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sel.MSE-e.OOBMSE) > 1e-6*sel.MSE {
			t.Errorf("m=%d: out-of-bag error %v, independently %v", e.Dim, e.OOBMSE, sel.MSE)
		}
		if best < 0 || sel.MSE < d.EmbedDims[best].OOBMSE {
			best, want = k, sel
		}
	}
	m := d.EmbedDims[best].Dim
	if d.Dim() != m || len(d.Embedding) != n*m || d.SelectedBy != SelectOOB {
		t.Fatalf("chosen m=%d (%d coordinates, selected by %q), least error at m=%d", d.Dim(), len(d.Embedding)/n, d.SelectedBy, m)
	}
	if d.SigmaG != want.Sigma || d.GammaG != want.Gamma || math.Abs(d.SelectMSE-want.MSE) > 1e-6*want.MSE {
		t.Fatalf("m=%d: sigma %v gamma %v error %v, independently %v %v %v", m, d.SigmaG, d.GammaG, d.SelectMSE, want.Sigma, want.Gamma, want.MSE)
	}
	// the errors differ across m (else the choice would be vacuous)
	lo, hi := math.Inf(1), 0.0
	for _, e := range d.EmbedDims {
		lo, hi = math.Min(lo, e.OOBMSE), math.Max(hi, e.OOBMSE)
	}
	if !(hi > lo*1.01) {
		t.Fatalf("out-of-bag errors over m span only %v..%v", lo, hi)
	}

	b1, _, err := model.EncodeBytes(f, model.Meta{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	o.Threads = 3
	f3, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	b3, _, _ := model.EncodeBytes(f3, model.Meta{Version: 1})
	if !bytes.Equal(b1, b3) || !slices.Equal(f3.DRF.EmbedDims, d.EmbedDims) {
		t.Fatal("1 and 3 threads choose differently or give different model bytes")
	}
	g, _, err := model.DecodeBytes(b1)
	if err != nil {
		t.Fatal(err)
	}
	if g.DRF.Dim() != m || g.DRF.EmbedDims != nil {
		t.Fatalf("read back: m=%d, candidates %v", g.DRF.Dim(), g.DRF.EmbedDims)
	}
	p1, _ := NewPredictor(f, 2)
	p2, err := NewPredictor(g, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p1.Predict(te, 2)
	c, _ := p2.Predict(te, 2)
	if !slices.Equal(a.Values, c.Values) {
		t.Fatal("the model read back predicts differently")
	}
}

// TestEmbedDimOtherSelections: with σ_G and γ_G given, or chosen by
// leave-one-out, m is still chosen out of bag, by the out-of-bag error of
// the map those σ_G, γ_G give.
func TestEmbedDimOtherSelections(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 250, 250, 7)
	for _, c := range []struct {
		name         string
		sigma, gamma float64
		sel          string
		selectedBy   string
	}{
		{"given", 100, 200, SelectOOB, ""},
		{"leave-one-out", 0, 0, SelectLOO, SelectLOO},
	} {
		o := smallOptions()
		o.EmbedDim, o.SigmaG, o.GammaG, o.Select = 0, c.sigma, c.gamma, c.sel
		f, err := Train(tr, ytr, swissTargets, o)
		if err != nil {
			t.Fatal(err)
		}
		d := f.DRF
		n := d.Rows()
		if d.SelectedBy != c.selectedBy || len(d.EmbedDims) != len(EmbedDimCandidates()) {
			t.Fatalf("%s: selected by %q, %d candidates", c.name, d.SelectedBy, len(d.EmbedDims))
		}
		d2, _ := SquaredDistances(d.Responses, n, 3, d.Distance, d.IsomapK, 2)
		yc, _ := centred(d.Responses, n, 3, true)
		best := d.EmbedDims[0]
		for _, e := range d.EmbedDims {
			if e.OOBMSE < best.OOBMSE {
				best = e
			}
		}
		if d.Dim() != best.Dim {
			t.Fatalf("%s: chosen m=%d, least error at m=%d (%v)", c.name, d.Dim(), best.Dim, d.EmbedDims)
		}
		// the chosen m's error: its map's out-of-bag error
		emb, _ := ClassicalMDS(d2, n, best.Dim, 2)
		oob := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, d.Predict, maxOOBPoints, 2)
		sel, err := selectBackscoreOOB(emb.Z, n, emb.M, yc, 3, *oob, d.SigmaG, d.GammaG, 1)
		if err != nil || math.Abs(sel.MSE-best.OOBMSE) > 1e-6*sel.MSE {
			t.Fatalf("%s: m=%d error %v, its map's out-of-bag error %v (%v)", c.name, best.Dim, best.OOBMSE, sel.MSE, err)
		}
		if c.selectedBy == "" && (d.SigmaG != 100 || d.GammaG != 200 || d.SelectMSE != 0) {
			t.Fatalf("given sigma, gamma: %v %v, error %v", d.SigmaG, d.GammaG, d.SelectMSE)
		}
	}
}

// TestEmbedDimTruncation: the out-of-bag points of the first m MDS
// coordinates are, bit for bit, the first m coordinates of the out-of-bag
// points of more — in both prediction modes — which is why Train computes
// them once; the candidates are capped below N and at the positive
// eigenvalues.
func TestEmbedDimTruncation(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 200, 200, 8)
	for _, mode := range []string{forest.PredictWeighted, forest.PredictAlgorithm1} {
		o := smallOptions()
		o.Predict, o.EmbedDim = mode, 12
		f, err := Train(tr, ytr, swissTargets, o)
		if err != nil {
			t.Fatal(err)
		}
		d := f.DRF
		n := d.Rows()
		d2, _ := SquaredDistances(d.Responses, n, 3, d.Distance, d.IsomapK, 2)
		full := &Embedding{N: n, M: d.Dim(), Z: d.Embedding, Lambda: d.Eigenvalues}
		all := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, full, mode, maxOOBPoints, 2)
		for _, m := range []int{2, 5} {
			got := all.truncate(full.M, m)
			want := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, full.truncate(m), mode, maxOOBPoints, 2)
			if !slices.Equal(got.Rows, want.Rows) || !slices.Equal(got.Z, want.Z) {
				t.Fatalf("%s m=%d: truncated out-of-bag points differ from those of the truncated embedding", mode, m)
			}
		}
	}
	for _, c := range []struct {
		n, avail int
		want     []int
	}{
		{1000, 999, EmbedDimCandidates()},
		{10, 9, []int{2, 3, 4, 6, 8}},
		{1000, 5, []int{2, 3, 4}},
		{1000, 1, []int{1}},
		{2, 1, []int{1}},
	} {
		if got := embedDimCandidates(c.n, c.avail); !slices.Equal(got, c.want) {
			t.Errorf("n=%d, %d positive eigenvalues: candidates %v, want %v", c.n, c.avail, got, c.want)
		}
	}
	if largestEmbedDim(1000) != 48 || largestEmbedDim(10) != 8 || largestEmbedDim(2) != 1 {
		t.Errorf("largest candidate: %d, %d, %d", largestEmbedDim(1000), largestEmbedDim(10), largestEmbedDim(2))
	}
}

package manifold

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
)

// isomapRef is testdata/isomap_sklearn.json.gz (make_isomap_ref.py).
type isomapRef struct {
	Tool   string    `json:"tool"`
	N      int       `json:"n"`
	Q      int       `json:"q"`
	Points []float64 `json:"points"`
	Cases  []struct {
		K    int       `json:"k"`
		Dist []float64 `json:"dist"`
	} `json:"cases"`
}

func readIsomapRef(t testing.TB) *isomapRef {
	t.Helper()
	fh, err := os.Open("testdata/isomap_sklearn.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var ref isomapRef
	if err := json.NewDecoder(zr).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	if ref.N*ref.Q != len(ref.Points) || len(ref.Cases) == 0 {
		t.Fatalf("reference file is inconsistent: n=%d q=%d, %d values", ref.N, ref.Q, len(ref.Points))
	}
	return &ref
}

// swissSplit draws n swissroll rows (dRF paper §3.1) and splits them into
// the first nTrain rows and the rest. Responses are row-major; with clean
// the noise-free points are returned too.
func swissSplit(t testing.TB, n, nTrain int, seed uint64) (tr, te *frame.Frame, ytr, yte, clean []float64) {
	t.Helper()
	fr, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: n, Seed: seed, Clean: true})
	if err != nil {
		t.Fatal(err)
	}
	tr = &frame.Frame{Names: fr.Names, NRows: nTrain}
	te = &frame.Frame{Names: fr.Names, NRows: n - nTrain}
	for _, c := range fr.Cols {
		tr.Cols = append(tr.Cols, c[:nTrain])
		te.Cols = append(te.Cols, c[nTrain:])
	}
	for i := 0; i < n; i++ {
		for k := 0; k < 3; k++ {
			if i < nTrain {
				ytr = append(ytr, tg[k][i])
			} else {
				yte = append(yte, tg[k][i])
				clean = append(clean, tg[3+k][i])
			}
		}
	}
	return tr, te, ytr, yte, clean
}

var swissTargets = []string{"y0", "y1", "y2"}

// smallOptions are quick settings for tests.
func smallOptions() Options {
	o := DefaultOptions()
	o.Trees, o.MaxFeatures, o.Threads = 20, "3", 2
	o.EmbedDim, o.SigmaG, o.GammaG = 2, 100, 200
	return o
}

// oobSetup is the input of the out-of-bag σ_G/γ_G search as Train builds
// it for n swiss-roll rows (the given trees, 3 candidate features, the
// default m = 24, centred responses): the embedding, the responses and
// the out-of-bag points.
func oobSetup(b testing.TB, n, trees int) (*Embedding, []float64, oobPointSet) {
	b.Helper()
	tr, _, y, _, _ := swissSplit(b, n, n, 1)
	o := DefaultOptions()
	o.Trees, o.MaxFeatures, o.Threads, o.SigmaG, o.GammaG = trees, "3", 2, 100, 200
	f, err := Train(tr, y, swissTargets, o)
	if err != nil {
		b.Fatal(err)
	}
	d := f.DRF
	d2, err := SquaredDistances(d.Responses, n, 3, d.Distance, d.IsomapK, 2)
	if err != nil {
		b.Fatal(err)
	}
	emb := &Embedding{N: n, M: d.Dim(), Z: d.Embedding, Lambda: d.Eigenvalues}
	oob := oobPoints(f.Trees, d.Leaves, tr.Cols, d2, emb, d.Predict, maxOOBPoints, 2)
	yc := slices.Clone(d.Responses)
	for r := 0; r < 3; r++ {
		var mean float64
		for i := 0; i < n; i++ {
			mean += yc[i*3+r] / float64(n)
		}
		for i := 0; i < n; i++ {
			yc[i*3+r] -= mean
		}
	}
	return emb, yc, *oob
}

package manifold

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
)

// TestDeterministicAcrossThreads: the same seed gives the same model bytes
// and the same predictions at 1, 2 and 5 threads, for axis and sparse
// atoms (the latter with σ_G and γ_G chosen out of bag, the default).
func TestDeterministicAcrossThreads(t *testing.T) {
	tr, te, ytr, _, _ := swissSplit(t, 400, 250, 5)
	for _, proj := range []string{forest.ProjectionAxis, forest.ProjectionSparse} {
		var first []byte
		var firstPred []float64
		for _, threads := range []int{1, 2, 5} {
			o := smallOptions()
			o.Threads, o.Projection = threads, proj
			if proj == forest.ProjectionSparse {
				o.SigmaG, o.GammaG = 0, 0
			}
			f, err := Train(tr, ytr, swissTargets, o)
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := model.EncodeBytes(f, model.Meta{Version: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPredictor(f, threads)
			if err != nil {
				t.Fatal(err)
			}
			pr, err := p.Predict(te, threads)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first, firstPred = b, pr.Values
				continue
			}
			if !bytes.Equal(b, first) {
				t.Fatalf("%s: model bytes differ at %d threads", proj, threads)
			}
			if !slices.Equal(pr.Values, firstPred) {
				t.Fatalf("%s: predictions differ at %d threads", proj, threads)
			}
		}
		o := smallOptions()
		o.Seed, o.Projection = 99, proj
		f, _ := Train(tr, ytr, swissTargets, o)
		b, _, _ := model.EncodeBytes(f, model.Meta{Version: 1})
		if bytes.Equal(b, first) {
			t.Fatalf("%s: another seed gives the same model", proj)
		}
	}
}

// literalSetup trains a small swiss-roll dRF in the given prediction mode
// and returns the test frame, the predictor, its predictions, the dRF part,
// the training squared distances and the embedding, for the tests that
// replay the paper's steps one by one.
func literalSetup(t *testing.T, mode string) (*frame.Frame, *Predictor, *Prediction, *forest.DRF, []float64, *Embedding) {
	t.Helper()
	tr, te, ytr, _, _ := swissSplit(t, 360, 300, 8)
	o := smallOptions()
	o.Predict = mode
	f, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPredictor(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.Predict(te, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := f.DRF
	d2, err := SquaredDistances(d.Responses, d.Rows(), 3, d.Distance, d.IsomapK, 1)
	if err != nil {
		t.Fatal(err)
	}
	return te, p, pr, d, d2, &Embedding{N: d.Rows(), M: d.Dim(), Z: d.Embedding, Lambda: d.Eigenvalues}
}

// checkLiteral runs eqs. (2)–(3) and (7) on the predicted squared
// distances dn of test row r and compares the result with got.
func checkLiteral(t *testing.T, r int, d *forest.DRF, d2 []float64, e *Embedding, dn, got []float64, tol float64) {
	t.Helper()
	z, err := embedOOS(d2, e, dn)
	if err != nil {
		t.Fatal(err)
	}
	y, err := backscoreRows(d.Embedding, d.Dim(), d.Coef, len(got), d.SigmaG, z)
	if err != nil {
		t.Fatal(err)
	}
	for k := range y { // the centred map's constant term (Options.Center)
		y[k] += d.Offset[k]
	}
	for k := range y {
		if math.Abs(y[k]-got[k]) > tol*(1+math.Abs(y[k])) {
			t.Fatalf("row %d output %d: Predict %v, literal pipeline %v", r, k, got[k], y[k])
		}
	}
}

// TestPredictMatchesLiteralPipeline: Predict (which remembers the result
// per argmax) equals the paper's steps run one by one for each row:
// a (§2.3.1) → Algorithm 1 → eqs. (2)–(3) → eq. (7).
func TestPredictMatchesLiteralPipeline(t *testing.T) {
	te, p, pr, d, d2, e := literalSetup(t, forest.PredictAlgorithm1)
	n := d.Rows()
	for r := 0; r < te.NRows; r++ {
		a := p.Similarity(te.Cols, r)
		if l := argmaxRow(a); int32(l) != pr.Nearest[r] {
			t.Fatalf("row %d: argmax a = %d, Predict used %d", r, l, pr.Nearest[r])
		}
		dn, err := algorithm1(a, d2, n)
		if err != nil {
			t.Fatal(err)
		}
		checkLiteral(t, r, d, d2, e, dn, pr.Values[r*3:r*3+3], 1e-12)
	}
	// a second call answers from what the first remembered
	again, _ := p.Predict(te, 1)
	if !slices.Equal(again.Values, pr.Values) {
		t.Fatal("second Predict differs")
	}
}

// TestSimilarity: a_i counts the trees in which a row shares a leaf with
// training row i; a training row always shares its own leaf in the trees
// where it was in bag, and the vector sums to the mean number of in-bag
// rows of the leaves reached.
func TestSimilarity(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 200, 200, 2)
	f, err := Train(tr, ytr, swissTargets, smallOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPredictor(f, 1)
	if err != nil {
		t.Fatal(err)
	}
	T := float64(len(f.Trees))
	for _, i := range []int{0, 7, 199} {
		a := p.Similarity(tr.Cols, i)
		inbag, sum, want := 0.0, 0.0, 0.0
		for t2, lv := range f.DRF.Leaves {
			if lv[i] >= 0 {
				inbag++
			}
			l := f.Trees[t2].Leaf(tr.Cols, i)
			for _, x := range lv {
				if x == l {
					want++
				}
			}
		}
		for _, x := range a {
			sum += x
		}
		if a[i] != inbag/T {
			t.Fatalf("row %d: a_i = %v, in bag in %v of %v trees", i, a[i], inbag, T)
		}
		if math.Abs(sum-want/T) > 1e-12 {
			t.Fatalf("row %d: Σa = %v, want %v", i, sum, want/T)
		}
	}
}

// TestSwissRollQuality is a coarse check that dRF learns the swiss roll:
// with the paper's §3.1 settings (but few trees) its test predictions lie
// much closer to the noise-free surface points than the responses'
// spread does. (The paper-scale comparison with RF is e2e/bench/drf.sh.)
func TestSwissRollQuality(t *testing.T) {
	tr, te, ytr, _, clean := swissSplit(t, 900, 600, 1)
	o := smallOptions()
	o.Trees = 40
	f, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewPredictor(f, 2)
	pr, _ := p.Predict(te, 2)
	var se, spread float64
	mean := make([]float64, 3)
	for i := 0; i < te.NRows; i++ {
		for k := 0; k < 3; k++ {
			mean[k] += clean[i*3+k] / float64(te.NRows)
		}
	}
	for i := 0; i < te.NRows; i++ {
		for k := 0; k < 3; k++ {
			d := pr.Values[i*3+k] - clean[i*3+k]
			se += d * d
			s := clean[i*3+k] - mean[k]
			spread += s * s
		}
	}
	if r2 := 1 - se/spread; r2 < 0.9 {
		t.Fatalf("R² against the noise-free responses is %.3f, want ≥ 0.9", r2)
	}
}

func TestTrainRejects(t *testing.T) {
	tr, _, ytr, _, _ := swissSplit(t, 60, 60, 1)
	bad := func(name string, mut func(o *Options), y []float64, targets []string) {
		t.Helper()
		o := smallOptions()
		mut(&o)
		if y == nil {
			y = ytr
		}
		if targets == nil {
			targets = swissTargets
		}
		_, err := Train(tr, y, targets, o)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: error has several lines: %q", name, err)
		}
	}
	none := func(*Options) {}
	bad("zero trees", func(o *Options) { o.Trees = 0 }, nil, nil)
	bad("min leaf", func(o *Options) { o.MinLeaf = 0 }, nil, nil)
	bad("sample", func(o *Options) { o.Sample = "jackknife" }, nil, nil)
	bad("projection", func(o *Options) { o.Projection = "patch" }, nil, nil)
	bad("lambda for axis", func(o *Options) { o.Lambda = 2 }, nil, nil)
	bad("distance", func(o *Options) { o.Distance = "cosine" }, nil, nil)
	bad("isomap k", func(o *Options) { o.IsomapK = 60 }, nil, nil)
	bad("embed dim", func(o *Options) { o.EmbedDim = -1 }, nil, nil)
	bad("embed dim 0 without out-of-bag rows", func(o *Options) {
		o.EmbedDim, o.Sample, o.SampleFraction = 0, "subsample", 1
	}, nil, nil)
	bad("sigma", func(o *Options) { o.SigmaG = -1 }, nil, nil)
	bad("selection", func(o *Options) { o.Select = "cv" }, nil, nil)
	bad("gamma", func(o *Options) { o.GammaG = -2 }, nil, nil)
	bad("gamma NaN", func(o *Options) { o.GammaG = math.NaN() }, nil, nil)
	bad("sigma Inf", func(o *Options) { o.SigmaG = math.Inf(1) }, nil, nil)
	bad("max rows", func(o *Options) { o.MaxRows = 1 }, nil, nil)
	bad("max features", func(o *Options) { o.MaxFeatures = "99" }, nil, nil)
	bad("short y", none, ytr[:30], nil)
	bad("no targets", none, ytr, []string{})
	nan := slices.Clone(ytr)
	nan[4] = math.NaN()
	bad("NaN response", none, nan, nil)
	if _, err := Train(nil, ytr, swissTargets, smallOptions()); err == nil {
		t.Fatal("nil frame accepted")
	}
	// a feature null in every row (frame.Frame.CheckValues)
	empty := &frame.Frame{Names: slices.Clone(tr.Names), NRows: tr.NRows, Cols: slices.Clone(tr.Cols)}
	empty.Cols[1] = make([]float32, tr.NRows)
	for i := range empty.Cols[1] {
		empty.Cols[1][i] = float32(math.NaN())
	}
	if _, err := Train(empty, ytr, swissTargets, smallOptions()); !errors.Is(err, frame.ErrNoValues) || !strings.Contains(err.Error(), strconv.Quote(tr.Names[1])) {
		t.Fatalf("a feature without values: %v", err)
	}
}

// TestMaxRowsSubsample: more rows than MaxRows are subsampled, the model
// records both counts, and the stored responses are rows of the input.
func TestMaxRowsSubsample(t *testing.T) {
	tr, te, ytr, _, _ := swissSplit(t, 500, 400, 3)
	o := smallOptions()
	o.MaxRows = 150
	f, err := Train(tr, ytr, swissTargets, o)
	if err != nil {
		t.Fatal(err)
	}
	if f.DRF.Rows() != 150 || f.DRF.InputRows != 400 {
		t.Fatalf("rows %d of %d, want 150 of 400", f.DRF.Rows(), f.DRF.InputRows)
	}
	in := map[[3]float64]bool{}
	for i := 0; i < 400; i++ {
		in[[3]float64(ytr[i*3:i*3+3])] = true
	}
	for i := 0; i < 150; i++ {
		if !in[[3]float64(f.DRF.Responses[i*3:i*3+3])] {
			t.Fatalf("stored response %d is not an input row", i)
		}
	}
	p, err := NewPredictor(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict(te, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Predict(&frame.Frame{Names: []string{"x1"}, Cols: [][]float32{{1}}, NRows: 1}, 1); err == nil {
		t.Fatal("a frame with the wrong features was scored")
	}
}

// TestModelRoundTrip: a dRF model survives encode → decode → encode byte
// for byte and predicts the same; damaged dRF parts are rejected.
func TestModelRoundTrip(t *testing.T) {
	tr, te, ytr, _, _ := swissSplit(t, 300, 200, 4)
	f, err := Train(tr, ytr, swissTargets, smallOptions())
	if err != nil {
		t.Fatal(err)
	}
	b, m, err := model.EncodeBytes(f, model.Meta{Version: 3, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	g, m2, err := model.DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if m2.ID != m.ID || g.Kind != forest.KindDRF || g.DRF == nil {
		t.Fatalf("decoded %q id %s, encoded id %s", g.Kind, m2.ID, m.ID)
	}
	b2, _, err := model.EncodeBytes(g, m2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoded model differs")
	}
	p1, _ := NewPredictor(f, 2)
	p2, err := NewPredictor(g, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p1.Predict(te, 2)
	c, _ := p2.Predict(te, 2)
	if !slices.Equal(a.Values, c.Values) {
		t.Fatal("decoded model predicts differently")
	}
	// damaged dRF parts cannot be encoded (and so never decode: the
	// decoder runs the same checks, see model/drf_test.go)
	for name, damage := range map[string]func(d *forest.DRF){
		"leaf is internal":  func(d *forest.DRF) { d.Leaves[0][firstInBag(d.Leaves[0])] = 0 },
		"eigenvalue order":  func(d *forest.DRF) { d.Eigenvalues[0], d.Eigenvalues[1] = d.Eigenvalues[1], d.Eigenvalues[0] },
		"NaN coefficient":   func(d *forest.DRF) { d.Coef[3] = math.NaN() },
		"short embedding":   func(d *forest.DRF) { d.Embedding = d.Embedding[:5] },
		"duplicate targets": func(d *forest.DRF) { d.Targets[1] = d.Targets[0] },
		"bad distance":      func(d *forest.DRF) { d.Distance = "manhattan" },
		"k too large":       func(d *forest.DRF) { d.IsomapK = d.Rows() },
		"missing tree":      func(d *forest.DRF) { d.Leaves = d.Leaves[1:] },
	} {
		h := *g
		dd := *g.DRF
		dd.Targets = slices.Clone(dd.Targets)
		dd.Eigenvalues = slices.Clone(dd.Eigenvalues)
		dd.Coef = slices.Clone(dd.Coef)
		dd.Leaves = slices.Clone(dd.Leaves)
		dd.Leaves[0] = slices.Clone(dd.Leaves[0])
		damage(&dd)
		h.DRF = &dd
		if _, _, err := model.EncodeBytes(&h, model.Meta{}); err == nil {
			t.Errorf("%s: encoded", name)
		}
		if _, err := NewPredictor(&h, 1); err == nil {
			t.Errorf("%s: predictor built", name)
		}
	}
	h := *g
	h.DRF = nil
	if _, _, err := model.EncodeBytes(&h, model.Meta{}); err == nil {
		t.Error("drf forest without its dRF part encoded")
	}
	if _, err := NewPredictor(&h, 1); err == nil {
		t.Error("predictor built without a dRF part")
	}
}

func firstInBag(l []int32) int {
	for i, x := range l {
		if x >= 0 {
			return i
		}
	}
	return 0
}

// TestPredictWeightedMatchesLiteral: in weighted mode Predict equals the
// steps run one by one: a → d̂² = Σ_j (a_j/Σa) D²_j· → eqs. (2)–(3) →
// eq. (7). Predict instead averages the training rows' own out-of-sample
// points, which is the same by the affinity of eqs. (2)–(3) in d̂².
func TestPredictWeightedMatchesLiteral(t *testing.T) {
	te, p, pr, d, d2, e := literalSetup(t, forest.PredictWeighted)
	n := d.Rows()
	for r := 0; r < te.NRows; r++ {
		a := p.Similarity(te.Cols, r)
		var sa float64
		for _, x := range a {
			sa += x
		}
		dn := make([]float64, n)
		for j, aj := range a {
			for i := range dn {
				dn[i] += aj / sa * d2[j*n+i]
			}
		}
		checkLiteral(t, r, d, d2, e, dn, pr.Values[r*3:r*3+3], 1e-9)
	}
	one, _ := p.Predict(te, 1)
	if !slices.Equal(one.Values, pr.Values) {
		t.Fatal("weighted prediction depends on the thread count")
	}
}

package forest

import (
	"math"
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
)

func BenchmarkSporfHVBars(b *testing.B) {
	fr, err := synth.Generate("hvbars", synth.Options{N: 100, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.Trees, p.Threads = "sporf", 200, 1
	for i := 0; i < b.N; i++ {
		if _, err := Train(fr, p, TrainOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestObliqueCompiledMatchesTrees: compiled scoring of SPORF, RerF(δ+r) and
// MORF forests equals a literal walk of the stored trees.
func TestObliqueCompiledMatchesTrees(t *testing.T) {
	tr := trunkFrame(1500, 12, 1)
	te := trunkFrame(600, 12, 2)
	withMissing(tr, 0.03, 1)
	withMissing(te, 0.03, 2)
	for _, mod := range []func(*Params){
		func(p *Params) { p.Forest = "sporf" },
		func(p *Params) { p.Forest, p.MeanDiff, p.Lambda = "sporf", true, 3 },
		func(p *Params) {
			p.Forest, p.Layout, p.Width, p.Height, p.PatchHMax, p.PatchWMax = "morf", "grid", 4, 3, 2, 3
		},
		func(p *Params) { p.Forest, p.Layout, p.Honest = "morf", "cyclic", 0.4 },
		func(p *Params) { p.Forest, p.Layout, p.PatchWMax, p.MeanDiff = "morf", "series", 6, true },
	} {
		p := DefaultParams(frame.TaskClassification)
		p.Trees = 15
		mod(&p)
		f, c := trainCompiled(t, tr, p)
		pred, _ := c.Predict(te, 2)
		oblique := 0
		for _, x := range f.Trees {
			for i := 0; i < x.NumNodes(); i++ {
				if !x.IsLeaf(i) && x.AtomStart[i+1]-x.AtomStart[i] > 1 {
					oblique++
				}
			}
		}
		if oblique == 0 {
			t.Fatalf("%s: no oblique node in the forest", p.Forest)
		}
		for r := 0; r < te.NRows; r++ {
			want := naivePredict(f, te, r)
			for q, w := range want {
				if got := float64(pred.Prob[r*2+q]); math.Abs(got-w) > 1e-6 {
					t.Fatalf("%+v: row %d: compiled %v, naive %v", p, r, got, w)
				}
			}
		}
		if f.OOB.Error > 0.2 {
			t.Fatalf("%s: OOB error %v on trunk", p.Forest, f.OOB.Error)
		}
	}
}

// TestRankInvariance: RerF(r) sees only marginal ranks, so a strictly
// increasing transform of every feature leaves the trees unchanged — exactly.
func TestRankInvariance(t *testing.T) {
	a := trunkFrame(3000, 6, 4)
	b := trunkFrame(3000, 6, 4)
	// values on a 1/64 grid, so the float32 transform below stays injective
	for j := range a.Cols {
		for i, v := range a.Cols[j] {
			q := float32(math.Round(float64(v)*64) / 64)
			a.Cols[j][i] = q
			b.Cols[j][i] = float32(math.Exp(float64(q)/2))*float32(j+1) + 100
		}
	}
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.Rank, p.MeanDiff, p.Trees = "sporf", true, true, 10
	fa, err := Train(a, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := Train(b, p, TrainOptions{})
	if !reflect.DeepEqual(fa.Trees, fb.Trees) || !reflect.DeepEqual(fa.OOB, fb.OOB) {
		t.Fatal("rank-transformed forests differ after a monotone transform of the inputs")
	}
	p.Rank = false
	fc, _ := Train(b, p, TrainOptions{})
	fd, _ := Train(a, p, TrainOptions{})
	if reflect.DeepEqual(fc.Trees, fd.Trees) {
		t.Fatal("without ranks the transform should change the trees (test is vacuous)")
	}
}

func TestRankMap(t *testing.T) {
	m := newRankMap([][]float32{{3, 1, 2, 2, float32(math.NaN())}})
	for _, c := range []struct{ in, want float32 }{{1, 0}, {2, 0.5}, {3, 1}, {0, 0}, {9, 1}, {1.5, 0.25}, {1.9, 0.25}} {
		if got := m.Apply(0, c.in); math.Abs(float64(got-c.want)) > 1e-6 {
			t.Errorf("rank(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if v := m.Apply(0, float32(math.NaN())); v == v {
		t.Error("NaN must stay NaN")
	}
	big := make([]float32, 20000)
	for i := range big {
		big[i] = float32(i * i)
	}
	mb := newRankMap([][]float32{big})
	if len(mb.Knots[0]) != maxRankKnots || mb.Validate(1) != nil {
		t.Fatalf("%d knots", len(mb.Knots[0]))
	}
	prev := float32(-1)
	for i := 0; i < len(big); i += 7 {
		r := mb.Apply(0, big[i])
		if r < prev || math.Abs(float64(r)-float64(i)/19999) > 0.002 {
			t.Fatalf("rank of row %d = %v", i, r)
		}
		prev = r
	}
}

// TestHonestLeaves: with honesty, a leaf's class frequencies come from
// rows that did not shape the tree, so on pure-noise labels the leaves are
// mixed rather than pure (structure rows alone give pure leaves).
func TestHonestLeaves(t *testing.T) {
	fr := trunkFrame(2000, 5, 6)
	for i := range fr.Y { // labels independent of features
		fr.Y[i] = int32((i * 7919) % 2)
	}
	p := DefaultParams(frame.TaskClassification)
	p.Trees = 5
	dishonest, _ := Train(fr, p, TrainOptions{})
	p.Honest = 0.5
	honest, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pure := func(f *Forest) float64 {
		var n, pureN float64
		for _, x := range f.Trees {
			for i := 0; i < x.NumNodes(); i++ {
				if x.IsLeaf(i) {
					n++
					if x.LeafStart[i+1]-x.LeafStart[i] == 1 {
						pureN++
					}
				}
			}
		}
		return pureN / n
	}
	if pd, ph := pure(dishonest), pure(honest); !(pd > 0.99 && ph < 0.9) {
		t.Fatalf("pure leaves: %v without honesty, %v with; want ~1 and clearly less", pd, ph)
	}
}

// TestMorfMeanDiff: on impulse (MORF paper §5.1 (C)), MORF with the
// patches' class-mean-difference twins splits on non-unit weights, is the
// same forest at any thread count, and errs less on held-out rows than the
// same MORF without twins — the signal's shape, which a patch sum
// flattens, is what the twin keeps (projection.NewPatch with meanDiff).
func TestMorfMeanDiff(t *testing.T) {
	tr, err := synth.Generate("impulse", synth.Options{N: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	te, err := synth.Generate("impulse", synth.Options{N: 4000, Seed: 1001})
	if err != nil {
		t.Fatal(err)
	}
	testErr := func(meanDiff bool, threads int) (float64, *Forest) {
		p := DefaultParams(frame.TaskClassification)
		p.Forest, p.Layout, p.PatchWMin, p.PatchWMax = "morf", "series", 2, 40
		p.Trees, p.MaxFeatures, p.MinLeaf, p.MeanDiff, p.Threads = 60, "0.3", 100, meanDiff, threads
		f, c := trainCompiled(t, tr, p)
		pred, err := c.Predict(te, 2)
		if err != nil {
			t.Fatal(err)
		}
		f.Params.Threads = 0
		return errorRate(pred.Class, te.Y), f
	}
	plain, _ := testErr(false, 2)
	twin, f := testErr(true, 1)
	if _, f3 := testErr(true, 3); !reflect.DeepEqual(f, f3) {
		t.Fatal("morf --mean-diff: the forest trained with 3 threads differs from 1 thread")
	}
	weighted := 0
	for _, x := range f.Trees {
		for _, w := range x.AtomWeight {
			if w != 1 {
				weighted++
			}
		}
	}
	if weighted == 0 {
		t.Fatal("no split uses a mean-difference twin")
	}
	t.Logf("impulse test error: MORF %.4f, MORF with mean-difference twins %.4f", plain, twin)
	if twin >= plain-0.003 {
		t.Fatalf("mean-difference twins err %.4f, plain MORF %.4f: want at least 0.003 less", twin, plain)
	}
}

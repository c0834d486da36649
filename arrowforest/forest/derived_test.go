package forest

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
)

// xorLike draws p independent features uniform on [−1, 1]; the label is
// the XOR (sign product) of features 0 and 1, and feature 2 is a noisy
// copy of the label: one marginal feature and one jointly dependent pair.
func xorLike(n, p int, seed uint64) *frame.Frame {
	fr := trunkFrame(n, p, seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i := 0; i < n; i++ {
		for j := range fr.Cols {
			fr.Cols[j][i] = float32(2*rng.Float64() - 1)
		}
		y := int32(0)
		if (fr.Cols[0][i] > 0) != (fr.Cols[1][i] > 0) {
			y = 1
		}
		fr.Y[i] = y
		fr.Cols[2][i] = float32(y) + 0.8*fr.Cols[2][i]
	}
	return fr
}

// TestFDMLandmarkDeterministic: RF_FDM with landmark mappings (derived
// group norms) gives the same forest at 1, 2 and 5 threads, with missing
// values and permutation importance, and records one derived input per
// group after the input features.
func TestFDMLandmarkDeterministic(t *testing.T) {
	fr := xorLike(1500, 6, 4)
	withMissing(fr, 0.02, 4)
	for _, mod := range []func(*Params){
		func(p *Params) { p.FDMGroups, p.FDMMarginal = "0,1;3,4", "2" },
		func(p *Params) { p.FDMGroups, p.Split = "0,1", "exact" },
		func(p *Params) {}, // groups from the search
	} {
		var ref *Forest
		for _, threads := range []int{1, 2, 5} {
			p := DefaultParams(frame.TaskClassification)
			p.Forest, p.FDMMap, p.Trees, p.Threads, p.Permutation = "fdm", fdm.MapDRL, 12, threads, true
			mod(&p)
			f, err := Train(fr, p, TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			groups, _ := fdm.ParseSets(f.Params.FDMGroups)
			if len(groups) == 0 || !slices.Equal(groups[0], []int{0, 1}) {
				t.Fatalf("groups %q, want the XOR pair 0,1 first", f.Params.FDMGroups)
			}
			if f.Derived.Len() != len(groups) || f.NumInputs() != fr.P() || len(f.Features) != fr.P()+len(groups) ||
				!slices.Equal(f.InputFeatures(), fr.Names) || f.Features[fr.P()] != fdm.NormName(1) {
				t.Fatalf("groups %q: derived %+v, features %v", f.Params.FDMGroups, f.Derived, f.Features)
			}
			if len(f.Importances[ImportancePermutation]) != len(f.Features) {
				t.Fatalf("permutation importance over %d columns, want %d", len(f.Importances[ImportancePermutation]), len(f.Features))
			}
			f.Params.Threads = 0
			if ref == nil {
				ref = f
			} else if !reflect.DeepEqual(ref, f) {
				t.Fatalf("fdm drl %+v: %d threads differ from 1", p, threads)
			}
		}
	}
}

// TestFDMLandmarkScoresAsTrained: a tree grown to purity on all rows
// classifies its own training rows perfectly when they are scored through
// Derive — the derived norms at scoring are the values the tree split on
// (a row moved across any threshold would be misclassified) — and the
// tree does split on landmark atoms (features plus the derived input).
func TestFDMLandmarkScoresAsTrained(t *testing.T) {
	fr := xorLike(800, 4, 7)
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.FDMMap, p.FDMGroups, p.FDMMarginal = "fdm", fdm.MapDRL, "0,1", "2"
	p.Trees, p.Sample, p.SampleFraction, p.Split = 1, "subsample", 1, "exact"
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Trees[0]
	landmark := 0
	for i := 0; i < tr.NumNodes(); i++ {
		a0, a1 := tr.AtomStart[i], tr.AtomStart[i+1]
		if a1-a0 == 3 && tr.AtomFeature[a0] == 0 && tr.AtomFeature[a0+1] == 1 && tr.AtomFeature[a0+2] == 4 && tr.AtomWeight[a0+2] == 1 {
			landmark++
		}
	}
	if landmark == 0 {
		t.Fatal("the tree has no landmark split")
	}
	c, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.Derive(fr)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.Predict(in, 2)
	if err != nil {
		t.Fatal(err)
	}
	if e := errorRate(pr.Class, fr.Y); e != 0 {
		t.Fatalf("training error %v through Derive, want 0 (%d landmark splits)", e, landmark)
	}
	if _, err := c.Predict(fr, 2); err == nil {
		t.Fatal("Predict accepted the input frame without its derived columns")
	}
}

// TestDerivedRejects: Derive needs exactly the input features;
// validateDerived rejects inconsistent derived inputs.
func TestDerivedRejects(t *testing.T) {
	fr := xorLike(300, 4, 2)
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.FDMMap, p.FDMGroups, p.Trees = "fdm", fdm.MapDRL, "0,1", 3
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.validateDerived(); err != nil {
		t.Fatal(err)
	}
	wide, _ := f.Derive(fr)
	if _, err := f.Derive(wide); err == nil || !strings.Contains(err.Error(), "derived") {
		t.Fatalf("Derive of a frame with %d features: %v", wide.P(), err)
	}
	for name, mod := range map[string]func(g *Forest){
		"no derived":      func(g *Forest) { g.Derived = nil },
		"rp with derived": func(g *Forest) { g.Params.FDMMap = fdm.MapRP },
		"rf with derived": func(g *Forest) { g.Kind = "rf" },
		"no norms":        func(g *Forest) { g.Derived = &Derived{} },
		"other inputs": func(g *Forest) {
			g.Derived = &Derived{Norms: []fdm.Norm{{Inputs: []int{0, 2}, Centre: []float64{0, 0}}}}
		},
		"nan centre": func(g *Forest) {
			g.Derived = &Derived{Norms: []fdm.Norm{{Inputs: []int{0, 1}, Centre: []float64{0, math.NaN()}}}}
		},
		"group out of range": func(g *Forest) {
			g.Params.FDMGroups = "0,7"
			g.Derived = &Derived{Norms: []fdm.Norm{{Inputs: []int{0, 7}, Centre: []float64{0, 0}}}}
		},
		"renamed": func(g *Forest) { g.Features = append(slices.Clone(g.Features[:4]), "z") },
		"clash": func(g *Forest) {
			g.Features = append([]string{fdm.NormName(1)}, g.Features[1:]...)
		},
		"levels": func(g *Forest) { g.Levels = [][]string{nil, nil, nil, nil, {"a"}} },
		"too many": func(g *Forest) {
			g.Derived = &Derived{Norms: slices.Repeat(f.Derived.Norms, 5)}
		},
	} {
		g := *f
		mod(&g)
		if err := g.validateDerived(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// an input feature named like a derived input cannot be trained on
	fr.Names = append(slices.Clone(fr.Names[:3]), fdm.NormName(1))
	if _, err := Train(fr, p, TrainOptions{}); err == nil {
		t.Fatal("input named like a derived input accepted")
	}
}

package forest_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
)

// TestLocalKindsModelBytes: lfs and fdm forests give byte-identical model
// files at 1 and 2 threads, decode to forests that score new data exactly
// as the trained ones, and keep their settings (the fdm groups found by
// the search included).
func TestLocalKindsModelBytes(t *testing.T) {
	digits, err := synth.Generate("hvbars", synth.Options{N: 400, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	xor, err := synth.Generate(synth.XOR4, synth.Options{N: 600, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	xorTest, _ := synth.Generate(synth.XOR4, synth.Options{N: 300, Seed: 3})
	cases := []struct {
		name string
		fr   *frame.Frame
		test *frame.Frame
		mod  func(*forest.Params)
	}{
		{"lfs-geodesic", xor, xorTest, func(p *forest.Params) { p.Forest, p.LFSSize, p.LFSMin = "lfs", 3, 2 }},
		{"lfs-grid", digits, digits, func(p *forest.Params) { p.Forest, p.Layout, p.Width, p.Height = "lfs", "grid", 28, 28 }},
		{"fdm-search", xor, xorTest, func(p *forest.Params) { p.Forest = "fdm" }},
		{"fdm-given", xor, xorTest, func(p *forest.Params) { p.Forest, p.FDMGroups, p.FDMCandidates = "fdm", "1,2,3", 4 }},
		{"fdm-drl-search", xor, xorTest, func(p *forest.Params) { p.Forest, p.FDMMap = "fdm", "drl" }},
		{"fdm-drl-given", xor, xorTest, func(p *forest.Params) {
			p.Forest, p.FDMMap, p.FDMGroups, p.FDMMarginal, p.Split = "fdm", "drl", "1,2,3", "0", "exact"
		}},
	}
	for _, c := range cases {
		var ref []byte
		var refF *forest.Forest
		for _, threads := range []int{1, 2} {
			p := forest.DefaultParams(frame.TaskClassification)
			p.Trees, p.Threads = 20, threads
			c.mod(&p)
			f, err := forest.Train(c.fr, p, forest.TrainOptions{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, _, err := model.EncodeBytes(f, model.Meta{Version: 1})
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref, refF = b, f
			} else if !bytes.Equal(ref, b) {
				t.Fatalf("%s: model bytes differ between 1 and 2 threads", c.name)
			}
		}
		back, _, err := model.DecodeBytes(ref)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		if back.Kind != refF.Kind || back.Params.FDMGroups != refF.Params.FDMGroups || back.Params.LFSSize != refF.Params.LFSSize ||
			back.Params.FDMMap != refF.Params.FDMMap || !reflect.DeepEqual(back.Derived, refF.Derived) {
			t.Fatalf("%s: params lost: %+v, derived %+v", c.name, back.Params, back.Derived)
		}
		if (refF.Params.FDMMap == "drl") != (refF.Derived.Len() == 1) || refF.NumInputs() != c.fr.P() {
			t.Fatalf("%s: map %q with %d derived inputs, %d inputs", c.name, refF.Params.FDMMap, refF.Derived.Len(), refF.NumInputs())
		}
		pa, pb := predict(t, refF, c.test), predict(t, back, c.test)
		if !slices.Equal(pa, pb) {
			t.Fatalf("%s: decoded model scores differently", c.name)
		}
	}
}

func predict(t *testing.T, f *forest.Forest, fr *frame.Frame) []float32 {
	t.Helper()
	c, err := forest.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if fr, err = f.Derive(fr); err != nil {
		t.Fatal(err)
	}
	pr, err := c.Predict(fr, 2)
	if err != nil {
		t.Fatal(err)
	}
	return pr.Prob
}

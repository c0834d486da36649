package model

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
)

// drfForest is regForest with a hand-made dRF part: 4 training rows,
// q = 2 targets, m = 1 embedding dimension. Tree 0 has leaves 1 and 2,
// tree 1 is a single leaf.
func drfForest() *forest.Forest {
	f := regForest()
	f.Kind = forest.KindDRF
	f.Params.Forest = forest.KindDRF
	f.DRF = &forest.DRF{
		Targets: []string{"y0", "y1"}, Distance: forest.DistanceIsomap, IsomapK: 2,
		Projection: forest.ProjectionAxis, SigmaG: 100, GammaG: 200, Predict: forest.PredictWeighted, InputRows: 9,
		Responses:   []float64{0, 1, 2, 3, 4, 5, 6, -7.25},
		Embedding:   []float64{-1.5, -0.5, 0.5, 1.5},
		Eigenvalues: []float64{5},
		Coef:        []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1e-300},
		Offset:      []float64{3, -0.0625},
		SelectedBy:  "loo", SelectMSE: 0.123456789,
		Leaves: [][]int32{{1, 2, -1, 1}, {0, 0, 0, -1}},
	}
	return f
}

func TestDRFRoundTrip(t *testing.T) {
	mem, c := newChecked(t)
	f := drfForest()
	b, m := mustEncode(t, c, f, Meta{Version: 2, CreatedBy: "drf test"})
	g, m2, err := c.DecodeBytes(b)
	mem.AssertSize(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m2.ID != m.ID || !sameForest(f, g) {
		t.Fatalf("dRF forest does not survive: %+v", g.DRF)
	}
	b2, _ := mustEncode(t, c, g, m2)
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding changes the bytes")
	}
	// a forest without a dRF part has no forestd.drf key, so the bytes
	// of every other model are unchanged by this key's existence
	rb, _ := mustEncode(t, c, regForest(), Meta{})
	if bytes.Contains(rb, []byte(keyDRF)) {
		t.Fatal("a plain forest carries forestd.drf")
	}
	// without the optional offset and selection (the paper's map with
	// given σ_G, γ_G) the keys are absent and the part still round-trips
	f.DRF.Offset, f.DRF.SelectedBy, f.DRF.SelectMSE = nil, "", 0
	b, m = mustEncode(t, c, f, Meta{Version: 2})
	if bytes.Contains(b, []byte(`"offset"`)) || bytes.Contains(b, []byte(`"selected_by"`)) {
		t.Fatal("optional dRF fields written when unset")
	}
	if g, _, err := c.DecodeBytes(b); err != nil || !sameForest(f, g) {
		t.Fatalf("dRF forest without offset: %v", err)
	}
	// chosen out of bag (the default of package manifold)
	f.DRF.SelectedBy, f.DRF.SelectMSE = forest.SelectedByOOB, 0.5
	b, _ = mustEncode(t, c, f, Meta{Version: 2})
	if g, _, err := c.DecodeBytes(b); err != nil || !sameForest(f, g) || g.DRF.SelectedBy != forest.SelectedByOOB {
		t.Fatalf("dRF forest selected out of bag: %v", err)
	}
}

// TestDRFCorrupt edits forestd.drf (and re-checksums), so the decoder's
// own checks must reject every damaged part as ErrCorrupt.
func TestDRFCorrupt(t *testing.T) {
	edit := func(mut func(j map[string]any)) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) {
			var j map[string]any
			if err := json.Unmarshal([]byte(md[keyDRF]), &j); err != nil {
				t.Fatal(err)
			}
			mut(j)
			b, _ := json.Marshal(j)
			md[keyDRF] = string(b)
		}
	}
	leaves := func(vals ...byte) string { return base64.StdEncoding.EncodeToString(vals) }
	cases := map[string]func(*table, map[string]string){
		"not JSON":          func(_ *table, md map[string]string) { md[keyDRF] = "{" },
		"not an object":     func(_ *table, md map[string]string) { md[keyDRF] = "[1]" },
		"unknown field":     edit(func(j map[string]any) { j["extra"] = 1 }),
		"missing field":     edit(func(j map[string]any) { delete(j, "coef") }),
		"bad base64":        edit(func(j map[string]any) { j["responses"] = "!!!" }),
		"short responses":   edit(func(j map[string]any) { j["responses"] = j["coef"].(string)[:8] }),
		"rows mismatch":     edit(func(j map[string]any) { j["rows"] = 5 }),
		"dim too large":     edit(func(j map[string]any) { j["dim"] = 4 }),
		"no targets":        edit(func(j map[string]any) { j["targets"] = []string{} }),
		"leaf is internal":  edit(func(j map[string]any) { j["leaves"] = leaves(1, 3, 0, 2, 1, 1, 1, 0) }),
		"empty leaf":        edit(func(j map[string]any) { j["leaves"] = leaves(2, 2, 0, 2, 1, 1, 1, 0) }),
		"node out of range": edit(func(j map[string]any) { j["leaves"] = leaves(2, 3, 0, 9, 1, 1, 1, 0) }),
		"leaves too short":  edit(func(j map[string]any) { j["leaves"] = leaves(2, 3, 0, 2, 1, 1, 1) }),
		"leaves trailing":   edit(func(j map[string]any) { j["leaves"] = leaves(2, 3, 0, 2, 1, 1, 1, 0, 0) }),
		"bad varint":        edit(func(j map[string]any) { j["leaves"] = leaves(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) }),
		"unknown distance":  edit(func(j map[string]any) { j["distance"] = "cosine" }),
		"negative sigma":    edit(func(j map[string]any) { j["sigma_g"] = -1 }),
		"input rows":        edit(func(j map[string]any) { j["input_rows"] = 3 }),
		"k out of range":    edit(func(j map[string]any) { j["isomap_k"] = 4 }),
		"kind is rf":        func(_ *table, md map[string]string) { md[keyKind] = "rf" },
		"part missing":      func(_ *table, md map[string]string) { delete(md, keyDRF) },
		"short offset":      edit(func(j map[string]any) { j["offset"] = j["coef"].(string)[:12] }),
		"offset not finite": edit(func(j map[string]any) {
			j["offset"] = base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0})
		}),
		"selected by what":     edit(func(j map[string]any) { j["selected_by"] = "guess" }),
		"negative loo error":   edit(func(j map[string]any) { j["loo_mse"] = -1 }),
		"loo error unselected": edit(func(j map[string]any) { delete(j, "selected_by") }),
		"eigenvalue zero": edit(func(j map[string]any) {
			j["eigenvalues"] = base64.StdEncoding.EncodeToString(make([]byte, 8))
		}),
	}
	expectCorrupt(t, drfForest, cases)
}

// FuzzDRFPart fuzzes the value of forestd.drf inside an otherwise valid,
// re-checksummed model: Decode rejects it with ErrCorrupt on one line or
// returns a forest that re-encodes to an equal forest.
func FuzzDRFPart(f *testing.F) {
	v, _, err := encodeDRF(drfForest(), Meta{}, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v)
	f.Add(strings.Replace(v, `"dim":1`, `"dim":2`, 1))
	f.Add(`{"targets":["a"]}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, val string) {
		b := craft(t, drfForest(), func(_ *table, md map[string]string) { md[keyDRF] = val })
		g, m, err := DecodeBytes(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			checkOneLine(t, err)
			return
		}
		if err := g.ValidateDRF(); err != nil {
			t.Fatalf("decoded an invalid dRF part: %v", err)
		}
		b2, m2, err := EncodeBytes(g, m)
		if err != nil {
			t.Fatalf("decoded model does not re-encode: %v", err)
		}
		g3, m3, err := DecodeBytes(b2)
		if err != nil || m3 != m2 || !sameForest(g3, g) {
			t.Fatalf("re-encoding changes the model: %v", err)
		}
	})
}

// FuzzDRFBytes is FuzzDecode seeded with dRF models, so that random
// byte damage reaches the dRF part too.
func FuzzDRFBytes(f *testing.F) {
	for _, c := range []codec{{}, {MaxBatchRows: 2}} {
		b, _, err := c.EncodeBytes(drfForest(), Meta{Version: 4})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(checkDecodeBytes)
}

package model

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
)

// mappedForest is classForest trained behind an FDM_RF mapping: the
// marginal features x0 and colour pass through, the group {a, b} maps to
// two random-projection columns.
func mappedForest() *forest.Forest {
	f := classForest()
	pv := 0.001
	f.Mapping = &fdm.Transform{Format: fdm.Format, Map: fdm.MapRP, Candidates: 10, Seed: 7,
		Marginal: []string{"x0", "colour"},
		Groups: []fdm.Group{{Features: []string{"a", "b"}, Kind: "mds", PValue: &pv, Outputs: []fdm.Output{
			{Name: fdm.OutputName(1, 1), Weights: []float64{0.25, -0.75}, GCor: 0.5},
			{Name: fdm.OutputName(1, 2), Weights: []float64{-1, 0.125}, GCor: 0.25}}}}}
	f.Features = f.Mapping.Names()
	return f
}

// TestMappingRoundTrip: a model carries its mapping; the value of
// forestd.mapping is a mapping file that fdm.ReadTransform (forestd
// select --apply's reader) accepts as is; the mapping is part of the
// content hash.
func TestMappingRoundTrip(t *testing.T) {
	f := mappedForest()
	b, m := mustEncode(t, codec{}, f, Meta{Version: 3})
	g, gm, err := DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if gm != m || !sameForest(g, f) || !reflect.DeepEqual(g.Mapping, f.Mapping) {
		t.Fatalf("mapping does not survive: %+v", g.Mapping)
	}
	var md map[string]string
	keep := func(_ *table, m map[string]string) { md = maps.Clone(m) } // craft empties m afterwards
	craft(t, f, keep)
	tr, err := fdm.ReadTransform(strings.NewReader(md[keyMapping]))
	if err != nil || !reflect.DeepEqual(tr, f.Mapping) {
		t.Fatalf("forestd.mapping is not a mapping file: %v", err)
	}
	// another mapping, same trees: another model ID
	h := mappedForest()
	h.Mapping.Groups[0].Outputs[0].Weights[0] = 0.5
	if _, m2 := mustEncode(t, codec{}, h, Meta{Version: 3}); m2.ID == m.ID {
		t.Fatal("the mapping is not part of the model ID")
	}
	// a forest without a mapping has no forestd.mapping key
	craft(t, classForest(), keep)
	if _, ok := md[keyMapping]; ok {
		t.Fatal("forestd.mapping written for a forest without a mapping")
	}
}

// TestMappingCorrupt edits forestd.mapping (and re-checksums): the decoder
// must reject a malformed mapping file and a mapping that does not match
// the forest's features as ErrCorrupt, on one line; the encoder refuses
// the inconsistent forests too.
func TestMappingCorrupt(t *testing.T) {
	edit := func(mut func(j map[string]any)) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) {
			var j map[string]any
			if err := json.Unmarshal([]byte(md[keyMapping]), &j); err != nil {
				t.Fatal(err)
			}
			mut(j)
			b, _ := json.Marshal(j)
			md[keyMapping] = string(b)
		}
	}
	group := func(j map[string]any) map[string]any { return j["groups"].([]any)[0].(map[string]any) }
	cases := map[string]func(*table, map[string]string){
		"not JSON":       func(_ *table, md map[string]string) { md[keyMapping] = "{" },
		"trailing data":  func(_ *table, md map[string]string) { md[keyMapping] += " {}" },
		"unknown field":  edit(func(j map[string]any) { j["extra"] = 1 }),
		"wrong format":   edit(func(j map[string]any) { j["format"] = "forestd-fdm/9" }),
		"short weights":  edit(func(j map[string]any) { group(j)["outputs"].([]any)[0].(map[string]any)["weights"] = []float64{1} }),
		"renamed output": edit(func(j map[string]any) { group(j)["outputs"].([]any)[1].(map[string]any)["name"] = "z" }),
		"extra marginal": edit(func(j map[string]any) { j["marginal"] = []string{"x0", "colour", "x9"} }),
		"no marginal":    edit(func(j map[string]any) { j["marginal"] = []string{"colour", "x0"} }),
		"features only": func(_ *table, md map[string]string) {
			delete(md, keyMapping)
			md[keyFeatures] = `["x0","colour","a","b"]`
		},
		"levels mapped": func(_ *table, md map[string]string) { md[keyLevels] = `[null,["red","green"],["u"],null]` },
		"drf kind":      func(_ *table, md map[string]string) { md[keyKind] = string(forest.KindDRF) },
	}
	for name, e := range cases {
		_, _, err := DecodeBytes(craft(t, mappedForest(), e))
		if name == "features only" { // a plain model with other names is valid
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
			continue
		}
		checkOneLine(t, err)
	}
	if _, _, err := DecodeBytes(craft(t, mappedForest(), func(*table, map[string]string) {})); err != nil {
		t.Fatalf("unedited crafted model: %v", err)
	}
	bad := mappedForest()
	bad.Features[2] = "other"
	if _, _, err := EncodeBytes(bad, Meta{}); err == nil {
		t.Fatal("encoded a forest whose features are not its mapping's outputs")
	}
}

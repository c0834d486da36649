package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
)

// derivedForest is classForest as an RF_FDM forest with landmark mappings
// (forest.Derived): group {x0, x2} with its norm as a fifth feature, and
// tree 0's oblique node a landmark atom over x0, x2 and the norm.
func derivedForest() *forest.Forest {
	f := classForest()
	f.Kind, f.Params.Forest, f.Params.FDMMap, f.Params.FDMGroups, f.Params.FDMMarginal = "fdm", "fdm", fdm.MapDRL, "0,2", "1"
	f.Features = append(f.Features, fdm.NormName(1))
	f.Levels = append(f.Levels, nil)
	for k, v := range f.Importances {
		f.Importances[k] = append(v, 0.25)
	}
	t0 := f.Trees[0]
	t0.AtomFeature = []int32{0, 0, 2, 4}
	t0.AtomWeight = []float32{1, -0.5, 0.25, 1}
	f.Derived = &forest.Derived{Norms: []fdm.Norm{{Inputs: []int{0, 2}, Centre: []float64{0.1, -3.2500000000000004}}}}
	return f
}

// TestDerivedRoundTrip: the derived inputs survive encoding exactly (the
// centres bit for bit), the bytes are stable, and a forest without them
// carries no forestd.derived key.
func TestDerivedRoundTrip(t *testing.T) {
	mem, c := newChecked(t)
	f := derivedForest()
	b, m := mustEncode(t, c, f, Meta{Version: 3})
	g, m2, err := c.DecodeBytes(b)
	mem.AssertSize(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m2.ID != m.ID || !sameForest(f, g) || g.Derived.Norms[0].Centre[1] != -3.2500000000000004 {
		t.Fatalf("derived inputs do not survive: %+v", g.Derived)
	}
	if b2, _ := mustEncode(t, c, g, m2); !bytes.Equal(b, b2) {
		t.Fatal("re-encoding changes the bytes")
	}
	if rb, _ := mustEncode(t, c, classForest(), Meta{}); bytes.Contains(rb, []byte(keyDerived)) {
		t.Fatal("a plain forest carries forestd.derived")
	}
}

// TestDerivedCorrupt edits forestd.derived and its context (and
// re-checksums), so the decoder's own checks must reject each as
// ErrCorrupt on one line.
func TestDerivedCorrupt(t *testing.T) {
	set := func(v string) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) { md[keyDerived] = v }
	}
	params := func(from, to string) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) { md[keyParams] = strings.Replace(md[keyParams], from, to, 1) }
	}
	cases := map[string]func(*table, map[string]string){
		"not JSON":        set("{"),
		"not an object":   set("[1]"),
		"null":            set("null"),
		"unknown field":   set(`{"norms":[{"inputs":[0,2],"centre":[0,0]}],"x":1}`),
		"unknown inner":   set(`{"norms":[{"inputs":[0,2],"centre":[0,0],"scale":[1,1]}]}`),
		"trailing data":   set(`{"norms":[{"inputs":[0,2],"centre":[0,0]}]} {}`),
		"no norms":        set(`{"norms":[]}`),
		"short centre":    set(`{"norms":[{"inputs":[0,2],"centre":[0]}]}`),
		"input too large": set(`{"norms":[{"inputs":[0,4],"centre":[0,0]}]}`),
		"not the group":   set(`{"norms":[{"inputs":[0,1],"centre":[0,0]}]}`),
		"two norms":       set(`{"norms":[{"inputs":[0,2],"centre":[0,0]},{"inputs":[0,2],"centre":[0,0]}]}`),
		"huge centre":     set(`{"norms":[{"inputs":[0,2],"centre":[0,1e999]}]}`),
		"string centre":   set(`{"norms":[{"inputs":[0,2],"centre":[0,"NaN"]}]}`),
		"part missing":    func(_ *table, md map[string]string) { delete(md, keyDerived) },
		"kind is rf":      func(_ *table, md map[string]string) { md[keyKind] = "rf" },
		"map is rp":       params(`"fdm_map":"drl"`, `"fdm_map":"rp"`),
		"other groups":    params(`"fdm_groups":"0,2"`, `"fdm_groups":"0,3"`),
		"renamed": func(_ *table, md map[string]string) {
			md[keyFeatures] = strings.Replace(md[keyFeatures], fdm.NormName(1), "norm", 1)
		},
	}
	expectCorrupt(t, derivedForest, cases)
}

// FuzzDerivedPart fuzzes the value of forestd.derived inside an otherwise
// valid, re-checksummed model: Decode rejects it with ErrCorrupt on one
// line or returns a forest with valid derived inputs that re-encodes to
// an equal forest.
func FuzzDerivedPart(f *testing.F) {
	v, _, err := encodeDerived(derivedForest(), Meta{}, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v)
	f.Add(strings.Replace(v, `[0,2]`, `[2,0]`, 1))
	f.Add(`{"norms":null}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, val string) {
		b := craft(t, derivedForest(), func(_ *table, md map[string]string) { md[keyDerived] = val })
		g, m, err := DecodeBytes(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			checkOneLine(t, err)
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("decoded invalid derived inputs: %v", err)
		}
		if _, err := json.Marshal(g.Derived); err != nil {
			t.Fatal(err)
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

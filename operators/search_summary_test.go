package operators

import (
	"math"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/synth"
)

// TestSearchSummaryNotes: forestd analyze's summary of a search on xor3
// with a constant column and a copy of the label added notes each of them
// (not tested; determines the label), and nothing for the ordinary
// features; m0 is marginal.
func TestSearchSummaryNotes(t *testing.T) {
	fr, err := synth.Generate(synth.XOR3, synth.Options{N: 300, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	n := fr.NRows
	constant, copyOf := make([]float32, n), make([]float32, n)
	for i := range constant {
		constant[i] = 7
		copyOf[i] = float32(fr.Y[i])
	}
	fr.Names = append(fr.Names, "const", "label_copy")
	fr.Cols = append(fr.Cols, constant, copyOf)
	lab, err := fdm.LabelOf(fr)
	if err != nil {
		t.Fatal(err)
	}
	opt := dependence.DefaultSearchOptions()
	opt.Method, opt.Test.Seed, opt.Test.Threads = dependence.MethodMarginal, 1, 2
	res, err := SearchFrame(fr, lab, opt)
	if err != nil {
		t.Fatal(err)
	}
	rep := SearchSummary(fr, res, opt)
	notes := rep["notes"].([]string)
	if len(notes) != 2 || !strings.Contains(notes[0], `"const": constant`) || !strings.Contains(notes[1], `"label_copy": determines the label`) {
		t.Fatalf("notes %q", notes)
	}
	feats := rep["features"].([]map[string]any)
	if len(feats) != fr.P() {
		t.Fatalf("%d features, want %d", len(feats), fr.P())
	}
	for _, f := range feats[:fr.P()-2] {
		if _, ok := f["note"]; ok {
			t.Fatalf("a note for %v", f)
		}
	}
	if m := rep["marginal"].([]string); len(m) == 0 || m[0] != "m0" {
		t.Fatalf("marginal %v", m)
	}
	if jsonNum(math.NaN()) != nil || jsonNum(0.5) != 0.5 {
		t.Fatal("jsonNum keeps NaN")
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
)

// readPredictionColumn reads the prediction column of a score output.
func readPredictionColumn(t *testing.T, path string) []string {
	t.Helper()
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	j := schema.FieldIndices("prediction")[0]
	var out []string
	for _, r := range recs {
		a := r.Column(j).(*array.String)
		for i := 0; i < a.Len(); i++ {
			out = append(out, a.Value(i))
		}
	}
	return out
}

// TestScoreMappedModel: a model that carries an FDM mapping (as forestd
// serve's select → train publishes) is scored by forestd score, eval and
// lake scoring on raw data exactly as its trees score the data mapped by
// forestd select --apply with the same mapping file; inspect shows the
// mapping; raw data without a column the mapping reads is one clear error.
func TestScoreMappedModel(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	mustRun(t, "gen", "xor3", "--n", "600", "--seed", "4", "--out", p("train.csv"))
	if err := os.Mkdir(p("lake"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "gen", "xor3", "--n", "300", "--seed", "9", "--out", p("lake/test.parquet"))
	test := p("lake/test.parquet")
	mustRun(t, "select", "--in", p("train.csv"), "--label", "y", "--out", p("sel.csv"), "--mapping", p("map.json"))
	mustRun(t, "train", "--in", p("sel.csv"), "--label", "y", "--out", p("plain.model"), "--trees", "20")
	// the same trees, carrying the mapping they were trained behind
	f, _, err := model.ReadFile(p("plain.model"))
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(p("map.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.Mapping, err = fdm.ReadTransform(fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.WriteFile(p("mapped.model"), f, model.Meta{Version: 1, CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "select", "--in", test, "--apply", p("map.json"), "--label", "y", "--out", p("test-mapped.parquet"))

	mustRun(t, "score", "--model", p("plain.model"), "--in", p("test-mapped.parquet"), "--out", p("want.parquet"))
	mustRun(t, "score", "--model", p("mapped.model"), "--in", test, "--out", p("got.parquet"))
	mustRun(t, "score", "--model", p("mapped.model"), "--in", p("lake"), "--out", p("scored")+"/")
	want := readPredictionColumn(t, p("want.parquet"))
	if len(want) != 300 {
		t.Fatalf("%d predictions", len(want))
	}
	for name, got := range map[string][]string{"score": readPredictionColumn(t, p("got.parquet")),
		"lake score": readPredictionColumn(t, p("scored/test.parquet"))} {
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s of raw data with the mapped model differs from scoring the mapped data", name)
		}
	}
	ePlain := mustRun(t, "eval", "--model", p("plain.model"), "--in", p("test-mapped.parquet"), "--label", "y")
	eMapped := mustRun(t, "eval", "--model", p("mapped.model"), "--in", test, "--label", "y")
	if ePlain["accuracy"] != eMapped["accuracy"] || eMapped["rows"] != 300.0 || eMapped["accuracy"].(float64) < 0.85 {
		t.Fatalf("eval: mapped model %v, mapped data %v", eMapped, ePlain)
	}
	ins := mustRun(t, "inspect", "--model", p("mapped.model"))
	if m, ok := ins["mapping"].(map[string]any); !ok || m["format"] != fdm.Format {
		t.Fatalf("inspect shows no mapping: %v", ins["mapping"])
	}
	// raw data without x2a_1, which the mapping reads
	mustRun(t, "gen", "xor1", "--n", "20", "--seed", "1", "--out", p("other.csv"))
	code, _, errs := run(t, "score", "--model", p("mapped.model"), "--in", p("other.csv"), "--out", p("x.parquet"))
	if code != ExitError || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "m0") {
		t.Fatalf("raw data without the mapping's inputs: exit %d, %q", code, errs)
	}
}

package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/forestd/forestd/connectors/files"
)

// TestDrift runs forestd drift on the R reference data (shifted feature
// b): one JSON object with the features, the joint test and drift, the
// same table with --out, and usage errors naming the flag.
func TestDrift(t *testing.T) {
	d := filepath.Join("..", "..", "..", "arrowforest", "drift", "testdata")
	ref, cur := filepath.Join(d, "shift_ref.csv"), filepath.Join(d, "shift_cur.csv")
	out := filepath.Join(t.TempDir(), "report.parquet")
	rep := mustRun(t, "drift", "--reference", ref, "--current", cur, "--seed", "2", "--out", out)
	hasKeys(t, "drift", rep, "features", "joint", "drift")
	feats := rep["features"].([]any)
	var drifted []string
	for _, f := range feats {
		m := f.(map[string]any)
		hasKeys(t, "feature", m, "name", "statistic", "p_value", "p_adjusted", "drift")
		if m["drift"].(bool) {
			drifted = append(drifted, m["name"].(string))
		}
	}
	if len(feats) != 3 || strings.Join(drifted, ",") != "b" || rep["drift"] != true {
		t.Errorf("features %v drifted %v drift %v; want 3 features, b drifted", feats, drifted, rep["drift"])
	}
	hasKeys(t, "joint", rep["joint"].(map[string]any), "statistic", "p_value", "drift")
	_, recs, err := files.ReadFile(out, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := recs[0].NumRows(); n != 4 {
		t.Errorf("--out has %d rows, want 4 (3 features and the joint test)", n)
	}
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"drift", "--current", cur}, "--reference", 2},
		{[]string{"drift", "--reference", ref}, "--current", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--alpha", "1.5"}, "--alpha", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--adjust", "x"}, "--adjust", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--max-rows", "1"}, "--max-rows", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--features", "a,nope"}, "nope", 1},
	} {
		code, _, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d naming %s", c.args, code, errs, c.code, c.want)
		}
	}
}

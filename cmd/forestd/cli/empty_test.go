package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScoreHeaderOnly (reliability issue, item 1): `forestd score` on a CSV
// with a header and no rows used to fail with "internal error: runtime
// error: integer divide by zero"; it writes a prediction file with no rows,
// for single- and multi-output models.
func TestScoreHeaderOnly(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ data, label, forest string }{
		{"trunk", "y", "rf"}, {"trunk", "y", "sporf"}, {"swissroll", "y0,y1,y2", "rf"}, {"swissroll", "y0,y1,y2", "drf"},
	} {
		name := tc.data + "-" + tc.forest
		data := filepath.Join(dir, name+".csv")
		mustRun(t, "gen", tc.data, "--n", "200", "--seed", "1", "--out", data)
		mdl := filepath.Join(dir, name+".model")
		mustRun(t, "train", "--in", data, "--label", tc.label, "--out", mdl, "--trees", "5", "--forest", tc.forest)
		raw, err := os.ReadFile(data)
		if err != nil {
			t.Fatal(err)
		}
		header := filepath.Join(dir, name+"-header.csv")
		if err := os.WriteFile(header, raw[:strings.IndexByte(string(raw), '\n')+1], 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+"-pred.csv")
		rep := mustRun(t, "score", "--model", mdl, "--in", header, "--out", out)
		if rep["rows"].(float64) != 0 {
			t.Fatalf("%s: %v rows", name, rep["rows"])
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(got), "\n"); lines != 1 {
			t.Fatalf("%s: %d lines in the prediction file, want the header alone:\n%s", name, lines, got)
		}
	}
}

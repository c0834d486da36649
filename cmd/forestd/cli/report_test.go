package cli

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport: forestd report writes a model report with its evaluation
// (a confusion matrix of the iris data), a dependence report from
// analyze --out (Arrow IPC and Parquet, both keeping the analysis'
// settings: Parquet in its key-value metadata), and a heatmap PNG for a model on a grid; flag mistakes are
// usage errors.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	iris := filepath.Join(dataDir, "iris.parquet")
	mdl := filepath.Join(dir, "iris.model")
	mustRun(t, "train", "--in", iris, "--label", "label", "--out", mdl, "--trees", "10", "--threads", "1")
	html := filepath.Join(dir, "iris.html")
	rep := mustRun(t, "report", "--model", mdl, "--in", iris, "--out", html)
	if rep["rows"].(float64) != 150 {
		t.Fatalf("report %v", rep)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="chart confusion"`, `class="chart bars importances"`, "OOB error"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Fatalf("model report lacks %q", want)
		}
	}
	for _, ext := range []string{".arrow", ".parquet"} {
		an := filepath.Join(dir, "an"+ext)
		mustRun(t, "analyze", "--in", iris, "--label", "label", "--out", an, "--max-perms", "100", "--threads", "1")
		out := filepath.Join(dir, "an"+ext+".html")
		rep = mustRun(t, "report", "--analysis", an, "--out", out)
		if rep["features"].(float64) != 4 {
			t.Fatalf("%s: report %v", ext, rep)
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(page, []byte(`class="chart pvalues"`)) || !bytes.Contains(page, []byte("petal_length_cm")) {
			t.Fatalf("%s: dependence report lacks the p-value chart or a feature", ext)
		}
		// the procedure, α and rows travel with the table in either format
		for _, want := range []string{"adjusted (holm)", "α = 0.05", `<th>rows</th><td class="num">150</td>`} {
			if !bytes.Contains(page, []byte(want)) {
				t.Fatalf("%s: dependence report lacks %q", ext, want)
			}
		}
	}
	// a heatmap PNG: rf on the 8×8 digits with --grid
	digits := filepath.Join(dataDir, "digits.parquet")
	dm := filepath.Join(dir, "digits.model")
	mustRun(t, "train", "--in", digits, "--label", "label", "--out", dm, "--trees", "5", "--threads", "1")
	pngPath := filepath.Join(dir, "d.png")
	mustRun(t, "report", "--model", dm, "--grid", "8x8", "--out", pngPath)
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	for _, bad := range [][]string{
		{"report", "--model", mdl},
		{"report", "--out", html},
		{"report", "--model", mdl, "--analysis", "x.arrow", "--out", html},
		{"report", "--model", mdl, "--out", filepath.Join(dir, "x.txt")},
		{"report", "--model", mdl, "--out", pngPath}, // no layout
		{"report", "--analysis", "x.arrow", "--label", "y", "--out", html},
	} {
		if code, _, errs := run(t, bad...); code != ExitUsage || errs == "" {
			t.Errorf("%s: exit %d, %q", strings.Join(bad, " "), code, errs)
		}
	}
}

// TestReportKindGoesWithPNG: --kind chooses the importance kind of a PNG
// heatmap; with an HTML report (which draws every kind) it was ignored
// silently, even when the model has no such kind. It is a usage error, as
// --label without --in is.
func TestReportKindGoesWithPNG(t *testing.T) {
	dir := t.TempDir()
	iris := filepath.Join(dataDir, "iris.parquet")
	mdl := filepath.Join(dir, "iris.model")
	mustRun(t, "train", "--in", iris, "--label", "label", "--out", mdl, "--trees", "3", "--threads", "1")
	html := filepath.Join(dir, "iris.html")
	for _, kind := range []string{"bogus", "impurity"} {
		if code, _, errs := run(t, "report", "--model", mdl, "--kind", kind, "--out", html); code != ExitUsage || errs == "" {
			t.Errorf("--kind %s with an HTML report: exit %d, %q", kind, code, errs)
		}
	}
	if _, err := os.Stat(html); err == nil {
		t.Error("a usage error wrote the report")
	}
}

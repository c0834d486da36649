package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobOutsideLake (CLI audit, item 6): a glob given to a command that
// reads its inputs whole said "stat lake/*/*.parquet: no such file or
// directory"; it is a usage error saying how globs are read.
func TestGlobOutsideLake(t *testing.T) {
	dir := t.TempDir()
	data := sharedData(t, "iris.parquet")
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "label", "--trees", "3", "--out", mdl)
	lk := filepath.Join(dir, "lake", "p=1")
	if err := os.MkdirAll(lk, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lk, "a.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir, "lake", "*", "*.parquet")
	for _, args := range [][]string{
		{"score", "--model", mdl, "--in", glob, "--out", filepath.Join(dir, "p.csv")},
		{"eval", "--model", mdl, "--in", glob, "--label", "label"},
		{"train", "--in", glob, "--label", "label", "--trees", "3", "--out", filepath.Join(dir, "g.model")},
		{"analyze", "--in", glob, "--label", "label"},
	} {
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, "--in "+glob+" is a glob") || !strings.Contains(errs, "--sample N") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying globs are read only as a lake", args, code, errs, ExitUsage)
		}
	}
	// as a lake the glob reads
	mustRun(t, "train", "--in", glob, "--label", "label", "--trees", "3", "--sample", "50", "--out", filepath.Join(dir, "s.model"))
}

// TestEvalLabelDefault (CLI audit, item 2): eval's --label help said
// "default: its own", but a single-output model answered "--label is
// required"; the default is now the label the model was trained on, as
// for report.
func TestEvalLabelDefault(t *testing.T) {
	dir := t.TempDir()
	mdl := filepath.Join(dir, "diab.model")
	data := sharedData(t, "diabetes.csv.gz")
	mustRun(t, "train", "--in", data, "--label", "target", "--trees", "5", "--out", mdl)
	def := mustRun(t, "eval", "--model", mdl, "--in", data)
	given := mustRun(t, "eval", "--model", mdl, "--in", data, "--label", "target")
	if def["rows"] != given["rows"] || def["rmse"] != given["rmse"] {
		t.Errorf("eval without --label: %v; with --label target: %v", def, given)
	}
	code, _, errs := run(t, "eval", "--model", mdl, "--in", sharedData(t, "iris.parquet"))
	if code != ExitError || !strings.Contains(errs, "target") {
		t.Errorf("eval on data without the model's label: exit %d, stderr %q", code, errs)
	}
}

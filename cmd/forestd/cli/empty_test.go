package cli

import (
	"fmt"
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

// TestTrainColumnWithoutValues: `forestd train` on a CSV with a column
// that is empty in every row (listed with --features or picked up as a
// feature) fails as bad input (exit 1) naming the column and the row
// count, instead of training a forest that never splits on it and asks
// every scored row for it; excluded, the file trains.
func TestTrainColumnWithoutValues(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x0,x1,empty,y\n")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, "%d,%d,,%d\n", i, (i*7)%11, i%2)
	}
	data := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mdl := filepath.Join(dir, "m.model")
	for _, extra := range [][]string{nil, {"--features", "x0,empty"}} {
		args := append([]string{"train", "--in", data, "--label", "y", "--out", mdl, "--trees", "3"}, extra...)
		code, _, errs := run(t, args...)
		if code != ExitError || !strings.Contains(errs, `feature "empty" has no value in any of the 60 training rows`) {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		if _, err := os.Stat(mdl); !os.IsNotExist(err) {
			t.Fatalf("%v: a model was written (%v)", extra, err)
		}
	}
	mustRun(t, "train", "--in", data, "--label", "y", "--out", mdl, "--trees", "3", "--exclude", "empty")
}

// TestScoreNoRowsWithoutColumns (issue 35, point 7): a file of no rows
// that lacks the model's feature columns is a schema error in `forestd
// score` on the file (exit 1, naming the missing columns), as it is in a
// lake of that file (which checks each footer), instead of an empty
// prediction file; a file of no rows with the columns still scores to an
// empty output.
func TestScoreNoRowsWithoutColumns(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.csv")
	mustRun(t, "gen", "trunk", "--n", "100", "--seed", "1", "--out", data)
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "y", "--out", mdl, "--trees", "3")
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	header := filepath.Join(dir, "header.csv") // no rows, the model's columns
	if err := os.WriteFile(header, raw[:strings.IndexByte(string(raw), '\n')+1], 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.csv") // no rows, other columns
	if err := os.WriteFile(other, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lakeDir := filepath.Join(dir, "lake")
	if err := os.Mkdir(lakeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// a Parquet file of no rows without the features: the predictions of header.csv
	pq := filepath.Join(lakeDir, "preds.parquet")
	if rep := mustRun(t, "score", "--model", mdl, "--in", header, "--out", pq); rep["rows"].(float64) != 0 {
		t.Fatalf("header.csv: %v rows", rep["rows"])
	}
	const want = "missing feature columns x1, x2"
	code, _, errs := run(t, "score", "--model", mdl, "--in", lakeDir, "--out", filepath.Join(dir, "out-lake"), "--on-error", "fail")
	if code != ExitError || !strings.Contains(errs, "missing columns x1, x2") {
		t.Fatalf("lake: exit %d: %s", code, errs)
	}
	for _, in := range []string{pq, other} {
		out := filepath.Join(dir, "p-"+filepath.Base(in)+".csv")
		code, _, errs := run(t, "score", "--model", mdl, "--in", in, "--out", out)
		if code != ExitError || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d: %q, want exit %d and one line with %q", in, code, errs, ExitError, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: an output was written (%v)", in, err)
		}
	}
}

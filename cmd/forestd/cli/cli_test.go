package cli

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dataDir = "../../../testdata"

func sharedData(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(dataDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test data missing (testdata/ of the repository): %v", err)
	}
	return p
}

// run executes the command line and returns exit code, stdout, stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, Env{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("forestd %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("forestd %s: stdout is not one JSON object: %v\n%s", args[0], err, out)
	}
	return m
}

func hasKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s output lacks %q: %v", what, k, m)
		}
	}
}

func TestRoundTripClassification(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "te.arrows")
	mustRun(t, "gen", "trunk", "--n", "3000", "--p", "10", "--seed", "1", "--out", tr)
	mustRun(t, "gen", "trunk", "--n", "2000", "--p", "10", "--seed", "2", "--out", te)
	mdl := filepath.Join(dir, "m.model")
	train := mustRun(t, "train", "--in", tr, "--label", "y", "--out", mdl, "--trees", "60", "--importance", "permutation")
	hasKeys(t, "train", train, "model_id", "seconds", "oob", "trees")
	ev := mustRun(t, "eval", "--model", mdl, "--in", te, "--label", "y")
	hasKeys(t, "eval", ev, "rows", "seconds", "accuracy", "error")
	if ev["rows"].(float64) != 2000 {
		t.Fatalf("eval rows %v", ev["rows"])
	}
	// Trunk p=10 has Bayes error Φ(−‖μ‖) ≈ 0.0245; a forest is within a few points.
	if e := ev["error"].(float64); e > 0.08 {
		t.Fatalf("test error %v on trunk p=10", e)
	}
	in := mustRun(t, "inspect", "--model", mdl)
	hasKeys(t, "inspect", in, "forest", "trees", "features", "classes", "oob", "importance")
	oob := in["oob"].(map[string]any)
	hasKeys(t, "inspect oob", oob, "error", "strength", "correlation")
	imp := in["importance"].(map[string]any)
	if len(imp) != 10 || imp["x1"].(float64) <= imp["x10"].(float64) {
		t.Fatalf("importance %v: x1 (mean 1) must beat x10 (mean 1/√10)", imp)
	}
	if in["importance_kind"] != "permutation" {
		t.Fatalf("importance kind %v", in["importance_kind"])
	}
	for _, out := range []string{"p.parquet", "p.arrow", "p.csv"} {
		sc := mustRun(t, "score", "--model", mdl, "--in", te, "--out", filepath.Join(dir, out), "--keep", "x1")
		if sc["rows"].(float64) != 2000 {
			t.Fatalf("score rows %v", sc["rows"])
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "p.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 2001 || lines[0] != "model_id,model_version,source,row,x1,prediction,prob_0,prob_1" {
		t.Fatalf("prediction CSV: %d lines, header %q", len(lines), lines[0])
	}
}

func TestRegressionRealData(t *testing.T) {
	dir := t.TempDir()
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", sharedData(t, "diabetes.parquet"), "--label", "target", "--out", mdl, "--trees", "100")
	ev := mustRun(t, "eval", "--model", mdl, "--in", sharedData(t, "diabetes.csv.gz"), "--label", "target")
	hasKeys(t, "eval", ev, "rows", "seconds", "rmse", "mae")
	// in-sample RMSE of a forest on diabetes (target sd ≈ 77) is far below the sd
	if r := ev["rmse"].(float64); r > 40 {
		t.Fatalf("in-sample rmse %v", r)
	}
	in := mustRun(t, "inspect", "--model", mdl)
	if in["task"] != "regression" || in["oob"] == nil {
		t.Fatalf("inspect: %v", in)
	}
}

// TestSameSeedSameBytes: the same seed gives byte-identical model files at
// 1 and at several threads (issue: determinism).
func TestSameSeedSameBytes(t *testing.T) {
	dir := t.TempDir()
	in := sharedData(t, "satellite.parquet")
	var models [][]byte
	for _, th := range []string{"1", "2", "5"} {
		p := filepath.Join(dir, "m"+th)
		mustRun(t, "train", "--in", in, "--label", "label", "--out", p, "--trees", "16", "--threads", th, "--seed", "42", "--importance", "permutation")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, b)
	}
	for i := 1; i < len(models); i++ {
		if !bytes.Equal(models[0], models[i]) {
			t.Fatalf("model bytes differ between 1 thread and run %d", i)
		}
	}
	p := filepath.Join(dir, "other")
	mustRun(t, "train", "--in", in, "--label", "label", "--out", p, "--trees", "16", "--seed", "43")
	if b, _ := os.ReadFile(p); bytes.Equal(b, models[0]) {
		t.Fatal("a different seed gave the same model")
	}
}

// TestBadInput: every deliberately bad shared file, and bad flags, give a
// non-zero exit and exactly one line on stderr that names the cause.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	digits := filepath.Join(dir, "digits.model")
	mustRun(t, "train", "--in", sharedData(t, "digits.arrows"), "--label", "label", "--out", digits, "--trees", "5")
	trunc := filepath.Join(dir, "trunc.model")
	full, _ := os.ReadFile(digits)
	os.WriteFile(trunc, full[:len(full)/2], 0o644)
	flipped := filepath.Join(dir, "flip.model")
	bad := append([]byte(nil), full...)
	bad[len(bad)/2] ^= 0x40
	os.WriteFile(flipped, bad, 0o644)
	notModel := sharedData(t, "digits.arrows")

	cases := []struct {
		args []string
		want string // must appear in the error line
		code int
	}{
		{[]string{"train", "--in", sharedData(t, "bad_truncated.parquet"), "--label", "label", "--out", filepath.Join(dir, "x")}, "bad_truncated.parquet", 1},
		{[]string{"train", "--in", sharedData(t, "bad_string_feature.parquet"), "--label", "label", "--out", filepath.Join(dir, "x")}, "petal_length_cm", 1},
		{[]string{"train", "--in", sharedData(t, "bad_non_numeric.csv.gz"), "--label", "label", "--out", filepath.Join(dir, "x")}, "line 4", 1},
		{[]string{"score", "--model", digits, "--in", sharedData(t, "bad_schema.arrows"), "--out", filepath.Join(dir, "p.parquet")}, "pixel_7_7", 1},
		{[]string{"eval", "--model", digits, "--in", sharedData(t, "bad_schema.arrows"), "--label", "label"}, "pixel_7_7", 1},
		{[]string{"inspect", "--model", trunc}, "truncated", 1},
		{[]string{"inspect", "--model", flipped}, "model", 1},
		{[]string{"inspect", "--model", notModel}, "model", 1},
		{[]string{"inspect", "--model", filepath.Join(dir, "absent")}, "absent", 1},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "nope", "--out", filepath.Join(dir, "x")}, "nope", 1},
		// a training parameter forest refuses is a usage error naming its
		// flag, before the data is read when it can be (the inputs here
		// do not exist) and after it when it depends on the data
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--out", filepath.Join(dir, "x"), "--max-features", "9"}, "--max-features: max features 9 outside 1..4", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--out", filepath.Join(dir, "x"), "--criterion", "mse"}, "--criterion: criterion mse does not fit a classification task", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--trees", "0"}, "--trees: trees must be at least 1", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--max-features", "abc"}, "--max-features: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--min-leaf", "0"}, "--min-leaf: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--bins", "1"}, "--bins: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--sample-fraction", "NaN"}, "--sample-fraction: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--split", "foo"}, "--split: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--honest", "1"}, "--honest: ", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--criterion", "foo"}, "--criterion: ", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--out", filepath.Join(dir, "x"), "--rank"}, "--rank applies to --forest sporf, not --forest rf", 2},
		// lake flags are checked whether or not --sample N uses them
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--on-error", "foo"}, "on-error", 2},
		{[]string{"train", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "x"), "--readers", "-2"}, "--readers", 2},
		{[]string{"select", "--in", filepath.Join(dir, "absent.csv"), "--label", "label", "--out", filepath.Join(dir, "s.parquet"), "--on-error", "foo"}, "on-error", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label"}, "--out", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label,petal_length_cm", "--forest", "fdm", "--out", filepath.Join(dir, "x")}, "--forest drf", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label,petal_length_cm", "--task", "classification", "--out", filepath.Join(dir, "x")}, "regression", 2},
		{[]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label,species_typo", "--out", filepath.Join(dir, "x")}, "species_typo", 1},
		{[]string{"train", "--trees", "x"}, "trees", 2},
		{[]string{"gen", "nosuch", "--out", filepath.Join(dir, "g.csv")}, "nosuch", 2},
		{[]string{"gen", "trunk", "--p", "-1", "--out", filepath.Join(dir, "g.csv")}, "-1", 2},
		{[]string{"gen", "trunk", "--out", filepath.Join(dir, "g.xlsx")}, "--out " + filepath.Join(dir, "g.xlsx") + ": unknown output format", 2},
		{[]string{"frobnicate"}, "frobnicate", 2},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
		if code != c.code || len(lines) != 1 || !strings.Contains(errs, c.want) || strings.Contains(errs, "internal error") {
			t.Errorf("forestd %s: exit %d (want %d), stderr %q (want one line naming %q)", strings.Join(c.args, " "), code, c.code, errs, c.want)
		}
	}
}

func TestHelpEverywhere(t *testing.T) {
	for _, c := range commands() {
		code, _, errs := run(t, c.name, "--help")
		if code != 0 || !strings.Contains(errs, "Usage: forestd "+c.name) {
			t.Errorf("%s --help: exit %d, %q", c.name, code, errs)
		}
	}
	if code, _, errs := run(t, "--help"); code != 0 || !strings.Contains(errs, "train") {
		t.Errorf("--help: exit %d, %q", code, errs)
	}
}

func TestDirectoryInput(t *testing.T) {
	dir := t.TempDir()
	for i, seed := range []string{"1", "2", "3"} {
		mustRun(t, "gen", "xor1", "--n", "400", "--seed", seed, "--out", filepath.Join(dir, "part-"+string(rune('a'+i))+".parquet"))
	}
	mdl := filepath.Join(t.TempDir(), "m")
	tr := mustRun(t, "train", "--in", dir, "--label", "y", "--out", mdl, "--trees", "20")
	if tr["rows"].(float64) != 1200 {
		t.Fatalf("directory of 3×400 rows read as %v rows", tr["rows"])
	}
}

func TestObliqueForestsCLI(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "te.parquet")
	mustRun(t, "gen", "hvbars", "--n", "60", "--seed", "1", "--out", tr)
	mustRun(t, "gen", "hvbars", "--n", "500", "--seed", "2", "--out", te)
	for _, extra := range [][]string{
		{"--forest", "sporf", "--lambda", "2", "--mean-diff", "--rank"},
		{"--forest", "morf", "--grid", "28x28", "--patch-min", "1x1", "--patch-max", "4x4", "--max-features", "28"},
		{"--forest", "morf", "--grid", "28x28", "--patch-max", "2x9", "--honest", "0.3"},
		{"--forest", "morf", "--grid", "28x28", "--patch-max", "1x12", "--mean-diff"},
	} {
		mdl := filepath.Join(dir, "m")
		args := append([]string{"train", "--in", tr, "--label", "y", "--out", mdl, "--trees", "50"}, extra...)
		mustRun(t, args...)
		in := mustRun(t, "inspect", "--model", mdl)
		if in["forest"] != extra[1] {
			t.Fatalf("inspect forest %v, want %s", in["forest"], extra[1])
		}
		ev := mustRun(t, "eval", "--model", mdl, "--in", te, "--label", "y")
		limit := 0.05 // patches see whole bars
		if extra[1] == "sporf" {
			limit = 0.35 // random ±1 pixel sums at n = 60: better than chance (0.5), no more
		}
		if e := ev["error"].(float64); e > limit {
			t.Fatalf("%v: test error %v on hvbars", extra, e)
		}
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--forest", "morf", "--grid", "3x3"}, "784"},
		{[]string{"--forest", "morf"}, "layout"},
		{[]string{"--forest", "morf", "--grid", "28x28", "--patch-max", "0x2"}, "patch-max"},
		{[]string{"--forest", "morf", "--grid", "28x28", "--patch-max", "40x2"}, "fit"},
		{[]string{"--forest", "rf", "--rank"}, "sporf"},
		{[]string{"--forest", "lfs", "--mean-diff"}, "morf"},
		{[]string{"--forest", "sporf", "--lambda", "-1"}, "lambda"},
		{[]string{"--honest", "1.5"}, "honest"},
		{[]string{"--forest", "morf", "--grid", "28x28", "--series"}, "exclude"},
	} {
		args := append([]string{"train", "--in", tr, "--label", "y", "--out", filepath.Join(dir, "x"), "--trees", "2"}, c.extra...)
		code, _, errs := run(t, args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q (want one line naming %q)", c.extra, code, errs, c.want)
		}
	}
}

func TestInspectHeatmap(t *testing.T) {
	dir := t.TempDir()
	mdl := filepath.Join(dir, "m")
	mustRun(t, "train", "--in", sharedData(t, "digits.parquet"), "--label", "label", "--forest", "morf", "--grid", "8x8", "--trees", "20", "--out", mdl)
	pngPath := filepath.Join(dir, "imp.png")
	in := mustRun(t, "inspect", "--model", mdl, "--png", pngPath, "--kind", "projection-count")
	tv, ok := in["importance_total_variation"].(map[string]any)
	if !ok || tv["projection-count"].(float64) <= 0 {
		t.Fatalf("total variation missing: %v", in["importance_total_variation"])
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("heatmap is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 200 {
		t.Fatalf("heatmap %v too small to read", b)
	}
	rf := filepath.Join(dir, "rf")
	mustRun(t, "train", "--in", sharedData(t, "digits.parquet"), "--label", "label", "--trees", "5", "--out", rf)
	if code, _, errs := run(t, "inspect", "--model", rf, "--png", pngPath); code != 2 || !strings.Contains(errs, "--grid") {
		t.Fatalf("--png without a layout: exit %d, %q", code, errs)
	}
	mustRun(t, "inspect", "--model", rf, "--png", pngPath, "--grid", "8x8")
	if code, _, errs := run(t, "inspect", "--model", rf, "--png", pngPath, "--grid", "7x8"); code != 2 || !strings.Contains(errs, "64") {
		t.Fatalf("wrong --grid: exit %d, %q", code, errs)
	}
}

// TestProgressOnlyOnTTY: training draws a progress bar on a terminal and
// keeps stderr clean otherwise (pipes, CI logs).
func TestProgressOnlyOnTTY(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "tr.arrows")
	mustRun(t, "gen", "trunk", "--n", "500", "--seed", "1", "--out", tr)
	for _, tty := range []bool{true, false} {
		var out, errb bytes.Buffer
		code := Main([]string{"train", "--in", tr, "--label", "y", "--out", filepath.Join(dir, "m"), "--trees", "30"},
			Env{Stdout: &out, Stderr: &errb, TTY: &tty})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if got := strings.Contains(errb.String(), "training"); got != tty {
			t.Fatalf("tty=%v: progress shown=%v (stderr %q)", tty, got, errb.String())
		}
	}
}

// TestInputErrorsNameTheFile: a typo in --label names the file and
// suggests the column meant; a model file given as data (--in m.model)
// is said to be a model, not "missing feature columns" (usage, exit 2).
func TestInputErrorsNameTheFile(t *testing.T) {
	iris := sharedData(t, "iris.parquet")
	dir := t.TempDir()
	m := filepath.Join(dir, "m.model")
	code, _, errs := run(t, "train", "--in", iris, "--label", "lable", "--out", m)
	if code != 1 || !strings.Contains(errs, iris+": ") || !strings.Contains(errs, `label column "lable" not found (columns: sepal_length_cm,`) ||
		!strings.HasSuffix(strings.TrimSpace(errs), `did you mean "label"?`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	mustRun(t, "train", "--in", iris, "--label", "label", "--trees", "5", "--out", m)
	for _, cmd := range [][]string{
		{"score", "--model", m, "--in", m, "--out", filepath.Join(dir, "p.csv")},
		{"eval", "--model", m, "--in", m},
		{"train", "--in", m, "--label", "label", "--out", filepath.Join(dir, "m2.model")},
	} {
		code, _, errs := run(t, cmd...)
		if code != 2 || !strings.Contains(errs, "--in "+m+" is a forestd model file") || !strings.Contains(errs, "give it as --model") {
			t.Errorf("forestd %s: exit %d: %s", cmd[0], code, errs)
		}
	}
}

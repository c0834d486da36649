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
	// data without the model's label: a usage error saying --label was
	// defaulted to it, not the frame's "label column not found" alone
	code, _, errs := run(t, "eval", "--model", mdl, "--in", sharedData(t, "iris.parquet"))
	if code != ExitUsage || !strings.Contains(errs, "the input has no column target, the label the model was trained on, which --label defaults to") {
		t.Errorf("eval on data without the model's label: exit %d, stderr %q", code, errs)
	}
}

// TestTrainFlagsOfOtherKinds (CLI audit, items 3 and 4): flags of another
// forest kind were accepted and ignored on --forest rf (--max-rows,
// --channels, …), or refused with exit 1 and a library message that
// named no flag (--grid, --series, --patch-max, --fdm-map, --lfs-size).
// Every one given for a kind it does not apply to is a usage error naming
// it and its kinds, before any data is read (the input does not exist).
func TestTrainFlagsOfOtherKinds(t *testing.T) {
	dir := t.TempDir()
	train := []string{"train", "--in", filepath.Join(dir, "absent.parquet"), "--label", "y", "--out", filepath.Join(dir, "m")}
	for _, c := range []struct {
		kind string
		flag []string
		want string
	}{
		{"rf", []string{"--max-rows", "10"}, "--max-rows applies to --forest drf, not --forest rf"},
		{"rf", []string{"--distance", "euclidean"}, "--distance applies to --forest drf"},
		{"rf", []string{"--embed-dim", "3"}, "--embed-dim applies to --forest drf"},
		{"rf", []string{"--sigma-g", "1"}, "--sigma-g applies to --forest drf"},
		{"rf", []string{"--gamma-g", "1"}, "--gamma-g applies to --forest drf"},
		{"rf", []string{"--isomap-k", "8"}, "--isomap-k applies to --forest drf"},
		{"rf", []string{"--drf-predict", "weighted"}, "--drf-predict applies to --forest drf"},
		{"rf", []string{"--backscore-select", "oob"}, "--backscore-select applies to --forest drf"},
		{"rf", []string{"--backscore-center=false"}, "--backscore-center applies to --forest drf"},
		{"rf", []string{"--projection", "axis"}, "--projection applies to --forest drf"},
		{"rf", []string{"--channels", "1"}, "--channels applies to --forest morf or lfs, not --forest rf"},
		{"rf", []string{"--channel-order", "planar"}, "--channel-order applies to --forest morf or lfs"},
		{"rf", []string{"--grid", "2x2"}, "--grid applies to --forest morf or lfs, not --forest rf"},
		{"rf", []string{"--series"}, "--series applies to --forest morf or lfs"},
		{"rf", []string{"--patch-max", "2x2"}, "--patch-max applies to --forest morf, not --forest rf"},
		{"rf", []string{"--fdm-map", "drl"}, "--fdm-map applies to --forest fdm, not --forest rf"},
		{"rf", []string{"--lfs-size", "2"}, "--lfs-size applies to --forest lfs, not --forest rf"},
		{"rf", []string{"--lambda", "2"}, "--lambda applies to --forest sporf or drf, not --forest rf"},
		{"rf", []string{"--mean-diff"}, "--mean-diff applies to --forest sporf or morf, not --forest rf"},
		{"sporf", []string{"--grid", "2x2"}, "--grid applies to --forest morf or lfs, not --forest sporf"},
		{"morf", []string{"--rank"}, "--rank applies to --forest sporf, not --forest morf"},
		{"lfs", []string{"--patch-min", "1x1"}, "--patch-min applies to --forest morf, not --forest lfs"},
		{"fdm", []string{"--lfs-k", "3"}, "--lfs-k applies to --forest lfs, not --forest fdm"},
		{"drf", []string{"--honest", "0.5"}, "--honest applies to --forest rf, sporf, morf, lfs or fdm, not --forest drf"},
		{"drf", []string{"--grid", "2x2"}, "--grid applies to --forest morf or lfs, not --forest drf"},
	} {
		args := append(append(append([]string{}, train...), "--forest", c.kind), c.flag...)
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("--forest %s %v: exit %d, stderr %q; want exit %d naming %q", c.kind, c.flag, code, errs, ExitUsage, c.want)
		}
	}
}

// TestLayoutNotFittingData: a layout that does not fit the data's
// features (--grid 3x3 on iris' 4) is a usage error naming the layout
// flags, as morf without any layout is; it was exit 1 with the library's
// words alone.
func TestLayoutNotFittingData(t *testing.T) {
	dir := t.TempDir()
	for _, layout := range [][]string{{"--grid", "3x3"}, {}} {
		args := append([]string{"train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--trees", "3", "--forest", "morf", "--out", filepath.Join(dir, "m")}, layout...)
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, "--grid, --series or --cyclic: ") {
			t.Errorf("%v: exit %d, stderr %q", layout, code, errs)
		}
	}
}

// TestInspectKindNeedsPNG (CLI audit, item 3): inspect --kind chooses the
// importance a --png heatmap draws; without --png it was ignored.
func TestInspectKindNeedsPNG(t *testing.T) {
	mdl := filepath.Join(t.TempDir(), "m.model")
	mustRun(t, "train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--trees", "3", "--out", mdl)
	code, _, errs := run(t, "inspect", "--model", mdl, "--kind", "impurity")
	if code != ExitUsage || !strings.Contains(errs, "--kind goes with --png") {
		t.Errorf("inspect --kind without --png: exit %d, stderr %q", code, errs)
	}
	mustRun(t, "inspect", "--model", mdl, "--grid", "2x2") // --grid alone: the total variation
}

// TestGenCountsFeatures (CLI audit, item 7): gen swissroll reported
// "features": 9 (12 with --clean) for a file of 6 features, counting the
// responses y0..y2 and the noise-free y*_true; they are reported apart.
func TestGenCountsFeatures(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args             []string
		features         float64
		responses, clean int
	}{
		{[]string{"swissroll"}, 6, 3, 0},
		{[]string{"swissroll", "--clean"}, 6, 3, 3},
		{[]string{"trunk", "--p", "7"}, 7, 0, 0},
	} {
		rep := mustRun(t, append(append([]string{"gen"}, c.args...), "--n", "20", "--out", filepath.Join(dir, "g.csv"))...)
		resp, _ := rep["responses"].([]any)
		clean, _ := rep["noise_free_responses"].([]any)
		if rep["features"] != c.features || len(resp) != c.responses || len(clean) != c.clean {
			t.Errorf("gen %v: %v; want %v features, %d responses, %d noise-free", c.args, rep, c.features, c.responses, c.clean)
		}
	}
}

// flagHelp returns the help of one flag in `forestd cmd --help`: its line
// and the indented lines below it.
func flagHelp(t *testing.T, cmd, name string) string {
	t.Helper()
	code, _, errs := run(t, cmd, "--help")
	if code != ExitOK {
		t.Fatalf("%s --help: exit %d", cmd, code)
	}
	lines := strings.Split(errs, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "-"+name+" ") || strings.TrimSpace(l) == "-"+name {
			h := l
			for _, m := range lines[i+1:] {
				if !strings.HasPrefix(m, "    ") {
					break
				}
				h += " " + strings.TrimSpace(m)
			}
			return h
		}
	}
	t.Fatalf("%s --help has no -%s", cmd, name)
	return ""
}

// TestHelpTexts (CLI audit, item 8): help texts that contradicted the
// behaviour or repeated themselves.
func TestHelpTexts(t *testing.T) {
	task := flagHelp(t, "serve", "task")
	if strings.Contains(task, "strings classify") || !strings.Contains(task, "more than 32 distinct numbers") {
		t.Errorf("serve --task: %q: want the auto rule (a float label, or more than 32 distinct numbers, is numeric)", task)
	}
	if probs := flagHelp(t, "serve", "probs"); strings.Count(probs, "class probabilities") != 1 {
		t.Errorf("serve --probs repeats itself: %q", probs)
	}
	if h := flagHelp(t, "serve", "http"); !strings.Contains(h, "status page") || !strings.Contains(h, "/api/status") {
		t.Errorf("serve --http: %q: want the status page and /api/status", h)
	}
	if r := flagHelp(t, "score", "resume"); !strings.Contains(r, "same model") || !strings.Contains(r, "--keep") {
		t.Errorf("score --resume: %q: want only outputs of the same model and columns skipped", r)
	}
}

// TestWordingAudit (CLI audit, item 9): --keep label,label said "would be
// both a kept column and a kept column"; --probs top2 on a multi-output
// model said "the model is a model with 3 outputs".
func TestUsageWording(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sw.parquet")
	mustRun(t, "gen", "swissroll", "--n", "100", "--out", data)
	multi := filepath.Join(dir, "multi.model")
	mustRun(t, "train", "--in", data, "--label", "y0,y1,y2", "--trees", "3", "--out", multi)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"score", "--model", multi, "--in", data, "--keep", "x1,x1", "--out", filepath.Join(dir, "p.csv")}, "--keep lists x1 twice"},
		{[]string{"select", "--in", data, "--label", "y0", "--keep", "x1,x2,x1", "--out", filepath.Join(dir, "s.csv")}, "--keep lists x1 twice"},
		{[]string{"score", "--model", multi, "--in", data, "--probs", "top2", "--out", filepath.Join(dir, "p.csv")}, "--probs top2: the model predicts 3 outputs (y0, y1, y2), not classes"},
	} {
		code, _, errs := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs, "a model with") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, ExitUsage, c.want)
		}
	}
}

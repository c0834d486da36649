package cli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestMultiOutputCommands: `train --label y0,y1,y2` with a non-drf forest
// grows one multi-output regression forest (rf and sporf), reports its
// targets and out-of-bag estimates, writes the same bytes at any thread
// count; eval reports overall and per-output errors that the scored file
// reproduces; score writes one column per target; inspect names the
// targets; eval with other label columns, and --sample N from a lake, work
// as for one label.
func TestMultiOutputCommands(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sr.parquet")
	mustRun(t, "gen", "swissroll", "--n", "500", "--seed", "4", "--clean", "--out", data)
	for _, kind := range []string{"rf", "sporf"} {
		mdl := filepath.Join(dir, kind+".arrows")
		args := []string{"train", "--in", data, "--label", "y0,y1,y2", "--exclude", "y0_true,y1_true,y2_true",
			"--forest", kind, "--trees", "20", "--max-features", "3", "--out", mdl}
		tr := mustRun(t, append(args, "--threads", "2")...)
		hasKeys(t, "train", tr, "model_id", "rows", "features", "targets", "oob", "nodes")
		oob := tr["oob"].(map[string]any)
		if tr["forest"] != kind || tr["task"] != "regression" || num(t, tr, "features") != 6 || num(t, tr, "rows") != 500 ||
			!reflect.DeepEqual(tr["targets"], []any{"y0", "y1", "y2"}) || !(num(t, oob, "r2") > 0.5) {
			t.Fatalf("%s train report: %v", kind, tr)
		}
		mustRun(t, append(args[:len(args)-1], mdl+"1", "--threads", "1")...)
		b1, _ := os.ReadFile(mdl)
		b2, _ := os.ReadFile(mdl + "1")
		if !bytes.Equal(b1, b2) {
			t.Fatalf("%s: 1 and 2 threads give different model bytes", kind)
		}
		ev := mustRun(t, "eval", "--model", mdl, "--in", data)
		hasKeys(t, "eval", ev, "rows", "seconds", "rmse", "mae", "mse", "per_output")
		out := filepath.Join(dir, kind+"-pred.parquet")
		sc := mustRun(t, "score", "--model", mdl, "--in", data, "--out", out, "--keep", "y0_true")
		if num(t, sc, "rows") != 500 || !reflect.DeepEqual(sc["targets"], []any{"y0", "y1", "y2"}) {
			t.Fatalf("score report: %v", sc)
		}
		got, truth := readTable(t, out), readTable(t, data)
		per := ev["per_output"].(map[string]any)
		var se float64
		for _, tg := range []string{"y0", "y1", "y2"} {
			if len(got[tg]) != 500 {
				t.Fatalf("scored column %s has %d values", tg, len(got[tg]))
			}
			var s float64
			for i, v := range got[tg] {
				d := v - truth[tg][i]
				s += d * d
			}
			if want := num(t, per[tg].(map[string]any), "mse"); math.Abs(s/500-want) > 1e-9*want {
				t.Fatalf("%s: scored mse %v, eval %v", tg, s/500, want)
			}
			se += s
		}
		if rmse := num(t, ev, "rmse"); math.Abs(math.Sqrt(se/1500)-rmse) > 1e-9 {
			t.Fatalf("overall rmse %v, scored %v", rmse, math.Sqrt(se/1500))
		}
		if len(got["y0_true"]) != 500 {
			t.Fatal("--keep column missing")
		}
		in := mustRun(t, "inspect", "--model", mdl)
		if in["label"] != "y0,y1,y2" || !reflect.DeepEqual(in["targets"], []any{"y0", "y1", "y2"}) {
			t.Fatalf("inspect: label %v targets %v", in["label"], in["targets"])
		}
		// the noise-free columns name other targets: eval refuses them
		code, _, errs := run(t, "eval", "--model", mdl, "--in", data, "--label", "y0_true,y1_true,y2_true")
		if code == 0 || !strings.Contains(errs, "the model predicts") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Fatalf("eval with other label columns: exit %d, stderr %q", code, errs)
		}
	}
	sm := mustRun(t, "train", "--in", data, "--label", "y0,y1,y2", "--exclude", "y0_true,y1_true,y2_true",
		"--trees", "5", "--sample", "300", "--out", filepath.Join(dir, "s.arrows"))
	if num(t, sm, "rows") != 300 || !reflect.DeepEqual(sm["targets"], []any{"y0", "y1", "y2"}) {
		t.Fatalf("--sample 300: %v", sm)
	}
}

// TestEvalReportLabelsOfMultiOutput: eval and report of a model with
// several outputs given label columns that are not its targets (one of
// them, a subset, another order, a single-output model given several)
// fail with one line that names --label, says what the model predicts and
// what to give; they used to say "label columns [y0] give targets []".
// report takes the model's comma-separated label columns, which it used
// to look up as one column named "y0,y1".
func TestEvalReportLabelsOfMultiOutput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sr.parquet")
	mustRun(t, "gen", "swissroll", "--n", "200", "--seed", "4", "--clean", "--out", data)
	mdl := filepath.Join(dir, "m.arrows")
	mustRun(t, "train", "--in", data, "--label", "y0,y1", "--exclude", "y2,y0_true,y1_true,y2_true", "--trees", "5", "--out", mdl)
	const fix = "the model predicts 2 targets (y0, y1): give --label y0,y1"
	for _, c := range []struct{ label, want string }{
		{"y0", "--label y0: " + fix + ", or leave --label out"},
		{"y1", "--label y1: " + fix + ", or leave --label out"},
		{"y1,y0", "--label y1,y0: " + fix + " (in that order), or leave --label out"},
		{"y0,y1,y2", "--label y0,y1,y2: " + fix + ", or leave --label out"},
		{"y0_true,y1_true", "--label y0_true,y1_true: " + fix + ", or leave --label out"},
	} {
		for _, cmd := range []string{"eval", "report"} {
			args := []string{cmd, "--model", mdl, "--in", data, "--label", c.label}
			if cmd == "report" {
				args = append(args, "--out", filepath.Join(dir, "r.html"))
			}
			code, _, errs := run(t, args...)
			if want := "forestd " + cmd + ": " + c.want + "\n"; code != ExitUsage || errs != want {
				t.Errorf("%s --label %s: exit %d, stderr\n%q\nwant\n%q", cmd, c.label, code, errs, want)
			}
		}
	}
	ev := mustRun(t, "eval", "--model", mdl, "--in", data, "--label", "y0,y1")
	rep := mustRun(t, "report", "--model", mdl, "--in", data, "--label", "y0,y1", "--out", filepath.Join(dir, "r.html"))
	if num(t, rep, "rmse") != num(t, ev, "rmse") {
		t.Fatalf("report rmse %v, eval %v", rep["rmse"], ev["rmse"])
	}
	// a single-output model given several label columns
	one := filepath.Join(dir, "one.arrows")
	mustRun(t, "train", "--in", data, "--label", "y0", "--exclude", "y1,y2,y0_true,y1_true,y2_true", "--trees", "5", "--out", one)
	code, _, errs := run(t, "eval", "--model", one, "--in", data, "--label", "y0,y1")
	if want := "forestd eval: --label y0,y1: the model predicts one label, y0: give --label y0\n"; code != ExitUsage || errs != want {
		t.Fatalf("single-output eval --label y0,y1: exit %d, stderr %q, want %q", code, errs, want)
	}
}

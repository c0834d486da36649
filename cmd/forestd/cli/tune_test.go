package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTrainTune: on circle, whose default MORF patches (at most 3 wide)
// cannot tell a run of 6 from two of 5, --tune finds patches that can:
// the held-out error (forestd gen, another seed) falls from chance level
// to a few percent. Train's JSON lists every candidate with its scores
// and out-of-bag errors and marks one winner; inspect shows the same
// record, and the model's params are the winner's.
func TestTrainTune(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "te.parquet")
	mustRun(t, "gen", "circle", "--n", "600", "--seed", "1", "--out", tr)
	mustRun(t, "gen", "circle", "--n", "3000", "--seed", "2", "--out", te)
	plain, tuned := filepath.Join(dir, "plain.model"), filepath.Join(dir, "tuned.model")
	args := []string{"train", "--in", tr, "--label", "y", "--forest", "morf", "--cyclic", "--trees", "60"}
	p := mustRun(t, append(args, "--out", plain)...)
	if _, ok := p["tuning"]; ok {
		t.Fatal("untuned train reports a tuning")
	}
	rep := mustRun(t, append(args, "--out", tuned, "--tune")...)
	evPlain := mustRun(t, "eval", "--model", plain, "--in", te, "--label", "y")["error"].(float64)
	evTuned := mustRun(t, "eval", "--model", tuned, "--in", te, "--label", "y")["error"].(float64)
	t.Logf("held-out error: untuned %v, tuned %v", evPlain, evTuned)
	if evPlain < 0.25 || evTuned > 0.1 {
		t.Fatalf("held-out error untuned %v (want ≥ 0.25), tuned %v (want ≤ 0.1)", evPlain, evTuned)
	}
	tu := rep["tuning"].(map[string]any)
	cands := tu["candidates"].([]any)
	winner := int(tu["winner"].(float64))
	if tu["metric"] != "error" || len(cands) != 15 { // morf on a cycle of 100: 10 in stage 1, 5 more in stage 2
		t.Fatalf("tuning metric %v with %d candidates", tu["metric"], len(cands))
	}
	winners := 0
	for i, c := range cands {
		m := c.(map[string]any)
		hasKeys(t, "candidate", m, "stage", "max_features", "mtry", "min_leaf", "patch", "trees", "scores", "briers", "oob_errors")
		if len(m["scores"].([]any)) != len(m["trees"].([]any)) || len(m["oob_errors"].([]any)) != len(m["trees"].([]any)) {
			t.Fatalf("candidate %d: scores and errors do not match its tree counts: %v", i, m)
		}
		if m["winner"] == true {
			winners++
			if i != winner {
				t.Fatalf("candidate %d marked winner, winner is %d", i, winner)
			}
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners marked", winners)
	}
	w := cands[winner].(map[string]any)
	params := rep["params"].(map[string]any)
	if params["tune"] != true || params["mtry"] != w["mtry"] || params["min_leaf"] != w["min_leaf"] ||
		params["max_features"] != w["max_features"] {
		t.Fatalf("params %v are not the winner's %v", params, w)
	}
	in := mustRun(t, "inspect", "--model", tuned)
	if !reflect.DeepEqual(in["tuning"], rep["tuning"]) {
		t.Fatalf("inspect's tuning differs from train's:\n%v\n%v", in["tuning"], rep["tuning"])
	}
	if _, ok := mustRun(t, "inspect", "--model", plain)["tuning"]; ok {
		t.Fatal("inspect of an untuned model shows a tuning")
	}
}

// TestTrainTuneThreads: a tuned model's bytes are the same at 1, 2 and 3
// threads.
func TestTrainTuneThreads(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "tr.parquet")
	mustRun(t, "gen", "trunk", "--n", "1200", "--p", "10", "--seed", "3", "--out", tr)
	var ref []byte
	for _, th := range []string{"1", "2", "3"} {
		out := filepath.Join(dir, "m"+th)
		mustRun(t, "train", "--in", tr, "--label", "y", "--forest", "sporf", "--trees", "40", "--tune", "--threads", th, "--out", out)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = b
		} else if !bytes.Equal(b, ref) {
			t.Fatalf("tuned model at %s threads differs from 1 thread", th)
		}
	}
}

// TestTrainTuneKinds: --tune takes rf, sporf and morf only.
func TestTrainTuneKinds(t *testing.T) {
	for k, want := range map[string]string{
		"lfs": "--tune applies to --forest rf, sporf or morf, not --forest lfs",
		"fdm": "--tune applies to --forest rf, sporf or morf, not --forest fdm",
		"drf": "--tune applies to --forest rf, sporf or morf, not --forest drf",
	} {
		code, _, errs := run(t, "train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--forest", k,
			"--tune", "--out", filepath.Join(t.TempDir(), "m"))
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("--forest %s --tune: exit %d, %q", k, code, errs)
		}
	}
}

// TestTrainUntunedModelIDs: untuned training gives the model bytes it gave
// before tuning existed. The IDs (SHA-256 of the canonical content) were
// printed by forestd train built at commit 5c44ada, the commit before
// --tune, with these arguments and --threads 2; the two rf IDs were printed
// again at b20e1f0, from which rf in binned mode grows on the bin codes
// (every split at a bin edge: issue 31).
func TestTrainUntunedModelIDs(t *testing.T) {
	for _, c := range []struct {
		args []string
		id   string
	}{
		{[]string{"--in", sharedData(t, "iris.parquet"), "--label", "label", "--trees", "20"},
			"0645e087e64d918e0a965c7df3ac825434b59bd9bd81cf6f6ddfd9040885e599"},
		{[]string{"--in", sharedData(t, "digits.parquet"), "--label", "label", "--forest", "morf", "--grid", "8x8", "--trees", "10"},
			"4b8109d4341441aad2ec87fc74e9c98eaccdde1222a6f69ec6efa092fdf6030a"},
		{[]string{"--in", sharedData(t, "sonar.parquet"), "--label", "label", "--forest", "sporf", "--mean-diff", "--rank", "--trees", "10"},
			"1b1c961a530081d3fac7120a790bb84c2015680a704bc0dcea9d6206bfe258a2"},
		{[]string{"--in", sharedData(t, "diabetes.parquet"), "--label", "target", "--trees", "20", "--importance", "permutation"},
			"ac95c3d382d556b47b1e551c256dfad92365574be694a0b020fdc10bdb4b8892"},
	} {
		rep := mustRun(t, append(append([]string{"train"}, c.args...), "--threads", "2", "--out", filepath.Join(t.TempDir(), "m"))...)
		if rep["model_id"] != c.id {
			t.Errorf("forestd train %s: model_id %v, want %s", strings.Join(c.args, " "), rep["model_id"], c.id)
		}
	}
}

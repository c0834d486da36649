package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestThreadsZero (reliability issue, item 8): --threads 0 (or below) is
// the same usage error in every command that takes it; it used to be an
// error in analyze, all CPUs in train, eval and score, and one thread in
// select. parse applies the rule to every command with the flag, so drift
// and report, which did not check it, refuse it too.
func TestThreadsZero(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.parquet")
	mustRun(t, "gen", "trunk", "--n", "200", "--p", "4", "--seed", "1", "--out", data)
	model := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "y", "--out", model, "--trees", "5")
	cmds := map[string][]string{
		"train":   {"train", "--in", data, "--label", "y", "--out", filepath.Join(dir, "m2.model"), "--trees", "5"},
		"eval":    {"eval", "--model", model, "--in", data, "--label", "y"},
		"score":   {"score", "--model", model, "--in", data, "--out", filepath.Join(dir, "p.parquet")},
		"analyze": {"analyze", "--in", data, "--label", "y"},
		"select":  {"select", "--in", data, "--label", "y", "--out", filepath.Join(dir, "s.parquet")},
		"drift":   {"drift", "--reference", data, "--current", data},
		"report":  {"report", "--model", model, "--out", filepath.Join(dir, "r.html")},
	}
	for name, args := range cmds {
		for _, n := range []string{"0", "-2"} {
			code, _, errs := run(t, append(args, "--threads", n)...)
			if code != 2 || !strings.Contains(errs, "--threads must be at least 1") {
				t.Errorf("%s --threads %s: exit %d, %q; want the usage error", name, n, code, strings.TrimSpace(errs))
			}
		}
		if code, _, errs := run(t, append(args, "--threads", "1")...); code != 0 {
			t.Errorf("%s --threads 1: exit %d: %s", name, code, errs)
		}
	}
}

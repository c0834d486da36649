package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeverOverwritesInput (reliability issue, item 4): an output path that
// is one of the inputs — the same path, a file inside an input directory,
// a link to an input, the model being read — used to replace the input
// (exit 0); now it is a usage error naming the flag, and the input is
// unchanged. Lake scoring into the lake itself is refused too.
func TestNeverOverwritesInput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	mustRun(t, "gen", "trunk", "--n", "300", "--seed", "1", "--out", data)
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "y", "--trees", "5", "--out", mdl)
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	lake := filepath.Join(dir, "lake")
	if err := os.MkdirAll(lake, 0o755); err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(lake, "part.parquet")
	mustRun(t, "gen", "trunk", "--n", "100", "--seed", "2", "--out", pq)
	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		for _, p := range []string{data, mdl, pq} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			m[p] = b
		}
		return m
	}
	before := snapshot()
	for _, c := range []struct {
		args []string
		flag string
		code int
	}{
		{[]string{"train", "--in", data, "--label", "y", "--out", data}, "--out", ExitUsage},
		{[]string{"train", "--in", data, "--label", "y", "--out", link}, "--out", ExitUsage},
		{[]string{"train", "--in", lake, "--label", "y", "--out", pq}, "--out", ExitUsage},
		{[]string{"score", "--model", mdl, "--in", data, "--out", data}, "--out", ExitUsage},
		{[]string{"score", "--model", mdl, "--in", data, "--out", mdl}, "--out", ExitUsage},
		{[]string{"score", "--model", mdl, "--in", lake, "--out", lake}, "--out", ExitUsage},
		{[]string{"select", "--in", data, "--label", "y", "--out", data}, "--out", ExitUsage},
		{[]string{"select", "--in", data, "--label", "y", "--out", filepath.Join(dir, "sel.parquet"), "--mapping", data}, "--mapping", ExitUsage},
		{[]string{"analyze", "--in", data, "--label", "y", "--out", data}, "--out", ExitUsage},
		{[]string{"inspect", "--model", mdl, "--png", mdl}, "--png", ExitUsage},
	} {
		code, _, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.flag) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %s", c.args, code, errs, c.code, c.flag)
		}
	}
	for p, b := range snapshot() {
		if !bytes.Equal(b, before[p]) {
			t.Errorf("%s changed", p)
		}
	}
}

// TestTrainMemoryBound (reliability issue, item 7): --trees 100000000 used
// to grow until the kernel killed the process; now train refuses after its
// first trees with one line naming --trees and the bound, --max-memory
// sets the bound, and score refuses an input it could not hold, naming
// lake scoring.
func TestTrainMemoryBound(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.model")
	data := filepath.Join(dataDir, "iris.parquet")
	code, _, errs := run(t, "train", "--in", data, "--label", "label", "--trees", "100000000", "--out", out)
	if code != ExitError || !strings.HasPrefix(errs, "forestd train: --trees 100000000: ") || !strings.Contains(errs, "available memory") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = run(t, "train", "--in", data, "--label", "label", "--trees", "5000", "--max-memory", "1MiB", "--out", out)
	if code != ExitError || !strings.Contains(errs, "--trees 5000") || !strings.Contains(errs, "--max-memory") {
		t.Fatalf("--max-memory 1MiB: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a model was written")
	}
	mustRun(t, "train", "--in", data, "--label", "label", "--trees", "50", "--max-memory", "256MiB", "--out", out)
	// score estimates what it would hold from the inputs' sizes
	letters := filepath.Join(dataDir, "letter_recognition.parquet")
	mdl := filepath.Join(t.TempDir(), "l.model")
	mustRun(t, "train", "--in", letters, "--label", "label", "--trees", "5", "--out", mdl)
	pred := filepath.Join(t.TempDir(), "p.csv")
	code, _, errs = run(t, "score", "--model", mdl, "--in", letters, "--out", pred, "--max-memory", "1MiB")
	if code != ExitError || !strings.Contains(errs, "--in: scoring into one file would hold about") || !strings.Contains(errs, "--out DIR") {
		t.Fatalf("score --max-memory 1MiB: exit %d, stderr %q", code, errs)
	}
	mustRun(t, "score", "--model", mdl, "--in", letters, "--out", pred, "--max-memory", "512MiB")
	// into Parquet: the same refusal for a row group too big to stream
	// within the bound, while 1,000-row groups stream within it
	pred = filepath.Join(t.TempDir(), "p.parquet")
	code, _, errs = run(t, "score", "--model", mdl, "--in", letters, "--out", pred, "--max-memory", "1MiB")
	if code != ExitError || !strings.Contains(errs, "--in: scoring into one file would hold about") {
		t.Fatalf("score into Parquet --max-memory 1MiB: exit %d, stderr %q", code, errs)
	}
	mustRun(t, "score", "--model", mdl, "--in", filepath.Join(dataDir, "letter_recognition_zstd_rg1000.parquet"), "--out", pred, "--max-memory", "1MiB")
}

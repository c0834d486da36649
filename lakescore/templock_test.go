//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package lakescore_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
)

// TestRunCleansStaleTemps: a plain run (not --resume) removes from OUTDIR
// the temporary file a run killed midway left (no process holds its
// lock), keeps the one another live process is writing (its lock is
// held; here through an open file of the test's own, which conflicts as
// another process' would) and a hidden file that is not forestd's, and
// says so in its summary; a dry run touches nothing.
func TestRunCleansStaleTemps(t *testing.T) {
	m := letterModel(t)
	root := lakeOf(t, map[string]string{
		"day=1/a.parquet": "letter_recognition.parquet",
		"day=2/b.parquet": "letter_recognition.parquet",
	})
	out := t.TempDir()
	stale := filepath.Join(out, "day=1", ".a.parquet.forestd-tmp-1234")
	held := filepath.Join(out, "day=2", ".b.parquet.forestd-tmp-5678")
	notOurs := filepath.Join(out, "day=2", ".notes")
	for _, p := range []string{stale, held, notOurs} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("PAR1"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := os.OpenFile(held, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	sum, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Threads: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil || sum.Temps != nil {
		t.Fatalf("a dry run cleaned OUTDIR: %v, temps %+v", err, sum.Temps)
	}

	sum, err = lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary file is still there: %v", err)
	}
	for _, p := range []string{held, notOurs} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("removed %s: %v", p, err)
		}
	}
	if sum.Temps == nil || *sum.Temps != (lake.Temps{Removed: 1, Kept: 1}) {
		t.Fatalf("summary temps %+v, want 1 removed and 1 kept", sum.Temps)
	}
	if sum.Files != 2 || !lake.Done(filepath.Join(out, "day=1", "a.parquet")) || !lake.Done(filepath.Join(out, "day=2", "b.parquet")) {
		t.Fatalf("outputs: %+v", sum)
	}
}

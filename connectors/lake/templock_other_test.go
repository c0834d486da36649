//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package lake

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCleanTempsWithoutLocks: without locks CleanTemps cannot tell a stale
// temporary file from one being written: it keeps them, unless told it is
// the only writer (all: --resume), when it removes every FileWriter
// temporary file below the directory and nothing else, as it always did.
func TestCleanTempsWithoutLocks(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".a.parquet.forestd-tmp-1", ".hidden.parquet", ".a.parquet.forestd-tmp-x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := CleanTemps(dir, false)
	if err != nil || n != (Temps{Kept: 1}) {
		t.Fatalf("CleanTemps: %+v, %v; want 1 kept, which cannot be judged", n, err)
	}
	n, err = CleanTemps(dir, true)
	if err != nil || n != (Temps{Removed: 1}) {
		t.Fatalf("CleanTemps(all): %+v, %v; want 1 removed", n, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left: %v", ents)
	}
}

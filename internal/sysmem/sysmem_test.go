package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAvailable: MemAvailable in bytes, a lower cgroup limit wins, "max"
// (no limit) and missing files are ignored.
func TestAvailable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mi := write("meminfo", "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\nCached: 1 kB\n")
	if got := available(mi); got != 8000000<<10 {
		t.Fatalf("meminfo alone: %d", got)
	}
	if got := available(mi, write("max", "max\n"), filepath.Join(dir, "none")); got != 8000000<<10 {
		t.Fatalf("no cgroup limit: %d", got)
	}
	if got := available(mi, write("lim", "1073741824\n")); got != 1<<30 {
		t.Fatalf("a 1 GiB cgroup: %d", got)
	}
	if got := available(filepath.Join(dir, "none"), write("lim2", "2147483648")); got != 2<<30 {
		t.Fatalf("cgroup alone: %d", got)
	}
	if got := available(filepath.Join(dir, "none")); got != 0 {
		t.Fatalf("nothing known: %d", got)
	}
}

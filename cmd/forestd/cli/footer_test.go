package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bombDir holds the Parquet footer bombs of connectors/files (its
// testdata/parquet_bombs/README.md says how they were made).
const bombDir = "../../../connectors/files/testdata/parquet_bombs"

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParquetFooterBombCLI (issue 35): the 25-byte file whose schema list
// claims 2^31-1 elements, given to each command that reads a file whole,
// exits 1 with one line naming it (before the footer check the process
// died: fatal error: runtime: out of memory, exit 2); a lake holding it
// beside a good file scores the good file and lists the bomb as skipped
// (the default --on-error skip), and under --on-error fail exits 1 with
// one line naming it.
func TestParquetFooterBombCLI(t *testing.T) {
	dir := t.TempDir()
	mdl := filepath.Join(dir, "iris.model")
	mustRun(t, "train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--out", mdl, "--trees", "3")
	bomb := filepath.Join(dir, "bomb.parquet")
	copyFile(t, filepath.Join(bombDir, "schema_list.parquet"), bomb)

	for _, args := range [][]string{
		{"score", "--model", mdl, "--in", bomb, "--out", filepath.Join(dir, "p.parquet")},
		{"eval", "--model", mdl, "--in", bomb, "--label", "label"},
		{"train", "--in", bomb, "--label", "label", "--out", filepath.Join(dir, "x.model")},
		{"analyze", "--in", bomb, "--label", "label"},
	} {
		code, _, errs := run(t, args...)
		lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
		if code != ExitError || len(lines) != 1 || !strings.Contains(errs, bomb) || !strings.Contains(errs, "corrupt Parquet footer") {
			t.Errorf("forestd %s: exit %d, stderr %q; want exit 1 and one line naming %s", args[0], code, errs, bomb)
		}
	}

	lakeDir := filepath.Join(dir, "lake")
	if err := os.MkdirAll(lakeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, bomb, filepath.Join(lakeDir, "a_bomb.parquet"))
	copyFile(t, sharedData(t, "iris.parquet"), filepath.Join(lakeDir, "b_iris.parquet"))
	out := filepath.Join(dir, "out")
	m := mustRun(t, "score", "--model", mdl, "--in", lakeDir, "--out", out)
	sk, _ := m["skipped"].([]any)
	if m["files"] != float64(1) || m["rows"] != float64(150) || len(sk) != 1 {
		t.Fatalf("lake summary %v: want the good file's 150 rows scored and the bomb skipped", m)
	}
	if s := sk[0].(map[string]any); !strings.HasSuffix(s["file"].(string), "a_bomb.parquet") || !strings.Contains(s["reason"].(string), "corrupt Parquet footer") {
		t.Fatalf("skipped %v", s)
	}
	if _, err := os.Stat(filepath.Join(out, "b_iris.parquet")); err != nil {
		t.Fatalf("the good file's output: %v", err)
	}
	code, _, errs := run(t, "score", "--model", mdl, "--in", lakeDir, "--out", filepath.Join(dir, "out2"), "--on-error", "fail")
	lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
	if code != ExitError || len(lines) != 1 || !strings.Contains(errs, "a_bomb.parquet") || !strings.Contains(errs, "corrupt Parquet footer") {
		t.Fatalf("lake --on-error fail: exit %d, stderr %q", code, errs)
	}
}

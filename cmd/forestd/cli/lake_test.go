package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// lakeFixture: a model on letter and a two-day hive lake with a bad file.
func lakeFixture(t *testing.T) (mdl, root string) {
	t.Helper()
	dir := t.TempDir()
	mdl = filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", sharedData(t, "letter_recognition.parquet"), "--label", "label", "--out", mdl, "--trees", "5")
	root = filepath.Join(dir, "lake")
	for rel, src := range map[string]string{
		"day=1/p.parquet": "letter_recognition_zstd_rg1000.parquet",
		"day=2/p.parquet": "letter_recognition_zstd_rg1000.parquet",
		"day=2/q.parquet": "bad_truncated.parquet",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(sharedData(t, src))
		if err := os.Symlink(abs, p); err != nil {
			t.Fatal(err)
		}
	}
	return mdl, root
}

func TestScoreLakeFlags(t *testing.T) {
	mdl, root := lakeFixture(t)
	out := filepath.Join(t.TempDir(), "o")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--on-error", "maybe"}, "on-error"},
		{[]string{"--max-memory", "12XB"}, "max-memory"},
		{[]string{"--compression", "brotli"}, "compression"},
		{[]string{"--workers-topic", "t"}, "--brokers"},
		{[]string{"--workers-topic", "t", "--brokers", "127.0.0.1:1", "--in", root}, "exactly one --in"},
		{[]string{"--enqueue"}, "--workers-topic"},
		{[]string{"--readers", "-1"}, "--readers"},
	} {
		args := append([]string{"score", "--model", mdl, "--in", root, "--out", out}, c.args...)
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q (want usage error naming %s)", c.args, code, errs, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a usage error wrote output")
	}
}

// TestScoreLakeProgressAndSummary: on a terminal the progress bar goes to
// stderr (files, rows, rows/s); stdout holds only the JSON summary; the Go
// memory limit is restored after the run; a dry run writes nothing.
func TestScoreLakeProgressAndSummary(t *testing.T) {
	mdl, root := lakeFixture(t)
	before := debug.SetMemoryLimit(-1)
	out := filepath.Join(t.TempDir(), "preds")
	var so, se bytes.Buffer
	tty := true
	code := Main([]string{"score", "--model", mdl, "--in", root, "--out", out, "--max-memory", "256MiB"},
		Env{Stdout: &so, Stderr: &se, TTY: &tty})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(so.Bytes(), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, so.String())
	}
	if sum["files"].(float64) != 2 || sum["rows"].(float64) != 40000 || len(sum["skipped"].([]any)) != 1 ||
		sum["max_memory"].(float64) != 256<<20 {
		t.Fatalf("summary %v", sum)
	}
	if peak := sum["peak_batch_bytes"].(float64); peak <= 0 || peak > 128<<20 {
		t.Fatalf("peak batch bytes %v outside (0, 128MiB]", peak)
	}
	if s := se.String(); !strings.Contains(s, "files") || !strings.Contains(s, "rows") {
		t.Fatalf("no progress bar on stderr: %q", s)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Fatalf("memory limit %d after the run, %d before", after, before)
	}
	dry := filepath.Join(t.TempDir(), "dry")
	m := mustRun(t, "score", "--model", mdl, "--in", root, "--out", dry, "--dry-run")
	if m["rows"].(float64) != 40000 || m["dry_run"] != true {
		t.Fatalf("dry run %v", m)
	}
	if _, err := os.Stat(dry); err == nil {
		t.Fatal("a dry run wrote output")
	}
}

// corruptCopy writes a copy of the 20-row-group letter file whose row
// group g (first column chunk) is overwritten with 0xFF: it passes the
// footer checks and fails only when g is decoded.
func corruptCopy(t *testing.T, dst string, g int) {
	t.Helper()
	b, err := os.ReadFile(sharedData(t, "letter_recognition_zstd_rg1000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata().RowGroups[g].Columns[0].MetaData
	start := min(md.DataPageOffset, max(md.DictionaryPageOffset, 0))
	if md.DictionaryPageOffset == 0 {
		start = md.DataPageOffset
	}
	for i := start; i < start+md.TotalCompressedSize; i++ {
		b[i] = 0xFF
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScoreLakeCorruptMidFile: a file that fails at its 12th row group,
// after outputs of earlier row groups were written to its temporary file,
// leaves no output and no temporary file; under skip it is named and the
// other files are scored, under fail the run stops naming it.
func TestScoreLakeCorruptMidFile(t *testing.T) {
	mdl, root := lakeFixture(t)
	bad := filepath.Join(root, "day=1", "r.parquet")
	corruptCopy(t, bad, 11)
	out := filepath.Join(t.TempDir(), "o")
	m := mustRun(t, "score", "--model", mdl, "--in", root, "--out", out, "--readers", "3")
	sk := m["skipped"].([]any)
	if m["files"].(float64) != 2 || len(sk) != 2 {
		t.Fatalf("summary %v", m)
	}
	named := false
	for _, s := range sk {
		s := s.(map[string]any)
		if s["file"] == bad && strings.Contains(s["reason"].(string), "row group 11") {
			named = true
		}
	}
	if !named {
		t.Fatalf("the corrupt file is not named with its row group: %v", sk)
	}
	var files []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, out))
		}
		return nil
	})
	if len(files) != 2 || strings.Contains(strings.Join(files, " "), "r.parquet") || strings.Contains(strings.Join(files, " "), "tmp") {
		t.Fatalf("output tree %v", files)
	}
	fo := filepath.Join(t.TempDir(), "f")
	code, _, errs := run(t, "score", "--model", mdl, "--in", filepath.Join(root, "day=1"), "--out", fo, "--on-error", "fail")
	if code != ExitError || !strings.Contains(errs, bad) || !strings.Contains(errs, "row group 11") {
		t.Fatalf("on-error fail: exit %d, %q", code, errs)
	}
	filepath.WalkDir(fo, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "forestd-tmp") {
			t.Errorf("temporary file left after a failed run: %s", p)
		}
		return nil
	})
}

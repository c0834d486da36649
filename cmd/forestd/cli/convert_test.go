package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/connectors/files"
)

// TestConvert: CSV → Parquet → Arrow IPC stream → Arrow IPC file → CSV
// keeps every row and value (the first CSV and the last read back equal);
// an output that is the input, an unknown extension or a missing argument
// are usage errors that leave the input as it was; forestd --help names
// the command with its arguments.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	src := sharedData(t, "iris.csv.gz")
	steps := []string{src, filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.arrows"), filepath.Join(dir, "c.arrow"), filepath.Join(dir, "d.csv")}
	for i := 1; i < len(steps); i++ {
		if code, _, errs := run(t, "convert", steps[i-1], steps[i]); code != 0 || !strings.Contains(errs, "150 rows, 5 columns") {
			t.Fatalf("convert %s %s: exit %d: %s", steps[i-1], steps[i], code, errs)
		}
	}
	_, want, err := files.ReadFile(src, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := files.ReadFile(steps[len(steps)-1], files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(want)
	defer release(got)
	wt, gt := array.NewTableFromRecords(want[0].Schema(), want), array.NewTableFromRecords(got[0].Schema(), got)
	defer wt.Release()
	defer gt.Release()
	if !array.TableEqual(wt, gt) {
		t.Fatalf("round trip changed the table:\n%v\n%v", want[0].Schema(), got[0].Schema())
	}

	csv := steps[len(steps)-1]
	before, _ := os.ReadFile(csv)
	for _, args := range [][]string{
		{"convert", csv, csv},
		{"convert", csv, filepath.Join(dir, "e.txt")},
		{"convert", csv},
	} {
		if code, _, errs := run(t, args...); code != 2 || len(strings.Split(strings.TrimSpace(errs), "\n")) != 1 {
			t.Errorf("forestd %s: exit %d, want 2 with one line: %s", strings.Join(args, " "), code, errs)
		}
	}
	if after, _ := os.ReadFile(csv); string(after) != string(before) {
		t.Fatal("convert changed its input")
	}
	if code, _, errs := run(t, "--help"); code != 0 || !strings.Contains(errs, "forestd convert IN OUT") {
		t.Errorf("--help lacks the convert line: %s", errs)
	}
}

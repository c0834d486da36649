package lake

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

// corruptRowGroup copies a shared Parquet file to dst with the first
// column chunk of row group g overwritten by 0xFF bytes: the footer stays
// valid, so the file passes Open and fails only when g is decoded.
func corruptRowGroup(t testing.TB, name, dst string, g int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata().RowGroups[g].Columns[0].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
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

// TestCorruptRowGroup: a file whose row group 10 is corrupt yields its
// first ten batches, then an error batch naming the file, row group and
// column; under Skip the other files are read to the end, under Fail the
// scan stops with that error. No allocator memory leaks either way.
func TestCorruptRowGroup(t *testing.T) {
	root := letterLake(t)
	bad := filepath.Join(root, "date=2026-11-01", "part-2.parquet")
	corruptRowGroup(t, "letter_recognition_zstd_rg1000.parquet", bad, 10)
	for _, oe := range []OnError{Skip, Fail} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		l, err := Open([]string{root}, Options{Mem: mem, OnError: oe, Readers: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Files()) != 4 {
			t.Fatalf("%d files planned; the corrupt file must pass Open", len(l.Files()))
		}
		perFile := map[string]int64{}
		var errBatch *Batch
		_, err = l.Scan(context.Background(), nil, func(b *Batch) error {
			defer b.Release()
			rel := l.Files()[b.File].Rel
			if b.Err != nil {
				errBatch = b
				if b.RowGroup != 10 || rel != "date=2026-11-01/part-2.parquet" {
					t.Errorf("error batch for %s row group %d", rel, b.RowGroup)
				}
				return nil
			}
			perFile[rel] += b.Rows()
			return nil
		})
		if errBatch == nil || !strings.Contains(errBatch.Err.Error(), "row group 10, column x.box") || !strings.Contains(errBatch.Err.Error(), bad) {
			t.Fatalf("%v: error batch %+v", oe, errBatch)
		}
		if perFile["date=2026-11-01/part-2.parquet"] != 10000 {
			t.Fatalf("%v: %d rows of the corrupt file before the error, want 10 row groups", oe, perFile["date=2026-11-01/part-2.parquet"])
		}
		switch oe {
		case Skip:
			if err != nil {
				t.Fatal(err)
			}
			if perFile["date=2026-11-02/part-0.parquet"] != 20000 {
				t.Fatalf("the files after the corrupt one were not read: %v", perFile)
			}
			if s := l.Skipped(); len(s) != 1 || s[0].File != bad || !strings.Contains(s[0].Reason, "row group 10") {
				t.Fatalf("skipped %v", s)
			}
		case Fail:
			if err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("Fail: %v", err)
			}
		}
		mem.AssertSize(t, 0)
	}
}

// TestSampleDropsFailedFile: rows drawn from a file that fails halfway
// are not in the sample, which then equals the sample of the lake without
// that file.
func TestSampleDropsFailedFile(t *testing.T) {
	root := letterLake(t)
	clean, err := Open([]string{root}, Options{Columns: []string{"x.box", "label"}})
	if err != nil {
		t.Fatal(err)
	}
	_, want, _, err := clean.Sample(context.Background(), SampleOptions{N: 500, Seed: 9, Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	corruptRowGroup(t, "letter_recognition_zstd_rg1000.parquet", filepath.Join(root, "date=2026-11-01", "part-2.parquet"), 15)
	l, err := Open([]string{root}, Options{Columns: []string{"x.box", "label"}})
	if err != nil {
		t.Fatal(err)
	}
	_, got, rep, err := l.Sample(context.Background(), SampleOptions{N: 500, Seed: 9, Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Files != 3 || rep.Population != 60000 {
		t.Fatalf("report %+v", rep)
	}
	w := concatRec(t, want)
	defer w.Release()
	sameRows(t, "sample without the failed file", got, w)
	for _, r := range append(want, got...) {
		r.Release()
	}
}

// TestOpenErrors: unreadable inputs and bad options are errors, not panics.
func TestOpenErrors(t *testing.T) {
	root := letterLake(t)
	for name, opts := range map[string]Options{
		"duplicate column": {Columns: []string{"label", "label"}},
		"negative memory":  {MaxMemory: -1},
		"negative rows":    {RowBytes: -1},
		"bad policy":       {OnError: OnError(7)},
	} {
		if _, err := Open([]string{root}, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Every file bad: an error listing the reasons.
	only := link(t, map[string]string{"a/x.parquet": "bad_truncated.parquet", "b/y.parquet": "bad_string_feature.parquet"})
	_, err := Open([]string{only}, Options{Columns: []string{"x.box"}})
	if err == nil || !strings.Contains(err.Error(), "no usable file") || !strings.Contains(err.Error(), "not a complete Parquet file") {
		t.Fatalf("all bad: %v", err)
	}
	if _, err := OpenFiles(nil, Options{}); err == nil {
		t.Fatal("no files: no error")
	}
}

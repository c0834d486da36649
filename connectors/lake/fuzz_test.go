package lake

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// FuzzLakeFile puts arbitrary bytes in a lake next to a good file and
// reads the lake under Skip: nothing panics, the good file is read to the
// end, the fuzzed file is either read whole (its batches are valid
// records of the lake's columns) or reported by name, and no allocator
// memory leaks.
func FuzzLakeFile(f *testing.F) {
	dir := dataDir(f)
	for _, name := range []string{"iris.parquet", "bad_string_feature.parquet", "bad_truncated.parquet"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A small multi-row-group file written by the lake writer.
	f.Add(multiGroupIris(f))
	good := filepath.Join(dir, "iris.parquet")
	cols := []string{"sepal_length_cm", "petal_length_cm", "label", "day"}
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		for _, d := range []string{"day=1", "day=2"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(good, filepath.Join(root, "day=1", "a.parquet")); err != nil {
			t.Fatal(err)
		}
		fuzzed := filepath.Join(root, "day=2", "b.parquet")
		if err := os.WriteFile(fuzzed, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		l, err := Open([]string{root}, Options{Columns: cols, Mem: mem, MaxMemory: 1 << 20})
		if err != nil {
			t.Fatalf("the good file must keep the lake usable: %v", err)
		}
		rows := map[int]int64{}
		_, err = l.Scan(context.Background(), nil, func(b *Batch) error {
			defer b.Release()
			if b.Err != nil {
				return nil
			}
			if b.Record.NumCols() != int64(len(cols)) {
				t.Fatalf("record has %d columns", b.Record.NumCols())
			}
			for j := range cols {
				if b.Record.ColumnName(j) != cols[j] || b.Record.Column(j).Len() != int(b.Record.NumRows()) {
					t.Fatalf("column %d: %s with %d rows", j, b.Record.ColumnName(j), b.Record.Column(j).Len())
				}
			}
			if d := b.Record.Column(3); d.DataType().ID() != arrow.STRING || d.ValueStr(0) != path.Base(path.Dir(l.Files()[b.File].Rel))[4:] && b.Rows() > 0 {
				t.Fatalf("partition column %v", d)
			}
			rows[b.File] += b.Rows()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if rows[0] != 150 {
			t.Fatalf("the good file gave %d rows", rows[0])
		}
		skipped := l.Skipped()
		if len(l.Files()) == 2 && len(skipped) == 0 && rows[1] != l.Files()[1].Rows {
			t.Fatalf("fuzzed file: %d rows read, footer says %d, not skipped", rows[1], l.Files()[1].Rows)
		}
		for _, s := range skipped {
			if s.File != fuzzed || s.Reason == "" {
				t.Fatalf("skipped %+v", s)
			}
		}
		mem.AssertSize(t, 0)
	})
}

// multiGroupIris writes iris as 3 row groups with the lake writer.
func multiGroupIris(f *testing.F) []byte {
	schema, recs, err := files.ReadFile(filepath.Join(dataDir(f), "iris.parquet"), files.ReadOptions{})
	if err != nil {
		f.Fatal(err)
	}
	p := filepath.Join(f.TempDir(), "iris3.parquet")
	w, err := Create(p, schema, files.WriteOptions{Compression: "snappy"})
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range recs {
		for s := int64(0); s < r.NumRows(); s += 50 {
			sl := r.NewSlice(s, min(s+50, r.NumRows()))
			if err := w.Write(sl); err != nil {
				f.Fatal(err)
			}
			sl.Release()
		}
		r.Release()
	}
	if err := w.Commit(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzPaths feeds arbitrary relative paths and glob patterns to the hive
// parser and the glob matcher: no panics, parsed keys are non-empty and
// unique, and a pattern without "**" matches exactly as path.Match does
// element by element.
func FuzzPaths(f *testing.F) {
	f.Add("date=2026-11-01/part-0.parquet", "date=*/*.parquet")
	f.Add("a=%2F/b=__HIVE_DEFAULT_PARTITION__/x.pq", "**/x.pq")
	f.Add("=/x", "[")
	f.Add("k=v/k=w/f", "k=?/**/f")
	f.Fuzz(func(t *testing.T, rel, pattern string) {
		ps, err := ParsePartitions(rel)
		if err == nil {
			seen := map[string]bool{}
			for _, p := range ps {
				if p.Key == "" || seen[p.Key] {
					t.Fatalf("partitions %+v of %q", ps, rel)
				}
				seen[p.Key] = true
			}
		}
		pat, name := strings.Split(pattern, "/"), strings.Split(rel, "/")
		got := matchGlob(pat, name)
		if strings.Contains(pattern, "**") {
			return
		}
		want := len(pat) == len(name)
		for i := 0; want && i < len(pat); i++ {
			ok, err := path.Match(pat[i], name[i])
			want = ok && err == nil
		}
		if got != want {
			t.Fatalf("matchGlob(%q, %q) = %v, path.Match says %v", pattern, rel, got, want)
		}
	})
}

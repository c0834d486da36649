package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
)

// readStrings reads the utf8 column name of a file.
func readStrings(t *testing.T, path, name string) []string {
	t.Helper()
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	ix := schema.FieldIndices(name)
	if len(ix) != 1 {
		t.Fatalf("%s: no column %s", path, name)
	}
	var out []string
	for _, r := range recs {
		a := r.Column(ix[0]).(*array.String)
		for i := 0; i < a.Len(); i++ {
			out = append(out, a.Value(i))
		}
	}
	return out
}

// TestScoreLakeMulti: a drf model (both prediction modes) and a multi-output
// rf model score a two-partition lake (files of
// 2,500 rows, which the lake scorer's chunks of at most 2,048 rows under
// --max-memory 24MiB split), and every output file equals `forestd score`
// of its input file row for row: the same model id and version, source
// and row, kept column and value in each target column, and no
// single-output prediction column. A --keep column named like a target is
// a one-line error.
func TestScoreLakeMulti(t *testing.T) {
	for _, mode := range []string{"algorithm1", "weighted", "rf"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			train, mdl := filepath.Join(dir, "train.parquet"), filepath.Join(dir, "m.arrows")
			mustRun(t, "gen", "swissroll", "--n", "300", "--seed", "1", "--out", train)
			args := []string{"train", "--in", train, "--label", "y0,y1,y2", "--trees", "10", "--max-features", "3", "--out", mdl, "--threads", "2"}
			if mode != "rf" {
				args = append(args, "--forest", "drf", "--embed-dim", "2", "--drf-predict", mode)
			}
			mustRun(t, args...)
			root := filepath.Join(dir, "lake")
			rels := []string{"day=1/a.parquet", "day=2/b.parquet"}
			for k, rel := range rels {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				mustRun(t, "gen", "swissroll", "--n", "2500", "--seed", []string{"2", "3"}[k], "--out", p)
			}
			out := filepath.Join(dir, "preds")
			sum := mustRun(t, "score", "--model", mdl, "--in", root, "--out", out, "--threads", "2", "--keep", "x1",
				"--max-memory", "24MiB")
			if sum["files"].(float64) != 2 || sum["rows"].(float64) != 5000 || len(sum["skipped"].([]any)) != 0 ||
				sum["chunk_rows"].(float64) >= 2500 {
				t.Fatalf("lake summary %v", sum)
			}
			for _, rel := range rels {
				in := filepath.Join(root, rel)
				offline := filepath.Join(dir, strings.ReplaceAll(rel, "/", "_")+".parquet")
				mustRun(t, "score", "--model", mdl, "--in", in, "--out", offline, "--threads", "1", "--keep", "x1")
				lk := filepath.Join(out, rel)
				got, want := readTable(t, lk), readTable(t, offline)
				for _, col := range []string{schemas.ColModelVersion, schemas.ColRow, "x1", "y0", "y1", "y2"} {
					g, w := got[col], want[col]
					if len(g) != 2500 || len(w) != 2500 {
						t.Fatalf("%s %s: %d lake values, %d offline", rel, col, len(g), len(w))
					}
					for i := range g {
						if g[i] != w[i] {
							t.Fatalf("%s row %d %s: lake %v, forestd score %v", rel, i, col, g[i], w[i])
						}
					}
				}
				for _, col := range []string{schemas.ColModelID, schemas.ColSource} {
					g, w := readStrings(t, lk, col), readStrings(t, offline, col)
					for i := range g {
						if g[i] != w[i] {
							t.Fatalf("%s row %d %s: lake %q, forestd score %q", rel, i, col, g[i], w[i])
						}
					}
				}
				if _, ok := got[schemas.ColPrediction]; ok {
					t.Fatalf("%s: a multi-output model's output has a %s column", rel, schemas.ColPrediction)
				}
			}
			code, _, errs := run(t, "score", "--model", mdl, "--in", root, "--out", filepath.Join(dir, "bad"), "--keep", "y1")
			if code == 0 || !strings.Contains(errs, "y1") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Fatalf("--keep y1 (a target): exit %d, stderr %q", code, errs)
			}
		})
	}
}

package lakescore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

func irisModel(t *testing.T) *scoring.Model {
	t.Helper()
	schema, recs := readFile(t, filepath.Join(dataDir, "iris.parquet"))
	defer release(recs)
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 3, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// irisLake copies testdata/iris.parquet to each rel below a new directory.
func irisLake(t *testing.T, rels ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "iris.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestRunOutNotInput: Run wrote its outputs into the lake it read when
// the output directory lay inside it — out = lake/sub replaced the input
// lake/sub/x.parquet with predictions (nil error), and out = lake/scored
// was read as input, and overwritten, by the next run. The CLI refused
// this; the library checked only an output that is its own input file.
// Now Run refuses, before any work, an output directory that is an input
// directory, lies inside one (or inside a glob's lake) or holds an input,
// through links too, as an OptionError naming Out; the lake is unchanged.
func TestRunOutNotInput(t *testing.T) {
	m := irisModel(t)
	lk := irisLake(t, "x.parquet", "sub/x.parquet")
	orig, err := os.ReadFile(filepath.Join(dataDir, "iris.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(lk, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in  []string
		out string
	}{
		{[]string{lk}, filepath.Join(lk, "sub")},
		{[]string{lk}, filepath.Join(lk, "scored")},
		{[]string{lk}, lk},
		{[]string{lk}, filepath.Join(link, "scored")},
		{[]string{filepath.Join(lk, "sub")}, lk},
		{[]string{filepath.Join(lk, "sub", "x.parquet")}, lk},
		{[]string{filepath.Join(lk, "**", "*.parquet")}, filepath.Join(lk, "scored")},
	} {
		_, err := lakescore.Run(context.Background(), m, c.in, c.out, lakescore.Options{Threads: 1})
		var oe *lakescore.OptionError
		if !errors.As(err, &oe) || oe.Option != "Out" || !strings.Contains(err.Error(), c.out) || !strings.Contains(err.Error(), "never overwrites its input") {
			t.Errorf("in %v out %s: %v", c.in, c.out, err)
		}
	}
	var all []string
	filepath.WalkDir(lk, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			all = append(all, p)
			if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, orig) {
				t.Errorf("%s changed (%v)", p, err)
			}
		}
		return nil
	})
	if len(all) != 2 {
		t.Errorf("the lake holds %v", all)
	}
	// beside the lake, twice, the run scores the two files
	out := filepath.Join(t.TempDir(), "scored")
	for range 2 {
		sum, err := lakescore.Run(context.Background(), m, []string{lk}, out, lakescore.Options{Threads: 1})
		if err != nil || sum.Files != 2 {
			t.Fatalf("%+v, %v", sum, err)
		}
	}
}

// TestRunKeepMissingEverywhere: a kept column that no file of the lake has
// was the lake's "no usable file among 3: missing column id (…); missing
// column id (…); missing column id (…)"; now it is an OptionError naming
// Keep and the column once. (A kept column some files have still skips the
// others, each with its reason: the lake's schema rules.)
func TestRunKeepMissingEverywhere(t *testing.T) {
	m := irisModel(t)
	lk := irisLake(t, "a.parquet", "b.parquet", "c.parquet")
	_, err := lakescore.Run(context.Background(), m, []string{lk}, t.TempDir(), lakescore.Options{Threads: 1, Keep: []string{"id"}})
	var oe *lakescore.OptionError
	if !errors.As(err, &oe) || oe.Option != "Keep" || strings.Count(err.Error(), `"id"`) != 1 || strings.Contains(err.Error(), "missing column") {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "3 files") {
		t.Errorf("%v", err)
	}
	// a kept column the files have
	sum, err := lakescore.Run(context.Background(), m, []string{lk}, t.TempDir(), lakescore.Options{Threads: 1, Keep: []string{"label"}})
	if err != nil || sum.Files != 3 {
		t.Fatalf("%+v, %v", sum, err)
	}
}

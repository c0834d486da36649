package lakescore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

const dataDir = "../testdata"

// lakeOf builds a hive lake below a temporary directory: rel → a file of
// testdata (symlinked) or bytes.
func lakeOf(t *testing.T, layout map[string]string) string {
	t.Helper()
	root := t.TempDir()
	src, err := filepath.Abs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for rel, name := range layout {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(src, name), p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readFile(t *testing.T, path string) (*arrow.Schema, []arrow.Record) {
	t.Helper()
	schema, recs, err := files.ReadFile(path, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return schema, recs
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

func letterModel(t *testing.T) *scoring.Model {
	t.Helper()
	schema, recs := readFile(t, filepath.Join(dataDir, "letter_recognition.parquet"))
	defer release(recs)
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 10, 2
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 2, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunMatchesScore: a hive lake scored by Run under a checked allocator
// (nothing left allocated) gives, per input file, exactly the predictions
// Model.Score makes of that file, with the file's path as source, the
// partition column kept, and a truncated file skipped with its reason;
// progress reaches the totals; a resumed run scores nothing again.
func TestRunMatchesScore(t *testing.T) {
	m := letterModel(t)
	root := lakeOf(t, map[string]string{
		"day=1/a.parquet": "letter_recognition_zstd_rg1000.parquet",
		"day=2/b.parquet": "letter_recognition.parquet",
		"day=2/c.parquet": "bad_truncated.parquet",
	})
	out := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var last lakescore.Progress
	calls := 0
	sum, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{
		Keep: []string{"day"}, Threads: 2, MaxMemory: 256 << 20, Mem: mem,
		Progress: func(p lakescore.Progress) {
			if p.RowsDone < last.RowsDone || p.FilesDone < last.FilesDone {
				t.Errorf("progress went back: %+v after %+v", p, last)
			}
			last = p
			calls++
		}})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if sum.Files != 2 || sum.Rows != 40000 || sum.FilesListed != 3 || len(sum.Skipped) != 1 || !strings.HasSuffix(sum.Skipped[0].File, "c.parquet") {
		t.Fatalf("summary %+v", sum)
	}
	if calls == 0 || last.Files != 2 || last.FilesDone != 2 || last.RowsDone != 40000 || last.Rows != 40000 {
		t.Fatalf("last progress %+v after %d calls", last, calls)
	}
	for rel, name := range map[string]string{"day=1/a.parquet": "letter_recognition_zstd_rg1000.parquet", "day=2/b.parquet": "letter_recognition.parquet"} {
		_, in := readFile(t, filepath.Join(dataDir, name))
		want, err := m.Score(in, scoring.Options{Threads: 1})
		release(in)
		if err != nil {
			t.Fatal(err)
		}
		_, got := readFile(t, filepath.Join(out, filepath.FromSlash(rel)))
		checkSame(t, rel, filepath.Join(root, filepath.FromSlash(rel)), got, want)
		release(got)
		release(want)
	}
	again, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Resume: true, Keep: []string{"day"}})
	if err != nil || again.Resumed != 2 || again.Files != 0 {
		t.Fatalf("resumed run: %v %+v", err, again)
	}
}

// checkSame compares the prediction and probability columns of the lake's
// output with Score's, row by row, and the source and kept columns.
func checkSame(t *testing.T, rel, path string, got, want []arrow.Record) {
	t.Helper()
	col := func(recs []arrow.Record, name string) []string {
		var v []string
		for _, r := range recs {
			ix := r.Schema().FieldIndices(name)
			if len(ix) == 0 {
				t.Fatalf("%s: no column %s", rel, name)
			}
			for i := 0; i < int(r.NumRows()); i++ {
				v = append(v, r.Column(ix[0]).ValueStr(i))
			}
		}
		return v
	}
	for _, name := range []string{"prediction", "prob_A", "prob_Z", "row", "model_id"} {
		g, w := col(got, name), col(want, name)
		if len(g) != len(w) {
			t.Fatalf("%s: %d rows, want %d", rel, len(g), len(w))
		}
		for i := range g {
			if g[i] != w[i] {
				t.Fatalf("%s row %d: %s %s, Score gives %s", rel, i, name, g[i], w[i])
			}
		}
	}
	day := strings.TrimPrefix(strings.Split(rel, "/")[0], "day=")
	for i, src := range col(got, "source") {
		if src != path {
			t.Fatalf("%s row %d: source %s", rel, i, src)
		}
	}
	for i, d := range col(got, "day") {
		if d != day {
			t.Fatalf("%s row %d: day %s", rel, i, d)
		}
	}
}

// swissModel is a drf model of three targets trained on 400 swiss-roll
// rows, and those rows (the caller releases them).
func swissModel(t *testing.T) (*scoring.Model, arrow.Record) {
	t.Helper()
	fr, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: 400, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var y []float64
	for i := 0; i < fr.NRows; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
	}
	o := manifold.DefaultOptions()
	o.Trees, o.MaxFeatures, o.Threads, o.EmbedDim = 10, "3", 2, 2
	f, err := manifold.Train(fr, y, []string{"y0", "y1", "y2"}, o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m, fr.ToRecord(memory.DefaultAllocator)
}

// TestRunSeveralOutputs: a drf model scores a lake into one float64 column
// per target, equal to Score's, under a checked allocator.
func TestRunSeveralOutputs(t *testing.T) {
	m, rec := swissModel(t)
	defer rec.Release()
	dir := t.TempDir()
	in := filepath.Join(dir, "lake", "s.parquet")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := files.WriteFile(in, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	sum, err := lakescore.Run(context.Background(), m, []string{filepath.Join(dir, "lake")}, filepath.Join(dir, "out"), lakescore.Options{Threads: 2, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if sum.Rows != 400 || sum.Files != 1 {
		t.Fatalf("summary %+v", sum)
	}
	want, err := m.Score([]arrow.Record{rec}, scoring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(want)
	_, got := readFile(t, filepath.Join(dir, "out", "s.parquet"))
	defer release(got)
	g := 0
	for _, r := range got {
		for i := 0; i < int(r.NumRows()); i, g = i+1, g+1 {
			for k, name := range []string{"y0", "y1", "y2"} {
				gv := r.Column(r.Schema().FieldIndices(name)[0]).(*array.Float64).Value(i)
				wv := want[0].Column(4 + k).(*array.Float64).Value(g)
				if gv != wv {
					t.Fatalf("row %d %s: lake %v, Score %v", g, name, gv, wv)
				}
			}
		}
	}
	if g != 400 {
		t.Fatalf("%d rows", g)
	}
}

// TestRunOptionErrors: options the run cannot meet are OptionErrors naming
// the option; a kept column no file has is an error naming it.
func TestRunOptionErrors(t *testing.T) {
	m := letterModel(t)
	root := lakeOf(t, map[string]string{"a.parquet": "letter_recognition.parquet"})
	for opt, o := range map[string]lakescore.Options{
		"MaxMemory":   {MaxMemory: 1 << 10},
		"Compression": {Compression: "brotli9"},
		"Threads":     {Threads: -1},
	} {
		_, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), o)
		var oe *lakescore.OptionError
		if !errors.As(err, &oe) || oe.Option != opt {
			t.Errorf("%s: %v", opt, err)
		}
	}
	// a kept column no file has leaves no usable file: the error names it
	if _, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), lakescore.Options{Keep: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing kept column: %v", err)
	}
	if _, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), lakescore.Options{OnError: lake.Fail, Keep: []string{"label"}}); err != nil {
		t.Fatalf("a good lake with OnError Fail: %v", err)
	}
}

// TestRunRowsCountWrittenFilesOnly: a file whose footer reads but whose
// row group 5 of 20 is corrupt is skipped after its first row groups were
// scored; the summary's rows are the rows of the outputs written (the good
// file's), not those plus the abandoned file's first row groups.
func TestRunRowsCountWrittenFilesOnly(t *testing.T) {
	m := letterModel(t)
	schema, recs := readFile(t, filepath.Join(dataDir, "letter_recognition.parquet"))
	defer release(recs)
	root := t.TempDir()
	good, bad := filepath.Join(root, "a.parquet"), filepath.Join(root, "b.parquet")
	for _, p := range []string{good, bad} {
		if err := files.WriteFile(p, schema, recs, files.WriteOptions{RowGroupRows: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	// corrupt the middle of b's data (its footer stays intact)
	fh, err := os.OpenFile(bad, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, st.Size()/20)
	for i := range junk {
		junk[i] = 0xff
	}
	if _, err := fh.WriteAt(junk, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	out := t.TempDir()
	sum, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Threads: 2, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if len(sum.Skipped) != 1 || !strings.HasSuffix(sum.Skipped[0].File, "b.parquet") || !strings.Contains(sum.Skipped[0].Reason, "row group") {
		t.Fatalf("want b.parquet skipped at a row group, summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(out, "b.parquet")); !os.IsNotExist(err) {
		t.Fatalf("an output for the skipped file: %v", err)
	}
	if sum.Files != 1 || sum.Rows != 20000 {
		t.Fatalf("files %d rows %d, want 1 file of 20000 rows written: %+v", sum.Files, sum.Rows, sum)
	}
}

// TestRunCancelReleasesEverything: a run whose context is cancelled midway
// (from the progress callback, as a caller's deadline would) returns
// context.Canceled and leaves nothing allocated: chunks handed to the
// scorers but not yet to the writer when the context ended, and their
// batches, were never released (1.4 MB per run under a checked allocator,
// in about half the runs).
func TestRunCancelReleasesEverything(t *testing.T) {
	m := letterModel(t)
	root := lakeOf(t, map[string]string{
		"a.parquet": "letter_recognition_zstd_rg1000.parquet",
		"b.parquet": "letter_recognition_zstd_rg1000.parquet",
		"c.parquet": "letter_recognition_zstd_rg1000.parquet",
	})
	for i := range 12 {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ctx, cancel := context.WithCancel(context.Background())
		_, err := lakescore.Run(ctx, m, []string{root}, t.TempDir(), lakescore.Options{Threads: 2, Readers: 1 + i%3, Mem: mem,
			MaxMemory: 64 << 20, Progress: func(p lakescore.Progress) {
				if p.RowsDone >= int64(1000*(1+i)) {
					cancel()
				}
			}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %v, want context.Canceled", i, err)
		}
		if n := mem.CurrentAlloc(); n != 0 {
			t.Fatalf("run %d: %d bytes still allocated after a cancelled run", i, n)
		}
	}
}

// TestRunReportsRowGroupsOverBudget: a row group larger decoded than the
// memory budget is still scored (decoded alone), and the summary says so
// — over_budget names it with its estimate, and warning tells what to do
// — instead of the run passing --max-memory silently; a run whose row
// groups fit reports nothing.
func TestRunReportsRowGroupsOverBudget(t *testing.T) {
	m := letterModel(t)
	schema, recs := readFile(t, filepath.Join(dataDir, "letter_recognition.parquet"))
	defer release(recs)
	big := make([]arrow.Record, 0, 20*len(recs))
	for range 20 {
		big = append(big, recs...)
	}
	root := t.TempDir()
	path := filepath.Join(root, "big.parquet")
	// 400,000 rows of 17 columns in one row group: ~55 MB decoded
	if err := files.WriteFile(path, schema, big, files.WriteOptions{RowGroupRows: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		maxMemory int64
		over      bool
	}{{64 << 20, true}, {2 << 30, false}} {
		sum, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), lakescore.Options{Threads: 2, MaxMemory: tc.maxMemory})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Files != 1 || sum.Rows != 400000 {
			t.Fatalf("max memory %d MiB: summary %+v", tc.maxMemory>>20, sum)
		}
		if !tc.over {
			if len(sum.OverBudget) != 0 || sum.Warning != "" {
				t.Fatalf("max memory %d MiB: over budget %+v, warning %q", tc.maxMemory>>20, sum.OverBudget, sum.Warning)
			}
			continue
		}
		if len(sum.OverBudget) != 1 || sum.OverBudget[0].File != path || sum.OverBudget[0].RowGroup != 0 || sum.OverBudget[0].Bytes < 400000*16*4 {
			t.Fatalf("max memory %d MiB: over budget %+v", tc.maxMemory>>20, sum.OverBudget)
		}
		t.Log(sum.Warning)
		if !strings.Contains(sum.Warning, "--max-memory") || !strings.Contains(sum.Warning, path) {
			t.Fatalf("max memory %d MiB: warning %q", tc.maxMemory>>20, sum.Warning)
		}
	}
}

// TestRunFailErrorsAreInput: under lake.Fail, a file whose content is at
// fault (truncated, missing a feature) stops the run with a
// *lake.FileError naming it that is also scoring.ErrInput, as docs/embedding.md
// promises of every error that is the data's fault; a directory that
// cannot be read (a file-system fault) is a FileError but not ErrInput.
func TestRunFailErrorsAreInput(t *testing.T) {
	m := letterModel(t)
	for name, layout := range map[string]map[string]string{
		"truncated":       {"a.parquet": "letter_recognition.parquet", "b.parquet": "bad_truncated.parquet"},
		"missing feature": {"a.parquet": "letter_recognition.parquet", "b.parquet": "iris.parquet"},
	} {
		root := lakeOf(t, layout)
		_, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), lakescore.Options{OnError: lake.Fail})
		var fe *lake.FileError
		if !errors.As(err, &fe) || !strings.HasSuffix(fe.File, "b.parquet") || !errors.Is(err, scoring.ErrInput) {
			t.Errorf("%s: %v (file error %v, ErrInput %v)", name, err, fe != nil, errors.Is(err, scoring.ErrInput))
		}
		if err != nil && strings.Contains(err.Error(), scoring.ErrInput.Error()) {
			t.Errorf("%s: the text changed: %v", name, err)
		}
	}
	// a file-system fault below the file error (a directory or file that
	// cannot be read, as lake.List and Open report it) is not ErrInput
	perm := &lake.FileError{File: "/lake/d=2", Err: fmt.Errorf("lake: directory /lake/d=2 cannot be read: %w",
		&fs.PathError{Op: "open", Path: "d=2", Err: fs.ErrPermission})}
	if err := lakescore.DataFault(perm); errors.Is(err, scoring.ErrInput) || err != error(perm) {
		t.Errorf("permission error: %v, ErrInput %v", err, errors.Is(err, scoring.ErrInput))
	}
}

// TestRunProbs: a lake scored with Options.Probs top3 holds the columns
// and values Model.Score makes with it; the summary names the choice; a
// resumed run with other probabilities scores the file again rather than
// keeping an output of other columns; an invalid choice is an
// OptionError naming Probs.
func TestRunProbs(t *testing.T) {
	m := letterModel(t)
	root := lakeOf(t, map[string]string{"a.parquet": "letter_recognition_zstd_rg1000.parquet"})
	out := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	sum, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Probs: scoring.ProbsTop(3), Threads: 2, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if sum.Probs != "top3" || sum.Files != 1 {
		t.Fatalf("summary %+v", sum)
	}
	_, in := readFile(t, filepath.Join(dataDir, "letter_recognition_zstd_rg1000.parquet"))
	want, err := m.Score(in, scoring.Options{Probs: scoring.ProbsTop(3), Threads: 1})
	release(in)
	if err != nil {
		t.Fatal(err)
	}
	defer release(want)
	schema, got := readFile(t, filepath.Join(out, "a.parquet"))
	defer release(got)
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	if fmt.Sprint(names) != "[model_id model_version source row prediction top1_class top1_prob top2_class top2_prob top3_class top3_prob]" {
		t.Fatalf("columns %v", names)
	}
	values := func(recs []arrow.Record, name string) []string {
		var v []string
		for _, r := range recs {
			c := r.Column(r.Schema().FieldIndices(name)[0])
			for i := 0; i < c.Len(); i++ {
				v = append(v, c.ValueStr(i))
			}
		}
		return v
	}
	for _, name := range names[4:] {
		if g, w := values(got, name), values(want, name); fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("column %s differs from Score's", name)
		}
	}
	// resumed with every probability: the top-3 output is scored again
	again, err := lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Resume: true, Probs: scoring.ProbsAll})
	if err != nil || again.Resumed != 0 || again.Files != 1 || again.Probs != "all" {
		t.Fatalf("resumed with other probabilities: %v %+v", err, again)
	}
	if s, recs := readFile(t, filepath.Join(out, "a.parquet")); !s.HasField("prob_A") {
		t.Fatalf("after the resumed run: %v", s)
	} else {
		release(recs)
	}
	if again, err = lakescore.Run(context.Background(), m, []string{root}, out, lakescore.Options{Resume: true}); err != nil || again.Resumed != 1 {
		t.Fatalf("resumed with the same probabilities: %v %+v", err, again)
	}
	var oe *lakescore.OptionError
	if _, err := lakescore.Run(context.Background(), m, []string{root}, t.TempDir(), lakescore.Options{Probs: "top"}); !errors.As(err, &oe) || oe.Option != "Probs" {
		t.Fatalf("probs top: %v", err)
	}
}

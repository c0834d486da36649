package lake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// dataDir is the shared data directory; its absence is a failure.
func dataDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("shared data directory %s is missing: %v", dir, err)
	}
	return dir
}

// link builds a lake under a temporary directory: rel → shared data file.
func link(t testing.TB, layout map[string]string) string {
	t.Helper()
	root := t.TempDir()
	src := dataDir(t)
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

// letterLake is the hive lake most tests use: the 20-row-group zstd
// letter file, the 1-row-group snappy one, and a second day.
func letterLake(t testing.TB) string {
	return link(t, map[string]string{
		"date=2026-11-01/part-0.parquet":  "letter_recognition_zstd_rg1000.parquet",
		"date=2026-11-01/part-1.parquet":  "letter_recognition.parquet",
		"date=2026-11-02/part-0.parquet":  "letter_recognition_zstd_rg1000.parquet",
		"date=2026-11-02/_SUCCESS":        "iris.csv.gz",
		"date=2026-11-02/.part-9.parquet": "bad_truncated.parquet",
	})
}

var letterFeatures = []string{"x.box", "y.box", "width", "high", "onpix", "x.bar", "y.bar", "x2bar",
	"y2bar", "xybar", "x2ybr", "xy2br", "x.ege", "xegvy", "y.ege", "yegvx"}

// whole reads a file with connectors/files, the reference reader.
func whole(t testing.TB, path string, cols []string) []arrow.Record {
	t.Helper()
	_, recs, err := files.ReadFile(path, files.ReadOptions{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestListHiveAndGlobs(t *testing.T) {
	root := letterLake(t)
	got, err := List([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, f := range got {
		rels = append(rels, f.Rel)
		if len(f.Partitions) != 1 || f.Partitions[0].Key != "date" {
			t.Fatalf("%s: partitions %+v", f.Rel, f.Partitions)
		}
		if want := strings.TrimPrefix(strings.Split(f.Rel, "/")[0], "date="); f.Partitions[0].Value != want {
			t.Fatalf("%s: partition value %q, want %q", f.Rel, f.Partitions[0].Value, want)
		}
	}
	want := []string{"date=2026-11-01/part-0.parquet", "date=2026-11-01/part-1.parquet", "date=2026-11-02/part-0.parquet"}
	if !slices.Equal(rels, want) {
		t.Fatalf("listed %v, want %v (hidden and _ files skipped)", rels, want)
	}

	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{root + "/date=2026-11-01/*.parquet", want[:2]},
		{root + "/**/part-0.parquet", []string{want[0], want[2]}},
		{root + "/date=*/part-[1]*", want[1:2]},
		{root + "/**", want},
	} {
		got, err := List([]string{c.pattern})
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		var rels []string
		for _, f := range got {
			rels = append(rels, f.Rel)
			if f.Root != root {
				t.Fatalf("%s: root %s, want %s", c.pattern, f.Root, root)
			}
		}
		if !slices.Equal(rels, c.want) {
			t.Fatalf("%s: listed %v, want %v", c.pattern, rels, c.want)
		}
	}
	// A file reached twice is listed once; no match is an error.
	got, err = List([]string{root, root + "/date=2026-11-01/part-0.parquet"})
	if err != nil || len(got) != 3 {
		t.Fatalf("duplicates: %d files, %v", len(got), err)
	}
	if _, err := List([]string{root + "/nothing*/x.parquet"}); err == nil {
		t.Fatal("a pattern matching nothing must be an error")
	}
	if _, err := List([]string{filepath.Join(root, "missing")}); err == nil {
		t.Fatal("a missing path must be an error")
	}
}

func TestParsePartitions(t *testing.T) {
	ps, err := ParsePartitions("year=2026/plain/city=S%C3%A3o%20Paulo/k=" + hiveNull + "/f.parquet")
	if err != nil {
		t.Fatal(err)
	}
	want := []Partition{{Key: "year", Value: "2026"}, {Key: "city", Value: "São Paulo"}, {Key: "k", Null: true}}
	if !slices.Equal(ps, want) {
		t.Fatalf("got %+v, want %+v", ps, want)
	}
	for _, bad := range []string{"=x/f.parquet", "a=1/a=2/f.parquet", "a=%zz/f.parquet", "%zz=1/f.parquet"} {
		if _, err := ParsePartitions(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// The file name itself is never a partition.
	if ps, err := ParsePartitions("a=1.parquet"); err != nil || len(ps) != 0 {
		t.Fatalf("file name parsed as partition: %v %v", ps, err)
	}
}

// TestScanMatchesFiles reads the lake with projection and compares every
// value with connectors/files reading the same files whole.
func TestScanMatchesFiles(t *testing.T) {
	root := letterLake(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cols := []string{"date", "x.box", "label", "yegvx"}
	l, err := Open([]string{root}, Options{Columns: cols, Mem: mem, MaxMemory: 64 << 10, Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files()) != 3 || l.Rows() != 60000 || len(l.Skipped()) != 0 {
		t.Fatalf("files %d rows %d skipped %v", len(l.Files()), l.Rows(), l.Skipped())
	}
	if s := l.Schema(); s.NumFields() != 4 || s.Field(0).Type.ID() != arrow.STRING || s.Field(1).Type.ID() != arrow.FLOAT64 {
		t.Fatalf("schema %v", s)
	}
	got := map[int][]arrow.Record{}
	var order [][2]int
	stats, err := l.Scan(context.Background(), nil, func(b *Batch) error {
		if b.Err != nil {
			return b.Err
		}
		order = append(order, [2]int{b.File, b.RowGroup})
		b.Record.Retain()
		got[b.File] = append(got[b.File], b.Record)
		b.Release()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 41 {
		t.Fatalf("%d batches, want 20+1+20", len(order))
	}
	for i := 1; i < len(order); i++ {
		if order[i][0] < order[i-1][0] || (order[i][0] == order[i-1][0] && order[i][1] != order[i-1][1]+1) {
			t.Fatalf("batches out of order: %v", order)
		}
	}
	if stats.PeakBytes <= 0 {
		t.Fatalf("peak %d", stats.PeakBytes)
	}
	for fi, f := range l.Files() {
		ref := whole(t, f.Path, cols[1:])
		rows := 0
		for _, r := range got[fi] {
			if r.Column(0).(*array.String).Value(0) != f.Partitions[0].Value {
				t.Fatalf("%s: partition column %v", f.Rel, r.Column(0))
			}
			rows += int(r.NumRows())
		}
		refRows := 0
		for _, r := range ref {
			refRows += int(r.NumRows())
		}
		if rows != refRows {
			t.Fatalf("%s: %d rows, want %d", f.Rel, rows, refRows)
		}
		// Compare the concatenated columns.
		for k := 1; k < len(cols); k++ {
			a := concat(t, got[fi], k)
			b := concat(t, ref, k-1)
			if !array.Equal(a, b) {
				t.Fatalf("%s: column %s differs", f.Rel, cols[k])
			}
			a.Release()
			b.Release()
		}
		for _, r := range got[fi] {
			r.Release()
		}
		for _, r := range ref {
			r.Release()
		}
	}
}

func concat(t testing.TB, recs []arrow.Record, k int) arrow.Array {
	t.Helper()
	var arrs []arrow.Array
	for _, r := range recs {
		arrs = append(arrs, r.Column(k))
	}
	a, err := array.Concatenate(arrs, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestBadFiles puts the bad_* Parquet files into an iris lake: each is
// named in Skipped with its cause under Skip, and stops Open under Fail.
func TestBadFiles(t *testing.T) {
	root := link(t, map[string]string{
		"day=1/a.parquet": "iris.parquet",
		"day=2/b.parquet": "bad_string_feature.parquet",
		"day=3/c.parquet": "bad_truncated.parquet",
		"day=4/d.parquet": "wine.parquet", // lacks iris' features
		"e.parquet":       "iris.parquet", // no partition directory
	})
	feats := []string{"sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"}
	numeric := func(name string, dt arrow.DataType) error {
		if !arrow.IsFloating(dt.ID()) && !arrow.IsInteger(dt.ID()) {
			return errors.New("column " + name + " is " + dt.String() + ", numeric expected")
		}
		return nil
	}
	l, err := Open([]string{root}, Options{Columns: feats, Check: numeric})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files()) != 1 || l.Files()[0].Rel != "day=1/a.parquet" {
		t.Fatalf("usable files %v", l.Files())
	}
	reasons := map[string]string{}
	for _, s := range l.Skipped() {
		rel, _ := filepath.Rel(root, s.File)
		reasons[filepath.ToSlash(rel)] = s.Reason
	}
	for rel, want := range map[string]string{
		"day=2/b.parquet": "column petal_length_cm is utf8, numeric expected",
		"day=3/c.parquet": "not a complete Parquet file",
		"day=4/d.parquet": "missing columns sepal_length_cm, sepal_width_cm, petal_length_cm, petal_width_cm (the file has alcohol, malic_acid",
		"e.parquet":       "partition keys [] differ from the lake's [day]",
	} {
		if !strings.Contains(reasons[rel], want) {
			t.Errorf("%s: reason %q, want it to contain %q", rel, reasons[rel], want)
		}
	}
	if len(reasons) != 4 {
		t.Fatalf("skipped %v", l.Skipped())
	}

	_, err = Open([]string{root}, Options{Columns: feats, Check: numeric, OnError: Fail})
	if err == nil || !strings.Contains(err.Error(), "b.parquet") {
		t.Fatalf("Fail: %v, want the first bad file named", err)
	}
	// Without Check, a type differing from the first file is reported too.
	l, err = Open([]string{filepath.Join(root, "day=1"), filepath.Join(root, "day=2")}, Options{Columns: feats})
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Skipped(); len(s) != 1 || !strings.Contains(s[0].Reason, "column petal_length_cm is utf8, want float64 as in the first file") {
		t.Fatalf("skipped %v", s)
	}
}

// TestScanBudget checks that the bytes in flight never exceed the budget
// when every row group fits, even with a consumer that holds batches for
// a while, and that a row group larger than the budget is still read
// (alone) and reported in ScanStats.OverBudget.
func TestScanBudget(t *testing.T) {
	root := letterLake(t)
	for _, budget := range []int64{400 << 10, 1 << 10} {
		l, err := Open([]string{root}, Options{MaxMemory: budget, Readers: 4})
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan *Batch, 64)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for b := range ch {
				time.Sleep(200 * time.Microsecond)
				b.Release()
			}
		}()
		rows := int64(0)
		stats, err := l.Scan(context.Background(), nil, func(b *Batch) error {
			rows += b.Rows()
			ch <- b
			return nil
		})
		close(ch)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if rows != 60000 {
			t.Fatalf("budget %d: %d rows", budget, rows)
		}
		largest := int64(0)
		for _, f := range l.Files() {
			for g := range f.RowGroups {
				largest = max(largest, l.estimate(f, g))
			}
		}
		if limit := max(budget, largest); stats.PeakBytes > limit || stats.PeakBytes <= 0 {
			t.Fatalf("budget %d: peak %d bytes, limit %d", budget, stats.PeakBytes, limit)
		}
		// the row groups past the budget are reported, each with its estimate
		var over int
		for _, f := range l.Files() {
			for g := range f.RowGroups {
				if l.estimate(f, g) > budget {
					over++
				}
			}
		}
		if len(stats.OverBudget) != over || (budget == 1<<10 && over == 0) {
			t.Fatalf("budget %d: %d row groups reported over it, %d are", budget, len(stats.OverBudget), over)
		}
		for _, o := range stats.OverBudget {
			if o.Bytes <= budget || o.File == "" {
				t.Fatalf("budget %d: reported %+v", budget, o)
			}
		}
		if l.files[0].bytes[0] < 1000*8*17 {
			t.Fatalf("row-group estimate %d below the decoded size of 17 columns", l.files[0].bytes[0])
		}
	}
}

func TestScanFnErrorStops(t *testing.T) {
	root := letterLake(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	l, err := Open([]string{root}, Options{Mem: mem, Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	_, err = l.Scan(context.Background(), nil, func(b *Batch) error {
		b.Release()
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 {
		t.Fatalf("err %v after %d batches", err, n)
	}
}

// TestCreateRefusesNonRegular: a part file's path that exists and is not a
// regular file (here a directory) is refused before anything is written,
// as every forestd output is.
func TestCreateRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "part.parquet")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	w, err := Create(p, schema, files.WriteOptions{})
	if err == nil || !errors.Is(err, files.ErrNotRegular) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Create over a directory: %v", err)
	}
	if w != nil {
		t.Fatal("a writer with the error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}

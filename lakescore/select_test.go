package lakescore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/operators"
)

// letterMapping is an FDM mapping of letter_recognition's first features:
// two groups mapped, one marginal feature kept.
func letterMapping(t *testing.T) *fdm.Transform {
	t.Helper()
	schema, recs := readFile(t, filepath.Join(dataDir, "letter_recognition.parquet"))
	defer release(recs)
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := fdm.Fit(fr, fdm.Plan{Marginal: []int{4}, Groups: [][]int{{0, 1}, {2, 3}}}, fdm.Options{Map: fdm.MapRP, Candidates: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestSelectMapsLake: Select writes one output per good input file, in
// the lake's layout, each row group of the input one row group of the
// output, with the values operators.SelectRecords gives for the file read
// whole; a bad file is skipped; the outputs are byte for byte the same
// whatever the threads; a resumed run writes nothing again, and a run
// with other columns writes everything again.
func TestSelectMapsLake(t *testing.T) {
	tr := letterMapping(t)
	layout := map[string]string{
		"day=1/a.parquet": "letter_recognition_zstd_rg1000.parquet",
		"day=2/b.parquet": "letter_recognition.parquet",
		"day=2/c.parquet": "bad_truncated.parquet",
	}
	root := lakeOf(t, layout)
	sopts := operators.SelectOptions{Keep: []string{"day"}, Label: "label"}
	outs := map[int]string{}
	for _, threads := range []int{1, 3} {
		out := filepath.Join(t.TempDir(), "mapped")
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		sum, err := lakescore.Select(context.Background(), tr, []string{root}, out, lakescore.SelectOptions{
			Select: sopts, Threads: threads, Lake: lake.Options{MaxMemory: 256 << 20, Mem: mem}})
		if err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
		if sum.Files != 2 || sum.Rows != 40000 || sum.Resumed != 0 || len(sum.Skipped) != 1 || !strings.HasSuffix(sum.Skipped[0].File, "c.parquet") {
			t.Fatalf("threads %d: summary %+v", threads, sum)
		}
		outs[threads] = out
	}
	for rel, name := range layout {
		if strings.HasPrefix(name, "bad") {
			if _, err := os.Stat(filepath.Join(outs[1], filepath.FromSlash(rel))); err == nil {
				t.Fatalf("an output for the bad file %s", rel)
			}
			continue
		}
		a, err := os.ReadFile(filepath.Join(outs[1], filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(outs[3], filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs between 1 and 3 threads", rel)
		}
		checkSelected(t, tr, sopts, rel, filepath.Join(dataDir, name), filepath.Join(outs[1], filepath.FromSlash(rel)))
	}
	again, err := lakescore.Select(context.Background(), tr, []string{root}, outs[1], lakescore.SelectOptions{Select: sopts, Resume: true})
	if err != nil || again.Resumed != 2 || again.Files != 0 {
		t.Fatalf("resumed select: %v %+v", err, again)
	}
	other, err := lakescore.Select(context.Background(), tr, []string{root}, outs[1], lakescore.SelectOptions{
		Select: operators.SelectOptions{Label: "label"}, Resume: true})
	if err != nil || other.Resumed != 0 || other.Files != 2 {
		t.Fatalf("resumed select with other columns: %v %+v", err, other)
	}
}

// checkSelected compares an output of Select with SelectRecords of its
// input read whole: the same columns and values, and one row group per
// input row group.
func checkSelected(t *testing.T, tr *fdm.Transform, sopts operators.SelectOptions, rel, in, out string) {
	t.Helper()
	schema, recs := readFile(t, in)
	defer release(recs)
	sopts.Keep = nil // the partition column is not in the file
	_, want, err := operators.SelectRecords(tr, schema, recs, sopts)
	if err != nil {
		t.Fatal(err)
	}
	defer release(want)
	_, got := readFile(t, out)
	defer release(got)
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
	for _, f := range want[0].Schema().Fields() {
		g, w := col(got, f.Name), col(want, f.Name)
		if len(g) != len(w) {
			t.Fatalf("%s: %s has %d rows, want %d", rel, f.Name, len(g), len(w))
		}
		for i := range g {
			if g[i] != w[i] {
				t.Fatalf("%s row %d: %s %s, SelectRecords gives %s", rel, i, f.Name, g[i], w[i])
			}
		}
	}
	day := strings.TrimPrefix(strings.Split(rel, "/")[0], "day=")
	for i, d := range col(got, "day") {
		if d != day {
			t.Fatalf("%s row %d: day %s", rel, i, d)
		}
	}
	pin, pout := openParquet(t, in), openParquet(t, out)
	if pin.NumRowGroups() != pout.NumRowGroups() {
		t.Fatalf("%s: %d row groups, the input has %d", rel, pout.NumRowGroups(), pin.NumRowGroups())
	}
}

func openParquet(t *testing.T, path string) *files.ParquetFile {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := files.OpenParquet(path, fh, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

package files

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
)

// dataDir is the shared data directory. Its absence is a failure, not a
// skip: these tests are the evidence that the readers handle real files.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("shared data directory %s is missing: %v", dir, err)
	}
	return dir
}

type manifestEntry struct {
	File      string   `json:"file"`
	Format    string   `json:"format"`
	Dataset   string   `json:"dataset"`
	Rows      int      `json:"rows"`
	NFeatures int      `json:"n_features"`
	Features  []string `json:"features"`
	Response  string   `json:"response"`
	LabelType string   `json:"label_type"`
	RowGroups []int    `json:"row_groups"`
	Batches   []int    `json:"batches"`
	Missing   map[string]int
}

func manifest(t testing.TB) []manifestEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir(t), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Files []manifestEntry `json:"files"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) < 30 {
		t.Fatalf("manifest lists only %d files", len(m.Files))
	}
	return m.Files
}

func checked(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func readAll(t testing.TB, mem memory.Allocator, paths ...string) (*arrow.Schema, []arrow.Record) {
	t.Helper()
	s, recs, err := ReadPaths(paths, ReadOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(recs) })
	return s, recs
}

func TestManifestFiles(t *testing.T) {
	dir := dataDir(t)
	seen := 0
	for _, e := range manifest(t) {
		if e.Format == "negative-test" {
			continue
		}
		seen++
		t.Run(e.File, func(t *testing.T) {
			mem := checked(t)
			s, recs := readAll(t, mem, filepath.Join(dir, e.File))
			want := append(slices.Clone(e.Features), e.Response)
			if got := fieldNames(s); !slices.Equal(got, want) {
				t.Fatalf("columns %v, want %v", got, want)
			}
			if s.NumFields() != e.NFeatures+1 {
				t.Errorf("%d columns, want %d", s.NumFields(), e.NFeatures+1)
			}
			rows := 0
			var sizes []int
			for _, r := range recs {
				rows += int(r.NumRows())
				sizes = append(sizes, int(r.NumRows()))
			}
			if rows != e.Rows {
				t.Errorf("%d rows, want %d", rows, e.Rows)
			}
			switch {
			case e.RowGroups != nil && !slices.Equal(sizes, e.RowGroups):
				t.Errorf("row groups %v, want %v", sizes, e.RowGroups)
			case e.Batches != nil && !slices.Equal(sizes, e.Batches):
				t.Errorf("batches %v, want %v", sizes, e.Batches)
			}
			// Label type: mlbench string labels, sklearn integers, float targets.
			lt := s.Field(s.NumFields() - 1).Type.ID()
			switch e.LabelType {
			case "string":
				if lt != arrow.STRING {
					t.Errorf("label type %v, want utf8", lt)
				}
			case "int":
				if lt != arrow.INT64 {
					t.Errorf("label type %v, want int64", lt)
				}
			case "float":
				if lt != arrow.FLOAT64 && !(e.Format == "csv.gz" && lt == arrow.INT64) {
					t.Errorf("target type %v, want float64", lt)
				}
			}
			// Missing values as documented.
			for col, n := range e.Missing {
				j := s.FieldIndices(col)[0]
				nulls := 0
				for _, r := range recs {
					nulls += r.Column(j).NullN()
				}
				if nulls != n {
					t.Errorf("%s has %d nulls, want %d", col, nulls, n)
				}
			}
			// Every file trains: the features are all numeric.
			f, err := frame.FromRecords(s, recs, frame.Options{Label: e.Response})
			if err != nil {
				t.Fatal(err)
			}
			if f.NRows != e.Rows || f.P() != e.NFeatures {
				t.Errorf("frame %dx%d, want %dx%d", f.NRows, f.P(), e.Rows, e.NFeatures)
			}
		})
	}
	if seen < 30 {
		t.Errorf("only %d data files in the manifest", seen)
	}
}

// column returns column j of all records as float64 (NaN for null) or, for
// strings, as the string values ("<null>" for null).
func flatten(t *testing.T, recs []arrow.Record, j int) ([]float64, []string) {
	t.Helper()
	var nums []float64
	var strs []string
	for _, r := range recs {
		switch c := r.Column(j).(type) {
		case *array.Float64:
			for i := 0; i < c.Len(); i++ {
				if c.IsNull(i) {
					nums = append(nums, math.NaN())
				} else {
					nums = append(nums, c.Value(i))
				}
			}
		case *array.Int64:
			for i := 0; i < c.Len(); i++ {
				if c.IsNull(i) {
					nums = append(nums, math.NaN())
				} else {
					nums = append(nums, float64(c.Value(i)))
				}
			}
		case *array.String:
			for i := 0; i < c.Len(); i++ {
				if c.IsNull(i) {
					strs = append(strs, "<null>")
				} else {
					strs = append(strs, c.Value(i))
				}
			}
		default:
			t.Fatalf("unexpected column type %s", c.DataType())
		}
	}
	return nums, strs
}

// sameData compares two readings of a data set cell by cell, numbers as
// float64 (so an Int64 CSV column equals a DOUBLE Parquet one).
func sameData(t *testing.T, aName string, as *arrow.Schema, ar []arrow.Record, bName string, bs *arrow.Schema, br []arrow.Record) {
	t.Helper()
	if !slices.Equal(fieldNames(as), fieldNames(bs)) {
		t.Fatalf("%s and %s have different columns", aName, bName)
	}
	for j := 0; j < as.NumFields(); j++ {
		an, astr := flatten(t, ar, j)
		bn, bstr := flatten(t, br, j)
		if !slices.Equal(astr, bstr) {
			t.Fatalf("column %s: strings differ between %s and %s", as.Field(j).Name, aName, bName)
		}
		if len(an) != len(bn) {
			t.Fatalf("column %s: %d vs %d values", as.Field(j).Name, len(an), len(bn))
		}
		for i := range an {
			if an[i] != bn[i] && !(math.IsNaN(an[i]) && math.IsNaN(bn[i])) {
				t.Fatalf("column %s row %d: %s has %v, %s has %v", as.Field(j).Name, i, aName, an[i], bName, bn[i])
			}
		}
	}
}

func TestDigitsThreeFormatsAgree(t *testing.T) {
	dir := dataDir(t)
	mem := checked(t)
	as, ar := readAll(t, mem, filepath.Join(dir, "digits.arrows"))
	ps, pr := readAll(t, mem, filepath.Join(dir, "digits.parquet"))
	cs, cr := readAll(t, mem, filepath.Join(dir, "digits.csv.gz"))
	if !as.Equal(ps) {
		t.Errorf("arrow and parquet schemas differ:\n%v\n%v", as, ps)
	}
	sameData(t, "digits.arrows", as, ar, "digits.parquet", ps, pr)
	sameData(t, "digits.parquet", ps, pr, "digits.csv.gz", cs, cr)
}

func TestCSVMatchesParquet(t *testing.T) {
	dir := dataDir(t)
	pairs := map[string][]string{}
	for _, e := range manifest(t) {
		if e.Format != "negative-test" {
			pairs[e.Dataset] = append(pairs[e.Dataset], e.File)
		}
	}
	for ds, fs := range pairs {
		t.Run(ds, func(t *testing.T) {
			mem := checked(t)
			slices.Sort(fs)
			s0, r0 := readAll(t, mem, filepath.Join(dir, fs[0]))
			for _, f := range fs[1:] {
				s1, r1 := readAll(t, mem, filepath.Join(dir, f))
				sameData(t, fs[0], s0, r0, f, s1, r1)
			}
		})
	}
}

func TestBadTruncatedParquet(t *testing.T) {
	_, _, err := ReadPaths([]string{filepath.Join(dataDir(t), "bad_truncated.parquet")}, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "bad_truncated.parquet") || !strings.Contains(err.Error(), "not a complete Parquet file") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadNonNumericCSV(t *testing.T) {
	mem := checked(t)
	_, _, err := ReadPaths([]string{filepath.Join(dataDir(t), "bad_non_numeric.csv.gz")}, ReadOptions{Mem: mem})
	want := `bad_non_numeric.csv.gz: line 4, column petal_length_cm: cannot parse "1.3cm" as a number`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %s", err, want)
	}
}

func TestBadStringFeatureParquet(t *testing.T) {
	mem := checked(t)
	s, recs := readAll(t, mem, filepath.Join(dataDir(t), "bad_string_feature.parquet"))
	if got := s.Field(2); got.Name != "petal_length_cm" || got.Type.ID() != arrow.STRING {
		t.Fatalf("column 2 is %v, want petal_length_cm utf8", got)
	}
	_, err := frame.FromRecords(s, recs, frame.Options{Label: "label"})
	if err == nil || !strings.Contains(err.Error(), "column petal_length_cm is utf8, numeric expected") {
		t.Fatalf("err = %v", err)
	}
	_, err = frame.FeaturesFromRecords(s, recs, []string{"sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"}, nil)
	if err == nil || !strings.Contains(err.Error(), "petal_length_cm") {
		t.Fatalf("scoring err = %v", err)
	}
}

func TestBadSchemaArrows(t *testing.T) {
	dir := dataDir(t)
	mem := checked(t)
	bs, br := readAll(t, mem, filepath.Join(dir, "bad_schema.arrows"))
	if len(br) != 2 || br[0].NumRows() != 256 || bs.NumFields() != 64 {
		t.Fatalf("bad_schema.arrows: %d records, %d fields", len(br), bs.NumFields())
	}
	ds, _ := readAll(t, mem, filepath.Join(dir, "digits.arrows"))
	err := CheckSchema(ds, bs)
	if err == nil || !strings.Contains(err.Error(), "missing field pixel_7_7") || !strings.Contains(err.Error(), "field label is utf8, want int64") {
		t.Fatalf("CheckSchema err = %v", err)
	}
	if err := CheckSchema(ds, ds); err != nil {
		t.Fatal(err)
	}
	// Reading both together fails, naming the differing file and field.
	_, _, err = ReadPaths([]string{filepath.Join(dir, "digits.arrows"), filepath.Join(dir, "bad_schema.arrows")}, ReadOptions{Mem: mem})
	if err == nil || !strings.Contains(err.Error(), "bad_schema.arrows") || !strings.Contains(err.Error(), "pixel_7_7") {
		t.Fatalf("ReadPaths err = %v", err)
	}
	// A model trained on digits cannot score it.
	_, err = frame.FeaturesFromRecords(bs, br, fieldNames(ds)[:64], nil)
	if err == nil || !strings.Contains(err.Error(), "pixel_7_7") {
		t.Fatalf("scoring err = %v", err)
	}
}

func TestProjection(t *testing.T) {
	dir := dataDir(t)
	for _, f := range []string{"iris.parquet", "iris.csv.gz", "digits.arrows", "letter_recognition_zstd_rg1000.parquet"} {
		t.Run(f, func(t *testing.T) {
			mem := checked(t)
			full, fr := readAll(t, mem, filepath.Join(dir, f))
			cols := []string{full.Field(full.NumFields() - 1).Name, full.Field(1).Name}
			s, recs, err := ReadPaths([]string{filepath.Join(dir, f)}, ReadOptions{Columns: cols, Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer release(recs)
			if !slices.Equal(fieldNames(s), cols) {
				t.Fatalf("columns %v, want %v", fieldNames(s), cols)
			}
			if len(recs) != len(fr) {
				t.Fatalf("%d records, want %d", len(recs), len(fr))
			}
			for i := range recs {
				if !array.Equal(recs[i].Column(0), fr[i].Column(full.NumFields()-1)) || !array.Equal(recs[i].Column(1), fr[i].Column(1)) {
					t.Fatalf("record %d: projected columns differ", i)
				}
			}
			_, _, err = ReadPaths([]string{filepath.Join(dir, f)}, ReadOptions{Columns: []string{"nope"}, Mem: mem})
			if err == nil || !strings.Contains(err.Error(), `column "nope" not found`) || !strings.Contains(err.Error(), f) {
				t.Fatalf("missing column err = %v", err)
			}
		})
	}
	if _, _, err := ReadPaths([]string{filepath.Join(dir, "iris.csv.gz")}, ReadOptions{Columns: []string{"label", "label"}}); err == nil {
		t.Error("duplicate projection accepted")
	}
}

func TestListFilesAndDirectories(t *testing.T) {
	mem := checked(t)
	dir := t.TempDir()
	_, recs := readAll(t, mem, filepath.Join(dataDir(t), "iris.parquet"))
	s := recs[0].Schema()
	half := []arrow.Record{recs[0].NewSlice(0, 75)}
	rest := []arrow.Record{recs[0].NewSlice(75, 150)}
	defer release(half)
	defer release(rest)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "b", "c"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, ".hidden"), 0o755))
	must(WriteFile(filepath.Join(dir, "b", "c", "2.csv.gz"), s, rest, WriteOptions{}))
	must(WriteFile(filepath.Join(dir, "a.parquet"), s, half, WriteOptions{}))
	must(WriteFile(filepath.Join(dir, ".hidden", "x.parquet"), s, half, WriteOptions{}))
	must(WriteFile(filepath.Join(dir, "_tmp.parquet"), s, half, WriteOptions{}))
	must(os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not data"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644))

	got, err := ListFiles([]string{dir})
	must(err)
	want := []string{filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b", "c", "2.csv.gz")}
	if !slices.Equal(got, want) {
		t.Fatalf("ListFiles = %v, want %v", got, want)
	}
	// Parquet DOUBLE columns and CSV columns (some integral-looking in
	// CSV) unify to the Parquet types; all 150 rows come back in order.
	s2, r2, err := ReadPaths([]string{dir}, ReadOptions{Mem: mem})
	must(err)
	defer release(r2)
	if s2.NumFields() != 5 {
		t.Fatalf("schema %v", s2)
	}
	sameData(t, "iris.parquet", s, recs, dir, s2, r2)

	if _, err := ListFiles([]string{filepath.Join(dir, ".hidden", "nothing")}); err == nil {
		t.Error("missing path accepted")
	}
	empty := t.TempDir()
	if _, err := ListFiles([]string{empty}); err == nil || !strings.Contains(err.Error(), "no Parquet, Arrow IPC or CSV files") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := ListFiles(nil); err == nil {
		t.Error("no paths accepted")
	}

	// A file with another schema is named in the error.
	other := filepath.Join(dir, "b", "z.parquet")
	_, wr := readAll(t, mem, filepath.Join(dataDir(t), "wine.parquet"))
	must(WriteFile(other, wr[0].Schema(), wr, WriteOptions{}))
	_, _, err = ReadPaths([]string{dir}, ReadOptions{Mem: mem})
	if err == nil || !strings.Contains(err.Error(), "z.parquet: schema differs from") || !strings.Contains(err.Error(), "missing field") {
		t.Errorf("mismatch err = %v", err)
	}
}

func TestDetectFormat(t *testing.T) {
	dir := dataDir(t)
	tmp := t.TempDir()
	cases := map[string]Format{
		filepath.Join(dir, "iris.parquet"):      FormatParquet,
		filepath.Join(dir, "digits.arrows"):     FormatIPCStream,
		filepath.Join(dir, "iris.csv.gz"):       FormatCSV,
		filepath.Join(dir, "bad_schema.arrows"): FormatIPCStream,
	}
	// An IPC file named .arrows, a stream named .arrow, and files without
	// extension are all detected by their magic bytes.
	mem := checked(t)
	s, recs := readAll(t, mem, filepath.Join(dir, "iris.parquet"))
	for name, ft := range map[string]Format{"f.arrow": FormatIPCFile, "s.arrows": FormatIPCStream, "p.parquet": FormatParquet, "c.csv.gz": FormatCSV} {
		p := filepath.Join(tmp, name)
		if err := WriteFile(p, s, recs, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		noext := filepath.Join(tmp, "noext-"+strings.ReplaceAll(name, ".", "-"))
		b, _ := os.ReadFile(p)
		os.WriteFile(noext, b, 0o644)
		cases[p] = ft
		cases[noext] = ft
		swapped := map[Format]string{FormatIPCFile: "swapped.arrows", FormatIPCStream: "swapped.arrow"}[ft]
		if swapped != "" {
			os.WriteFile(filepath.Join(tmp, swapped), b, 0o644)
			cases[filepath.Join(tmp, swapped)] = ft
		}
	}
	for p, want := range cases {
		got, err := DetectFormat(p)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", p, got, err, want)
		}
		if strings.Contains(p, "noext") || strings.Contains(p, "swapped") {
			_, r, err := ReadFile(p, ReadOptions{Mem: mem})
			if err != nil {
				t.Errorf("%s: %v", p, err)
			}
			release(r)
		}
	}
	junk := filepath.Join(tmp, "junk")
	os.WriteFile(junk, []byte("hello"), 0o644)
	if _, _, err := ReadFile(junk, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "unrecognised file format") {
		t.Errorf("junk: %v", err)
	}
}

// TestReadIPCFreesOnError: a stream that fails to decode leaves nothing
// allocated, including what arrow-go v17's reader itself loses — the
// buffer of a first message that is not a schema (NewReader returns its
// error without releasing it) — and the records of a stream cut short.
func TestReadIPCFreesOnError(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(dataDir(t), "digits.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	// A stream message: continuation marker 0xFFFFFFFF, metadata length,
	// metadata (the schema message has no body).
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		t.Fatalf("digits.arrows does not start with a stream message")
	}
	schemaLen := 8 + int(binary.LittleEndian.Uint32(b[4:]))
	for name, in := range map[string][]byte{
		"record batch first": b[schemaLen:],
		"cut in a batch":     b[:schemaLen+(len(b)-schemaLen)/2],
	} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s, recs, err := ReadIPCBytes("m.arrows", in, ReadOptions{Mem: mem})
			if err == nil || s != nil || recs != nil {
				t.Fatalf("got schema %v, %d records, err %v; want an error alone", s, len(recs), err)
			}
			if !strings.Contains(err.Error(), "m.arrows") {
				t.Errorf("error %q does not name the input", err)
			}
			mem.AssertSize(t, 0)
		})
	}
}

// TestReadIPCDuplicateColumnNames: as in CSV and Parquet, an Arrow IPC
// input with two columns of one name is an error naming the file and the
// column (a frame could not tell the features apart).
func TestReadIPCDuplicateColumnNames(t *testing.T) {
	mem := checked(t)
	b := array.NewFloat64Builder(mem)
	b.AppendValues([]float64{1, 2}, nil)
	col := b.NewArray()
	b.Release()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Float64}, {Name: "a", Type: arrow.PrimitiveTypes.Float64}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{col, col}, 2)
	defer rec.Release()
	for _, name := range []string{"dup.arrows", "dup.arrow"} {
		path := filepath.Join(t.TempDir(), name)
		if err := WriteFile(path, schema, []arrow.Record{rec}, WriteOptions{Mem: mem}); err != nil {
			t.Fatal(err)
		}
		_, _, err := ReadPaths([]string{path}, ReadOptions{Mem: mem})
		if err == nil || !strings.Contains(err.Error(), name+": duplicate column name a (columns 1 and 2)") {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
}

// TestReadIPCNullCountWithoutBitmap: an IPC field node that states -1
// nulls (arrow-go: "unknown, count them") for a column with no validity
// bitmap made arrow-go panic later, in whatever read the column — inside a
// worker goroutine, ending the process. The reader now refuses it naming
// the column, as it does a null count above the rows.
func TestReadIPCNullCountWithoutBitmap(t *testing.T) {
	mem := checked(t)
	b := array.NewFloat64Builder(mem)
	b.AppendValues([]float64{1, 2, 3, 4, 5}, nil)
	col := b.NewArray()
	b.Release()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x1", Type: arrow.PrimitiveTypes.Float64}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{col}, 5)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "x.arrows")
	if err := WriteFile(path, schema, []arrow.Record{rec}, WriteOptions{Mem: mem}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	node := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 5), 0) // FieldNode{length 5, null_count 0}
	at := bytes.Index(good, node)
	if at < 0 {
		t.Fatal("no field node (5 rows, 0 nulls) in the stream")
	}
	for _, nulls := range []int64{-1, 6} {
		bad := bytes.Clone(good)
		binary.LittleEndian.PutUint64(bad[at+8:], uint64(nulls))
		s, recs, err := ReadIPCBytes("m.arrows", bad, ReadOptions{Mem: mem})
		if err == nil || s != nil || recs != nil || !strings.Contains(err.Error(), "m.arrows: record batch 0: column x1:") {
			t.Errorf("null count %d: schema %v, %d records, err %v; want an error naming the column", nulls, s, len(recs), err)
		}
	}
}

// TestReadIPCTrailingBytes: two streams in one input (a message of two
// concatenated Arrow streams, say) gave the first stream's rows alone,
// silently; bytes after the end-of-stream marker are now an error.
func TestReadIPCTrailingBytes(t *testing.T) {
	mem := checked(t)
	one, err := os.ReadFile(filepath.Join(dataDir(t), "digits.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	if _, recs, err := ReadIPCBytes("one.arrows", one, ReadOptions{Mem: mem}); err != nil {
		t.Fatal(err)
	} else {
		release(recs)
	}
	for name, in := range map[string][]byte{
		"two streams": append(bytes.Clone(one), one...),
		"garbage":     append(bytes.Clone(one), "garbage"...),
	} {
		s, recs, err := ReadIPCBytes("m.arrows", in, ReadOptions{Mem: mem})
		if err == nil || s != nil || recs != nil || !strings.Contains(err.Error(), "bytes after the end-of-stream marker") {
			t.Errorf("%s: %d records, err %v", name, len(recs), err)
		}
	}
}

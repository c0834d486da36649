package files

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

func openShared(t *testing.T, name string) (*ParquetFile, error) {
	t.Helper()
	p := filepath.Join(dataDir(t), name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return OpenParquet(p, bytes.NewReader(b), int64(len(b)))
}

// TestParquetRowGroups decodes the DuckDB 20-row-group zstd file one row
// group at a time, projected, and compares each with ReadFile's record.
func TestParquetRowGroups(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pf, err := openShared(t, "letter_recognition_zstd_rg1000.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRowGroups() != 20 || pf.NumRows() != 20000 || pf.RowGroupRows(7) != 1000 {
		t.Fatalf("%d row groups, %d rows", pf.NumRowGroups(), pf.NumRows())
	}
	if names := pf.ColumnNames(); len(names) != 17 || names[16] != "label" {
		t.Fatalf("columns %v", names)
	}
	if dt, err := pf.ColumnType("label"); err != nil || dt.ID() != arrow.STRING {
		t.Fatalf("label type %v %v", dt, err)
	}
	cols := []string{"label", "onpix", "x.box"}
	_, ref, err := ReadFile(filepath.Join(dataDir(t), "letter_recognition_zstd_rg1000.parquet"), ReadOptions{Columns: cols, Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer release(ref)
	for g := 0; g < pf.NumRowGroups(); g++ {
		rec, err := pf.ReadRowGroup(g, cols, mem)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(rec, ref[g]) {
			t.Fatalf("row group %d differs from ReadFile", g)
		}
		// The estimate covers at least the decoded buffers.
		if est := pf.RowGroupBytes(g, cols); est < 2*1000*8 {
			t.Fatalf("row group %d: estimate %d bytes", g, est)
		}
		rec.Release()
	}
	if _, err := pf.ReadRowGroup(20, cols, mem); err == nil {
		t.Fatal("row group 20 of 20: no error")
	}
	if _, err := pf.ReadRowGroup(0, []string{"nope"}, mem); err == nil || !strings.Contains(err.Error(), `column "nope" not found`) {
		t.Fatalf("unknown column: %v", err)
	}
	if _, err := pf.ReadRowGroup(0, []string{"label", "label"}, mem); err == nil {
		t.Fatal("a column projected twice: no error")
	}
}

func TestOpenParquetBadFiles(t *testing.T) {
	if _, err := openShared(t, "bad_truncated.parquet"); err == nil || !strings.Contains(err.Error(), "not a complete Parquet file") {
		t.Fatalf("truncated: %v", err)
	}
	pf, err := openShared(t, "bad_string_feature.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if dt, err := pf.ColumnType("petal_length_cm"); err != nil || dt.ID() != arrow.STRING {
		t.Fatalf("petal_length_cm: %v %v", dt, err)
	}
	if _, err := OpenParquet("x", bytes.NewReader([]byte("PAR1")), 4); err == nil {
		t.Fatal("4 bytes: no error")
	}
}

// TestParquetWriterRowGroups: a flush after each record gives one row
// group per record, and the values read back.
func TestParquetWriterRowGroups(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := allTypes(t, mem)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := NewParquetWriter(&buf, rec.Schema(), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts := []arrow.Record{rec.NewSlice(0, 2), rec.NewSlice(2, 3), rec.NewSlice(3, rec.NumRows())}
	for _, p := range parts {
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err == nil {
		t.Fatal("write after close: no error")
	}
	pf, err := OpenParquet("mem", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRowGroups() != 3 || pf.RowGroupRows(1) != 1 {
		t.Fatalf("%d row groups", pf.NumRowGroups())
	}
	// Same bytes for the same records and flush points.
	var again bytes.Buffer
	w2, _ := NewParquetWriter(&again, rec.Schema(), WriteOptions{})
	for _, r := range [][2]int64{{0, 2}, {2, 3}, {3, rec.NumRows()}} {
		p := rec.NewSlice(r[0], r[1])
		w2.Write(p)
		w2.Flush()
		p.Release()
	}
	w2.Close()
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("the writer is not deterministic")
	}
}

// TestParquetLZ4NeverWrongValues: an LZ4_RAW-compressed file (here written
// by forestd's own writer, --compression lz4) is read back with exactly
// its values or refused with an error naming LZ4_RAW and the column —
// never decoded into other values. parquet-go v0.32.0 returned garbage
// for such pages without an error (its issue #608).
func TestParquetLZ4NeverWrongValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 30000
	ib := array.NewInt64Builder(mem)
	fb := array.NewFloat64Builder(mem)
	for i := 0; i < n; i++ {
		ib.Append(int64(i))
		fb.Append(float64(i) / 3)
	}
	ia, fa := ib.NewArray(), fb.NewArray()
	ib.Release()
	fb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "row", Type: arrow.PrimitiveTypes.Int64}, {Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{ia, fa}, n)
	ia.Release()
	fa.Release()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "lz4.parquet")
	if err := WriteFile(p, schema, []arrow.Record{rec}, WriteOptions{Compression: "lz4"}); err != nil {
		t.Fatal(err)
	}
	check := func(how string, recs []arrow.Record, err error) {
		t.Helper()
		defer release(recs)
		if err != nil {
			if !strings.Contains(err.Error(), "LZ4_RAW") || !strings.Contains(err.Error(), "column row") || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: the error should name the file, the column and LZ4_RAW: %v", how, err)
			}
			return
		}
		k := 0
		for _, r := range recs {
			rows, fs := r.Column(0).(*array.Int64), r.Column(1).(*array.Float64)
			for i := 0; i < rows.Len(); i, k = i+1, k+1 {
				if rows.Value(i) != int64(k) || fs.Value(i) != float64(k)/3 {
					t.Fatalf("%s: row %d reads back as %d, %v", how, k, rows.Value(i), fs.Value(i))
				}
			}
		}
		if k != n {
			t.Fatalf("%s: %d rows, want %d", how, k, n)
		}
	}
	_, recs, err := ReadFile(p, ReadOptions{Mem: mem})
	check("ReadFile", recs, err)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := OpenParquet(p, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pf.ReadRowGroup(0, nil, mem)
	var rs []arrow.Record
	if r != nil {
		rs = []arrow.Record{r}
	}
	check("ReadRowGroup", rs, err)
}

// TestParquetSchemaMetadata: a schema's metadata is written as the file's
// key-value metadata and read back by both readers (ReadFile and a
// ParquetFile's row groups), so a prediction record's probability note or
// a dependence report's procedure survives Parquet; Arrow's own
// ARROW:schema key, which other writers add, is left out.
func TestParquetSchemaMetadata(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	md := arrow.NewMetadata([]string{"forestd.schema", "forestd.probs_note", arrowSchemaKey}, []string{"predictions/v1", "top5 of 10000 classes", "/////w=="})
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, &md)
	b := array.NewFloat64Builder(mem)
	b.AppendValues([]float64{1, 2, 3}, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecord(schema, []arrow.Array{col}, 3)
	col.Release()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "p.parquet")
	if err := WriteFile(path, schema, []arrow.Record{rec}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(how string, got arrow.Metadata) {
		t.Helper()
		want := map[string]string{"forestd.schema": "predictions/v1", "forestd.probs_note": "top5 of 10000 classes"}
		if got.Len() != len(want) {
			t.Fatalf("%s: metadata %v, want %v", how, got, want)
		}
		for k, v := range want {
			if i := got.FindKey(k); i < 0 || got.Values()[i] != v {
				t.Fatalf("%s: metadata %v, want %s=%q", how, got, k, v)
			}
		}
	}
	rs, recs, err := ReadFile(path, ReadOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	check("ReadFile schema", rs.Metadata())
	for _, r := range recs {
		check("ReadFile record", r.Schema().Metadata())
		r.Release()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := OpenParquet(path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := pf.ReadRowGroup(0, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	check("ReadRowGroup", g.Schema().Metadata())
	g.Release()
}

// TestParquetArrowSchemaKeyDropped: the ARROW:schema key that pyarrow and
// arrow-go write (an encoded IPC schema of their own columns) is not
// carried into the schema forestd reads; the file's other keys are.
func TestParquetArrowSchemaKeyDropped(t *testing.T) {
	type row struct{ X float64 }
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.KeyValueMetadata(arrowSchemaKey, "/////w=="), parquet.KeyValueMetadata("owner", "lake team"))
	if _, err := w.Write([]row{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := OpenParquet("mem", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := pf.ReadRowGroup(0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	md := rec.Schema().Metadata()
	if md.Len() != 1 || md.Keys()[0] != "owner" || md.Values()[0] != "lake team" {
		t.Fatalf("metadata %v, want only owner=lake team", md)
	}
}

package ipcread

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// encode writes one record of two columns as an IPC stream, or file.
func encode(t *testing.T, file bool) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Float64Builder).AppendValues([]float64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "bb", "ccc"}, nil)
	rec := b.NewRecord()
	defer rec.Release()
	var buf bytes.Buffer
	if file {
		fh, err := os.Create(filepath.Join(t.TempDir(), "m.arrow"))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		w, err := ipc.NewFileWriter(fh, ipc.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(fh.Name())
		if err != nil {
			t.Fatal(err)
		}
		return data
	} else {
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestReadBytes: both formats read back, and every corruption of a
// byte of the input (its bits flipped) — the flatbuffer metadata, the lengths, the buffers —
// is an error or a valid record, never a panic, and leaves nothing
// allocated.
func TestReadBytes(t *testing.T) {
	for _, file := range []bool{false, true} {
		data := encode(t, file)
		if IsFile(data) != file {
			t.Fatalf("IsFile %v for file %v", IsFile(data), file)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		schema, recs, err := ReadBytes("m", data, mem)
		if err != nil {
			t.Fatal(err)
		}
		if schema.NumFields() != 2 || len(recs) != 1 || recs[0].NumRows() != 3 || recs[0].Column(1).ValueStr(2) != "ccc" {
			t.Fatalf("file %v: %v, %d records", file, schema, len(recs))
		}
		release(recs)
		mem.AssertSize(t, 0)
		fails := 0
		for i := range data {
			bad := bytes.Clone(data)
			bad[i] ^= 0xff
			_, recs, err := ReadBytes("m", bad, mem)
			if err != nil {
				fails++
				if !strings.HasPrefix(err.Error(), "m: ") || recs != nil {
					t.Fatalf("byte %d flipped: error %q with %d records", i, err, len(recs))
				}
			}
			release(recs)
			mem.AssertSize(t, 0)
		}
		if fails == 0 {
			t.Fatalf("file %v: no corruption was an error", file)
		}
	}
}

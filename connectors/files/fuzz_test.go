package files

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/ipcread"
)

// The fuzz targets feed arbitrary bytes to each reader: it must return an
// error or records that are structurally valid and that downstream code
// (cell formatting, frame building) can consume without panicking, and it
// must not leak allocator memory either way.

func addFileSeeds(f *testing.F, names ...string) {
	dir := dataDir(f)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func gunzip(f *testing.F, name string) []byte {
	b, err := os.ReadFile(filepath.Join(dataDir(f), name))
	if err != nil {
		f.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		f.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// written returns allTypes written in the given format.
func written(f testing.TB, name string) []byte {
	mem := memory.NewGoAllocator()
	rec := allTypes(f, mem)
	defer rec.Release()
	p := filepath.Join(f.TempDir(), name)
	if err := WriteFile(p, rec.Schema(), []arrow.Record{rec, rec.NewSlice(1, 4)}, WriteOptions{}); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// consume checks and uses what a reader returned, then releases it.
// Allocator leaks are checked after every read, good or failed.
func consume(t *testing.T, mem *memory.CheckedAllocator, s *arrow.Schema, recs []arrow.Record, err error) {
	t.Helper()
	if err != nil {
		if recs != nil {
			t.Fatalf("error %v with %d records", err, len(recs))
		}
		mem.AssertSize(t, 0)
		return
	}
	defer mem.AssertSize(t, 0)
	defer release(recs)
	var exclude []string
	for _, fl := range s.Fields() {
		switch fl.Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.DATE32, arrow.TIMESTAMP:
			exclude = append(exclude, fl.Name)
		}
	}
	for i, r := range recs {
		if err := ipcread.ValidateRecord(s, r); err != nil {
			t.Fatalf("record %d invalid: %v", i, err)
		}
		for j := 0; j < int(r.NumCols()); j++ {
			cells := make([]string, r.Column(j).Len())
			_ = formatColumn(r.Column(j), cells)
		}
	}
	if len(exclude) < s.NumFields() {
		_, _ = frame.FromRecords(s, recs, frame.Options{Exclude: exclude})
	}
}

func FuzzReadCSV(f *testing.F) {
	addFileSeeds(f, "iris.csv.gz", "bad_non_numeric.csv.gz", "breast_cancer_mlbench.csv.gz")
	f.Add(gunzip(f, "iris.csv.gz"))
	f.Add(gunzip(f, "bad_non_numeric.csv.gz"))
	f.Add(gunzip(f, "breast_cancer_mlbench.csv.gz"))
	f.Add(written(f, "x.csv"))
	f.Add([]byte("a,b\n1,\"x\"\"y\"\nNA,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := readCSV("fuzz.csv", bytes.NewReader(data), nil, mem)
		consume(t, mem, s, recs, err)
	})
}

// fuzzReadBudget bounds what a fuzzed Parquet read may decode; the
// invariant is a result or an input error within it, never a fatal
// error (run the targets in a memory-limited process: ulimit -v).
const fuzzReadBudget = 256 << 20

func FuzzReadParquet(f *testing.F) {
	addFileSeeds(f, "iris.parquet", "bad_string_feature.parquet", "bad_truncated.parquet", "breast_cancer_mlbench.parquet", "wine.parquet")
	f.Add(written(f, "x.parquet"))
	for _, b := range parquetBombs() { // testdata/parquet_bombs
		f.Add(b)
	}
	for _, b := range pageBombs() {
		f.Add(b)
	}
	f.Add(hugeRowGroup())
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := readParquet("fuzz.parquet", bytes.NewReader(data), int64(len(data)), nil, mem, newReadBudget(fuzzReadBudget))
		consume(t, mem, s, recs, err)
	})
}

// FuzzParquetFooter mutates a footer alone (framed as a file by
// parquetFrame), which FuzzReadParquet's whole-file mutations rarely
// reach intact: real footers, the bombs' footers and a 16 GiB row-group
// claim as seeds.
func FuzzParquetFooter(f *testing.F) {
	footer := func(b []byte) []byte {
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		return b[len(b)-8-n : len(b)-8]
	}
	f.Add(footer(written(f, "x.parquet")))
	for _, n := range []string{"iris.parquet", "letter_recognition_zstd_rg1000.parquet"} {
		b, err := os.ReadFile(filepath.Join(dataDir(f), n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(footer(b))
	}
	for _, b := range parquetBombs() {
		f.Add(footer(b))
	}
	f.Add(footer(hugeRowGroup()))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := parquetFrame(data)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := readParquet("fuzz.parquet", bytes.NewReader(b), int64(len(b)), nil, mem, newReadBudget(fuzzReadBudget))
		consume(t, mem, s, recs, err)
	})
}

func FuzzReadIPC(f *testing.F) {
	addFileSeeds(f, "bad_schema.arrows")
	f.Add(written(f, "x.arrows"))
	f.Add(written(f, "x.arrow"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := ReadIPCBytes("fuzz.arrows", data, ReadOptions{Mem: mem})
		consume(t, mem, s, recs, err)
	})
}

// TestIPCByteFlips: every single-byte corruption of a real Arrow IPC
// stream (flipping all bits of one byte) is read into a result or an
// error, never a panic, and what is read also goes through frame without
// one; nothing stays allocated. Flipping the bytes of a stream found the
// null-count crash that fuzzing had not reached (a field node's null
// count of -1 with no validity bitmap).
func TestIPCByteFlips(t *testing.T) {
	good := written(t, "x.arrows")
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0xFF
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s, recs, err := ReadIPCBytes("flip.arrows", bad, ReadOptions{Mem: mem})
		consume(t, mem, s, recs, err)
		if t.Failed() {
			t.Fatalf("byte %d of %d flipped", i, len(good))
		}
	}
}

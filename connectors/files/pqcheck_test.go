package files

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go/format"
)

var updateBombs = flag.Bool("update-bombs", false, "rewrite the Parquet footer bombs in testdata/parquet_bombs")

// Footer bombs: Parquet files whose FileMetaData (Thrift compact
// protocol) claims far more than it holds. They are built here, byte by
// byte, and kept in testdata/parquet_bombs (README.md there); go test
// -run TestParquetBombFiles -update-bombs rewrites them.

// tc builds Thrift compact-protocol bytes.
type tc struct{ b []byte }

func (e *tc) raw(b ...byte) *tc { e.b = append(e.b, b...); return e }
func (e *tc) uv(v uint64) *tc   { e.b = binary.AppendUvarint(e.b, v); return e }
func (e *tc) field(delta, typ byte) *tc {
	return e.raw(delta<<4 | typ)
}
func (e *tc) i32(delta byte, v int32) *tc {
	return e.field(delta, tcI32).uv(uint64(uint32(v<<1) ^ uint32(v>>31)))
}
func (e *tc) i64(delta byte, v int64) *tc {
	return e.field(delta, tcI64).uv(uint64(v<<1) ^ uint64(v>>63))
}
func (e *tc) str(delta byte, s string) *tc {
	return e.field(delta, tcBinary).uv(uint64(len(s))).raw([]byte(s)...)
}

// list writes a list header of n elements of type t.
func (e *tc) list(delta byte, n uint64, t byte) *tc {
	e.field(delta, tcList)
	if n < 15 {
		return e.raw(byte(n)<<4 | t)
	}
	return e.raw(0xF0 | t).uv(n)
}
func (e *tc) stop() *tc { return e.raw(0) }

const claim = 1<<31 - 1

// schemaOf writes FileMetaData fields 1..3: version 1, a schema of a
// root and one REQUIRED DOUBLE column x, num_rows 0.
func schemaOf(e *tc) *tc {
	e.i32(1, 1).list(1, 2, tcStruct)
	e.str(4, "schema").i32(1, 1).stop()
	e.i32(1, 5).i32(2, 0).str(1, "x").stop()
	return e.i64(1, 0)
}

func parquetFrame(footer []byte) []byte {
	out := append([]byte("PAR1"), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// parquetBombs returns the bomb files by name.
func parquetBombs() map[string][]byte {
	bombs := map[string][]byte{}
	// 25 bytes: the schema list claims 2^31-1 elements and holds one.
	e := (&tc{}).i32(1, 1).list(1, claim, tcStruct).str(4, "x").stop()
	bombs["schema_list.parquet"] = parquetFrame(e.b)

	e = schemaOf(&tc{}).list(1, claim, tcStruct).stop()
	bombs["row_group_list.parquet"] = parquetFrame(e.b)

	e = schemaOf(&tc{}).list(1, 1, tcStruct).list(1, claim, tcStruct).stop().stop()
	bombs["column_list.parquet"] = parquetFrame(e.b)

	e = schemaOf(&tc{}).list(1, 0, tcStruct).list(1, claim, tcStruct).str(1, "k").stop().stop()
	bombs["key_value_list.parquet"] = parquetFrame(e.b)

	e = schemaOf(&tc{}).list(1, 0, tcStruct).str(2, "parquet-mr").stop()
	e.b = e.b[:len(e.b)-len("parquet-mr")-2] // created_by: claim 2^31-1 bytes, hold 10
	e.uv(claim).raw([]byte("parquet-mr")...).stop()
	bombs["string_length.parquet"] = parquetFrame(e.b)

	// an unknown field (id 100) of nested structs, 40 deep
	e = schemaOf(&tc{}).list(1, 0, tcStruct).raw(tcStruct).uv(200)
	for range 40 {
		e.field(1, tcStruct)
	}
	for range 42 {
		e.stop()
	}
	bombs["deep_nesting.parquet"] = parquetFrame(e.b)
	return bombs
}

func bombDir() string { return filepath.Join("testdata", "parquet_bombs") }

// TestParquetBombFiles: the files in testdata/parquet_bombs are what
// parquetBombs makes (rewritten with -update-bombs), and the 25-byte one
// is 25 bytes.
func TestParquetBombFiles(t *testing.T) {
	bombs := parquetBombs()
	if n := len(bombs["schema_list.parquet"]); n != 25 {
		t.Fatalf("schema_list.parquet has %d bytes, want 25", n)
	}
	maps.Copy(bombs, pageBombs())
	for name, want := range bombs {
		p := filepath.Join(bombDir(), name)
		if *updateBombs {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (go test -run TestParquetBombFiles -update-bombs makes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what parquetBombs makes", p)
		}
	}
}

// heapGrowth runs f and returns how much the Go heap grew at most (the
// largest HeapAlloc seen after f, less the one before); allocations that
// were already collected are not seen, but a footer bomb's slice would be
// live while parquet-go decodes into it and fatal long before.
func heapGrowth(f func()) (alloc uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bombCause is what the error for each bomb says.
var bombCause = map[string]string{
	"schema_list.parquet":    "field schema: list of 2147483647 elements",
	"row_group_list.parquet": "field row_groups: list of 2147483647 elements",
	"column_list.parquet":    "field row_groups: list of 2147483647 elements", // a row group's columns
	"key_value_list.parquet": "field key_value_metadata: list of 2147483647 elements",
	"string_length.parquet":  "field created_by: string of 2147483647 bytes",
	"deep_nesting.parquet":   "field 100: nested deeper than 32",
}

// TestParquetFooterBombs: each bomb is refused by every way a Parquet
// file is opened (ReadFile, ReadPaths, OpenParquet) with an error that
// names the file and wraps ErrCorruptParquet, allocating less than 1 MiB
// in all. Without the footer check the 25-byte file aborts the process
// (fatal error: runtime: out of memory).
func TestParquetFooterBombs(t *testing.T) {
	names := make([]string, 0)
	for n := range parquetBombs() {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(bombDir(), name)
		t.Run(name, func(t *testing.T) {
			check := refusal(t, ErrCorruptParquet, p)
			grew := heapGrowth(func() {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				_, recs, err := ReadFile(p, ReadOptions{Mem: mem})
				check("ReadFile", err)
				if err != nil && !strings.Contains(err.Error(), bombCause[name]) {
					t.Errorf("ReadFile: %q does not say %q", err, bombCause[name])
				}
				release(recs)
				mem.AssertSize(t, 0)
				_, recs, err = ReadPaths([]string{p}, ReadOptions{Mem: mem})
				check("ReadPaths", err)
				release(recs)
				fh, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer fh.Close()
				st, _ := fh.Stat()
				_, err = OpenParquet(p, fh, st.Size())
				check("OpenParquet", err)
			})
			if grew > 1<<20 {
				t.Errorf("reading %s allocated %d bytes", name, grew)
			}
		})
	}
}

// TestParquetFooterCosts: the walk's charge for a struct in a list covers
// the largest struct parquet-go decodes into a list.
func TestParquetFooterCosts(t *testing.T) {
	for what, size := range map[string]uintptr{
		"ColumnChunk": unsafe.Sizeof(format.ColumnChunk{}), "SchemaElement": unsafe.Sizeof(format.SchemaElement{}),
		"RowGroup": unsafe.Sizeof(format.RowGroup{}), "KeyValue": unsafe.Sizeof(format.KeyValue{}),
		"PageEncodingStats": unsafe.Sizeof(format.PageEncodingStats{}), "SortingColumn": unsafe.Sizeof(format.SortingColumn{}),
		"ColumnOrder": unsafe.Sizeof(format.ColumnOrder{}),
	} {
		if size > thriftListStructCost {
			t.Errorf("format.%s is %d bytes, more than the charge %d", what, size, thriftListStructCost)
		}
	}
}

// TestParquetFooterWalkGood: the footers of real files (DuckDB's, and
// forestd's own writer's) pass the walk, and the walk's estimate is at
// least the heap that decoding them takes.
func TestParquetFooterWalkGood(t *testing.T) {
	files := map[string][]byte{"x.parquet": written(t, "x.parquet")}
	for _, n := range []string{"iris.parquet", "dna.parquet", "letter_recognition_zstd_rg1000.parquet", "breast_cancer_mlbench.parquet"} {
		b, err := os.ReadFile(filepath.Join(dataDir(t), n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	for name, b := range files {
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		w := thriftWalk{b: b[len(b)-8-n : len(b)-8], budget: MaxParquetFooterMemory}
		if err := w.structure(0); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if w.p != n {
			t.Errorf("%s: the walk ended at byte %d of a %d-byte footer", name, w.p, n)
		}
		grew := heapGrowth(func() {
			if _, err := OpenParquet(name, bytes.NewReader(b), int64(len(b))); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
		if int64(grew) > w.cost+64<<10 {
			t.Errorf("%s: opening allocated %d bytes, the walk estimated %d", name, grew, w.cost)
		}
		t.Logf("%s: footer %d bytes, estimate %d, opening allocated %d", name, n, w.cost, grew)
	}
}

// TestParquetFooterTruncated: every prefix of a real footer is refused
// by the walk (it ends early) or is a whole struct; none panics.
func TestParquetFooterTruncated(t *testing.T) {
	b := written(t, "x.parquet")
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	footer := b[len(b)-8-n : len(b)-8]
	for i := 0; i < n; i++ {
		if err := checkParquetFooter(footer[:i], MaxParquetFooterMemory); !errors.Is(err, ErrCorruptParquet) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}
}

// TestParquetFooterDeepNesting: a 4 MiB footer of structs nested four
// million deep is refused; parquet-go, which decodes and skips nested
// values recursively, overflows its goroutine stack on it (fatal error:
// stack overflow) when it is not.
func TestParquetFooterDeepNesting(t *testing.T) {
	const depth = 4 << 20
	e := schemaOf(&tc{}).list(1, 0, tcStruct).raw(tcStruct).uv(200)
	for range depth {
		e.field(1, tcStruct)
	}
	for range depth + 2 {
		e.stop()
	}
	b := parquetFrame(e.b)
	_, err := OpenParquet("deep.parquet", bytes.NewReader(b), int64(len(b)))
	if !errors.Is(err, ErrCorruptParquet) || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("OpenParquet: %v, want ErrCorruptParquet: nested deeper than …", err)
	}
}

// TestParquetFooterBudget: a footer whose decoded form would exceed the
// budget is refused although each length fits in its bytes: 100,000
// empty key-value structs (100 KB of footer) cost 100 MB at the list
// charge.
func TestParquetFooterBudget(t *testing.T) {
	e := schemaOf(&tc{}).list(1, 0, tcStruct).list(1, 100_000, tcStruct)
	for range 100_000 {
		e.stop()
	}
	e.stop()
	if err := checkParquetFooter(e.b, 50<<20); !errors.Is(err, ErrCorruptParquet) {
		t.Fatalf("50 MB budget: %v, want ErrCorruptParquet", err)
	}
	if err := checkParquetFooter(e.b, 200<<20); err != nil {
		t.Fatalf("200 MB budget: %v", err)
	}
}

// hugeRowGroup is a well-formed footer whose one row group claims
// 2^31-1 rows of column x (REQUIRED DOUBLE): 16 GiB to decode, declared
// by a file of a few dozen bytes.
func hugeRowGroup() []byte {
	e := schemaOf(&tc{})
	e.b = e.b[:len(e.b)-2] // num_rows
	e.i64(1, claim).list(1, 1, tcStruct)
	e.list(1, 1, tcStruct) // RowGroup.columns
	e.i64(2, 4).field(1, tcStruct)
	e.i32(1, 5).list(1, 1, tcI32).raw(0).list(1, 1, tcBinary).uv(1).raw('x').i32(1, 0)
	e.i64(1, claim).i64(1, 8*claim).i64(1, 8).i64(2, 4).stop() // ColumnMetaData
	e.stop()                                                   // ColumnChunk
	e.i64(1, 8*claim).i64(1, claim).stop()                     // RowGroup
	return parquetFrame(e.stop().b)
}

// TestReadParquetBudget: a whole-file read is refused with ErrMemory,
// naming the file, when its row groups would decode to more than
// ReadOptions.MaxMemory, before anything is decoded; the budget is shared
// by the files of one ReadPaths; a negative budget is an error.
func TestReadParquetBudget(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.parquet")
	if err := os.WriteFile(huge, hugeRowGroup(), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(huge)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	pf, err := OpenParquet(huge, fh, int64(len(hugeRowGroup())))
	if err != nil {
		t.Fatalf("the footer is well-formed: %v", err)
	}
	if pf.NumRows() != claim || pf.RowGroupBytes(0, []string{"x"}) < 8*claim {
		t.Fatalf("rows %d, bytes %d", pf.NumRows(), pf.RowGroupBytes(0, []string{"x"}))
	}
	grew := heapGrowth(func() {
		_, _, err = ReadFile(huge, ReadOptions{})
	})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), huge) {
		t.Fatalf("ReadFile: %v, want ErrMemory naming %s", err, huge)
	}
	if grew > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", grew)
	}
	iris := filepath.Join(dataDir(t), "iris.parquet")
	if _, _, err := ReadFile(iris, ReadOptions{MaxMemory: 1000}); !errors.Is(err, ErrMemory) {
		t.Fatalf("iris in 1000 bytes: %v, want ErrMemory", err)
	}
	_, recs, err := ReadFile(iris, ReadOptions{MaxMemory: 8000})
	if err != nil {
		t.Fatalf("iris in 8000 bytes: %v", err)
	}
	release(recs)
	if _, _, err := ReadPaths([]string{iris, iris}, ReadOptions{MaxMemory: 8000}); !errors.Is(err, ErrMemory) {
		t.Fatalf("iris twice in 8000 bytes: %v, want ErrMemory", err)
	}
	if _, _, err := ReadFile(iris, ReadOptions{MaxMemory: -1}); err == nil {
		t.Fatal("a negative MaxMemory was accepted")
	}
}

// TestReadParquetBudgetDictionary: string data that dictionary encoding
// makes far larger than the footer declares (20,000 rows of one 1,000-byte
// value: 20 MB decoded from a file of a few kilobytes) is counted against
// ReadOptions.MaxMemory as it is decoded.
func TestReadParquetBudgetDictionary(t *testing.T) {
	mem := memory.NewGoAllocator()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
	defer b.Release()
	long := strings.Repeat("a", 1000)
	for range 20_000 {
		if err := b.AppendString(long); err != nil {
			t.Fatal(err)
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: dt}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "dict.parquet")
	if err := WriteFile(p, schema, []arrow.Record{rec}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Size() > 100_000 {
		t.Fatalf("the file has %d bytes: not dictionary-encoded?", st.Size())
	}
	_, _, err := ReadFile(p, ReadOptions{MaxMemory: 5 << 20})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "string data") || !strings.Contains(err.Error(), p) {
		t.Fatalf("in 5 MB: %v, want ErrMemory for string data naming %s", err, p)
	}
	_, recs, err := ReadFile(p, ReadOptions{MaxMemory: 30 << 20})
	if err != nil {
		t.Fatalf("in 30 MB: %v", err)
	}
	release(recs)
}

// refusal returns a check that a read of path failed with want, in one
// line naming path.
func refusal(t *testing.T, want error, path string) func(how string, err error) {
	return func(how string, err error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", how, err, want)
		}
		if err != nil && (!strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s: %q does not name %s on one line", how, err, path)
		}
	}
}

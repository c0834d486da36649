package files

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/klauspost/compress/gzip"
)

// pageBomb returns a Parquet file of one OPTIONAL INT32 column x and one
// row whose only data page (V1, PLAIN, uncompressed) holds one value and
// definition levels in one RLE run claiming count levels. parquet-go
// v0.32.0 expands the run (count bytes) before cutting it to the page's
// one value.
func pageBomb(count uint64) []byte {
	levels := binary.AppendUvarint(nil, count<<1) // an RLE run of count
	levels = append(levels, 1)                    // ... levels of 1
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(levels)))
	body = append(body, levels...)
	body = binary.LittleEndian.AppendUint32(body, 7)                             // the value
	hdr := (&tc{}).i32(1, 0).i32(1, int32(len(body))).i32(1, int32(len(body)))   // DATA_PAGE, sizes
	hdr.field(2, tcStruct).i32(1, 1).i32(1, 0).i32(1, 3).i32(1, 3).stop().stop() // 1 value, PLAIN, RLE levels
	page := append(hdr.b, body...)

	return oneRowFile(page, true, 0, int64(len(page)))
}

// pageBombs returns the data-page bombs by name (testdata/parquet_bombs).
func pageBombs() map[string][]byte {
	return map[string][]byte{
		"def_level_run.parquet": pageBomb(1 << 30),
		"gzip_page.parquet":     codecBomb(2, gzipZeros(64<<20)),
		"brotli_page.parquet":   codecBomb(4, brotliZeros(64<<20)),
		"zstd_page.parquet":     codecBomb(6, zstdZeros(23, 1<<30)),
		"zstd_window.parquet":   codecBomb(6, zstdZeros(31, 1<<17)),
	}
}

// codecBomb returns a Parquet file of one REQUIRED INT32 column x and one
// row whose only data page (V1, PLAIN) is body, compressed with codec
// (2 gzip, 4 Brotli, 6 Zstandard), while its header and the column chunk
// say it holds 4 bytes: one value.
func codecBomb(codec int32, body []byte) []byte {
	hdr := (&tc{}).i32(1, 0).i32(1, 4).i32(1, int32(len(body)))                  // DATA_PAGE, sizes
	hdr.field(2, tcStruct).i32(1, 1).i32(1, 0).i32(1, 3).i32(1, 3).stop().stop() // 1 value, PLAIN
	page := append(hdr.b, body...)

	return oneRowFile(page, false, codec, int64(len(hdr.b))+4)
}

// oneRowFile returns a Parquet file of one INT32 column x, OPTIONAL
// (levels RLE) or REQUIRED, and one row in one column chunk compressed
// with codec whose only data page is page, uncompressed bytes in all.
func oneRowFile(page []byte, optional bool, codec int32, uncompressed int64) []byte {
	rep, encodings := int32(0), []uint64{0} // REQUIRED, PLAIN
	if optional {
		rep, encodings = 1, []uint64{0, 6} // OPTIONAL, PLAIN and RLE
	}
	e := (&tc{}).i32(1, 1).list(1, 2, tcStruct)
	e.str(4, "schema").i32(1, 1).stop()
	e.i32(1, 1).i32(2, rep).str(1, "x").stop() // INT32, "x"
	e.i64(1, 1)                                // num_rows
	e.list(1, 1, tcStruct)                     // row_groups
	e.list(1, 1, tcStruct)                     // columns
	e.i64(2, 4).field(1, tcStruct)             // file_offset, meta_data
	e.i32(1, 1)                                // type INT32
	e.list(1, uint64(len(encodings)), tcI32)   // encodings
	for _, v := range encodings {
		e.uv(v)
	}
	e.list(1, 1, tcBinary).uv(1).raw('x') // path_in_schema
	e.i32(1, codec).i64(1, 1)             // codec, num_values
	e.i64(1, uncompressed).i64(1, int64(len(page)))
	e.i64(2, 4).stop()                          // data_page_offset
	e.stop()                                    // column chunk
	e.i64(1, int64(len(page))).i64(1, 1).stop() // total_byte_size, num_rows
	e.stop()
	out := append([]byte("PAR1"), page...)
	out = append(out, e.b...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(e.b)))
	return append(out, "PAR1"...)
}

// gzipZeros is a gzip stream of n zero bytes.
func gzipZeros(n int64) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := io.CopyN(w, zeros{}, n); err != nil {
		panic(err)
	}
	w.Close()
	return b.Bytes()
}

// brotliZeros is a Brotli stream of n zero bytes.
func brotliZeros(n int64) []byte {
	var b bytes.Buffer
	w := brotli.NewWriterLevel(&b, 1)
	if _, err := io.CopyN(w, zeros{}, n); err != nil {
		panic(err)
	}
	w.Close()
	return b.Bytes()
}

// zstdZeros is a Zstandard frame of n zero bytes (a multiple of 128 KiB)
// written by hand as RLE blocks of 128 KiB, 4 bytes each (RFC 8878
// §3.1.1), with a window of 2^windowLog bytes and no content size.
func zstdZeros(windowLog byte, n int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (windowLog - 10) << 3}
	blocks := n / (128 << 10)
	for i := range blocks {
		h := uint32(1)<<1 | uint32(128<<10)<<3 // RLE, 128 KiB
		if i == blocks-1 {
			h |= 1 // the last block
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// fuzzCorpusBytes reads the []byte of a one-value Go fuzz corpus file.
func fuzzCorpusBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("%s: not a one-value []byte fuzz corpus file", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// TestPageBombShape: the handmade page bomb is a sound file but for its
// run: with a run of one level it reads as one row, x = 7.
func TestPageBombShape(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	data := pageBomb(1)
	_, recs, err := readParquet("one.parquet", bytes.NewReader(data), int64(len(data)), nil, mem, newReadBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	if len(recs) != 1 || recs[0].NumRows() != 1 || recs[0].Column(0).ValueStr(0) != "7" {
		t.Fatalf("got %v, want one row x = 7", recs)
	}
}

// TestParquetPageBombs: a data page whose definition-level runs claim
// far more levels than the page holds is refused by ReadFile and
// ReadPaths with one line naming the file and wrapping
// ErrCorruptParquetPage, allocating less than 16 MiB. Without
// checkChunkPages, under ulimit -v 4000000, parquet-go allocates 2 GB
// for the fuzz crasher (and fails late, on a dictionary index) and dies
// of "fatal error: out of memory" on the 103-byte handmade bomb.
func TestParquetPageBombs(t *testing.T) {
	paths := []string{filepath.Join("testdata", "fuzz", "FuzzReadParquet", "52875018a68e5c0f")}
	for name := range pageBombs() {
		paths = append(paths, filepath.Join(bombDir(), name))
	}
	slices.Sort(paths)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if strings.Contains(p, "fuzz") {
				data := fuzzCorpusBytes(t, p)
				p = filepath.Join(t.TempDir(), "crasher.parquet")
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			check := refusal(t, ErrCorruptParquetPage, p)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			for how, read := range map[string]func() ([]arrow.Record, error){
				"ReadFile": func() ([]arrow.Record, error) { _, recs, err := ReadFile(p, ReadOptions{Mem: mem}); return recs, err },
				"ReadPaths": func() ([]arrow.Record, error) {
					_, recs, err := ReadPaths([]string{p}, ReadOptions{Mem: mem})
					return recs, err
				},
			} {
				// A Brotli decoder's ring buffer takes up to its stream's
				// window, at most 16 MiB, whatever the page holds.
				grew := heapGrowth(func() {
					recs, err := read()
					check(how, err)
					release(recs)
				})
				if grew > 16<<20 {
					t.Errorf("%s allocated %d bytes, want < 16 MiB", how, grew)
				}
			}
			mem.AssertSize(t, 0)
		})
	}
}

// TestCheckRuns: repeated runs are bounded by the page's values (plus a
// 63-group run of padding), bit-packed runs by their bytes.
func TestCheckRuns(t *testing.T) {
	rle := func(count uint64, v byte) []byte { return append(binary.AppendUvarint(nil, count<<1), v) }
	packed := func(groups uint64, fill int) []byte {
		b := binary.AppendUvarint(nil, groups<<1|1)
		return append(b, make([]byte, fill)...)
	}
	for _, c := range []struct {
		name  string
		src   []byte
		width uint
		n     int64
		ok    bool
	}{
		{"exact RLE", rle(150, 1), 1, 150, true},
		{"RLE past the padding", rle(150+505, 1), 1, 150, false},
		{"two RLE runs of 2^30", append(rle(1<<30, 1), rle(1<<30, 1)...), 1, 1, false},
		{"padded bit-packed run (iris)", packed(32, 160), 5, 150, true},
		{"bit-packed run without its bytes", packed(32, 159), 5, 150, false},
		{"bit-packed run of width 0", packed(1<<20, 0), 0, 150, false},
		{"empty runs", []byte{0, 0, 0}, 1, 0, true},
		{"bad header", []byte{0x80}, 1, 1, false},
		{"width 33", rle(1, 1), 33, 1, false},
	} {
		err := checkRuns(c.src, c.width, c.n, "levels")
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrCorruptParquetPage)) {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestCodecBombShape: codecBomb makes a sound file when its body holds
// what the header says: with each codec, a page of the value 7 reads as
// one row, x = 7.
func TestCodecBombShape(t *testing.T) {
	seven := binary.LittleEndian.AppendUint32(nil, 7)
	var gz, br bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(seven)
	gw.Close()
	bw := brotli.NewWriter(&br)
	bw.Write(seven)
	bw.Close()
	zs := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 1 | 4<<3, 0, 0} // window 1 KiB, a raw last block of 4 bytes
	zs = append(zs, seven...)
	for name, f := range map[string][]byte{"gzip": codecBomb(2, gz.Bytes()), "brotli": codecBomb(4, br.Bytes()), "zstd": codecBomb(6, zs)} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			_, recs, err := readParquet(name+".parquet", bytes.NewReader(f), int64(len(f)), nil, mem, newReadBudget(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			defer release(recs)
			if len(recs) != 1 || recs[0].NumRows() != 1 || recs[0].Column(0).ValueStr(0) != "7" {
				t.Fatalf("got %v, want one row x = 7", recs)
			}
		})
	}
}

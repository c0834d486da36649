package files

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

// codecPage is n bytes that compress about 2:1 (as numbers and ids do).
func codecPage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		if i%3 == 0 {
			b[i] = byte(r.IntN(256))
		} else {
			b[i] = byte(r.IntN(8))
		}
	}
	return b
}

// TestWriterCodecsSameBytes: a writer's own compressors write what
// parquet-go's shared ones (parquet.Zstd, parquet.Gzip) write — zstd for
// every page up to zstdWindow, across block boundaries (128 KiB) and
// after other pages, gzip for every page — and what they write decodes
// to the page.
func TestWriterCodecsSameBytes(t *testing.T) {
	zc, gc := &zstdCodec{}, &gzipCodec{}
	for _, n := range []int{0, 1, 500, 1 << 10, 5000, 64 << 10, 128 << 10, 128<<10 + 1, 200 << 10, 256 << 10, 300 << 10, zstdWindow} {
		for seed := range uint64(2) {
			src := codecPage(n, seed)
			want, _ := parquet.Zstd.Encode(nil, src)
			got, err := zc.Encode(nil, src)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("zstd, a page of %d bytes: %d bytes (%v), parquet.Zstd %d", n, len(got), err, len(want))
			}
			if back, err := parquet.Zstd.Decode(nil, got); err != nil || !bytes.Equal(back, src) {
				t.Errorf("zstd, a page of %d bytes: decodes to %d bytes (%v)", n, len(back), err)
			}
			want, _ = parquet.Gzip.Encode(nil, src)
			got, err = gc.Encode(nil, src)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("gzip, a page of %d bytes: %d bytes (%v), parquet.Gzip %d", n, len(got), err, len(want))
			}
		}
	}
	// past the window zstd differs (matches reach back 1 MiB at most) but
	// decodes, and is the same whatever the encoder wrote before
	src := bytes.Repeat(codecPage(3<<19, 1), 2)
	got, _ := zc.Encode(nil, src)
	if back, err := parquet.Zstd.Decode(nil, got); err != nil || !bytes.Equal(back, src) {
		t.Errorf("zstd, a page of %d bytes: decodes to %d bytes (%v)", len(src), len(back), err)
	}
	if fresh, _ := (&zstdCodec{}).Encode(nil, src); !bytes.Equal(fresh, got) {
		t.Errorf("zstd, a page of %d bytes: %d bytes from a new encoder, %d after other pages", len(src), len(fresh), len(got))
	}
}

// liveHeap is the heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestWriterCodecBytes: what an open ParquetWriter holds for its
// compressor, beyond what an uncompressed writer of the same rows holds,
// is at most WriterCodecBytes (within a MiB of noise), its pages being
// larger than a zstd block (row groups of 16,384 rows of 64-byte ids:
// pages of about 256 KiB) and its goroutines coming one after another.
// parquet.Zstd, shared, kept its encoders in a sync.Pool, one per P that
// had encoded a page, each with a 16 MiB history: 16.9 MiB alive after
// the collection here.
func TestWriterCodecBytes(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "model_id", Type: arrow.BinaryTypes.String}, {Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	const rows = 1 << 14
	ib := array.NewStringBuilder(memory.DefaultAllocator)
	xb := array.NewFloat64Builder(memory.DefaultAllocator)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rows {
		ib.Append(fmt.Sprintf("%064x", i/100))
		xb.Append(r.Float64())
	}
	rec := array.NewRecord(schema, []arrow.Array{ib.NewArray(), xb.NewArray()}, rows)
	defer rec.Release()
	held := func(c string) int64 {
		runtime.GC() // empties the pools of what ran before
		h0 := liveHeap()
		w, err := NewParquetWriter(discardWriter{}, schema, WriteOptions{Compression: c})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		for range 4 * runtime.GOMAXPROCS(0) { // one goroutine after another, wherever each runs
			go func() {
				defer func() { done <- struct{}{} }()
				runtime.Gosched()
				if err := w.Write(rec); err != nil {
					t.Error(err)
				}
				if err := w.Flush(); err != nil {
					t.Error(err)
				}
			}()
			<-done
		}
		h := liveHeap() - h0
		runtime.KeepAlive(w)
		return h
	}
	const slack = 1 << 20 // the measurement's noise: ±1 MiB from run to run
	held("none")          // the first writer's lazily built state (schema caches, pools)
	base := held("none")
	for _, c := range []string{"zstd", "gzip", "snappy", "lz4"} {
		got := held(c) - base
		t.Logf("%-6s a writer holds %5.2f MiB for its compressor, counted %5.2f MiB", c, float64(got)/(1<<20), float64(WriterCodecBytes(c))/(1<<20))
		if got > WriterCodecBytes(c)+slack {
			t.Errorf("%s: a writer holds %.2f MiB for its compressor, WriterCodecBytes counts %.2f MiB", c, float64(got)/(1<<20), float64(WriterCodecBytes(c))/(1<<20))
		}
	}
	if WriterCodecBytes("none") != 0 || WriterCodecBytes(strings.ToUpper("zstd")) != zstdEncoderBytes || WriterCodecBytes("") != zstdEncoderBytes {
		t.Error("WriterCodecBytes of none, ZSTD, the default")
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

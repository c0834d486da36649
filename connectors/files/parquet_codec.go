package files

import (
	"bytes"
	"io"
	"runtime"

	kgzip "github.com/klauspost/compress/gzip"
	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// The compressors of a ParquetWriter are its own, one per writer, so that
// what a writer holds is bounded and known (WriterCodecBytes). parquet-go's
// shared codecs (parquet.Zstd, parquet.Gzip) keep their encoders in a
// sync.Pool, which holds one per P that has run an Encode (a pool's
// per-P slot cannot be taken from another P), so that one writer moving
// between threads leaves up to GOMAXPROCS encoders alive, and a zstd
// encoder at parquet-go's settings holds a 16 MiB history (twice its
// 8 MiB window) once a page is larger than one 128 KiB zstd block. The
// encoders here are created at the writer's first page and dropped with
// the writer, and are configured as parquet-go's (the same level, no
// checksum, zero-length frames), but for the zstd window.

// zstdWindow is the window of the writers' zstd encoders. A page is
// encoded as one frame with no history before it, so a page of at most
// zstdWindow bytes finds the same matches under any larger window and is
// written byte for byte as parquet-go's 8 MiB window writes it (the frame
// header names the page's size, not the window, in both); a larger page
// (a row group's worth of long strings) is compressed within a 1 MiB
// window, which is still valid zstd that every reader decodes. Pages are
// cut at parquet-go's page buffer size (256 KiB), so outputs of numbers
// and short strings are unchanged. The encoder then holds a 2 MiB history
// beside its tables (zstdEncoderBytes).
const zstdWindow = 1 << 20

// zstdEncoderBytes is what one zstd encoder at zstdWindow holds once it has
// encoded a page larger than a zstd block (TestWriterCodecBytes measures
// it): the 2 MiB history, the 1.1 MiB of match tables and the block
// buffers, rounded up.
const zstdEncoderBytes = 4 << 20

// gzipEncoderBytes is what one gzip (deflate, default level) writer holds,
// rounded up (TestWriterCodecBytes).
const gzipEncoderBytes = 1 << 20

// snappyTableBytes is what snappy (klauspost/compress's s2) keeps for
// each P: its match tables, 576 KiB and 288 KiB and smaller, are taken
// from process-wide sync.Pools, which keep one of each per P that has
// encoded, rounded up.
const snappyTableBytes = 1 << 20

// lz4EncoderBytes is what lz4, which keeps nothing between pages,
// allocates while encoding one page beside its output, rounded up.
const lz4EncoderBytes = 1 << 20

// WriterCodecBytes is the memory the compressor of one open ParquetWriter
// (and so of one WriteFile) with compression holds, beside the page and
// column buffers it compresses: a budget such as a lake run's counts it
// for each writer it keeps open. zstd: 4 MiB; gzip and lz4: 1 MiB; snappy:
// 1 MiB per P (GOMAXPROCS), its tables being the process's, which the
// writers share. It is 0 for no compression and for an unknown name
// (which NewParquetWriter refuses).
func WriterCodecBytes(compression string) int64 {
	c, err := codecByName(compression)
	if err != nil {
		return 0
	}
	switch c.CompressionCodec() {
	case format.Zstd:
		return zstdEncoderBytes
	case format.Gzip:
		return gzipEncoderBytes
	case format.Snappy:
		return int64(runtime.GOMAXPROCS(0)) * snappyTableBytes
	case format.Uncompressed:
		return 0
	}
	return lz4EncoderBytes
}

// zstdCodec is a writer's zstd compressor: one encoder, as parquet.Zstd's
// but with a zstdWindow window. Not safe for concurrent use (nor is the
// writer).
type zstdCodec struct {
	enc *kzstd.Encoder
}

func (c *zstdCodec) String() string                            { return "ZSTD" }
func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	if c.enc == nil {
		e, err := kzstd.NewWriter(nil,
			kzstd.WithEncoderConcurrency(1),
			kzstd.WithEncoderLevel(kzstd.SpeedDefault), // parquet.Zstd's level
			kzstd.WithWindowSize(zstdWindow),
			kzstd.WithZeroFrames(true),
			kzstd.WithEncoderCRC(false),
		)
		if err != nil {
			return dst[:0], err
		}
		c.enc = e
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

// Decode is parquet.Zstd's (a writer never decodes).
func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }

// gzipCodec is a writer's gzip compressor: one gzip writer at
// parquet.Gzip's level, used as parquet-go's compress.Compressor uses its
// pooled ones (reset onto the output, written, closed), so that the bytes
// are the same.
type gzipCodec struct {
	w   *kgzip.Writer
	out bytes.Buffer
}

func (c *gzipCodec) String() string                            { return "GZIP" }
func (c *gzipCodec) CompressionCodec() format.CompressionCodec { return format.Gzip }

func (c *gzipCodec) Encode(dst, src []byte) ([]byte, error) {
	c.out = *bytes.NewBuffer(dst[:0])
	if c.w == nil {
		w, err := kgzip.NewWriterLevel(&c.out, parquet.Gzip.Level)
		if err != nil {
			return dst[:0], err
		}
		c.w = w
	} else {
		c.w.Reset(&c.out)
	}
	defer func() {
		c.out = bytes.Buffer{}
		c.w.Reset(io.Discard)
	}()
	if _, err := c.w.Write(src); err != nil {
		return c.out.Bytes(), err
	}
	if err := c.w.Close(); err != nil {
		return c.out.Bytes(), err
	}
	return c.out.Bytes(), nil
}

// Decode is parquet.Gzip's (a writer never decodes).
func (c *gzipCodec) Decode(dst, src []byte) ([]byte, error) { return parquet.Gzip.Decode(dst, src) }

var _ compress.Codec = (*zstdCodec)(nil)
var _ compress.Codec = (*gzipCodec)(nil)

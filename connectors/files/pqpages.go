package files

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// parquet-go v0.32.0 decodes a data page's run-length/bit-packed hybrid
// runs (definition levels, dictionary indices, RLE booleans) by expanding
// every run the page claims before it cuts the result to the page's
// value count (encoding/rle decodeBytes, decodeInt32): a 6.5 KB file
// whose runs claim 2^31-1 levels made it allocate about 1 GB. It also
// sizes level and offset buffers from a page header's num_values. So
// before readRowGroup lets parquet-go read a column chunk,
// checkChunkPages walks the chunk's pages from their raw bytes: each
// page header's Thrift encoding (as pqcheck.go walks the footer), its
// sizes within the chunk, num_values within the row group's rows, and
// the runs of its levels and values: repeated runs may expand to at most
// num_values (and some padding), bit-packed runs only to what their
// bytes hold (checkRuns; docs/parquet-footers.md, "Data pages").

// ErrCorruptParquetPage marks a Parquet file whose data page is refused
// before parquet-go decodes it: an input error, like ErrCorruptParquet.
var ErrCorruptParquetPage = errors.New("corrupt Parquet page")

// maxPageHeaderMemory bounds what a page header may decode to, as
// thriftWalk estimates it; a header holds at most its statistics.
const maxPageHeaderMemory = 64 << 20

// pageHeaderFields names the fields of a PageHeader in errors.
var pageHeaderFields = [...]string{1: "type", 2: "uncompressed_page_size", 3: "compressed_page_size",
	4: "crc", 5: "data_page_header", 6: "index_page_header", 7: "dictionary_page_header", 8: "data_page_header_v2"}

// pageScan holds the buffers checkChunkPages reuses from page to page.
type pageScan struct {
	raw, plain []byte
	src        bytes.Reader // a compressed page, read by gz or br
	gz         *gzip.Reader
	br         *brotli.Reader
	zd         *zstd.Decoder // frames of windows up to pageZstdWindow
	zdBig      *zstd.Decoder // up to zdBigWindow, for pages larger than that
	zdBigWin   int
}

// pageZstdWindow is the window a Zstandard frame of a page may ask its
// decoder to allocate, or the page's size if larger: a writer that knows
// a page's size asks for at most that, zstd's level 19 for 8 MiB.
const pageZstdWindow = 8 << 20

// zstdDecoder returns a decoder whose window limit is the larger of
// pageZstdWindow and size rounded up to a power of two.
func (s *pageScan) zstdDecoder(size int) (*zstd.Decoder, error) {
	newDecoder := func(window int) (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(uint64(window)))
	}
	if size <= pageZstdWindow {
		if s.zd == nil {
			d, err := newDecoder(pageZstdWindow)
			if err != nil {
				return nil, err
			}
			s.zd = d
		}
		return s.zd, nil
	}
	if size > s.zdBigWin {
		if s.zdBig != nil {
			s.zdBig.Close()
			s.zdBig, s.zdBigWin = nil, 0
		}
		w := 1 << bits.Len(uint(size-1))
		d, err := newDecoder(w)
		if err != nil {
			return nil, err
		}
		s.zdBig, s.zdBigWin = d, w
	}
	return s.zdBig, nil
}

func (s *pageScan) grow(b *[]byte, n int) []byte {
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	return (*b)[:n]
}

// checkChunkPages checks the pages of the column chunk of row group g,
// leaf column leaf, of pf (rows rows, maxDef its maximum definition
// level, 0 or 1) before parquet-go decodes them. It reads each page once
// more and decompresses the pages whose runs it must count, so it holds
// at most one page's compressed and uncompressed bytes, both within the
// sizes the chunk declares, in s, which the chunks of a row group share.
func checkChunkPages(s *pageScan, pf *parquet.File, g, leaf int, maxDef byte, rows int64) error {
	cc := &pf.Metadata().RowGroups[g].Columns[leaf]
	if cc.CryptoMetadata.Value != nil || len(cc.EncryptedColumnMetadata) > 0 {
		return nil // parquet-go decrypts; forestd reads plain files
	}
	cm := &cc.MetaData
	start := cm.DataPageOffset
	if cm.DictionaryPageOffset != 0 {
		start = cm.DictionaryPageOffset
	}
	end := start + cm.TotalCompressedSize
	if start < 0 || cm.TotalCompressedSize < 0 || end < start || end > pf.Size() {
		return fmt.Errorf("%w: column chunk of %d bytes at %d does not fit in %d bytes", ErrCorruptParquetPage, cm.TotalCompressedSize, start, pf.Size())
	}
	codec := parquet.LookupCompressionCodec(cm.Codec)
	left := rows // values the remaining data pages may hold
	for off, page := start, 0; off < end; page++ {
		h, hlen, err := s.header(pf, off, end)
		if err != nil {
			return fmt.Errorf("page %d at byte %d: %w", page, off, err)
		}
		body := off + int64(hlen)
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || int64(h.CompressedPageSize) > end-body {
			return fmt.Errorf("%w: page %d at byte %d: %d bytes claimed, %d remain in the column chunk", ErrCorruptParquetPage, page, off, h.CompressedPageSize, end-body)
		}
		if int64(h.UncompressedPageSize) > max(cm.TotalUncompressedSize, 0) {
			return fmt.Errorf("%w: page %d at byte %d: %d uncompressed bytes, the column chunk declares %d", ErrCorruptParquetPage, page, off, h.UncompressedPageSize, cm.TotalUncompressedSize)
		}
		switch {
		case h.Type == format.DictionaryPage && h.DictionaryPageHeader.Valid:
			// parquet-go sizes a dictionary's offsets from num_values; a
			// value takes at least one bit of the page.
			if n := int64(h.DictionaryPageHeader.V.NumValues); n < 0 || n > 8*int64(h.UncompressedPageSize)+8 {
				return fmt.Errorf("%w: page %d at byte %d: dictionary of %d values in %d bytes", ErrCorruptParquetPage, page, off, n, h.UncompressedPageSize)
			}
			if cm.Codec != format.Uncompressed {
				if _, err := s.plainBody(pf, body, h, codec, cm.Codec); err != nil {
					return fmt.Errorf("page %d at byte %d: %w", page, off, err)
				}
			}
		case h.Type == format.DataPage && h.DataPageHeader.Valid:
			v := &h.DataPageHeader.V
			if err := checkNumValues(int64(v.NumValues), &left); err != nil {
				return fmt.Errorf("page %d at byte %d: %w", page, off, err)
			}
			if maxDef == 0 && !runEncoded(v.Encoding) && cm.Codec == format.Uncompressed {
				break // no runs to count, nothing to decompress
			}
			data, err := s.plainBody(pf, body, h, codec, cm.Codec)
			if err != nil {
				return fmt.Errorf("page %d at byte %d: %w", page, off, err)
			}
			if maxDef == 0 && !runEncoded(v.Encoding) {
				break
			}
			if maxDef > 0 && v.DefinitionLevelEncoding == format.RLE {
				if len(data) < 4 || int64(binary.LittleEndian.Uint32(data)) > int64(len(data)-4) {
					return fmt.Errorf("%w: page %d at byte %d: definition levels do not fit in %d bytes", ErrCorruptParquetPage, page, off, len(data))
				}
				n := 4 + int(binary.LittleEndian.Uint32(data))
				if err := checkRuns(data[4:n], 1, int64(v.NumValues), "definition levels"); err != nil {
					return fmt.Errorf("page %d at byte %d: %w", page, off, err)
				}
				data = data[n:]
			} else if maxDef > 0 {
				break // BIT_PACKED levels: num_values bits, no runs
			}
			if err := checkValueRuns(data, v.Encoding, int64(v.NumValues)); err != nil {
				return fmt.Errorf("page %d at byte %d: %w", page, off, err)
			}
		case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
			v := &h.DataPageHeaderV2.V
			if err := checkNumValues(int64(v.NumValues), &left); err != nil {
				return fmt.Errorf("page %d at byte %d: %w", page, off, err)
			}
			rl, dl := int64(v.RepetitionLevelsByteLength), int64(v.DefinitionLevelsByteLength)
			if rl < 0 || dl < 0 || v.NumNulls < 0 || v.NumNulls > v.NumValues || rl+dl > int64(h.CompressedPageSize) {
				return fmt.Errorf("%w: page %d at byte %d: levels of %d+%d bytes in a page of %d, %d nulls of %d values", ErrCorruptParquetPage, page, off, rl, dl, h.CompressedPageSize, v.NumNulls, v.NumValues)
			}
			compressed := cm.Codec != format.Uncompressed && (!v.IsCompressed.Valid || v.IsCompressed.V)
			if !runEncoded(v.Encoding) && (maxDef == 0 || dl == 0) && !compressed {
				break
			}
			raw := s.grow(&s.raw, int(h.CompressedPageSize))
			if _, err := pf.ReadAt(raw, body); err != nil {
				return fmt.Errorf("page %d at byte %d: reading: %w", page, off, err)
			}
			if maxDef > 0 && dl > 0 {
				if err := checkRuns(raw[rl:rl+dl], 1, int64(v.NumValues), "definition levels"); err != nil {
					return fmt.Errorf("page %d at byte %d: %w", page, off, err)
				}
			}
			data := raw[rl+dl:]
			if compressed {
				if data, err = s.decompress(codec, cm.Codec, data, int(h.UncompressedPageSize-int32(rl+dl))); err != nil {
					return fmt.Errorf("page %d at byte %d: %w", page, off, err)
				}
			}
			if !runEncoded(v.Encoding) {
				break
			}
			if err := checkValueRuns(data, v.Encoding, int64(v.NumValues-v.NumNulls)); err != nil {
				return fmt.Errorf("page %d at byte %d: %w", page, off, err)
			}
		}
		off = body + int64(h.CompressedPageSize)
	}
	return nil
}

// checkNumValues takes a data page's num_values from the values the
// chunk's remaining pages may hold (a flat column has one per row).
func checkNumValues(n int64, left *int64) error {
	if n < 0 || n > *left {
		return fmt.Errorf("%w: %d values, the row group has %d rows left", ErrCorruptParquetPage, n, *left)
	}
	*left -= n
	return nil
}

// runEncoded reports whether values of encoding e are hybrid runs.
func runEncoded(e format.Encoding) bool {
	//lint:ignore SA1019 files written before Parquet 2.0 still use it
	return e == format.RLEDictionary || e == format.PlainDictionary || e == format.RLE
}

// checkValueRuns counts the runs of a page's values (data, after the
// levels) encoded with e, at most n of them.
func checkValueRuns(data []byte, e format.Encoding, n int64) error {
	switch e {
	//lint:ignore SA1019 files written before Parquet 2.0 still use it
	case format.RLEDictionary, format.PlainDictionary:
		if len(data) == 0 {
			return nil
		}
		return checkRuns(data[1:], uint(data[0]), n, "dictionary indices")
	case format.RLE: // booleans: a 4-byte length, then runs of 1 bit
		if len(data) < 4 || int64(binary.LittleEndian.Uint32(data)) > int64(len(data)-4) {
			return nil // parquet-go refuses it
		}
		return checkRuns(data[4:4+binary.LittleEndian.Uint32(data)], 1, n, "RLE values")
	}
	return nil
}

// checkRuns walks the RLE/bit-packed hybrid runs of src (Parquet
// encodings spec, "Run Length Encoding / Bit-Packing Hybrid") of values
// width bits wide, as parquet-go decodes them, and refuses them if they
// claim bytes src lacks or if the values their repeated runs expand to
// (RLE runs and bit-packed runs of width 0, which take no bytes) exceed
// n, the values the page holds, by more than a bit-packed run of 63
// groups of 8. A bit-packed run of width w > 0 takes w bytes per 8
// values, so it can expand src at most 8 times; writers pad one past the
// page's values (parquet-cpp declares 256 dictionary indices for 150),
// which this allows.
func checkRuns(src []byte, width uint, n int64, what string) error {
	const slack = 63 * 8
	if width > 32 {
		return fmt.Errorf("%w: %s %d bits wide", ErrCorruptParquetPage, what, width)
	}
	var repeated uint64
	for i := 0; i < len(src); {
		u, k := binary.Uvarint(src[i:])
		if k <= 0 {
			return fmt.Errorf("%w: %s: bad run header at byte %d of %d", ErrCorruptParquetPage, what, i, len(src))
		}
		i += k
		count := u >> 1
		if count == 0 {
			continue // parquet-go reads no value after an empty run
		}
		var bytes uint64
		if u&1 != 0 { // count groups of 8 bit-packed values
			count *= 8
			bytes = count / 8 * uint64(width)
		} else {
			bytes = uint64(width+7) / 8
		}
		if u&1 == 0 || width == 0 {
			repeated += count
			if repeated > uint64(n)+slack {
				return fmt.Errorf("%w: %s: runs repeat %d or more values, the page has %d", ErrCorruptParquetPage, what, repeated, n)
			}
		}
		if bytes > uint64(len(src)-i) {
			return fmt.Errorf("%w: %s: run of %d values needs %d bytes, %d remain", ErrCorruptParquetPage, what, count, bytes, len(src)-i)
		}
		i += int(bytes)
	}
	return nil
}

// header reads and decodes the page header at off, after walking its
// Thrift encoding within the chunk's remaining bytes; it returns the
// header and its length.
func (s *pageScan) header(pf *parquet.File, off, end int64) (*format.PageHeader, int, error) {
	for win := int64(4 << 10); ; win *= 2 {
		n := min(win, end-off)
		b := s.grow(&s.raw, int(n))
		if _, err := pf.ReadAt(b, off); err != nil {
			return nil, 0, fmt.Errorf("reading page header: %w", err)
		}
		w := thriftWalk{b: b, budget: maxPageHeaderMemory, fields: pageHeaderFields[:]}
		if err := w.structure(0); err != nil {
			if n < end-off {
				continue // the header may go on beyond the window
			}
			return nil, 0, fmt.Errorf("%w: page header: %s", ErrCorruptParquetPage, strings.TrimPrefix(err.Error(), ErrCorruptParquet.Error()+": "))
		}
		h := new(format.PageHeader)
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[:w.p], h); err != nil {
			return nil, 0, fmt.Errorf("%w: page header: %v", ErrCorruptParquetPage, err)
		}
		return h, w.p, nil
	}
}

// plainBody reads a V1 data page's body and decompresses it.
func (s *pageScan) plainBody(pf *parquet.File, body int64, h *format.PageHeader, codec compress.Codec, id format.CompressionCodec) ([]byte, error) {
	raw := s.grow(&s.raw, int(h.CompressedPageSize))
	if _, err := pf.ReadAt(raw, body); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if id == format.Uncompressed {
		return raw, nil
	}
	return s.decompress(codec, id, raw, int(h.UncompressedPageSize))
}

// decompress decompresses src, which the page header says holds size
// bytes, into a buffer of that size, and refuses a page that holds more.
// parquet-go's decoders grow their output to whatever the stream holds:
// a gzip, Brotli or Zstandard stream of a few kilobytes may expand to
// gigabytes, and its LZ4_RAW decoder doubles its buffer for as long as a
// block fails to decode, which a corrupt block always does. So every
// compressed page of a chunk is decompressed here first, within bounds:
// a Snappy block states its length first and is refused if longer;
// LZ4_RAW is refused (checkCodec); gzip, Brotli and Zstandard stream
// through a reader stopped one byte past size, Zstandard with a window of
// at most the larger of size and 8 MiB (docs/parquet-footers.md,
// "Compressed pages").
func (s *pageScan) decompress(codec compress.Codec, id format.CompressionCodec, src []byte, size int) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: %d uncompressed bytes", ErrCorruptParquetPage, size)
	}
	dst := s.grow(&s.plain, size)
	var out []byte
	var err error
	switch id {
	case format.Snappy:
		if n, k := binary.Uvarint(src); k <= 0 || n > uint64(size) {
			return nil, fmt.Errorf("%w: Snappy block of %d bytes, the page header says %d", ErrCorruptParquetPage, n, size)
		}
		out, err = codec.Decode(dst, src)
	case format.Lz4Raw:
		return nil, errLZ4Raw // checkCodec refuses it before
	case format.Gzip, format.Brotli, format.Zstd:
		out, err = s.stream(id, src, dst)
	default:
		out, err = codec.Decode(dst, src) // parquet-go refuses the codecs it lacks
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decompressing %s: %v", ErrCorruptParquetPage, codec, err)
	}
	if len(out) > size {
		return nil, fmt.Errorf("%w: %s page decompresses to more than the %d bytes its header says", ErrCorruptParquetPage, codec, size)
	}
	if cap(out) > cap(s.plain) {
		s.plain = out[:0]
	}
	return out, nil
}

// stream decompresses a gzip, Brotli or Zstandard stream into dst,
// reading one byte more than dst holds to tell a longer stream
// (errLongerPage).
func (s *pageScan) stream(id format.CompressionCodec, src, dst []byte) ([]byte, error) {
	s.src.Reset(src)
	var r io.Reader
	switch id {
	case format.Gzip:
		if s.gz == nil {
			s.gz = new(gzip.Reader)
		}
		if err := s.gz.Reset(&s.src); err != nil {
			return nil, err
		}
		r = s.gz
	case format.Brotli:
		if s.br == nil {
			s.br = brotli.NewReader(&s.src)
		} else if err := s.br.Reset(&s.src); err != nil {
			return nil, err
		}
		r = s.br
	default:
		d, err := s.zstdDecoder(len(dst))
		if err != nil {
			return nil, err
		}
		if err := d.Reset(&s.src); err != nil {
			return nil, err
		}
		r = d
	}
	n, err := io.ReadFull(r, dst)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return dst[:n], nil
	case err != nil:
		return nil, err
	}
	var one [1]byte
	if k, err := io.ReadFull(r, one[:]); k > 0 {
		return nil, errLongerPage
	} else if err != io.EOF {
		return nil, err
	}
	return dst, nil
}

// errLongerPage is stream's error for a page that decompresses to more
// than its header says.
var errLongerPage = errors.New("more bytes than the page header says")

// close releases the Zstandard decoder, if one was made.
func (s *pageScan) close() {
	for _, d := range []*zstd.Decoder{s.zd, s.zdBig} {
		if d != nil {
			d.Close()
		}
	}
	s.zd, s.zdBig, s.zdBigWin = nil, nil, 0
}

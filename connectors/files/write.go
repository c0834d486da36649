package files

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/forestd/forestd/internal/atomicfile"
)

// WriteOptions configures WriteFile.
type WriteOptions struct {
	// Compression: for Parquet "zstd" (the default), "snappy", "gzip",
	// "lz4" or "none"; for Arrow IPC "none" (the default), "zstd" or
	// "lz4". CSV is gzip-compressed by the .csv.gz extension alone.
	Compression string

	// RowGroupRows caps the rows of a Parquet row group (default 131072).
	RowGroupRows int

	// Mem is the allocator for the Arrow IPC writer (default
	// memory.DefaultAllocator).
	Mem memory.Allocator
}

const defaultRowGroupRows = 128 << 10

// WriteFile writes recs, which must all have schema's field names and
// types, to path in the format its extension names: .parquet (Parquet,
// zstd by default, written column by column), .arrow / .feather / .ipc
// (Arrow IPC file format), .arrows (Arrow IPC stream), .csv or .csv.gz.
// The data goes to a temporary file in the same directory, which is
// renamed to path only when everything has been written and synced, so
// readers never see a partial file; on error path is left untouched (see
// WriteAtomic, which also refuses a path that is not a regular file).
//
// Type coverage: Parquet takes bool, signed and unsigned integers,
// float16 (written as FLOAT), float32/64, strings, binary, dictionaries
// of those (written decoded), date32 and timestamps. CSV writes a null as
// an empty cell, floats in the shortest form that reads back exactly
// (integral floats get a ".0" so the column reads back as Float64), NaN
// as "NaN" (read back as null), bools as "true"/"false", and
// dictionaries decoded; CSV keeps no types, so see the CSV reading rules
// for what comes back.
func WriteFile(path string, schema *arrow.Schema, recs []arrow.Record, opts WriteOptions) error {
	return WriteFileContext(context.Background(), path, schema, recs, opts)
}

// WriteFileContext is WriteFile that stops when ctx is done, leaving path
// untouched and no temporary file behind (see WriteAtomic).
func WriteFileContext(ctx context.Context, path string, schema *arrow.Schema, recs []arrow.Record, opts WriteOptions) error {
	if schema == nil {
		return errors.New("write: nil schema")
	}
	if err := CheckWriteFormat(path); err != nil {
		return err
	}
	ft := extFormat(path)
	for i, r := range recs {
		if err := sameFields(schema, r.Schema()); err != nil {
			return fmt.Errorf("%s: record %d: %w", path, i, err)
		}
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = defaultRowGroupRows
	}
	return atomicfile.Write(ctx, path, func(f *os.File) error {
		switch ft {
		case FormatParquet:
			return writeParquet(f, schema, recs, opts)
		case FormatIPCFile:
			return writeIPC(f, schema, recs, opts, true)
		case FormatIPCStream:
			return writeIPC(f, schema, recs, opts, false)
		default:
			return writeCSVFile(f, strings.HasSuffix(strings.ToLower(path), ".gz"), schema, recs)
		}
	})
}

// sameFields requires equal field names and types in the same order.
func sameFields(want, got *arrow.Schema) error {
	if want.NumFields() != got.NumFields() {
		return fmt.Errorf("record has %d fields, schema has %d", got.NumFields(), want.NumFields())
	}
	for j := range want.Fields() {
		w, g := want.Field(j), got.Field(j)
		if w.Name != g.Name || !arrow.TypeEqual(w.Type, g.Type) {
			return fmt.Errorf("field %d is %s %s, schema says %s %s", j, g.Name, g.Type, w.Name, w.Type)
		}
	}
	return nil
}

// ErrNotRegular is the error CheckTarget wraps for an output path that
// exists and is not a regular file.
var ErrNotRegular = atomicfile.ErrNotRegular

// CheckTarget reports whether path may be an output of WriteAtomic and
// WriteFile: it must not exist, or be a regular file (or a link to one),
// which the output replaces. A directory, a device, a named pipe or a
// socket is refused with an error wrapping ErrNotRegular: renaming a new
// file over it would replace the node itself (a directory cannot be
// replaced at all). Other errors (a path below a file, no permission to
// look) are left to the write.
func CheckTarget(path string) error { return atomicfile.CheckTarget(path) }

// CheckWriteFormat refuses a path whose extension names no format
// WriteFile writes (.parquet, .pq, .arrow, .feather, .ipc, .arrows, .csv,
// .csv.gz), so that a command can check its output before any work.
func CheckWriteFormat(path string) error {
	if extFormat(path) == FormatUnknown {
		return fmt.Errorf("%s: unknown output format (want .parquet, .arrow, .arrows, .csv or .csv.gz)", path)
	}
	return nil
}

// WriteAtomic writes the file at path through write, so that path only
// ever holds a complete file: the data goes to a hidden temporary file in
// path's directory (".NAME.tmp-RANDOM"), which is synced, given mode 0644
// and renamed to path once write has returned nil (the directory synced
// after). On any error the temporary file is removed and path is left
// untouched. A path that exists and is not a regular file is refused
// (CheckTarget). It is forestd's one file writer (internal/atomicfile):
// WriteFile, WriteFileContext and model files use it.
//
// When ctx is done before the file is complete, the temporary file is
// closed under write (its next writes fail) and removed, and the error
// wraps context.Cause(ctx); a command that cancels ctx on SIGINT and
// SIGTERM leaves nothing behind.
func WriteAtomic(ctx context.Context, path string, write func(io.Writer) error) error {
	return atomicfile.Write(ctx, path, func(f *os.File) error { return write(f) })
}

func writeIPC(f *os.File, schema *arrow.Schema, recs []arrow.Record, opts WriteOptions, file bool) error {
	ipcOpts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(opts.Mem)}
	switch strings.ToLower(opts.Compression) {
	case "", "none", "uncompressed":
	case "zstd":
		ipcOpts = append(ipcOpts, ipc.WithZstd())
	case "lz4":
		ipcOpts = append(ipcOpts, ipc.WithLZ4())
	default:
		return fmt.Errorf("unknown Arrow IPC compression %q (want none, zstd or lz4)", opts.Compression)
	}
	var w interface {
		Write(arrow.Record) error
		Close() error
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if file {
		fw, err := ipc.NewFileWriter(&seekBuffer{f: f, w: bw}, ipcOpts...)
		if err != nil {
			return err
		}
		w = fw
	} else {
		w = ipc.NewWriter(bw, ipcOpts...)
	}
	for _, r := range recs {
		if !r.Schema().Equal(schema) {
			// Same names and types (checked); align nullability/metadata.
			r = array.NewRecord(schema, r.Columns(), r.NumRows())
		} else {
			r.Retain()
		}
		if file {
			// arrow-go v17's FileWriter retains every dictionary it writes
			// and never releases it; hand it dictionaries it may keep.
			r = detachDictionaries(r)
		}
		err := w.Write(r)
		r.Release()
		if err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// detachDictionaries returns rec (taking over the caller's reference)
// with the dictionaries of its top-level dictionary columns copied into
// garbage-collected memory.
func detachDictionaries(rec arrow.Record) arrow.Record {
	var cols []arrow.Array
	for j, c := range rec.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			continue
		}
		if cols == nil {
			cols = append([]arrow.Array(nil), rec.Columns()...)
		}
		dict := cloneData(d.Dictionary().Data())
		data := array.NewDataWithDictionary(d.DataType(), d.Len(), d.Data().Buffers(), d.NullN(), d.Data().Offset(), dict)
		dict.Release()
		cols[j] = array.MakeFromData(data)
		data.Release()
		defer cols[j].Release()
	}
	if cols == nil {
		return rec
	}
	out := array.NewRecord(rec.Schema(), cols, rec.NumRows())
	rec.Release()
	return out
}

// cloneData deep-copies array data into Go-managed buffers.
func cloneData(d arrow.ArrayData) *array.Data {
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	for i, b := range d.Buffers() {
		if b != nil {
			bufs[i] = memory.NewBufferBytes(append([]byte(nil), b.Bytes()...))
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = cloneData(c)
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	if dd := dictData(d); dd != nil {
		dict := cloneData(dd)
		out.SetDictionary(dict)
		dict.Release()
	}
	return out
}

// seekBuffer gives the IPC file writer the io.WriteSeeker it asks for over
// a buffered writer; the writer only ever asks for the current position.
type seekBuffer struct {
	f   *os.File
	w   *bufio.Writer
	pos int64
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.pos += int64(n)
	return n, err
}

func (s *seekBuffer) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return s.pos, nil
	}
	if err := s.w.Flush(); err != nil {
		return 0, err
	}
	p, err := s.f.Seek(offset, whence)
	s.pos = p
	return p, err
}

func writeCSVFile(f *os.File, gz bool, schema *arrow.Schema, recs []arrow.Record) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	var out io.Writer = bw
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(bw)
		out = zw
	}
	if err := writeCSV(out, schema, recs); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// bufBytes is buffer i of d (nil when d has none).
func bufBytes(d arrow.ArrayData, i int) []byte {
	bufs := d.Buffers()
	if i >= len(bufs) || bufs[i] == nil {
		return nil
	}
	return bufs[i].Bytes()
}

// dictData returns the dictionary of d, or nil (ArrayData.Dictionary
// returns a typed nil pointer when there is none).
func dictData(d arrow.ArrayData) arrow.ArrayData {
	dd := d.Dictionary()
	if p, ok := dd.(*array.Data); dd == nil || (ok && p == nil) {
		return nil
	}
	return dd
}

package files

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

// ParquetFile is an opened Parquet file whose row groups are decoded one
// at a time onto a projection of its columns, for readers that stream a
// file (or a lake of files) with bounded memory instead of reading it
// whole (ReadFile). Decoding is the same column-chunk decoder ReadFile
// uses. Different row groups may be decoded concurrently; the caller keeps
// the underlying io.ReaderAt open while the ParquetFile is in use.
type ParquetFile struct {
	name  string
	pf    *parquet.File
	names []string             // top-level columns in file order
	cols  map[string]pqColumn  // columns with a supported type
	bad   map[string]error     // columns with an unsupported type, and why
	rows  []int64              // rows per row group
	meta  [][]columnChunkBytes // per row group, per leaf column
	md    arrow.Metadata       // the file's key-value metadata (fileMetadata)
}

type columnChunkBytes struct{ compressed, uncompressed int64 }

// OpenParquet reads and checks the footer of the Parquet data in r (size
// bytes), named name in errors. A truncated file is reported as "not a
// complete Parquet file"; a corrupt footer is an error, never a panic, and
// a footer whose lengths claim more than it holds or than
// MaxParquetFooterMemory wraps ErrCorruptParquet (pqcheck.go). Every
// Parquet file this module reads is opened here.
func OpenParquet(name string, r io.ReaderAt, size int64) (f *ParquetFile, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("%s: corrupt Parquet file (decoder panic: %v)", name, p)
		}
	}()
	if err := checkParquetFile(r, size); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: reading Parquet footer: %w", name, err)
	}
	f = &ParquetFile{name: name, pf: pf, cols: map[string]pqColumn{}, bad: map[string]error{}, md: fileMetadata(pf)}
	for _, c := range pf.Root().Columns() {
		n := c.Name()
		if _, dup := f.cols[n]; dup {
			return nil, fmt.Errorf("%s: column name %s occurs twice", name, n)
		}
		if _, dup := f.bad[n]; dup {
			return nil, fmt.Errorf("%s: column name %s occurs twice", name, n)
		}
		f.names = append(f.names, n)
		pc, err := parquetColumn(c)
		if err != nil {
			f.bad[n] = err
			continue
		}
		f.cols[n] = pc
	}
	md := pf.Metadata()
	nLeaves := len(pf.Schema().Columns())
	for g, rg := range pf.RowGroups() {
		n := rg.NumRows()
		if n < 0 || n > maxBatchRows {
			return nil, fmt.Errorf("%s: row group %d claims %d rows", name, g, n)
		}
		if len(rg.ColumnChunks()) != nLeaves {
			return nil, fmt.Errorf("%s: row group %d has %d column chunks, the schema has %d columns", name, g, len(rg.ColumnChunks()), nLeaves)
		}
		f.rows = append(f.rows, n)
		sizes := make([]columnChunkBytes, nLeaves)
		if g < len(md.RowGroups) {
			for j, cc := range md.RowGroups[g].Columns {
				if j < nLeaves {
					sizes[j] = columnChunkBytes{max(cc.MetaData.TotalCompressedSize, 0), max(cc.MetaData.TotalUncompressedSize, 0)}
				}
			}
		}
		f.meta = append(f.meta, sizes)
	}
	return f, nil
}

// Name returns the name the file was opened with.
func (f *ParquetFile) Name() string { return f.name }

// ColumnNames lists the file's top-level columns in file order.
func (f *ParquetFile) ColumnNames() []string { return append([]string(nil), f.names...) }

// ColumnType returns the Arrow type column name decodes to (see the
// package doc for the mapping). A column the file lacks is an error
// listing the file's columns; an unsupported Parquet type is an error
// naming it.
func (f *ParquetFile) ColumnType(name string) (arrow.DataType, error) {
	if c, ok := f.cols[name]; ok {
		return c.dt, nil
	}
	if err, ok := f.bad[name]; ok {
		return nil, fmt.Errorf("column %s: %w", name, err)
	}
	return nil, missingColumn(name, f.names)
}

// Nullable reports whether column name is OPTIONAL in the file.
func (f *ParquetFile) Nullable(name string) bool { return f.cols[name].maxDef > 0 }

// NumRows returns the rows of the whole file (the sum over row groups).
func (f *ParquetFile) NumRows() int64 {
	var n int64
	for _, r := range f.rows {
		n += r
	}
	return n
}

// NumRowGroups returns the number of row groups.
func (f *ParquetFile) NumRowGroups() int { return len(f.rows) }

// RowGroupRows returns the rows of row group g.
func (f *ParquetFile) RowGroupRows(g int) int64 { return f.rows[g] }

// RowGroupBytes estimates the memory that decoding columns cols of row
// group g needs: the Arrow buffers of the result (values, validity,
// offsets; for byte arrays the chunk's uncompressed size stands for the
// data) plus the compressed chunks read from disk. Unknown columns count
// nothing (ReadRowGroup reports them).
func (f *ParquetFile) RowGroupBytes(g int, cols []string) int64 {
	n := f.rows[g]
	var total int64
	for _, name := range cols {
		c, ok := f.cols[name]
		if !ok {
			continue
		}
		sz := f.meta[g][c.leaf]
		total += sz.compressed
		if c.maxDef > 0 {
			total += bitutil.BytesForBits(n)
		}
		switch {
		case c.kind == parquet.ByteArray:
			total += 4*(n+1) + sz.uncompressed
		case c.dt.ID() == arrow.BOOL:
			total += bitutil.BytesForBits(n)
		default:
			total += n * int64(c.dt.(arrow.FixedWidthDataType).BitWidth()/8)
		}
	}
	return total
}

// ReadRowGroup decodes row group g onto columns cols (in that order; nil
// means every column in file order) and returns one record that the caller
// releases. Errors name the file, the row group and the column; corrupt
// data is an error, never a panic.
func (f *ParquetFile) ReadRowGroup(g int, cols []string, mem memory.Allocator) (rec arrow.Record, err error) {
	return f.readRowGroup(g, cols, mem, nil)
}

// readRowGroup is ReadRowGroup with string data beyond what the footer
// declares taken from budget (nil: no bound but 2 GiB per column chunk).
func (f *ParquetFile) readRowGroup(g int, cols []string, mem memory.Allocator, budget *readBudget) (rec arrow.Record, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if g < 0 || g >= len(f.rows) {
		return nil, fmt.Errorf("%s: no row group %d (the file has %d)", f.name, g, len(f.rows))
	}
	if cols == nil {
		cols = f.names
	}
	if err := checkProjection(cols); err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	pcols := make([]pqColumn, len(cols))
	fields := make([]arrow.Field, len(cols))
	for k, name := range cols {
		if _, err := f.ColumnType(name); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		pcols[k] = f.cols[name]
		fields[k] = arrow.Field{Name: name, Type: pcols[k].dt, Nullable: pcols[k].maxDef > 0}
	}
	var arrs []arrow.Array
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("%s: row group %d: corrupt Parquet file (decoder panic: %v)", f.name, g, p)
		}
		if err != nil {
			releaseArrays(arrs)
		}
	}()
	n := int(f.rows[g])
	chunks := f.pf.RowGroups()[g].ColumnChunks()
	var scan pageScan // checkChunkPages's buffers
	defer scan.close()
	for _, c := range pcols {
		if err := checkCodec(f.pf, g, c.leaf); err != nil {
			return nil, fmt.Errorf("%s: row group %d, column %s: %w", f.name, g, c.name, err)
		}
		if err := checkChunkPages(&scan, f.pf, g, c.leaf, c.maxDef, int64(n)); err != nil {
			return nil, fmt.Errorf("%s: row group %d, column %s: %w", f.name, g, c.name, err)
		}
		a, err := c.readChunk(chunks[c.leaf], n, mem, budget, f.meta[g][c.leaf].uncompressed)
		if err != nil {
			return nil, fmt.Errorf("%s: row group %d, column %s: %w", f.name, g, c.name, err)
		}
		arrs = append(arrs, a)
	}
	rec = array.NewRecord(arrow.NewSchema(fields, &f.md), arrs, int64(n))
	releaseArrays(arrs)
	arrs = nil
	return rec, nil
}

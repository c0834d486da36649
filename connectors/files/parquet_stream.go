package files

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/parquet-go/parquet-go"
)

// ParquetWriter writes Arrow records to a Parquet stream one record at a
// time, for writers that cannot hold all their records (WriteFile takes
// them all at once and is built on this type). Columns are converted and
// written column-wise as in WriteFile; a row group is cut every
// WriteOptions.RowGroupRows rows and at every Flush, so a caller that
// flushes after each record gets one row group per record. The output is
// a deterministic function of the records and the flush points. Not safe
// for concurrent use.
type ParquetWriter struct {
	schema *arrow.Schema
	//lint:ignore SA1019 parquet.Writer is parquet-go's writer for schemas known only at run time (GenericWriter needs a Go row type)
	pw      *parquet.Writer
	opts    WriteOptions
	buf     []parquet.Value
	pending int // rows in the open row group
	closed  bool
}

// NewParquetWriter starts a Parquet stream for records of schema on w
// (zstd unless opts.Compression says otherwise; RowGroupRows defaults to
// 131072). The schema's metadata (forestd.schema, the probability columns'
// note of a prediction record, a dependence report's procedure and α) is
// written as the file's key-value metadata, sorted by key (but for
// ARROW:schema, an encoding of some other writer's schema), where pyarrow,
// DuckDB's parquet_kv_metadata and forestd's readers find it again.
// Nothing is written to w before the first row group is cut.
func NewParquetWriter(w io.Writer, schema *arrow.Schema, opts WriteOptions) (*ParquetWriter, error) {
	if schema == nil {
		return nil, errors.New("parquet writer: nil schema")
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = defaultRowGroupRows
	}
	ps, err := parquetSchema(schema)
	if err != nil {
		return nil, err
	}
	codec, err := codecByName(opts.Compression)
	if err != nil {
		return nil, err
	}
	popts := []parquet.WriterOption{ps, parquet.Compression(codec)}
	md := schema.Metadata()
	for i, k := range md.Keys() {
		if k != arrowSchemaKey { // it would describe another writer's columns
			popts = append(popts, parquet.KeyValueMetadata(k, md.Values()[i]))
		}
	}
	return &ParquetWriter{
		schema: schema,
		pw:     parquet.NewWriter(w, popts...),
		opts:   opts,
		buf:    make([]parquet.Value, 0, 4096),
	}, nil
}

// Write appends the rows of rec, whose fields must have the writer's
// names and types in order.
func (w *ParquetWriter) Write(rec arrow.Record) error {
	if w.closed {
		return errors.New("parquet writer: write after close")
	}
	if err := sameFields(w.schema, rec.Schema()); err != nil {
		return err
	}
	n := int(rec.NumRows())
	p := w.schema.NumFields()
	buf := w.buf
	for start := 0; start < n; {
		k := min(n-start, w.opts.RowGroupRows-w.pending)
		for j := 0; j < p; j++ {
			col := rec.Column(j)
			f := w.schema.Field(j)
			def := 0
			if f.Nullable {
				def = 1
			}
			// Columns are converted in slices of at most 4096 rows to
			// bound the Value buffer.
			for s := start; s < start+k; s += cap(buf) {
				e := min(start+k, s+cap(buf))
				buf = buf[:e-s]
				if err := toValues(buf, col, s, def, j); err != nil {
					return fmt.Errorf("column %s: %w", f.Name, err)
				}
				if _, err := w.pw.ColumnWriters()[j].WriteRowValues(buf); err != nil {
					return fmt.Errorf("column %s: %w", f.Name, err)
				}
			}
		}
		start += k
		w.pending += k
		if w.pending >= w.opts.RowGroupRows {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush ends the open row group, if it holds any rows, and writes it out.
func (w *ParquetWriter) Flush() error {
	if w.closed {
		return errors.New("parquet writer: flush after close")
	}
	if w.pending == 0 {
		return nil
	}
	w.pending = 0
	return w.pw.Flush()
}

// Close writes the last row group and the footer. It does not close the
// underlying io.Writer.
func (w *ParquetWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.pw.Close()
}

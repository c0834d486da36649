// Package files is forestd's file connector: it reads Parquet, Arrow IPC
// (file and stream format) and CSV (plain or gzip) files and directories
// into Arrow records, and writes Arrow records back to any of those
// formats. It owns format detection, directory listing, schema
// compatibility checks across files, CSV type inference, and atomic
// (temp file + rename) writes. It contains no model maths: turning records
// into training frames is arrowforest/frame's job.
//
// # Reading
//
// ReadPaths expands files and directories (ListFiles), reads every file
// (ReadFile) and checks that all files share one schema. Records are owned
// by the caller, who releases them.
//
//   - Parquet is decoded column chunk by column chunk with parquet-go:
//     each projected column's pages are decoded to typed values (plain or
//     dictionary-encoded), scattered into Arrow buffers by definition
//     level, one record per row group. Only flat files are supported
//     (no nested or repeated columns). Physical and logical types map to
//     Arrow as: BOOLEAN → bool; INT32 → int32, or int8/int16/uint8/
//     uint16/uint32 by INT annotation, date32 by DATE; INT64 → int64,
//     uint64 by INT(64,false), timestamp by TIMESTAMP; INT32/INT64 DECIMAL
//     → float64 (value/10^scale); FLOAT → float32; DOUBLE → float64;
//     BYTE_ARRAY → utf8 with STRING/ENUM/JSON annotation, else binary;
//     FIXED_LEN_BYTE_ARRAY(2) FLOAT16 → float16. INT96 and other
//     FIXED_LEN_BYTE_ARRAY types are refused with an error naming the
//     column. A truncated file is reported as "not a complete Parquet
//     file".
//   - Arrow IPC: the "ARROW1" magic selects the file format, otherwise the
//     stream format is read, whatever the extension. Before arrow-go sees
//     the data, the schema flatbuffers are checked (arrow-go v17 sizes
//     slices from unchecked vector lengths, which on corrupt input is an
//     unrecoverable out-of-memory crash) and every allocation is capped
//     relative to the input size; decoded records are validated (buffer
//     sizes, offsets, dictionary indices). ReadIPCBytes reads an IPC
//     payload held in memory (e.g. a Kafka message value).
//   - CSV (plain, or gzip by extension or magic bytes): a header row is
//     required; the text is streamed in batches of up to 64Ki rows, one
//     record each. Numeric columns are Int64 or Float64, others Utf8 (see
//     CSV type inference below); a stray non-number in a numeric column is
//     an error naming file, line, column and value, e.g.
//     `iris.csv.gz: line 4, column petal_length_cm: cannot parse "1.3cm" as a number`.
//
// Corrupt input is an error, never a panic: decoder panics inside
// parquet-go or arrow-go are recovered and reported as corrupt-file
// errors naming the file (see the fuzz tests and testdata/fuzz). One gap:
// parquet-go allocates page buffers from the (int32) sizes in page
// headers before reading them, so a corrupt Parquet page header can cost
// up to about 2 GiB of memory before the read fails.
//
// # CSV type inference
//
// The empty cell, "NA" and "NaN" are nulls in numeric columns; the empty
// cell and "NA" in string columns. The first batch (up to 64Ki rows,
// fewer for wide files) in which a column has a non-null cell decides its
// kind: numeric if more than half of its non-null cells parse as numbers,
// else Utf8. A numeric column is Int64 when every non-null cell in the
// file is a base-10 integer, otherwise Float64. A column with no non-null
// cell is Float64. Integral floats written by other tools without a
// decimal point (e.g. a regression target 151) therefore read as Int64;
// the frame treats an integer label as classification unless told the
// task is regression.
//
// # Writing
//
// WriteFile picks the format from the extension (.parquet, .arrow,
// .feather, .ipc, .arrows, .csv, .csv.gz) and writes through a temporary
// file in the same directory that is renamed into place on success.
// Parquet output is zstd-compressed by default and written column-wise
// with parquet-go's column writers, preserving column order.
package files

// Package lake reads and writes Parquet lakes: directory trees of Parquet
// files, usually hive-partitioned (date=2026-11-01/part-0.parquet), that
// are too large to load whole (ARCHITECTURE.md, Layers: "Batch scoring of Parquet
// lakes", §5 "Bounded memory", "Lake scoring splits files"). It owns
// listing, partition columns, planning and schema checks across files, the
// bounded-memory row-group scan, per-file outputs written atomically, and
// seeded row sampling. Decoding a row group is connectors/files' job
// (files.ParquetFile); the package contains no model maths.
//
// # Listing
//
// List expands directories (recursively), single files and glob patterns
// ("*", "?", "[...]" within a path element, "**" across directories) into
// Files. Names starting with "." or "_" are skipped, as Spark, Hive and
// DuckDB do for _SUCCESS, _temporary and in-progress files. Every
// directory element key=value below the lake root is a hive partition:
// the value is URL-unescaped and __HIVE_DEFAULT_PARTITION__ is null. A
// lake entered below its root (a partition directory, a file inside one,
// or a glob whose fixed prefix names partitions) keeps those partitions:
// the root is moved up above them.
//
// # Planning and schema checks
//
// Open reads every file's footer (concurrently, before any data) and
// checks the projection: Options.Columns names file columns and partition
// keys, and only those are ever decoded. A file is bad when it cannot be
// opened, is not a complete Parquet file, lacks a projected column, has a
// projected column of the wrong type (Options.Check, or else the type of
// the first usable file), has a column that is also a partition key, or
// has other partition keys than the lake. Under Skip a bad file is listed
// in Skipped with the reason and the others go on; under Fail the run
// stops with a FileError naming it. Partition columns are Utf8.
//
// # Scanning with bounded memory
//
// Scan decodes row groups with Options.Readers goroutines, several files
// and row groups at once, and delivers them to one callback in file order
// and row-group order. Every row group is charged to a byte budget
// (Options.MaxMemory) before it is decoded: the footer's estimate of the
// projected columns' decoded Arrow buffers and compressed chunks, its
// partition columns, and Options.RowBytes per row for the consumer's own
// working memory; the charge is returned when the consumer releases the
// batch. The budget is taken in delivery order by a single dispatcher, so
// the next batch to deliver never waits behind later ones, and a row group
// larger than the whole budget is decoded alone and listed in
// ScanStats.OverBudget, so the caller can say so. A consumer that holds
// batches must release them independently of receiving the next one
// (e.g. hand them to another goroutine), or it waits for itself.
//
// A file that fails while decoding (a corrupt page) yields one batch with
// Err set and nothing more of that file; consumers discard what they made
// of its earlier batches.
//
// # Writing
//
// FileWriter writes one output Parquet file (zstd unless told otherwise;
// one row group per Write) to a hidden temporary name in the output's
// directory and renames it into place on Commit, after an fsync, so an
// output exists under its final name only when complete: Done reports a
// finished output, a resumed run skips it, and CleanTemps removes what an
// interrupted run left. Where TempLocks holds (Linux, macOS and the BSDs),
// a writer holds an advisory lock (flock(2)) on its temporary file from
// its creation until it is renamed or removed, and the kernel drops the
// lock when the process dies, even by SIGKILL; CleanTemps removes only the
// temporary files whose lock it can take, so it is safe while other
// processes write in the same directory. Elsewhere CleanTemps removes
// every temporary file and must run alone. OutputPath mirrors an input's
// path below its root, partition directories included.
//
// # Sampling
//
// Lake.Sample draws N rows uniformly (reservoir) or in proportion to a
// label's classes (stratified) with memory for a few times N rows; see its
// documentation for the algorithms and their sources.
package lake

package files

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ReadOptions configures ReadPaths and ReadFile.
type ReadOptions struct {
	// Columns projects the files onto these columns, in this order; only
	// they are decoded (Parquet) or parsed (CSV). nil means every column in
	// file order. A name a file lacks is an error naming it.
	Columns []string

	// Mem allocates the returned records' buffers; nil means
	// memory.DefaultAllocator.
	Mem memory.Allocator

	// MaxMemory bounds the bytes the Parquet files of one read
	// (ReadFile, or all files of ReadPaths) decode to: what their footers
	// declare is checked before any row group is decoded, and string data
	// beyond it as it is decoded; a read over the bound fails with
	// ErrMemory naming the file. 0 means DefaultMaxReadMemory; negative is
	// an error. (Lakes bound memory per row group: connectors/lake.)
	MaxMemory int64
}

// DefaultMaxReadMemory is ReadOptions.MaxMemory's default.
const DefaultMaxReadMemory = 4 << 30

// budget returns the read budget opts.MaxMemory sets.
func (opts ReadOptions) budget() (*readBudget, error) {
	switch {
	case opts.MaxMemory < 0:
		return nil, fmt.Errorf("read options: MaxMemory %d must not be negative", opts.MaxMemory)
	case opts.MaxMemory == 0:
		return newReadBudget(DefaultMaxReadMemory), nil
	}
	return newReadBudget(opts.MaxMemory), nil
}

// Format is a file format recognised by this package.
type Format int

const (
	FormatUnknown   Format = iota
	FormatParquet          // Apache Parquet
	FormatIPCFile          // Arrow IPC file format ("ARROW1" magic; .arrow, .feather v2)
	FormatIPCStream        // Arrow IPC stream format (.arrows)
	FormatCSV              // CSV with a header row, plain or gzip-compressed
)

func (f Format) String() string {
	switch f {
	case FormatParquet:
		return "parquet"
	case FormatIPCFile:
		return "arrow-ipc-file"
	case FormatIPCStream:
		return "arrow-ipc-stream"
	case FormatCSV:
		return "csv"
	}
	return "unknown"
}

var (
	magicParquet = []byte("PAR1")
	magicArrow   = []byte("ARROW1")
	magicGzip    = []byte{0x1f, 0x8b}
	magicStream  = []byte{0xff, 0xff, 0xff, 0xff}
)

// extFormat returns the format family a file name's extension announces.
func extFormat(name string) Format {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".parquet"), strings.HasSuffix(n, ".pq"):
		return FormatParquet
	case strings.HasSuffix(n, ".arrow"), strings.HasSuffix(n, ".feather"), strings.HasSuffix(n, ".ipc"):
		return FormatIPCFile
	case strings.HasSuffix(n, ".arrows"):
		return FormatIPCStream
	case strings.HasSuffix(n, ".csv"), strings.HasSuffix(n, ".csv.gz"):
		return FormatCSV
	}
	return FormatUnknown
}

// sniff decides the format from the extension and the first bytes. The
// extension picks the family; within Arrow IPC the magic bytes decide
// between the file and the stream format whatever the extension says. An
// unknown extension is resolved from the magic bytes alone.
func sniff(name string, head []byte) (Format, error) {
	ext := extFormat(name)
	switch ext {
	case FormatParquet, FormatCSV:
		return ext, nil
	case FormatIPCFile, FormatIPCStream:
		if bytes.HasPrefix(head, magicArrow) {
			return FormatIPCFile, nil
		}
		return FormatIPCStream, nil
	}
	switch {
	case bytes.HasPrefix(head, magicParquet):
		return FormatParquet, nil
	case bytes.HasPrefix(head, magicArrow):
		return FormatIPCFile, nil
	case bytes.HasPrefix(head, magicStream):
		return FormatIPCStream, nil
	case bytes.HasPrefix(head, magicGzip):
		return FormatCSV, nil
	}
	return FormatUnknown, errors.New("unrecognised file format (want .parquet, .arrow, .arrows, .feather, .csv or .csv.gz)")
}

// DetectFormat reports the format of the file at path (see ReadFile).
func DetectFormat(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return FormatUnknown, err
	}
	defer f.Close()
	head := make([]byte, 8)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	ft, err := sniff(path, head[:n])
	if err != nil {
		return FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	return ft, nil
}

// ListFiles expands paths into the data files ReadPaths would read, in
// that order: a file argument is taken as it is (its format is checked
// when read), a directory is walked recursively and contributes, in
// lexical order, the files named *.parquet, *.pq, *.arrow, *.arrows,
// *.feather, *.ipc, *.csv and *.csv.gz (case-insensitive; symbolic links
// to files count, links to directories are not followed), skipping
// entries whose name starts with "." or "_" (e.g. .git, _SUCCESS,
// _temporary). Arguments keep the order given. A directory without data
// files is an error.
func ListFiles(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input paths")
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		before := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if extFormat(d.Name()) == FormatUnknown {
				return nil
			}
			if d.Type().IsRegular() {
				out = append(out, path)
			} else if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
					out = append(out, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == before {
			return nil, fmt.Errorf("%s: no Parquet, Arrow IPC or CSV files in directory", p)
		}
	}
	return out, nil
}

// ReadPaths reads every data file under paths (see ListFiles for the
// order) and returns their common schema and all their records: one
// record per Parquet row group, per Arrow IPC record batch, or per CSV
// batch of up to 64Ki rows. The records are owned by the caller, who must
// Release each of them; on error nothing needs releasing.
//
// All files must have compatible schemas: the same column names with the
// same types in the same order (nullability and metadata may differ; the
// returned schema marks a column nullable if any file does). The first
// file that differs is reported by name together with the differing
// field. As an exception, a column that CSV type inference made Int64 in
// one file and Float64 in another is read as Float64 everywhere.
func ReadPaths(paths []string, opts ReadOptions) (*arrow.Schema, []arrow.Record, error) {
	budget, err := opts.budget()
	if err != nil {
		return nil, nil, err
	}
	files, err := ListFiles(paths)
	if err != nil {
		return nil, nil, err
	}
	// Read the files in parallel, then merge them in order.
	type result struct {
		schema *arrow.Schema
		recs   []arrow.Record
		ft     Format
		err    error
	}
	results := make([]result, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				r := &results[i]
				r.schema, r.recs, r.ft, r.err = readFile(files[i], opts, budget)
			}
		}()
	}
	wg.Wait()
	fail := func(err error) (*arrow.Schema, []arrow.Record, error) {
		for _, r := range results {
			release(r.recs)
		}
		return nil, nil, err
	}
	for _, r := range results {
		if r.err != nil {
			return fail(r.err)
		}
	}

	schema, first, firstCSV := results[0].schema, files[0], results[0].ft == FormatCSV
	for i := 1; i < len(results); i++ {
		merged, widen, err := unify(schema, results[i].schema, firstCSV || results[i].ft == FormatCSV)
		if err != nil {
			return fail(fmt.Errorf("%s: schema differs from %s: %w", files[i], first, err))
		}
		schema = merged
		for _, j := range widen {
			for k := 0; k <= i; k++ {
				widenColumn(results[k].recs, j, opts.Mem)
			}
		}
	}
	var recs []arrow.Record
	for _, r := range results {
		recs = append(recs, r.recs...)
	}
	// Give every record the merged schema (nullability may have widened).
	for i, r := range recs {
		if !r.Schema().Equal(schema) {
			nr := array.NewRecord(schema, r.Columns(), r.NumRows())
			r.Release()
			recs[i] = nr
		}
	}
	return schema, recs, nil
}

// ReadFile reads one data file (format from its extension and magic
// bytes, see ListFiles). The caller releases the records.
func ReadFile(path string, opts ReadOptions) (*arrow.Schema, []arrow.Record, error) {
	budget, err := opts.budget()
	if err != nil {
		return nil, nil, err
	}
	s, recs, _, err := readFile(path, opts, budget)
	return s, recs, err
}

func readFile(path string, opts ReadOptions, budget *readBudget) (*arrow.Schema, []arrow.Record, Format, error) {
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if err := checkProjection(opts.Columns); err != nil {
		return nil, nil, FormatUnknown, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, FormatUnknown, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, FormatUnknown, err
	}
	head := make([]byte, 8)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, nil, FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	ft, err := sniff(path, head[:n])
	if err != nil {
		return nil, nil, FormatUnknown, fmt.Errorf("%s: %w", path, err)
	}
	var (
		schema *arrow.Schema
		recs   []arrow.Record
	)
	switch ft {
	case FormatParquet:
		schema, recs, err = readParquet(path, f, st.Size(), opts.Columns, mem, budget)
	case FormatIPCFile, FormatIPCStream:
		schema, recs, err = readIPC(path, f, ft == FormatIPCFile, opts.Columns, mem)
	case FormatCSV:
		schema, recs, err = readCSV(path, f, opts.Columns, mem)
	}
	return schema, recs, ft, err
}

func checkProjection(cols []string) error {
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		if seen[c] {
			return fmt.Errorf("column %s projected twice", c)
		}
		seen[c] = true
	}
	return nil
}

// unify checks that got has the same fields as want (names and types, in
// order) and returns want with nullability widened. With csv set, an
// Int64/Float64 difference is resolved to Float64 and the positions to
// widen are returned.
func unify(want, got *arrow.Schema, csv bool) (*arrow.Schema, []int, error) {
	if want.NumFields() != got.NumFields() {
		if err := CheckSchema(want, got); err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%d fields, want %d (extra fields: %s)", got.NumFields(), want.NumFields(), strings.Join(extraFields(want, got), ", "))
	}
	fields := make([]arrow.Field, want.NumFields())
	var widen []int
	for j := range fields {
		w, g := want.Field(j), got.Field(j)
		if w.Name != g.Name {
			if err := CheckSchema(want, got); err != nil {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("field %d is %s, want %s (same fields, different order)", j, g.Name, w.Name)
		}
		fields[j] = w
		fields[j].Nullable = w.Nullable || g.Nullable
		if arrow.TypeEqual(w.Type, g.Type) {
			continue
		}
		if csv && isIntFloat(w.Type, g.Type) {
			fields[j].Type = arrow.PrimitiveTypes.Float64
			widen = append(widen, j)
			continue
		}
		return nil, nil, fmt.Errorf("field %s is %s, want %s", g.Name, g.Type, w.Type)
	}
	md := want.Metadata()
	return arrow.NewSchema(fields, &md), widen, nil
}

func isIntFloat(a, b arrow.DataType) bool {
	x, y := a.ID(), b.ID()
	return (x == arrow.INT64 && y == arrow.FLOAT64) || (x == arrow.FLOAT64 && y == arrow.INT64)
}

func extraFields(want, got *arrow.Schema) []string {
	var out []string
	for _, f := range got.Fields() {
		if !want.HasField(f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// CheckSchema reports whether got provides every field of want with the
// same type; fields of got that want lacks are allowed, and order,
// nullability and metadata are ignored. The error lists every problem
// ("missing field pixel_7_7; field label is utf8, want int64").
func CheckSchema(want, got *arrow.Schema) error {
	if want == nil || got == nil {
		return errors.New("schema mismatch: nil schema")
	}
	var problems []string
	for _, w := range want.Fields() {
		idx := got.FieldIndices(w.Name)
		switch {
		case len(idx) == 0:
			problems = append(problems, "missing field "+w.Name)
		case len(idx) > 1:
			problems = append(problems, fmt.Sprintf("field %s occurs %d times", w.Name, len(idx)))
		default:
			if g := got.Field(idx[0]); !arrow.TypeEqual(g.Type, w.Type) {
				problems = append(problems, fmt.Sprintf("field %s is %s, want %s", w.Name, g.Type, w.Type))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("schema mismatch: " + strings.Join(problems, "; "))
}

// widenColumn converts column j of every record from Int64 to Float64 (a
// no-op for records where it is already Float64).
func widenColumn(recs []arrow.Record, j int, mem memory.Allocator) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	for i, r := range recs {
		a, ok := r.Column(j).(*array.Int64)
		if !ok {
			continue
		}
		fa := int64ToFloat64(mem, a)
		cols := append([]arrow.Array(nil), r.Columns()...)
		cols[j] = fa
		fields := append([]arrow.Field(nil), r.Schema().Fields()...)
		fields[j].Type = arrow.PrimitiveTypes.Float64
		md := r.Schema().Metadata()
		nr := array.NewRecord(arrow.NewSchema(fields, &md), cols, r.NumRows())
		fa.Release()
		r.Release()
		recs[i] = nr
	}
}

func int64ToFloat64(mem memory.Allocator, a *array.Int64) arrow.Array {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	vals := a.Int64Values()
	out := make([]float64, len(vals))
	for i, v := range vals {
		out[i] = float64(v)
	}
	var valid []bool
	if a.NullN() > 0 {
		valid = make([]bool, len(vals))
		for i := range valid {
			valid[i] = a.IsValid(i)
		}
	}
	b.AppendValues(out, valid)
	return b.NewArray()
}

// project returns recs reduced to cols (in that order), releasing the
// originals; cols nil returns them unchanged.
func project(name string, schema *arrow.Schema, recs []arrow.Record, cols []string) (*arrow.Schema, []arrow.Record, error) {
	if cols == nil {
		return schema, recs, nil
	}
	idx := make([]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		ix := schema.FieldIndices(c)
		if len(ix) != 1 {
			release(recs)
			if len(ix) == 0 {
				return nil, nil, fmt.Errorf("%s: %w", name, missingColumn(c, fieldNames(schema)))
			}
			return nil, nil, fmt.Errorf("%s: column %s occurs %d times", name, c, len(ix))
		}
		idx[k] = ix[0]
		fields[k] = schema.Field(ix[0])
	}
	md := schema.Metadata()
	ps := arrow.NewSchema(fields, &md)
	out := make([]arrow.Record, len(recs))
	for i, r := range recs {
		pc := make([]arrow.Array, len(idx))
		for k, j := range idx {
			pc[k] = r.Column(j)
		}
		out[i] = array.NewRecord(ps, pc, r.NumRows())
		r.Release()
	}
	return ps, out, nil
}

func fieldNames(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for j := range out {
		out[j] = s.Field(j).Name
	}
	return out
}

// DecodedBytes estimates the memory the inputs at paths (ListFiles) take
// read whole: their decoded columns (Parquet: the uncompressed size its
// footer gives; Arrow IPC: the file; CSV: twice the text, eight times a
// gzip). It is 0 when they cannot be listed (the read reports why).
func DecodedBytes(paths []string) int64 {
	list, err := ListFiles(paths)
	if err != nil {
		return 0 // the read reports it
	}
	var in int64
	for _, p := range list {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		low := strings.ToLower(p)
		switch {
		case strings.HasSuffix(low, ".parquet") || strings.HasSuffix(low, ".pq"):
			fh, err := os.Open(p)
			if err != nil {
				continue
			}
			if pf, err := OpenParquet(p, fh, st.Size()); err == nil {
				cols := pf.ColumnNames()
				for g := 0; g < pf.NumRowGroups(); g++ {
					in += pf.RowGroupBytes(g, cols)
				}
			} else {
				in += st.Size()
			}
			fh.Close()
		case strings.HasSuffix(low, ".csv.gz"):
			in += 8 * st.Size()
		case strings.HasSuffix(low, ".csv"):
			in += 2 * st.Size()
		default:
			in += st.Size()
		}
	}
	return in
}

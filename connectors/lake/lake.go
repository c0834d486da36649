package lake

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/internal/colname"
)

// OnError says what a bad file does to a run.
type OnError int

const (
	// Skip reports the file by name in Skipped and goes on with the others.
	Skip OnError = iota
	// Fail stops the run with an error naming the file.
	Fail
)

// ParseOnError parses "skip" or "fail".
func ParseOnError(s string) (OnError, error) {
	switch s {
	case "skip":
		return Skip, nil
	case "fail":
		return Fail, nil
	}
	return Skip, fmt.Errorf("on-error %q: want skip or fail", s)
}

func (o OnError) String() string {
	if o == Fail {
		return "fail"
	}
	return "skip"
}

// DefaultMaxMemory is the default budget for decoded data in flight.
const DefaultMaxMemory = 512 << 20

// Options configures Open.
type Options struct {
	// Columns are decoded from every file, in this order; a name may be a
	// file column or a hive partition key. Only these columns are read
	// (column projection). nil means every column of the first usable file
	// in file order, then the partition keys.
	Columns []string

	// Check validates the type of projected column name in each file; a
	// non-nil error makes the file bad. When Check is nil, or returns
	// ErrSameType for a column, the column must have the type it has in
	// the first usable file (in list order). Partition columns are Utf8
	// and are not checked.
	Check func(name string, dt arrow.DataType) error

	// MaxMemory bounds the bytes of decoded row groups in flight, counted
	// from the Parquet metadata (see files.ParquetFile.RowGroupBytes) plus
	// RowBytes per row; decoding waits while the budget is spent and
	// resumes as consumers release batches. A row group larger than the
	// whole budget is decoded alone. 0 means DefaultMaxMemory.
	MaxMemory int64

	// RowBytes is the consumer's own working memory per row of a batch it
	// holds (e.g. a float32 feature copy and predictions), counted in the
	// budget with the decoded data.
	RowBytes int64

	// Readers is the number of goroutines decoding row groups (default
	// GOMAXPROCS, at most 8).
	Readers int

	// OnError decides whether a bad file is skipped or stops the run.
	OnError OnError

	// Mem allocates the records' buffers (default memory.DefaultAllocator).
	Mem memory.Allocator
}

// FileError is a bad file that stopped a run under Fail.
type FileError struct {
	File string // the file's path
	Err  error  // what is wrong with it
}

func (e *FileError) Error() string { return "lake: " + e.File + ": " + e.Reason() }

func (e *FileError) Unwrap() error { return e.Err }

// Reason is the problem without the file's name.
func (e *FileError) Reason() string { return strings.TrimPrefix(e.Err.Error(), e.File+": ") }

// ErrSameType, returned by Options.Check, asks for the default rule: the
// column must have the type it has in the first usable file.
var ErrSameType = errors.New("lake: same type as the first file")

func (o Options) resolve() (Options, error) {
	if o.MaxMemory == 0 {
		o.MaxMemory = DefaultMaxMemory
	}
	if o.MaxMemory < 0 {
		return o, fmt.Errorf("lake: max memory %d must be positive", o.MaxMemory)
	}
	if o.RowBytes < 0 {
		return o, fmt.Errorf("lake: row bytes %d must not be negative", o.RowBytes)
	}
	if o.Readers == 0 {
		o.Readers = min(runtime.GOMAXPROCS(0), 8)
	}
	if o.Readers < 0 {
		return o, fmt.Errorf("lake: %d readers", o.Readers)
	}
	if o.OnError != Skip && o.OnError != Fail {
		return o, fmt.Errorf("lake: unknown on-error policy %d", o.OnError)
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	seen := map[string]bool{}
	for _, c := range o.Columns {
		if seen[c] {
			return o, fmt.Errorf("lake: column %s projected twice", c)
		}
		seen[c] = true
	}
	return o, nil
}

// Skipped is a file left out of a run and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Planned is a usable file of an opened lake: its footer was read and its
// projected columns passed the schema checks.
type Planned struct {
	File
	Rows      int64   // rows in the file
	RowGroups []int64 // rows per row group

	bytes []int64 // estimated decoded bytes per row group
}

// Lake is a planned lake: every listed file's footer has been read and
// checked against the projection, so the files, row groups and row counts
// are known before any data is decoded.
type Lake struct {
	opts    Options
	schema  *arrow.Schema // projected schema (every field nullable)
	cols    []string      // projected columns, in order
	part    []int         // per projected column: index into keys, or -1
	keys    []string      // partition keys of the lake
	files   []Planned
	skipped []Skipped
	mu      sync.Mutex
}

// Open lists paths (see List), reads every file's footer concurrently and
// checks the projection: a file that cannot be opened, is not a complete
// Parquet file, lacks a projected column, has a column of the wrong type
// (see Options.Check) or has different partition keys than the first file
// is bad; under Skip it is recorded in Skipped, under Fail Open returns an
// error naming it. A lake without any usable file is an error.
func Open(paths []string, opts Options) (*Lake, error) {
	list, err := List(paths)
	if err != nil {
		return nil, err
	}
	return OpenFiles(list, opts)
}

// OpenFiles plans an already listed set of files (see Open).
func OpenFiles(list []File, opts Options) (*Lake, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, errors.New("lake: no files")
	}
	type footer struct {
		pf   *files.ParquetFile
		rows []int64
		err  error
	}
	feet := make([]footer, len(list))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(opts.Readers, 1))
	for i := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if list[i].Err != nil { // an unreadable directory (List)
				feet[i].err = list[i].Err
				return
			}
			pf, fh, err := openParquet(list[i].Path)
			if err != nil {
				feet[i].err = err
				return
			}
			fh.Close()
			feet[i].pf = pf
			for g := 0; g < pf.NumRowGroups(); g++ {
				feet[i].rows = append(feet[i].rows, pf.RowGroupRows(g))
			}
		}()
	}
	wg.Wait()

	l := &Lake{opts: opts}
	// bad records or returns a file's problem; err may or may not name
	// the file already.
	bad := func(i int, err error) error {
		fe := &FileError{File: list[i].Path, Err: err}
		if opts.OnError == Fail {
			return fe
		}
		l.skipped = append(l.skipped, Skipped{File: list[i].Path, Reason: fe.Reason()})
		return nil
	}
	// The first file whose footer reads fixes the partition keys and,
	// with Columns nil, the projection; the first usable file fixes the
	// column types.
	types := map[string]arrow.DataType{}
	for i := range list {
		f := feet[i]
		if f.err != nil {
			if err := bad(i, f.err); err != nil {
				return nil, err
			}
			continue
		}
		if l.cols == nil {
			if err := l.project(list[i], f.pf); err != nil {
				return nil, err
			}
		}
		got, err := l.checkFile(list[i], f.pf, types)
		if err != nil {
			if err := bad(i, err); err != nil {
				return nil, err
			}
			continue
		}
		for c, dt := range got {
			if _, ok := types[c]; !ok {
				types[c] = dt
			}
		}
		est := make([]int64, len(f.rows))
		fcols := l.fileColumns()
		for g := range est {
			est[g] = f.pf.RowGroupBytes(g, fcols)
		}
		l.files = append(l.files, Planned{File: list[i], Rows: f.pf.NumRows(), RowGroups: f.rows, bytes: est})
	}
	if len(l.files) == 0 {
		pfs := make([]*files.ParquetFile, len(feet))
		errs := make([]error, len(feet))
		for i, f := range feet {
			pfs[i], errs[i] = f.pf, f.err
		}
		if err := missingEverywhere(list, pfs, errs, l.cols, l.keys); err != nil {
			return nil, err
		}
		reasons := make([]string, 0, len(l.skipped))
		for _, s := range l.skipped {
			reasons = append(reasons, s.Reason)
		}
		return nil, fmt.Errorf("lake: no usable file among %d: %s", len(list), strings.Join(reasons, "; "))
	}
	l.finishSchema(types)
	return l, nil
}

// MissingColumnsError is a lake without a usable file because some
// projected columns are in none of its files whose footer reads: the
// columns are named once, not once per file.
type MissingColumnsError struct {
	Columns []string // the projected columns no file has, in projection order
	Files   int      // the files whose footer was read, all lacking Columns
	Listed  int      // the files listed
	Have    []string // the first such file's columns
	Others  []string // why the files whose footer did not read are unusable
}

func (e *MissingColumnsError) Error() string {
	s := ""
	if len(e.Columns) > 1 {
		s = "s"
	}
	msg := fmt.Sprintf("lake: no usable file among %d: no file has column%s %s (the first has %s)%s",
		e.Listed, s, strings.Join(e.Columns, ", "), colname.List(e.Have), colname.SuggestAll(e.Columns, e.Have))
	if len(e.Others) > 0 {
		msg += "; " + strings.Join(e.Others, "; ")
	}
	return msg
}

// missingEverywhere returns a *MissingColumnsError when some projected
// file column (not a partition key) is in none of the files whose footer
// read (pfs[i] non-nil; errs[i] why not), nil otherwise.
func missingEverywhere(list []File, pfs []*files.ParquetFile, errs []error, cols, keys []string) error {
	var first []string
	var others []string
	lacks := map[string]int{}
	read := 0
	for i, pf := range pfs {
		if pf == nil {
			others = append(others, (&FileError{File: list[i].Path, Err: errs[i]}).Reason())
			continue
		}
		names := pf.ColumnNames()
		if first == nil {
			first = names
		}
		read++
		for _, c := range cols {
			if !slices.Contains(keys, c) && !slices.Contains(names, c) {
				lacks[c]++
			}
		}
	}
	var missing []string
	for _, c := range cols {
		if read > 0 && lacks[c] == read {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &MissingColumnsError{Columns: missing, Files: read, Listed: len(list), Have: first, Others: others}
}

// project fixes the projection from the first usable file.
func (l *Lake) project(f File, pf *files.ParquetFile) error {
	for _, p := range f.Partitions {
		l.keys = append(l.keys, p.Key)
	}
	cols := l.opts.Columns
	if cols == nil {
		for _, n := range pf.ColumnNames() {
			if !slices.Contains(l.keys, n) {
				cols = append(cols, n)
			}
		}
		cols = append(cols, l.keys...)
	}
	if len(cols) == 0 {
		return fmt.Errorf("lake: %s has no columns", f.Path)
	}
	l.cols = cols
	l.part = make([]int, len(cols))
	for k, c := range cols {
		l.part[k] = slices.Index(l.keys, c)
	}
	return nil
}

// checkFile checks one file against the projection and returns the types
// of its projected file columns; types holds the first usable file's
// types, against which columns checked by equality are compared.
func (l *Lake) checkFile(f File, pf *files.ParquetFile, types map[string]arrow.DataType) (map[string]arrow.DataType, error) {
	want := "[" + strings.Join(l.keys, ", ") + "]"
	if len(f.Partitions) != len(l.keys) {
		return nil, fmt.Errorf("partition keys %s differ from the lake's %s", partKeys(f.Partitions), want)
	}
	for k, p := range f.Partitions {
		if p.Key != l.keys[k] {
			return nil, fmt.Errorf("partition keys %s differ from the lake's %s", partKeys(f.Partitions), want)
		}
		if _, err := pf.ColumnType(p.Key); err == nil {
			return nil, fmt.Errorf("column %s is both a file column and a partition key", p.Key)
		}
	}
	got := map[string]arrow.DataType{}
	var problems, missing []string
	names := pf.ColumnNames()
	for k, c := range l.cols {
		if l.part[k] >= 0 {
			continue
		}
		if !slices.Contains(names, c) {
			missing = append(missing, c)
			continue
		}
		dt, err := pf.ColumnType(c)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		got[c] = dt
		cerr := ErrSameType
		if l.opts.Check != nil {
			cerr = l.opts.Check(c, dt)
		}
		switch {
		case errors.Is(cerr, ErrSameType):
			if w, ok := types[c]; ok && !arrow.TypeEqual(w, dt) {
				problems = append(problems, fmt.Sprintf("column %s is %s, want %s as in the first file", c, dt, w))
			}
		case cerr != nil:
			problems = append(problems, cerr.Error())
		}
	}
	if len(missing) > 0 {
		s := ""
		if len(missing) > 1 {
			s = "s"
		}
		problems = append([]string{fmt.Sprintf("missing column%s %s (the file has %s)%s",
			s, strings.Join(missing, ", "), colname.List(names), colname.SuggestAll(missing, names))}, problems...)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return got, nil
}

func partKeys(ps []Partition) string {
	ks := make([]string, len(ps))
	for i, p := range ps {
		ks[i] = p.Key
	}
	return "[" + strings.Join(ks, ", ") + "]"
}

// finishSchema builds the projected schema from the first usable file's
// types.
func (l *Lake) finishSchema(types map[string]arrow.DataType) {
	fields := make([]arrow.Field, len(l.cols))
	for k, c := range l.cols {
		fields[k] = arrow.Field{Name: c, Nullable: true, Type: arrow.BinaryTypes.String}
		if l.part[k] < 0 {
			fields[k].Type = types[c]
		}
	}
	l.schema = arrow.NewSchema(fields, nil)
}

// openParquet opens path and reads its footer; the caller closes fh.
func openParquet(path string) (*files.ParquetFile, *os.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	pf, err := files.OpenParquet(path, fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	return pf, fh, nil
}

// Schema returns the projected schema: the columns in projection order,
// every field nullable, partition columns Utf8. A column validated by
// Options.Check has the first usable file's type here; each Batch's record
// carries its own file's types.
func (l *Lake) Schema() *arrow.Schema { return l.schema }

// PartitionKeys returns the lake's hive partition keys, outermost first.
func (l *Lake) PartitionKeys() []string { return slices.Clone(l.keys) }

// Files returns the usable files in list order.
func (l *Lake) Files() []Planned { return l.files }

// Rows returns the rows of the usable files.
func (l *Lake) Rows() int64 {
	var n int64
	for _, f := range l.files {
		n += f.Rows
	}
	return n
}

// Skipped returns the files skipped so far, while planning and while
// scanning, with the reasons.
func (l *Lake) Skipped() []Skipped {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.skipped)
}

// OnError returns the lake's bad-file policy.
func (l *Lake) OnError() OnError { return l.opts.OnError }

// SetOnError changes the bad-file policy for later scans (e.g. open a
// single file under Fail to get its problem as an error, then scan it
// under Skip). Not safe while a scan runs.
func (l *Lake) SetOnError(o OnError) { l.opts.OnError = o }

// AddSkipped records a file that a consumer gave up on (e.g. its rows
// could not be scored), so that Skipped lists every bad file of a run.
func (l *Lake) AddSkipped(file string, err error) { l.skip(file, err) }

func (l *Lake) skip(file string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skipped = append(l.skipped, Skipped{File: file, Reason: strings.TrimPrefix(err.Error(), file+": ")})
}

// FileColumns returns the column names of the first file of list whose
// footer reads, in file order (hive partition keys are not among them).
// It is how a caller picks a default projection before Open.
func FileColumns(list []File) ([]string, error) {
	var errs []error
	for _, f := range list {
		if f.Err != nil {
			errs = append(errs, f.Err)
			continue
		}
		pf, fh, err := openParquet(f.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fh.Close()
		return pf.ColumnNames(), nil
	}
	return nil, fmt.Errorf("lake: no readable file: %w", errors.Join(errs...))
}

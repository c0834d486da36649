// Package lakescore scores a Parquet lake with a forestd model into an
// output directory that mirrors it: one Parquet prediction file per input
// file (schemas.Predictions, or schemas.MultiPredictions for a model with
// several outputs), written under a temporary name and renamed when
// complete, so a crashed or interrupted run can be resumed (Options.Resume)
// and a reader never sees half a file. Options.Probs chooses a
// classification model's probability columns (scoring.Probs). A run first
// removes the temporary files that runs killed midway left in the output
// directory, and keeps those other live processes are writing
// (lake.CleanTemps; without locks, lake.TempLocks, only a resumed run
// removes them, all of them).
//
// Run reads the lake with connectors/lake (footers and schemas checked
// first, only the model's columns decoded, a row group at a time within
// Options.MaxMemory), scores chunks of rows on Options.Threads goroutines
// with scoring.Model.Score while one writer emits them in order, and
// returns a Summary. RunWorker does the same for the files that a consumer
// group hands this process through a Kafka topic (internal/lakework), so
// that several processes share one lake. The command line (forestd score
// --out DIR) is a thin user of both.
//
// Process-wide settings stay with the caller: a program that wants the Go
// runtime's soft memory limit set to Options.MaxMemory (as forestd score
// does) sets it itself (runtime/debug.SetMemoryLimit).
package lakescore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/internal/colname"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// Options configure a lake run. The zero value scores with every CPU
// within lake.DefaultMaxMemory, skipping bad files.
type Options struct {
	// Keep names input columns copied into every prediction (e.g. an id);
	// each must be exactly one column of the lake.
	Keep []string
	// Probs chooses the class probabilities of a classification model's
	// predictions (scoring.Probs: auto, all, top<k>, none).
	Probs scoring.Probs
	// Threads scores that many chunks at once (0: every CPU).
	Threads int
	// MaxMemory bounds the run's memory in bytes (0: lake.DefaultMaxMemory):
	// half of what it leaves beside the memory already in use goes to row
	// groups in flight, chunks being scored, which are counted with the
	// probabilities Probs keeps (scoring.Model.PredictionBytes: a
	// many-class model's rows×K matrix with all, its top k or class with
	// top<k> or none, plus each scorer's blocks), and the output writer's
	// compressor (files.WriterCodecBytes: 4 MiB for zstd, 1 MiB for gzip).
	MaxMemory int64
	// OnError says what a bad file (unreadable, missing a column, wrong
	// type) does: lake.Skip (listed in the summary; the default) or
	// lake.Fail (the run stops).
	OnError lake.OnError
	// Readers decode row groups concurrently (0: the CPUs, at most 8).
	Readers int
	// Resume skips input files whose output is complete and was written by
	// this model (scored by another model, it is scored again).
	Resume bool
	// Compression of the output files: zstd (default), snappy, gzip, lz4
	// or none.
	Compression string
	// DryRun reads and checks the model's columns of every file and counts
	// rows; it scores and writes nothing.
	DryRun bool
	// Progress, when set, is called from one goroutine after each chunk of
	// rows is written (and once per file without rows).
	Progress func(Progress)
	// Mem allocates the decoded row groups and the predictions (nil:
	// memory.DefaultAllocator).
	Mem memory.Allocator
}

// Progress is how far a Run has come.
type Progress struct {
	// Files and Rows are what this run scores (resumed files excluded);
	// FilesDone and RowsDone what is written.
	Files, FilesDone int
	Rows, RowsDone   int64
}

// Summary reports a finished run; its JSON form is what forestd score
// prints.
type Summary struct {
	Model       string         `json:"model,omitempty"`
	ModelID     string         `json:"model_id"`
	Out         string         `json:"out,omitempty"`
	Files       int            `json:"files"`
	FilesListed int            `json:"files_listed"`
	Resumed     int            `json:"resumed"`
	Rows        int64          `json:"rows"`
	Skipped     []lake.Skipped `json:"skipped"`
	// Probs is the probabilities the predictions carry (a classification
	// model's: all, top<k> or none; scoring.Model.ResolveProbs).
	Probs      string  `json:"probs,omitempty"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_second"`
	PeakBytes  int64   `json:"peak_batch_bytes"`
	// OverBudget lists the row groups too large for the memory budget on
	// their own: each was decoded alone, and the run's memory went past
	// MaxMemory by its excess (Warning says so).
	OverBudget []lake.OverBudget `json:"over_budget,omitempty"`
	Warning    string            `json:"warning,omitempty"`
	ChunkRows  int64             `json:"chunk_rows"`
	MaxMemory  int64             `json:"max_memory"`
	DryRun     bool              `json:"dry_run,omitempty"`
	// Temps are the temporary files of other runs that the run found in
	// Out before it started (nil: none): those it removed, whose writer
	// was gone (killed, crashed), and those it kept, being written by a
	// live process (see cleanTemps).
	Temps  *lake.Temps    `json:"temps,omitempty"`
	Worker *WorkerSummary `json:"worker,omitempty"`
}

// cleanTemps removes, before a run writes into out, the temporary files
// that earlier runs killed midway (SIGKILL, a crash, the machine going
// down) left there: those whose lock no process holds (lake.CleanTemps).
// A file another process is writing — a worker sharing out — is kept. A
// resumed run, as the only writer in out, also removes those that cannot
// be judged (no locks: lake.TempLocks, or a file system without them), as
// --resume did before writers locked their files. It returns nil when
// there were none.
func cleanTemps(out string, resume bool) (*lake.Temps, error) {
	n, err := lake.CleanTemps(out, resume)
	if err != nil {
		return nil, err
	}
	if n == (lake.Temps{}) {
		return nil, nil
	}
	return &n, nil
}

// OptionError is an error about one of the Options — Option names the
// field (MaxMemory, Keep, Compression, Threads, Readers, Probs) — or about
// Run's output directory (Option "Out": one that is an input directory,
// lies inside one or holds an input, lake.CheckOutDir).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// scorer scores a lake's files into a mirrored output tree.
type scorer struct {
	m        *scoring.Model
	out      string
	opts     Options
	threads  int
	spec     *arrow.Schema // the output schema (prepare)
	wopts    files.WriteOptions
	chunk    int64 // rows scored at a time
	work     int64 // the scoring's estimated memory: chunks in flight, scorers' blocks, the writer's compressor
	lopts    lake.Options
	progress Progress
	probs    scoring.Probs // what a classification model's predictions carry
}

// newScorer checks the options, sizes the chunks within the memory budget
// and returns the lake options that read the model's columns.
func newScorer(m *scoring.Model, out string, opts Options) (*scorer, error) {
	if opts.Threads < 0 {
		return nil, &OptionError{"Threads", fmt.Errorf("%d", opts.Threads)}
	}
	if opts.Readers < 0 {
		return nil, &OptionError{"Readers", fmt.Errorf("%d", opts.Readers)}
	}
	if opts.MaxMemory == 0 {
		opts.MaxMemory = lake.DefaultMaxMemory
	}
	if opts.MaxMemory < 0 {
		return nil, &OptionError{"MaxMemory", fmt.Errorf("%d", opts.MaxMemory)}
	}
	if opts.Compression == "" {
		opts.Compression = "zstd"
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	s := &scorer{m: m, out: out, opts: opts, threads: opts.Threads, wopts: files.WriteOptions{Compression: opts.Compression}}
	if s.threads == 0 {
		s.threads = runtime.GOMAXPROCS(0)
	}
	if _, err := files.NewParquetWriter(discard{}, arrow.NewSchema(nil, nil), s.wopts); err != nil {
		return nil, &OptionError{"Compression", err}
	}
	probs, err := m.ResolveProbs(opts.Probs)
	if err != nil {
		return nil, &OptionError{"Probs", err}
	}
	if m.Classes() != nil {
		s.probs = probs
	}
	if err := m.Prepare(s.threads); err != nil {
		return nil, err
	}
	cols := slices.Clone(m.Columns())
	for _, k := range opts.Keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	f := m.Forest()
	// What Score holds to predict a chunk (scoring.Model.PredictionBytes):
	// per row the class and the probabilities s.probs keeps — every
	// class's (rows×K) for all, each rank's for top<k>, none for none —
	// and, whatever the chunk, each scorer's blocks of rows (the forest's
	// sums per class, and the block's probabilities that top<k> and none
	// reduce as the forest finishes them).
	predRow, _, err := m.PredictionBytes(1, 1, s.probs)
	if err != nil {
		return nil, &OptionError{"Probs", err}
	}
	// Working memory per row besides the decoded columns: the float32
	// feature copy, the predictions, and the output record (model id,
	// version, source path, row, class name or value, the probabilities
	// it carries, passthrough columns) twice: as Arrow arrays and in the
	// Parquet writer's buffers; a model with several outputs holds q
	// values twice more, and a drf model the embedded point (m float64)
	// and the nearest training row.
	out1 := int64(len(m.ID())+4) + 8 + 128 + 8 + 16 + outProbBytes(m.Classes(), s.probs) + int64(16*len(opts.Keep))
	perRow := int64(4*(len(m.Columns())+len(f.Features))) + predRow + 2*out1
	if t := m.Targets(); t != nil {
		perRow += int64(2 * 8 * len(t))
		if d := f.DRF; d != nil {
			perRow += int64(8*d.Dim() + 4)
		}
	}
	free, err := fitBudget(opts.MaxMemory)
	if err != nil {
		return nil, &OptionError{"MaxMemory", err}
	}
	// Rows are scored in chunks whose working memory is fixed, so a large
	// row group costs its decoded columns only; the chunks in flight
	// (2·threads+1: being scored, queued, being written) are set aside
	// from the budget, and so are the blocks of the threads scoring
	// (which stop growing with the chunk past one block: for many classes
	// a block's sums and probabilities, for few a block is the chunk).
	// The chunk size (a power of two, 1Ki..128Ki rows, whose chunks in
	// flight take at most 3/8 of MaxMemory) depends on MaxMemory, the
	// threads, the model and the probabilities kept only, so that outputs
	// are byte for byte the same from run to run (each chunk is one output
	// row group). Larger chunks score faster: Predict orders a block's
	// rows by their leaf in the first tree.
	inflight := int64(2*s.threads + 1)
	s.chunk = 1 << 10
	for s.chunk < 1<<17 && 2*s.chunk*perRow*inflight*8 <= 3*opts.MaxMemory {
		s.chunk *= 2
	}
	_, blocks, err := m.PredictionBytes(int(s.chunk), 1, s.probs) // each chunk on one thread
	if err != nil {
		return nil, &OptionError{"Probs", err}
	}
	s.work = inflight*s.chunk*perRow + int64(s.threads)*blocks
	if !opts.DryRun {
		// the one output open at a time: its compressor's encoder (a zstd
		// encoder's history and tables: files.WriterCodecBytes), beside
		// the column buffers counted per row above
		s.work += files.WriterCodecBytes(opts.Compression)
	}
	s.lopts = lake.Options{MaxMemory: free - s.work, Readers: opts.Readers, OnError: opts.OnError,
		Columns: cols, Check: featureCheck(m), Mem: opts.Mem}
	if s.lopts.MaxMemory < free/4 {
		s.lopts.MaxMemory = free / 4
	}
	return s, nil
}

// outProbBytes is the size per row of the probability columns of a
// prediction record: 4 bytes per class, or per rank the longest class
// name and its offset plus 4 bytes.
func outProbBytes(classes []string, probs scoring.Probs) int64 {
	if probs == scoring.ProbsAll || probs == scoring.ProbsAuto {
		return int64(4 * len(classes))
	}
	n := probs.TopK()
	longest := 0
	for _, c := range classes {
		longest = max(longest, len(c))
	}
	return int64(n * (longest + 8))
}

// fitBudget returns the memory a lake run may fill with data: half of what
// maxMemory leaves beside the memory already in use (the model, the
// runtime), the other half being room for the garbage collector and for
// buffers the estimates miss. A maxMemory below twice what is in use is an
// error.
func fitBudget(maxMemory int64) (int64, error) {
	// two collections: objects cached in a sync.Pool (parquet-go's page
	// and column buffers from a previous run in this process) survive the
	// first one in the pool's victim cache, and would count as in use
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// live memory after a collection: the model and whatever else the
	// process holds (not the heap the runtime keeps for reuse, which in a
	// long-lived process says more about its past than about this run)
	inUse := int64(ms.HeapAlloc + ms.StackInuse)
	free := maxMemory - inUse
	if free < inUse {
		return 0, fmt.Errorf("%d MiB is too small: %d MiB are in use before reading (the model and the runtime); give at least %d MiB",
			maxMemory>>20, inUse>>20, (2*inUse)>>20+1)
	}
	return free / 2, nil
}

// featureCheck accepts a model feature column of a numeric type, or a
// string for a categorical feature the model has levels for; the other
// projected columns (passthrough) keep the first file's type.
func featureCheck(m *scoring.Model) func(string, arrow.DataType) error {
	names, lv := m.Forest().SourceColumns() // a mapped model reads its mapping's inputs
	levels := map[string]bool{}
	feats := map[string]bool{}
	for j, n := range names {
		feats[n] = true
		if lv != nil && lv[j] != nil {
			levels[n] = true
		}
	}
	return func(name string, dt arrow.DataType) error {
		if !feats[name] {
			return lake.ErrSameType
		}
		switch {
		case arrow.IsInteger(dt.ID()), arrow.IsFloating(dt.ID()), dt.ID() == arrow.BOOL:
			return nil
		case levels[name] && (dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING):
			return nil
		}
		want := "a number"
		if levels[name] {
			want = "a number or a string category"
		}
		return fmt.Errorf("column %s is %s, the model needs %s", name, dt, want)
	}
}

// Run scores the lake at paths (directories searched recursively, globs or
// files; hive partition directories become columns) with m into the
// directory out, one output file per input file at the same relative path.
// A bad file that stops the run (lake.Fail) is a *lake.FileError, and
// errors.Is(err, scoring.ErrInput) when the file's content is at fault
// (see dataFault).
func Run(ctx context.Context, m *scoring.Model, paths []string, out string, opts Options) (*Summary, error) {
	sum, err := run(ctx, m, paths, out, opts)
	return sum, dataFault(err)
}

// dataFault marks a file error that the file's content caused — not a
// Parquet file, truncated, corrupt, a missing or wrong-typed column — as
// scoring.ErrInput, keeping its text, as every error that is the data's
// fault is; an error of the file system (a permission, a vanished file,
// an I/O error: an *fs.PathError below it) is not the data's fault.
func dataFault(err error) error {
	var fe *lake.FileError
	var pe *fs.PathError
	if errors.As(err, &fe) && !errors.As(fe.Err, &pe) && !errors.Is(err, scoring.ErrInput) {
		return inputFault{err}
	}
	return err
}

// inputFault is an error that is also scoring.ErrInput.
type inputFault struct{ err error }

func (e inputFault) Error() string   { return e.err.Error() }
func (e inputFault) Unwrap() []error { return []error{e.err, scoring.ErrInput} }

func run(ctx context.Context, m *scoring.Model, paths []string, out string, opts Options) (*Summary, error) {
	if len(paths) == 0 {
		return nil, errors.New("no input: give a lake directory, a glob or files")
	}
	t0 := time.Now()
	s, err := newScorer(m, out, opts)
	if err != nil {
		return nil, err
	}
	if err := lake.CheckOutDir(out, paths); err != nil {
		return nil, &OptionError{"Out", err}
	}
	l, err := lake.Open(paths, s.lopts)
	if err != nil {
		return nil, keepMissing(err, opts.Keep)
	}
	if err := s.prepare(l); err != nil {
		return nil, err
	}
	sum := &Summary{ModelID: m.ID(), FilesListed: len(l.Files()) + len(l.Skipped()), MaxMemory: s.opts.MaxMemory, DryRun: opts.DryRun,
		Probs: string(s.probs)}
	if !opts.DryRun {
		sum.Out = out
	}
	var done func(op string) bool
	if opts.Resume && !opts.DryRun {
		done = s.done
	}
	which, resumed, err := pending(l, out, done)
	if err != nil {
		return nil, err
	}
	sum.Resumed = resumed
	if !opts.DryRun {
		if sum.Temps, err = cleanTemps(out, opts.Resume); err != nil {
			return nil, err
		}
	}
	s.progress.Files = len(which)
	for _, i := range which {
		s.progress.Rows += l.Files()[i].Rows
	}
	res, err := s.mapper(opts.DryRun).run(ctx, l, which)
	if err != nil {
		return nil, err
	}
	sum.Files, sum.Rows, sum.PeakBytes, sum.ChunkRows = res.files, res.rows, res.peak, s.chunk
	sum.OverBudget = res.over
	sum.warn(s.lopts.MaxMemory)
	sum.Skipped = l.Skipped()
	if sum.Skipped == nil {
		sum.Skipped = []lake.Skipped{}
	}
	sum.Seconds = time.Since(t0).Seconds()
	sum.RowsPerSec = float64(sum.Rows) / math.Max(sum.Seconds, 1e-9)
	return sum, nil
}

// keepMissing turns a lake without a usable file because a kept column is
// in none of its files into an OptionError naming Keep and the column
// once; other errors are returned as they are.
func keepMissing(err error, keep []string) error {
	var me *lake.MissingColumnsError
	if !errors.As(err, &me) {
		return err
	}
	var cols []string
	for _, c := range me.Columns {
		if slices.Contains(keep, c) {
			cols = append(cols, fmt.Sprintf("%q", c))
		}
	}
	if cols == nil {
		return err
	}
	s, files := "", fmt.Sprintf("%d files", me.Files)
	if len(cols) > 1 {
		s = "s"
	}
	if me.Files < me.Listed {
		files = fmt.Sprintf("%d readable files (of %d)", me.Files, me.Listed)
	}
	var names []string
	for _, c := range me.Columns {
		if slices.Contains(keep, c) {
			names = append(names, c)
		}
	}
	return &OptionError{"Keep", fmt.Errorf("no column%s %s in the lake: none of its %s has it (the first has %s)%s",
		s, strings.Join(cols, ", "), files, colname.List(me.Have), colname.SuggestAll(names, me.Have))}
}

// done reports whether op is a complete output of this run: a complete
// Parquet file (lake.Done) with this run's columns (the same kept columns
// and probabilities) whose model_id is the model's. An output of another
// model, or with other columns, is scored again.
func (s *scorer) done(op string) bool {
	if !lake.Done(op) { // before s.spec: a worker's first job has none yet
		return false
	}
	want := make([]string, 0, s.spec.NumFields())
	for _, f := range s.spec.Fields() {
		want = append(want, f.Name)
	}
	slices.Sort(want)
	return doneWith(op, want, func(pf *files.ParquetFile) bool {
		if pf.NumRows() == 0 {
			return true
		}
		for g := 0; g < pf.NumRowGroups(); g++ {
			if pf.RowGroupRows(g) == 0 {
				continue
			}
			rec, err := pf.ReadRowGroup(g, []string{schemas.ColModelID}, s.opts.Mem)
			if err != nil {
				return false
			}
			defer rec.Release()
			return rec.Column(0).ValueStr(0) == s.m.ID()
		}
		return false
	})
}

// doneWith reports whether op is a complete Parquet output (lake.Done)
// whose columns are want (sorted) and, when check is set, that check
// accepts.
func doneWith(op string, want []string, check func(*files.ParquetFile) bool) bool {
	if !lake.Done(op) {
		return false
	}
	fh, err := os.Open(op)
	if err != nil {
		return false
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return false
	}
	pf, err := files.OpenParquet(op, fh, st.Size())
	if err != nil {
		return false
	}
	have := pf.ColumnNames()
	slices.Sort(have)
	if !slices.Equal(have, want) {
		return false
	}
	return check == nil || check(pf)
}

// pending returns the files of l to write into out, those done reports
// complete left out (counted as resumed). It refuses an output that would
// overwrite its input or that two inputs would write.
func pending(l *lake.Lake, out string, done func(op string) bool) (which []int, resumed int, err error) {
	outs := map[string]string{}
	for i, pf := range l.Files() {
		op := lake.OutputPath(out, pf.File)
		if err := notInput(op, pf.Path); err != nil {
			return nil, 0, err
		}
		if prev, dup := outs[op]; dup {
			return nil, 0, fmt.Errorf("%s and %s would both write %s (give inputs with distinct paths below their roots)", prev, pf.Path, op)
		}
		outs[op] = pf.Path
		if done != nil && done(op) {
			resumed++
			continue
		}
		which = append(which, i)
	}
	return which, resumed, nil
}

// notInput refuses an output path that is the input file itself (out
// equal to the lake's root, or a link to it): a run never overwrites its
// input.
func notInput(op, in string) error {
	a, b := filepath.Clean(op), filepath.Clean(in)
	same := a == b
	if st, err := os.Stat(op); err == nil {
		if fi, err := os.Stat(in); err == nil {
			same = same || os.SameFile(st, fi)
		}
	}
	if same {
		return fmt.Errorf("the output %s would overwrite its input: give an output directory outside the lake's files", op)
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// prepare fixes the prediction schema from the lake's projected schema.
func (s *scorer) prepare(l *lake.Lake) error {
	schema := l.Schema()
	for _, k := range s.opts.Keep {
		if len(schema.FieldIndices(k)) != 1 {
			return &OptionError{"Keep", fmt.Errorf("no column %q in the lake", k)}
		}
	}
	spec, err := s.m.PredictionSchema(schema, scoring.Options{Keep: s.opts.Keep, Probs: s.opts.Probs})
	if err != nil {
		return &OptionError{"Keep", err}
	}
	s.spec = spec
	return nil
}

// warn sets Summary.Warning from OverBudget; budget is the part of
// MaxMemory the run gives to decoded row groups.
func (sum *Summary) warn(budget int64) {
	if len(sum.OverBudget) == 0 {
		return
	}
	largest := slices.MaxFunc(sum.OverBudget, func(a, b lake.OverBudget) int { return cmp.Compare(a.Bytes, b.Bytes) })
	sum.Warning = fmt.Sprintf("%d row group(s) are larger decoded than the %d MiB of max_memory %d MiB this run gives to row groups in flight (the largest: about %d MiB, row group %d of %s); each was decoded alone, past that budget: raise --max-memory, or write the files with smaller row groups (over_budget lists them)",
		len(sum.OverBudget), budget>>20, sum.MaxMemory>>20, largest.Bytes>>20, largest.RowGroup, largest.File)
}

// mapper is the writer loop of a run: chunks of s.chunk rows scored on
// s.threads goroutines into s.spec outputs.
func (s *scorer) mapper(dry bool) *mapper {
	return &mapper{out: s.out, threads: s.threads, chunk: s.chunk, spec: s.spec, wopts: s.wopts, dry: dry,
		apply: s.score, progress: func(rows int64, last bool) {
			if s.opts.Progress == nil {
				return
			}
			s.progress.RowsDone += rows
			if last {
				s.progress.FilesDone++
			}
			s.opts.Progress(s.progress)
		}}
}

// score predicts rows [r0, r1) of a batch on one thread into their
// predictions record (nil for an empty file: the output has the
// prediction schema and no rows).
func (s *scorer) score(l *lake.Lake, b *lake.Batch, r0, r1 int64) (arrow.Record, error) {
	if r0 == r1 {
		return nil, nil
	}
	rec := b.Record.NewSlice(r0, r1)
	defer rec.Release()
	out, err := s.m.Score([]arrow.Record{rec}, scoring.Options{Keep: s.opts.Keep, Source: l.Files()[b.File].Path,
		FirstRow: b.FirstRow + r0, Threads: 1, Mem: s.opts.Mem, Probs: s.opts.Probs})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

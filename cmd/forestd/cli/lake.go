package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/schollz/progressbar/v3"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/schemas"
)

// slowBatchEnv names a test-only hook: a duration to sleep after scoring
// each row group, so that end-to-end tests can kill a lake run midway.
const slowBatchEnv = "FORESTD_TEST_SLOW_BATCH"

// byteSize is a flag holding a byte count written as 65536, 512MiB, 2GiB,
// 100MB or 1.5G (K/M/G/T are binary multiples, KB/MB/GB/TB decimal).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	v, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || math.IsInf(v*mult, 0) || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q: want a positive size like 512MiB, 2GiB or 100000000", s)
	}
	return int64(v * mult), nil
}

// lakeFlags are the flags of the lake paths of score and train.
type lakeFlags struct {
	maxMemory byteSize
	onError   string
	readers   int
}

func addLakeFlags(fs *flags) *lakeFlags {
	lf := &lakeFlags{maxMemory: lake.DefaultMaxMemory}
	fs.Var(&lf.maxMemory, "max-memory", "lake: memory bound for the run (e.g. 512MiB, 2GiB); half goes to row groups in flight")
	fs.StringVar(&lf.onError, "on-error", "skip", "lake: a bad file (unreadable, missing a column, wrong type) is skipped and listed (skip) or stops the run (fail)")
	fs.IntVar(&lf.readers, "readers", 0, "lake: goroutines decoding row groups (default: number of CPUs, at most 8)")
	return lf
}

// options turns the flags into lake options; rowBytes is the caller's
// working memory per row held.
func (lf *lakeFlags) options(rowBytes int64) (lake.Options, error) {
	oe, err := lake.ParseOnError(lf.onError)
	if err != nil {
		return lake.Options{}, usageError{err}
	}
	if lf.readers < 0 {
		return lake.Options{}, usagef("--readers must not be negative, got %d", lf.readers)
	}
	return lake.Options{MaxMemory: int64(lf.maxMemory) / 2, RowBytes: rowBytes, Readers: lf.readers, OnError: oe}, nil
}

// fitBudget returns the memory a lake run may fill with data: half of
// what --max-memory leaves beside the memory already in use (the model,
// the runtime), the other half being room for the garbage collector and
// for buffers the estimates miss. A --max-memory below twice what is in
// use is an error.
func (lf *lakeFlags) fitBudget() (int64, error) {
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
	free := int64(lf.maxMemory) - inUse
	if free < inUse {
		return 0, fmt.Errorf("--max-memory %d MiB is too small: %d MiB are in use before reading (the model and the runtime); give at least %d MiB",
			int64(lf.maxMemory)>>20, inUse>>20, (2*inUse)>>20+1)
	}
	return free / 2, nil
}

// limitMemory sets the Go runtime's soft memory limit to the flag's value
// for the duration of a lake run and returns the function that restores it.
func (lf *lakeFlags) limitMemory() func() {
	prev := debug.SetMemoryLimit(int64(lf.maxMemory))
	return func() { debug.SetMemoryLimit(prev) }
}

// scoreLakeFlags are score's lake-only flags.
type scoreLakeFlags struct {
	*lakeFlags
	resume      bool
	compression string
	dryRun      bool
	work        workFlags
}

func addScoreLakeFlags(fs *flags) *scoreLakeFlags {
	sl := &scoreLakeFlags{lakeFlags: addLakeFlags(fs)}
	fs.BoolVar(&sl.resume, "resume", false, "lake: skip input files whose output already exists (complete outputs only ever appear under their final name)")
	fs.StringVar(&sl.compression, "compression", "zstd", "lake: output Parquet compression: zstd, snappy, gzip, lz4 or none")
	fs.BoolVar(&sl.dryRun, "dry-run", false, "lake: read and check the model's columns of every file and count rows; score and write nothing")
	sl.work.add(fs)
	return sl
}

// wanted reports whether score runs over a lake: --out names a directory
// (an existing one, a path ending in a separator, or a name without an
// extension), or a lake-only flag is set.
func (sl *scoreLakeFlags) wanted(out string) bool {
	if sl.resume || sl.dryRun || sl.work.topic != "" {
		return true
	}
	if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator)) {
		return true
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return true
	}
	return filepath.Ext(out) == ""
}

// lakeScorer scores a lake's files into a mirrored output tree.
type lakeScorer struct {
	env      Env
	f        *forest.Forest
	meta     model.Meta
	c        *forest.Compiled
	multi    forest.MultiOutput // a model with several outputs: lake_multi.go
	model    string
	out      string
	keep     []string
	threads  int
	names    []string   // the model's source columns (forest.SourceColumns)
	levels   [][]string // and their category levels
	spec     schemas.PredictionSpec
	keepIdx  []int // per keep column, its position in the lake schema
	wopts    files.WriteOptions
	slow     time.Duration
	chunk    int64 // rows scored at a time
	progress func(rows int64, fileDone bool)
}

// featureCheck accepts a model feature column of a numeric type, or a
// string for a categorical feature the model has levels for; the other
// projected columns (passthrough) keep the first file's type.
func featureCheck(f *forest.Forest) func(string, arrow.DataType) error {
	names, lv := f.SourceColumns() // a mapped model reads its mapping's inputs
	levels := map[string]bool{}
	for j, n := range names {
		if lv != nil && lv[j] != nil {
			levels[n] = true
		}
	}
	feats := map[string]bool{}
	for _, n := range names {
		feats[n] = true
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

// scoreSummary is the JSON summary score prints after a lake run.
type scoreSummary struct {
	Model       string         `json:"model"`
	ModelID     string         `json:"model_id"`
	Out         string         `json:"out,omitempty"`
	Files       int            `json:"files"`
	FilesListed int            `json:"files_listed"`
	Resumed     int            `json:"resumed"`
	Rows        int64          `json:"rows"`
	Skipped     []lake.Skipped `json:"skipped"`
	Seconds     float64        `json:"seconds"`
	RowsPerSec  float64        `json:"rows_per_second"`
	PeakBytes   int64          `json:"peak_batch_bytes"`
	ChunkRows   int64          `json:"chunk_rows"`
	MaxMemory   int64          `json:"max_memory"`
	DryRun      bool           `json:"dry_run,omitempty"`
	Worker      *workSummary   `json:"worker,omitempty"`
}

func runScoreLake(env Env, sl *scoreLakeFlags, modelPath string, paths []string, out string, keep []string, threads int) error {
	if len(paths) == 0 {
		return usagef("no input: give --in PATH (a lake directory, a glob or files)")
	}
	if sl.work.topic == "" && sl.work.enqueue {
		return usagef("--enqueue needs --workers-topic")
	}
	t0 := time.Now()
	f, meta, c, err := loadModelOrDRF(modelPath)
	if err != nil {
		return err
	}
	ls := &lakeScorer{env: env, f: f, meta: meta, c: c, model: modelPath, out: out, keep: keep, threads: threads,
		wopts: files.WriteOptions{Compression: sl.compression}}
	// the columns read: a mapped model reads its mapping's inputs
	ls.names, ls.levels = f.SourceColumns()
	if forest.IsMultiOutput(f) { // one column per output (lake_multi.go)
		if err := ls.setupMulti(); err != nil {
			return err
		}
	}
	if _, err := files.NewParquetWriter(discard{}, arrow.NewSchema(nil, nil), ls.wopts); err != nil {
		return usageError{fmt.Errorf("--compression: %w", err)}
	}
	if s := os.Getenv(slowBatchEnv); s != "" {
		if ls.slow, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("%s: %w", slowBatchEnv, err)
		}
	}
	cols := slices.Clone(ls.names)
	for _, k := range keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	k := max(f.NumClasses(), 1)
	// Working memory per row besides the decoded columns: the float32
	// feature copy and the prediction buffers (class, probabilities), and
	// the output record (model id, version, source path, row, class name
	// or value, probabilities, passthrough columns) twice: as Arrow
	// arrays and in the Parquet writer's buffers.
	out1 := int64(len(meta.ID)+4) + 8 + 128 + 8 + 16 + int64(4*k) + int64(16*len(keep))
	perRow := int64(4*(len(ls.names)+len(f.Features))+3*4*k) + 2*out1 + ls.multiRowBytes()
	opts, err := sl.options(0)
	if err != nil {
		return err
	}
	free, err := sl.fitBudget()
	if err != nil {
		return err
	}
	// Rows are scored in chunks whose working memory is fixed, so a large
	// row group costs its decoded columns only; the chunks in flight
	// (2·threads+1: being scored, queued, being written) are set aside
	// from the budget. The chunk size (a power of two, 1Ki..128Ki rows,
	// whose chunks in flight take at most 3/8 of --max-memory) depends on
	// --max-memory, --threads and the model only, so that outputs are byte
	// for byte the same from run to run (each chunk is one output row
	// group). Larger chunks score faster: Predict orders a block's rows by
	// their leaf in the first tree.
	inflight := int64(2*max(threads, 1) + 1)
	ls.chunk = 1 << 10
	for ls.chunk < 1<<17 && 2*ls.chunk*perRow*inflight*8 <= 3*int64(sl.maxMemory) {
		ls.chunk *= 2
	}
	if opts.MaxMemory = free - inflight*ls.chunk*perRow; opts.MaxMemory < free/4 {
		opts.MaxMemory = free / 4
	}
	opts.Columns = cols
	opts.Check = featureCheck(f)
	defer sl.limitMemory()()

	if sl.work.topic != "" {
		return ls.runWorker(sl, paths, opts, t0)
	}
	l, err := lake.Open(paths, opts)
	if err != nil {
		return err
	}
	if err := ls.prepare(l); err != nil {
		return err
	}
	sum := scoreSummary{Model: modelPath, ModelID: meta.ID, FilesListed: len(l.Files()) + len(l.Skipped()),
		MaxMemory: int64(sl.maxMemory), DryRun: sl.dryRun}
	if !sl.dryRun {
		sum.Out = out
	}
	var which []int
	outs := map[string]string{}
	for i, pf := range l.Files() {
		op := lake.OutputPath(out, pf.File)
		if prev, dup := outs[op]; dup {
			return fmt.Errorf("%s and %s would both write %s (give inputs with distinct paths below their roots)", prev, pf.Path, op)
		}
		outs[op] = pf.Path
		if sl.resume && !sl.dryRun && ls.done(op) {
			sum.Resumed++
			continue
		}
		which = append(which, i)
	}
	if sl.resume && !sl.dryRun {
		if _, err := lake.CleanTemps(out); err != nil {
			return err
		}
	}
	var total int64
	for _, i := range which {
		total += l.Files()[i].Rows
	}
	bar := ls.progressBar(total, len(which))
	res, err := ls.scoreFiles(context.Background(), l, which, sl.dryRun)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	sum.Files, sum.Rows, sum.PeakBytes, sum.ChunkRows = res.files, res.rows, res.peak, ls.chunk
	sum.Skipped = l.Skipped()
	if sum.Skipped == nil {
		sum.Skipped = []lake.Skipped{}
	}
	sum.Seconds = time.Since(t0).Seconds()
	sum.RowsPerSec = float64(sum.Rows) / math.Max(sum.Seconds, 1e-9)
	return writeJSON(env.Stdout, sum)
}

// done reports whether op is a complete output of this model: a complete
// Parquet file (lake.Done) whose model_id is the model's. An output of
// another model is scored again.
func (ls *lakeScorer) done(op string) bool {
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
	if pf.NumRows() == 0 {
		return true
	}
	for g := 0; g < pf.NumRowGroups(); g++ {
		if pf.RowGroupRows(g) == 0 {
			continue
		}
		rec, err := pf.ReadRowGroup(g, []string{schemas.ColModelID}, memory.DefaultAllocator)
		if err != nil {
			return false
		}
		defer rec.Release()
		return rec.Column(0).ValueStr(0) == ls.meta.ID
	}
	return false
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// prepare fixes the prediction schema from the lake's projected schema.
func (ls *lakeScorer) prepare(l *lake.Lake) error {
	schema := l.Schema()
	ls.spec = schemas.PredictionSpec{ModelID: ls.meta.ID, ModelVersion: ls.meta.Version, Classes: ls.f.Classes}
	ls.keepIdx = ls.keepIdx[:0]
	for _, k := range ls.keep {
		ix := schema.FieldIndices(k)
		if len(ix) != 1 {
			return fmt.Errorf("--keep: no column %q in the lake", k)
		}
		ls.keepIdx = append(ls.keepIdx, ix[0])
		ls.spec.Keep = append(ls.spec.Keep, schema.Field(ix[0]))
	}
	return ls.checkMultiNames()
}

func (ls *lakeScorer) progressBar(total int64, nfiles int) *progressbar.ProgressBar {
	if !ls.env.isTTY() || total == 0 {
		ls.progress = func(int64, bool) {}
		return nil
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(ls.env.Stderr),
		progressbar.OptionSetDescription(fmt.Sprintf("files 0/%d", nfiles)),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(200*time.Millisecond))
	done := 0
	ls.progress = func(rows int64, fileDone bool) {
		if fileDone {
			done++
			bar.Describe(fmt.Sprintf("files %d/%d", done, nfiles))
		}
		_ = bar.Add64(rows)
	}
	return bar
}

type scoreResult struct {
	files int
	rows  int64
	peak  int64
}

// scored is a chunk of a batch on its way from scoring to the writer.
type scored struct {
	b      *lake.Batch
	r0, r1 int64         // the chunk's rows in the batch
	final  bool          // the batch's last chunk: the writer releases the batch
	done   chan struct{} // closed when pred and err are set
	pred   arrow.Record  // nil for an error batch, an empty file or a dry run
	err    error         // scoring failed: the file is abandoned
}

// scoreFiles scans files which of l and cuts every row group, as it is
// delivered, into chunks of at most ls.chunk rows that ls.threads scorer
// goroutines predict concurrently (each chunk on one thread, so no core
// idles at the end of a chunk), while a writer goroutine writes them in
// order: reading (the lake's readers), scoring and writing overlap. Each
// chunk becomes one row group of its file's output, which is committed
// after the file's last chunk. At most 2·threads+1 chunks are in flight.
func (ls *lakeScorer) scoreFiles(ctx context.Context, l *lake.Lake, which []int, dry bool) (scoreResult, error) {
	if ls.progress == nil {
		ls.progress = func(int64, bool) {}
	}
	if ls.chunk <= 0 {
		ls.chunk = 1 << 16
	}
	workers := max(ls.threads, 1)
	var res scoreResult
	if len(which) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *scored, workers)
	ch := make(chan *scored, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				s.pred, s.err = ls.score(l, s.b, s.r0, s.r1)
				if s.err != nil {
					s.err = fmt.Errorf("%s: %w", l.Files()[s.b.File].Path, s.err)
				}
				close(s.done)
			}
		}()
	}
	werr := make(chan error, 1)
	go func() { werr <- ls.writeLoop(l, ch, dry, &res, cancel) }()
	// queue hands a chunk to the scorers, then (in order) to the writer,
	// which releases the batch with its final chunk.
	queue := func(s *scored, score bool) error {
		if !score {
			close(s.done)
		} else {
			select {
			case jobs <- s:
			case <-ctx.Done():
				s.b.Release()
				return ctx.Err()
			}
		}
		select {
		case ch <- s:
			return nil
		case <-ctx.Done():
			return ctx.Err() // the scorer's result is left to the collector
		}
	}
	stats, err := l.Scan(ctx, which, func(b *lake.Batch) error {
		n := b.Rows()
		if b.Err != nil || dry || n == 0 {
			return queue(&scored{b: b, final: true, done: make(chan struct{})}, false)
		}
		for r0 := int64(0); r0 < n; r0 += ls.chunk {
			r1 := min(n, r0+ls.chunk)
			if err := queue(&scored{b: b, r0: r0, r1: r1, final: r1 == n, done: make(chan struct{})}, true); err != nil {
				return err
			}
		}
		if ls.slow > 0 {
			time.Sleep(ls.slow)
		}
		return nil
	})
	close(jobs)
	wg.Wait()
	close(ch)
	wErr := <-werr
	res.peak = stats.PeakBytes
	if wErr != nil {
		return res, wErr
	}
	return res, err
}

// score predicts rows [r0, r1) of a batch on one thread and builds their
// predictions record.
func (ls *lakeScorer) score(l *lake.Lake, b *lake.Batch, r0, r1 int64) (arrow.Record, error) {
	rec := b.Record.NewSlice(r0, r1)
	defer rec.Release()
	fr, err := frame.FeaturesFromRecords(rec.Schema(), []arrow.Record{rec}, ls.names, ls.levels)
	if err == nil {
		fr, err = ls.f.FromSource(fr) // the model's own FDM mapping (forest.Mapping)
	}
	if err != nil {
		return nil, err
	}
	if ls.multi != nil {
		return ls.scoreMulti(l, b, r0, rec, fr)
	}
	pred, err := ls.c.Predict(fr, 1)
	if err != nil {
		return nil, err
	}
	pb := schemas.PredictionBatch{Source: l.Files()[b.File].Path, FirstRow: b.FirstRow + r0,
		Class: pred.Class, Prob: pred.Prob, Value: pred.Value}
	for _, ix := range ls.keepIdx {
		pb.Keep = append(pb.Keep, rec.Column(ix))
	}
	return schemas.BuildPredictions(memory.DefaultAllocator, ls.spec, pb)
}

// writeLoop writes the scored chunks in order: one output per file,
// committed after the file's last chunk and abandoned when the file fails
// (a read error, already recorded by the lake, or a scoring error, which
// is recorded here). A write error ends the run. A batch is released with
// its final chunk, never earlier: the scorer may still be slicing it.
func (ls *lakeScorer) writeLoop(l *lake.Lake, ch <-chan *scored, dry bool, res *scoreResult, cancel func()) error {
	var (
		w       *lake.FileWriter
		wFile   = -1
		dropped = -1
		runErr  error
	)
	abort := func() {
		if w != nil {
			w.Abort()
			w, wFile = nil, -1
		}
	}
	defer abort()
	for s := range ch {
		<-s.done
		b := s.b
		release := func() {
			if s.pred != nil {
				s.pred.Release()
			}
			if s.final {
				b.Release()
			}
		}
		switch {
		case runErr != nil || b.File == dropped:
			release()
			continue
		case b.Err != nil:
			abort()
			dropped = b.File
			release()
			continue
		case s.err != nil:
			abort()
			dropped = b.File
			release()
			if l.OnError() == lake.Fail {
				runErr = s.err
				cancel()
				continue
			}
			l.AddSkipped(l.Files()[b.File].Path, s.err)
			continue
		}
		var rows int64
		if s.pred != nil {
			rows = s.pred.NumRows()
		} else if dry {
			rows = b.Rows()
		}
		if !dry {
			if err := ls.writeBatch(l, &w, &wFile, b, s.pred); err != nil {
				runErr = err
				cancel()
				release()
				continue
			}
		}
		release()
		res.rows += rows
		last := s.final && b.Last
		if last {
			if !dry {
				if err := w.Commit(); err != nil {
					runErr = err
					cancel()
					continue
				}
				w, wFile = nil, -1
			}
			res.files++
		}
		ls.progress(rows, last)
	}
	return runErr
}

func (ls *lakeScorer) writeBatch(l *lake.Lake, w **lake.FileWriter, wFile *int, b *lake.Batch, pred arrow.Record) error {
	if *w == nil || *wFile != b.File {
		if *w != nil {
			(*w).Abort()
		}
		nw, err := lake.Create(lake.OutputPath(ls.out, l.Files()[b.File].File), ls.outSchema(), ls.wopts)
		if err != nil {
			return err
		}
		*w, *wFile = nw, b.File
	}
	if pred == nil { // an empty file: an output without rows
		return nil
	}
	return (*w).Write(pred)
}

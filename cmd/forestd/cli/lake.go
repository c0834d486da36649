package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
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
	model    string
	out      string
	keep     []string
	threads  int
	levels   [][]string
	spec     schemas.PredictionSpec
	keepIdx  []int // per keep column, its position in the lake schema
	wopts    files.WriteOptions
	slow     time.Duration
	progress func(rows int64, fileDone bool)
}

// featureCheck accepts a model feature column of a numeric type, or a
// string for a categorical feature the model has levels for; the other
// projected columns (passthrough) keep the first file's type.
func featureCheck(f *forest.Forest) func(string, arrow.DataType) error {
	levels := map[string]bool{}
	for j, n := range f.Features {
		if f.Levels != nil && f.Levels[j] != nil {
			levels[n] = true
		}
	}
	feats := map[string]bool{}
	for _, n := range f.Features {
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
	f, meta, c, err := loadModel(modelPath)
	if err != nil {
		return err
	}
	if f.Kind == forest.KindDRF {
		return fmt.Errorf("%s: lake scoring does not handle drf (multivariate) models; score to one output file instead", modelPath)
	}
	ls := &lakeScorer{env: env, f: f, meta: meta, c: c, model: modelPath, out: out, keep: keep, threads: threads,
		levels: f.Levels, wopts: files.WriteOptions{Compression: sl.compression}}
	if _, err := files.NewParquetWriter(discard{}, arrow.NewSchema(nil, nil), ls.wopts); err != nil {
		return usageError{fmt.Errorf("--compression: %w", err)}
	}
	if s := os.Getenv(slowBatchEnv); s != "" {
		if ls.slow, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("%s: %w", slowBatchEnv, err)
		}
	}
	cols := slices.Clone(f.Features)
	for _, k := range keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	k := max(f.NumClasses(), 1)
	// Working memory per row besides the decoded columns: the float32
	// feature copy, the prediction buffers and the output record (model
	// id, version, source, row, class name, probabilities).
	rowBytes := int64(4*len(f.Features) + 3*4*k + 64)
	opts, err := sl.options(rowBytes)
	if err != nil {
		return err
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
		if sl.resume && !sl.dryRun && lake.Done(op) {
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
	sum.Files, sum.Rows, sum.PeakBytes = res.files, res.rows, res.peak
	sum.Skipped = l.Skipped()
	if sum.Skipped == nil {
		sum.Skipped = []lake.Skipped{}
	}
	sum.Seconds = time.Since(t0).Seconds()
	sum.RowsPerSec = float64(sum.Rows) / math.Max(sum.Seconds, 1e-9)
	return writeJSON(env.Stdout, sum)
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
	return nil
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

// scored is a batch on its way from scoring to the writer.
type scored struct {
	b    *lake.Batch
	pred arrow.Record // nil for an error batch or a dry run
	err  error        // scoring failed: the file is abandoned
}

// scoreFiles scans files which of l, scores every row group as it is
// delivered and hands the predictions to a writer goroutine, so reading
// (the lake's readers), scoring (this goroutine, on all threads) and
// writing overlap. A file's output is committed after its last row group.
func (ls *lakeScorer) scoreFiles(ctx context.Context, l *lake.Lake, which []int, dry bool) (scoreResult, error) {
	if ls.progress == nil {
		ls.progress = func(int64, bool) {}
	}
	var res scoreResult
	if len(which) == 0 {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan scored, 2)
	werr := make(chan error, 1)
	go func() { werr <- ls.writeLoop(l, ch, dry, &res, cancel) }()
	failed := -1
	stats, err := l.Scan(ctx, which, func(b *lake.Batch) error {
		if b.File == failed {
			b.Release()
			return nil
		}
		if b.Err != nil || dry {
			ch <- scored{b: b}
			return nil
		}
		pred, err := ls.score(l, b)
		if err != nil {
			failed = b.File
			err = fmt.Errorf("%s: %w", l.Files()[b.File].Path, err)
			if l.OnError() == lake.Fail {
				b.Release()
				return err
			}
		}
		if ls.slow > 0 {
			time.Sleep(ls.slow)
		}
		select {
		case ch <- scored{b: b, pred: pred, err: err}:
		case <-ctx.Done():
			b.Release()
			if pred != nil {
				pred.Release()
			}
			return ctx.Err()
		}
		return nil
	})
	close(ch)
	wErr := <-werr
	res.peak = stats.PeakBytes
	if wErr != nil {
		return res, wErr
	}
	return res, err
}

// score predicts one batch and builds its predictions record.
func (ls *lakeScorer) score(l *lake.Lake, b *lake.Batch) (arrow.Record, error) {
	rec := b.Record
	fr, err := frame.FeaturesFromRecords(rec.Schema(), []arrow.Record{rec}, ls.f.Features, ls.levels)
	if err != nil {
		return nil, err
	}
	pred, err := ls.c.Predict(fr, ls.threads)
	if err != nil {
		return nil, err
	}
	pb := schemas.PredictionBatch{Source: l.Files()[b.File].Path, FirstRow: b.FirstRow,
		Class: pred.Class, Prob: pred.Prob, Value: pred.Value}
	for _, ix := range ls.keepIdx {
		pb.Keep = append(pb.Keep, rec.Column(ix))
	}
	return schemas.BuildPredictions(memory.DefaultAllocator, ls.spec, pb)
}

// writeLoop writes the scored batches in order: one output per file,
// committed after the file's last batch and abandoned when the file fails
// (a read error, already recorded by the lake, or a scoring error, which
// is recorded here). A write error ends the run.
func (ls *lakeScorer) writeLoop(l *lake.Lake, ch <-chan scored, dry bool, res *scoreResult, cancel func()) error {
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
		b := s.b
		release := func() {
			if s.pred != nil {
				s.pred.Release()
			}
			b.Release()
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
			l.AddSkipped(l.Files()[b.File].Path, s.err)
			release()
			continue
		}
		rows := b.Rows()
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
		if b.Last {
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
		ls.progress(rows, b.Last)
	}
	return runErr
}

func (ls *lakeScorer) writeBatch(l *lake.Lake, w **lake.FileWriter, wFile *int, b *lake.Batch, pred arrow.Record) error {
	if *w == nil || *wFile != b.File {
		if *w != nil {
			(*w).Abort()
		}
		nw, err := lake.Create(lake.OutputPath(ls.out, l.Files()[b.File].File), schemas.Predictions(ls.spec), ls.wopts)
		if err != nil {
			return err
		}
		*w, *wFile = nw, b.File
	}
	return (*w).Write(pred)
}

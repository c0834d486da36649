package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/schollz/progressbar/v3"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/internal/bytefmt"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// byteSize is a flag holding a byte count written as 65536, 512MiB, 2GiB,
// 100MB or 1.5G (K/M/G/T are binary multiples, KB/MB/GB/TB decimal).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	v, err := bytefmt.Parse(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
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
	fs.BoolVar(&sl.resume, "resume", false, "lake: skip input files whose complete output already exists from the same model with the same columns (--keep, --probs); any other output is scored again")
	fs.StringVar(&sl.compression, "compression", "zstd", "lake: output Parquet compression: zstd, snappy, gzip, lz4 or none")
	fs.BoolVar(&sl.dryRun, "dry-run", false, "lake: read and check the model's columns of every file and count rows; score and write nothing")
	sl.work.add(fs)
	return sl
}

// wanted reports whether score runs over a lake: --out names a directory
// (an existing one, a path ending in a separator, or a name without an
// extension that does not exist as a file: /dev/null is a file, checked as
// every output file is), or a lake-only flag is set.
func (sl *scoreLakeFlags) wanted(out string) bool {
	if sl.resume || sl.dryRun || sl.work.topic != "" {
		return true
	}
	if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator)) {
		return true
	}
	if st, err := os.Stat(out); err == nil {
		return st.IsDir()
	}
	return filepath.Ext(out) == ""
}

// checkLakeOut refuses a lake's --out that exists and is not a directory
// (a file, /dev/null) before any work: a lake's outputs go below it.
func checkLakeOut(out string) error {
	st, err := os.Stat(out)
	if err != nil || st.IsDir() {
		return nil
	}
	if err := checkOut("--out", out); err != nil {
		return fmt.Errorf("%w: a lake's output is a directory", err)
	}
	return usagef("--out %s is a file: a lake's output is a directory", out)
}

// runScoreLake scores a lake with the scoring options of forestd score
// (kept columns, threads, probabilities).
func runScoreLake(env Env, sl *scoreLakeFlags, modelPath string, paths []string, out string, so scoring.Options) error {
	if len(paths) == 0 {
		return usagef("no input: give --in PATH (a lake directory, a glob or files)")
	}
	if sl.work.topic == "" && sl.work.enqueue {
		return usagef("--enqueue needs --workers-topic")
	}
	lo, err := sl.options(0) // checks --on-error and --readers
	if err != nil {
		return err
	}
	opts := lakescore.Options{Keep: so.Keep, Threads: so.Threads, Probs: so.Probs, MaxMemory: int64(sl.maxMemory), OnError: lo.OnError, Readers: sl.readers,
		Resume: sl.resume, Compression: sl.compression, DryRun: sl.dryRun}
	if _, err := files.NewParquetWriter(discard{}, arrow.NewSchema(nil, nil), files.WriteOptions{Compression: sl.compression}); err != nil {
		return usageError{fmt.Errorf("--compression: %w", err)}
	}
	m, err := loadModel(modelPath)
	if err != nil {
		return err
	}
	if _, err := modelProbs(m, so.Probs); err != nil {
		return err
	}
	defer sl.limitMemory()()
	var sum *lakescore.Summary
	if sl.work.topic != "" {
		sum, err = runWorker(env, sl, m, paths, out, opts)
	} else {
		var bar *progressbar.ProgressBar
		if env.isTTY() {
			opts.Progress = func(p lakescore.Progress) {
				desc := fmt.Sprintf("files %d/%d", p.FilesDone, p.Files)
				if bar == nil {
					bar = newRowsBar(env, p.Rows, desc)
				}
				bar.Describe(desc)
				_ = bar.Set64(p.RowsDone)
			}
		}
		// SIGINT and SIGTERM end the run: the files being written are
		// removed (complete outputs stay, for --resume) and the command
		// fails with one line, instead of dying with hidden temporary
		// files left in OUTDIR
		ctx, stop := interruptible()
		sum, err = lakescore.Run(ctx, m, paths, out, opts)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("stopped (%v): the files being written were removed; the outputs completed are in %s, and --resume scores the rest", context.Cause(ctx), out)
		}
		stop()
		if bar != nil {
			_ = bar.Finish()
		}
	}
	if err != nil {
		return lakeErr(err)
	}
	sum.Model = modelPath
	return writeJSON(env.Stdout, sum)
}

// lakeErr names the flag behind an error about a lake option.
func lakeErr(err error) error {
	var oe *lakescore.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag := map[string]string{"MaxMemory": "--max-memory", "Keep": "--keep", "Compression": "--compression",
		"Threads": "--threads", "Readers": "--readers", "Probs": "--probs"}[oe.Option]
	return fmt.Errorf("%s: %w", flag, oe.Err)
}

// newRowsBar is the progress bar of a lake run: rows scored of total,
// drawn with its description as soon as the first chunk is written (then
// at most every 200 ms).
func newRowsBar(env Env, total int64, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(env.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(200*time.Millisecond))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

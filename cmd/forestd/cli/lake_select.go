package cli

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
)

// lakeInput gives analyze and select the lake reader: --sample N draws
// the rows they learn from out of a lake (hive partitions, globs, bounded
// memory, --on-error) instead of reading every input whole, and select
// with a directory --out writes the mapped lake in the input's layout.
type lakeInput struct {
	*trainSample
	n      int
	report *lake.SampleReport
}

func addLakeInputFlags(fs *flags) *lakeInput {
	li := &lakeInput{trainSample: addTrainSampleFlags(fs)}
	fs.IntVar(&li.n, "sample", 0, "read the inputs as a lake and learn from N rows sampled from them (see --sample-mode, --max-memory, --on-error); 0 reads every input whole")
	return li
}

// loadLabelled is analyze's reader: the whole input, or the --sample.
func (li *lakeInput) loadLabelled(paths []string, opts frame.Options, seed uint64) (*frame.Frame, error) {
	if li.n < 0 {
		return nil, usagef("--sample must not be negative, got %d", li.n)
	}
	fr, rep, err := li.loadTraining(paths, opts, li.n, seed)
	li.report = rep
	return fr, err
}

// learnRecords is select's reader of the rows it learns from: every input
// whole, or the --sample of them (the columns of the first file, plus any
// --keep partition columns). The caller releases the records.
func (li *lakeInput) learnRecords(paths []string, label string, keep []string, seed uint64) (*arrow.Schema, []arrow.Record, error) {
	if li.n < 0 {
		return nil, nil, usagef("--sample must not be negative, got %d", li.n)
	}
	mode, lopts, err := li.check()
	if err != nil {
		return nil, nil, err
	}
	if li.n == 0 {
		return readRecords(paths, nil)
	}
	defer li.limitMemory()()
	list, err := lake.List(paths)
	if err != nil {
		return nil, nil, err
	}
	cols, err := lake.FileColumns(list)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	lopts.Columns = cols
	l, err := lake.OpenFiles(list, lopts)
	if err != nil {
		return nil, nil, err
	}
	schema, recs, rep, err := l.Sample(context.Background(), lake.SampleOptions{N: li.n, Mode: mode, Seed: seed, Label: label})
	if err != nil {
		return nil, nil, err
	}
	li.report = &rep
	return schema, recs, nil
}

// selectOut writes select's output: one file (selectWrite over recs, or,
// after a --sample, over every input read whole), or, when out names a
// directory, the mapped lake: one output per input file in the same
// layout (lake.OutputPath), each written through a temporary name.
// It returns the rows written and a lake summary (nil for one file).
func (li *lakeInput) selectOut(paths []string, schema *arrow.Schema, recs []arrow.Record, t *fdm.Transform,
	levels [][]string, names []string, label string, keep []string, out string) (int, map[string]any, error) {
	if !dirOut(out) {
		if li.n > 0 {
			// The sample taught the mapping; the output maps every row.
			s, all, err := readRecords(paths, nil)
			if err != nil {
				return 0, nil, err
			}
			defer release(all)
			schema, recs = s, all
		}
		rows, err := selectWrite(schema, recs, t, levels, names, label, keep, out)
		return rows, nil, err
	}
	lopts, err := li.options(0)
	if err != nil {
		return 0, nil, err
	}
	defer li.limitMemory()()
	list, err := lake.List(paths)
	if err != nil {
		return 0, nil, err
	}
	cols, err := lake.FileColumns(list)
	if err != nil {
		return 0, nil, err
	}
	for _, k := range keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	lopts.Columns = cols
	l, err := lake.OpenFiles(list, lopts)
	if err != nil {
		return 0, nil, err
	}
	// the temporary files of a select killed midway (SIGKILL, a crash),
	// whose lock no process holds any more; without locks (lake.TempLocks)
	// they stay, since another run may be writing them
	temps, err := lake.CleanTemps(out, false)
	if err != nil {
		return 0, nil, err
	}
	rows, nfiles := 0, 0
	var (
		w       *lake.FileWriter
		dropped = -1 // a file that failed: its remaining batches are ignored
	)
	abort := func() {
		if w != nil {
			w.Abort()
			w = nil
		}
	}
	defer abort()
	// Row group by row group: each batch is mapped and written as one
	// row group of its file's output, committed after the last one.
	ctx, stop := interruptible() // SIGINT/SIGTERM: the file being written is removed (see runScoreLake)
	defer stop()
	_, err = l.Scan(ctx, nil, func(b *lake.Batch) error {
		defer b.Release()
		f := l.Files()[b.File]
		if b.Err != nil || b.File == dropped {
			abort()
			return nil
		}
		err := func() error {
			s, recs, n, err := selectRecords(b.Record.Schema(), []arrow.Record{b.Record}, t, levels, names, label, keep)
			if err != nil {
				return err
			}
			defer release(recs)
			if w == nil {
				if w, err = lake.Create(lake.OutputPath(out, f.File), s, files.WriteOptions{}); err != nil {
					return err
				}
			}
			if err := w.Write(recs[0]); err != nil {
				return err
			}
			rows += n
			return nil
		}()
		if err == nil && b.Last {
			err = w.Commit()
			w = nil
			nfiles++
		}
		if err != nil {
			abort()
			err = fmt.Errorf("%s: %w", f.Path, err)
			if l.OnError() == lake.Fail {
				return err
			}
			l.AddSkipped(f.Path, err)
			dropped = b.File
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	sk := l.Skipped()
	if sk == nil {
		sk = []lake.Skipped{}
	}
	rep := map[string]any{"files": nfiles, "skipped": sk}
	if temps != (lake.Temps{}) {
		rep["temps"] = temps
	}
	return rows, rep, nil
}

// dirOut reports whether an output path names a directory (an existing
// one, a path ending in a separator, or a name without an extension).
func dirOut(out string) bool {
	sl := scoreLakeFlags{}
	return sl.wanted(out)
}

// selectApplyLake maps a lake with a stored mapping into a lake of the
// same layout (select --apply with a directory --out).
func (li *lakeInput) selectApplyLake(paths []string, mappingPath, label string, keep []string, out string, env Env) error {
	fh, err := os.Open(mappingPath)
	if err != nil {
		return fmt.Errorf("--apply: %w", err)
	}
	t, err := fdm.ReadTransform(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", mappingPath, err)
	}
	rows, rep, err := li.selectOut(paths, nil, nil, t, nil, nil, label, keep, out)
	if err != nil {
		return err
	}
	return writeJSON(env.Stdout, map[string]any{"rows": rows, "out": out, "mapping": mappingPath, "columns": t.Names(), "lake": rep})
}

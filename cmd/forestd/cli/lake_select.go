package cli

import (
	"context"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/operators"
)

// lakeInput gives analyze and select the lake reader: --sample N draws
// the rows they learn from out of a lake (hive partitions, globs, bounded
// memory, --on-error) instead of reading every input whole, and select
// with a directory --out writes the mapped lake in the input's layout.
type lakeInput struct {
	*trainSample
	n       int
	report  *lake.SampleReport
	threads int  // select's --threads: row groups mapped at once
	resume  bool // select's --resume
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
	schema, recs, rep, err := lakescore.SampleRecords(context.Background(), paths, label, keep, false,
		lakescore.SampleOptions{N: li.n, Mode: mode, Seed: seed, Lake: lopts})
	li.report = rep
	return schema, recs, err
}

// selectOut writes select's output: one file (selectWrite over recs, or,
// after a --sample, over every input read whole), or, when out names a
// directory, the mapped lake (lakescore.Select: one output per input file
// in the same layout). It returns the rows written and the lake's summary
// (nil for one file).
func (li *lakeInput) selectOut(paths []string, schema *arrow.Schema, recs []arrow.Record, t *fdm.Transform,
	sopts operators.SelectOptions, out string) (int, *lakescore.SelectSummary, error) {
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
		rows, err := selectWrite(schema, recs, t, sopts, out)
		return rows, nil, err
	}
	lopts, err := li.options(0)
	if err != nil {
		return 0, nil, err
	}
	defer li.limitMemory()()
	ctx, stop := interruptible() // SIGINT/SIGTERM: the file being written is removed (see runScoreLake)
	defer stop()
	sum, err := lakescore.Select(ctx, t, paths, out, lakescore.SelectOptions{Select: sopts, Lake: lopts, Threads: li.threads, Resume: li.resume})
	if err != nil {
		return 0, nil, err
	}
	return int(sum.Rows), sum, nil
}

// dirOut reports whether an output path names a directory (an existing
// one, a path ending in a separator, or a name without an extension).
func dirOut(out string) bool {
	sl := scoreLakeFlags{}
	return sl.wanted(out)
}

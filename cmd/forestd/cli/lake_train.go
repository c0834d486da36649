package cli

import (
	"context"
	"slices"
	"strconv"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
)

// trainSample holds train's lake-sampling flags: --sample N (a row count;
// the same flag's bootstrap|subsample values choose per-tree sampling)
// and --sample-mode.
type trainSample struct {
	*lakeFlags
	mode string
}

func addTrainSampleFlags(fs *flags) *trainSample {
	ts := &trainSample{lakeFlags: addLakeFlags(fs)}
	fs.StringVar(&ts.mode, "sample-mode", "reservoir", "with --sample N: reservoir (uniform) or stratified (proportional to the label's classes)")
	return ts
}

// sampleRows reports whether --sample holds a row count rather than
// bootstrap|subsample.
func sampleRows(v string) (int, bool, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, nil
	}
	if n < 1 {
		return 0, true, usagef("--sample %d: a row count must be positive", n)
	}
	return n, true, nil
}

// check validates the sampling flags (whether or not --sample N uses
// them: a wrong value is an error either way) and returns the sample mode
// and the lake options.
func (ts *trainSample) check() (lake.SampleMode, lake.Options, error) {
	mode, err := lake.ParseSampleMode(ts.mode)
	if err != nil {
		return mode, lake.Options{}, usageError{err}
	}
	lopts, err := ts.options(0)
	return mode, lopts, err
}

// loadTraining reads the training frame: the whole input (loadLabelled),
// or with --sample N a sample of N rows drawn from the inputs as a lake
// (only the label and feature columns are decoded). The report says what
// was sampled (nil without --sample N).
func (ts *trainSample) loadTraining(paths []string, opts frame.Options, n int, seed uint64) (*frame.Frame, *lake.SampleReport, error) {
	mode, lopts, err := ts.check()
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		fr, err := loadLabelled(paths, opts)
		if err == nil {
			fr.ResolveAuto(opts.Task) // as analyze reads the label
		}
		return fr, nil, err
	}
	if opts.Label == "" && len(opts.Targets) == 0 {
		return nil, nil, usagef("--label is required")
	}
	if len(paths) == 0 {
		return nil, nil, usagef("no input: give --in PATH (a lake directory, a glob or files)")
	}
	for _, lb := range append([]string{opts.Label}, opts.Targets...) {
		if lb != "" && slices.Contains(opts.Features, lb) {
			return nil, nil, usagef("--features lists the label %s", lb)
		}
	}
	defer ts.limitMemory()()
	return lakescore.SampleFrame(context.Background(), paths, opts, lakescore.SampleOptions{N: n, Mode: mode, Seed: seed, Lake: lopts})
}

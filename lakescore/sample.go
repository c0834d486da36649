package lakescore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/lake"
)

// SampleOptions configure SampleRecords and SampleFrame: a sample of N
// rows drawn from a lake (lake.Lake.Sample) by Mode (reservoir, or
// stratified by the label) with Seed, the files read with Lake (MaxMemory,
// Readers, OnError, Mem; the calls set its Columns).
type SampleOptions struct {
	N    int
	Mode lake.SampleMode
	Seed uint64
	Lake lake.Options
}

// SampleRecords draws a sample from the lake at paths for forestd select
// to learn from, or forestd drift to compare: every column of the files
// plus the keep columns (hive partitions, say), or the keep columns alone
// with only set; label stratifying a stratified sample and never null in
// it ("" for none); N = 0 draws every row. The caller releases the
// records.
func SampleRecords(ctx context.Context, paths []string, label string, keep []string, only bool, opts SampleOptions) (*arrow.Schema, []arrow.Record, *lake.SampleReport, error) {
	return sample(ctx, paths, label, opts, func(fileCols func() ([]string, error)) ([]string, error) {
		if only {
			return keep, nil
		}
		cols, err := fileCols()
		if err != nil {
			return nil, err
		}
		for _, k := range keep {
			if !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
		return cols, nil
	})
}

// SampleFrame draws a training frame from the lake at paths, as forestd
// train and analyze do with --sample N: only the label (or the targets)
// and the features are decoded — fopts.Features, or every file column but
// the labels and fopts.Exclude (partition columns only when named) — and
// the frame's task is resolved (frame.Frame.ResolveAuto).
func SampleFrame(ctx context.Context, paths []string, fopts frame.Options, opts SampleOptions) (*frame.Frame, *lake.SampleReport, error) {
	labels := fopts.Targets // a multi-output target, or the label
	if fopts.Label != "" {
		labels = []string{fopts.Label}
	}
	if len(labels) == 0 {
		return nil, nil, errors.New("no label to sample")
	}
	var cols []string
	schema, recs, rep, err := sample(ctx, paths, labels[0], opts, func(fileCols func() ([]string, error)) ([]string, error) {
		cols = fopts.Features
		if len(cols) == 0 {
			all, err := fileCols()
			if err != nil {
				return nil, err
			}
			for _, c := range all {
				if !slices.Contains(labels, c) && !slices.Contains(fopts.Exclude, c) {
					cols = append(cols, c)
				}
			}
		}
		for _, lb := range labels {
			if slices.Contains(cols, lb) {
				return nil, fmt.Errorf("the features list the label %s", lb)
			}
		}
		return append(slices.Clone(cols), labels...), nil
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	fopts.Features, fopts.Exclude = cols, nil
	fr, err := frame.FromRecords(schema, recs, fopts)
	if err != nil {
		return nil, nil, err
	}
	if fr.NRows == 0 {
		return nil, nil, fmt.Errorf("no labelled rows sampled from %v", paths)
	}
	fr.ResolveAuto(fopts.Task)
	return fr, rep, nil
}

// sample lists the lake at paths, opens it with the columns that columns
// chooses (given the files' columns on demand) and draws the sample.
func sample(ctx context.Context, paths []string, label string, opts SampleOptions,
	columns func(fileCols func() ([]string, error)) ([]string, error)) (*arrow.Schema, []arrow.Record, *lake.SampleReport, error) {
	if len(paths) == 0 {
		return nil, nil, nil, errors.New("no input: give a lake directory, a glob or files")
	}
	list, err := lake.List(paths)
	if err != nil {
		return nil, nil, nil, err
	}
	cols, err := columns(func() ([]string, error) { return lake.FileColumns(list) })
	if err != nil {
		return nil, nil, nil, err
	}
	lopts := opts.Lake
	lopts.Columns = cols
	l, err := lake.OpenFiles(list, lopts)
	if err != nil {
		return nil, nil, nil, err
	}
	n := opts.N
	if n == 0 {
		if n = int(min(l.Rows(), math.MaxInt32)); n == 0 {
			return nil, nil, &lake.SampleReport{}, nil // no rows: the caller names the empty side
		}
	}
	schema, recs, rep, err := l.Sample(ctx, lake.SampleOptions{N: n, Mode: opts.Mode, Seed: opts.Seed, Label: label})
	if err != nil {
		return nil, nil, nil, err
	}
	return schema, recs, &rep, nil
}

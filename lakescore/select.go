package lakescore

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/operators"
)

// SelectOptions configure Select.
type SelectOptions struct {
	// Select says which columns an output holds besides the mapped ones
	// (Keep, Label) and how categorical inputs are coded (Names, Levels):
	// operators.SelectRecords.
	Select operators.SelectOptions
	// Lake reads the inputs (MaxMemory, Readers, OnError, Mem); Select sets
	// its Columns: every file column and the Keep columns.
	Lake lake.Options
	// Threads maps that many row groups at once (0: every CPU).
	Threads int
	// Resume skips input files whose output is complete and has the
	// columns this mapping writes. Outputs of another mapping with the same
	// column names are kept: resume with the mapping that wrote them.
	Resume bool
}

// SelectSummary reports a finished Select; its JSON form is the "lake"
// part of what forestd select prints.
type SelectSummary struct {
	Rows    int64          `json:"-"`
	Files   int            `json:"files"`
	Resumed int            `json:"resumed,omitempty"`
	Skipped []lake.Skipped `json:"skipped"`
	Temps   *lake.Temps    `json:"temps,omitempty"`
}

// Select maps the lake at paths with a feature-selection mapping t
// (operators.SelectRecords: dissertation §6.3) into out, one Parquet
// output per input file in the input's layout (lake.OutputPath), each row
// group of an input one row group of its output. It shares Run's writer
// loop: row groups are mapped on Threads goroutines and written in order,
// each output under a temporary name committed when complete; a bad file
// is skipped or stops the run (Lake.OnError); the temporary files of
// selects killed midway are removed first (lake.CleanTemps).
func Select(ctx context.Context, t *fdm.Transform, paths []string, out string, opts SelectOptions) (*SelectSummary, error) {
	if t == nil {
		return nil, fmt.Errorf("select: no mapping")
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no input: give a lake directory, a glob or files")
	}
	threads := opts.Threads
	switch {
	case threads < 0:
		return nil, &OptionError{"Threads", fmt.Errorf("%d", threads)}
	case threads == 0:
		threads = runtime.GOMAXPROCS(0)
	}
	if err := lake.CheckOutDir(out, paths); err != nil {
		return nil, &OptionError{"Out", err}
	}
	list, err := lake.List(paths)
	if err != nil {
		return nil, err
	}
	cols, err := lake.FileColumns(list)
	if err != nil {
		return nil, err
	}
	for _, k := range opts.Select.Keep {
		if !slices.Contains(cols, k) {
			cols = append(cols, k)
		}
	}
	lopts := opts.Lake
	lopts.Columns = cols
	l, err := lake.OpenFiles(list, lopts)
	if err != nil {
		return nil, err
	}
	sum := &SelectSummary{}
	var done func(op string) bool
	if opts.Resume {
		want := selectColumns(t, l.Schema(), opts.Select)
		done = func(op string) bool { return want != nil && doneWith(op, want, nil) }
	}
	which, resumed, err := pending(l, out, done)
	if err != nil {
		return nil, err
	}
	sum.Resumed = resumed
	if sum.Temps, err = cleanTemps(out, opts.Resume); err != nil {
		return nil, err
	}
	m := &mapper{out: out, threads: threads, wopts: files.WriteOptions{},
		apply: func(l *lake.Lake, b *lake.Batch, _, _ int64) (arrow.Record, error) {
			_, recs, err := operators.SelectRecords(t, b.Record.Schema(), []arrow.Record{b.Record}, opts.Select)
			if err != nil {
				return nil, err
			}
			return recs[0], nil
		}}
	res, err := m.run(ctx, l, which)
	if err != nil {
		return nil, err
	}
	sum.Files, sum.Rows = res.files, res.rows
	sum.Skipped = l.Skipped()
	if sum.Skipped == nil {
		sum.Skipped = []lake.Skipped{}
	}
	return sum, nil
}

// selectColumns is the sorted column names of the mapped output of
// records with schema (nil when schema cannot be mapped).
func selectColumns(t *fdm.Transform, schema *arrow.Schema, opts operators.SelectOptions) []string {
	s, _, err := operators.SelectRecords(t, schema, nil, opts)
	if err != nil {
		return nil
	}
	names := make([]string, 0, s.NumFields())
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

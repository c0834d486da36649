package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/internal/bytefmt"
	"github.com/forestd/forestd/internal/sysmem"
)

// readRecords reads every input path; the caller releases the records.
func readRecords(paths []string, columns []string) (*arrow.Schema, []arrow.Record, error) {
	if len(paths) == 0 {
		return nil, nil, usagef("no input: give --in PATH (a file or a directory)")
	}
	if err := noGlob(paths); err != nil {
		return nil, nil, err
	}
	// A read bigger than the machine is refused (files.ErrMemory) rather
	// than left to abort the process; 0 (unknown) keeps the default bound.
	bound := sysmem.Available()
	schema, recs, err := files.ReadPaths(paths, files.ReadOptions{Columns: columns, Mem: memory.DefaultAllocator, MaxMemory: bound})
	if errors.Is(err, files.ErrMemory) {
		what := "this machine's available memory"
		if bound == 0 {
			what = fmt.Sprintf("%s, the default", bytefmt.Format(files.DefaultMaxReadMemory))
		}
		err = fmt.Errorf("%w (the bound being %s); a lake (score --out DIR, or --sample N) reads a row group at a time", err, what)
	}
	if err == nil && model.IsModelSchema(schema) {
		release(recs)
		return nil, nil, usagef("--in %s is a forestd model file (an Arrow IPC stream of tree nodes, %s %q), not data: give it as --model", strings.Join(paths, ", "), model.KeyFormat, model.FormatName)
	}
	return schema, recs, err
}

// inPaths names the input paths in an error about their content (a
// column they lack, a value of the wrong type): "a.csv: label column …".
func inPaths(paths []string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(paths, ", "), err)
}

// noGlob refuses an input that is a glob (and no file of that name): the
// inputs read whole are files and directories; globs are read only as a
// lake (connectors/lake), by score into a directory and by --sample N.
func noGlob(paths []string) error {
	for _, p := range paths {
		if !isGlob(p) { // a file whose name has a '*' is a file
			continue
		}
		return usagef("--in %s is a glob: globs are read only as a lake (score --out DIR; train, analyze and select --sample N); otherwise give files or directories", p)
	}
	return nil
}

func release(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

// loadLabelled reads paths into a training frame with the given label.
func loadLabelled(paths []string, opts frame.Options) (*frame.Frame, error) {
	if opts.Label == "" && len(opts.Targets) == 0 {
		return nil, usagef("--label is required")
	}
	schema, recs, err := readRecords(paths, nil)
	if err != nil {
		return nil, err
	}
	defer release(recs)
	fr, err := frame.FromRecords(schema, recs, opts)
	if err != nil {
		return nil, inPaths(paths, err)
	}
	if fr.NRows == 0 {
		return nil, fmt.Errorf("no labelled rows in %v", paths)
	}
	return fr, nil
}

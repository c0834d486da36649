package cli

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
)

// readRecords reads every input path; the caller releases the records.
func readRecords(paths []string, columns []string) (*arrow.Schema, []arrow.Record, error) {
	if len(paths) == 0 {
		return nil, nil, usagef("no input: give --in PATH (a file or a directory)")
	}
	return files.ReadPaths(paths, files.ReadOptions{Columns: columns, Mem: memory.DefaultAllocator})
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
		return nil, err
	}
	if fr.NRows == 0 {
		return nil, fmt.Errorf("no labelled rows in %v", paths)
	}
	return fr, nil
}

package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/internal/outpath"
)

// checkOut is the check every output file gets before any work is done:
// a path that exists and is not a regular file (a directory, a device, a
// named pipe, a socket) would be replaced by the renamed temporary file,
// and an input must never be overwritten (outpath.NotInput). Both are
// usage errors naming flag.
func checkOut(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	return usageFlag(flag, cmp.Or(files.CheckTarget(out), outpath.NotInput(out, inputs...)))
}

// notInputDir is lake.CheckOutDir (an output directory, existing or not,
// that is or holds an input) as a usage error naming flag.
func notInputDir(flag, out string, inputs ...string) error {
	return usageFlag(flag, lake.CheckOutDir(out, inputs))
}

// distinctOuts refuses two output flags naming the same file (the second
// write would replace the first).
func distinctOuts(flagA, a, flagB, b string) error {
	if a != "" && b != "" && outpath.Same(a, b) {
		return usagef("%s and %s name the same file %s: give two paths", flagA, flagB, b)
	}
	return nil
}

// parentExists and parentCreatable are outpath's checks of the directory
// an output goes to, naming flag.
func parentExists(flag, out string) error    { return flagErr(flag, outpath.ParentExists(out)) }
func parentCreatable(flag, out string) error { return flagErr(flag, outpath.ParentCreatable(out)) }

// flagErr prefixes a non-nil err with the flag at fault.
func flagErr(flag string, err error) error {
	if err != nil {
		return fmt.Errorf("%s %w", flag, err)
	}
	return nil
}

// usageFlag is flagErr as a usage error.
func usageFlag(flag string, err error) error {
	if err != nil {
		return usageError{flagErr(flag, err)}
	}
	return nil
}

// checkOutFile is checkOut for an output file that does not create its
// directory (parentExists): a model, a mapping.
func checkOutFile(flag, out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	if err := checkOut(flag, out, inputs...); err != nil {
		return err
	}
	return parentExists(flag, out)
}

// checkDataOut is checkOutFile for a table (files.WriteFile): its
// extension must name a format written (a usage error naming flag), and
// it is checked before the work, not found unknown after it. lakeHint
// adds that a directory would score or map the input as a lake.
func checkDataOut(flag, out string, lakeHint bool, inputs ...string) error {
	if out == "" {
		return nil
	}
	if err := checkOut(flag, out, inputs...); err != nil {
		return err // first: /dev/null is not a regular file, whatever its name
	}
	if err := files.CheckWriteFormat(out); err != nil {
		if lakeHint {
			return usagef("%s %v, or a directory for a lake", flag, err)
		}
		return usagef("%s %v", flag, err)
	}
	return parentExists(flag, out)
}

// interruptible returns the context an output is written under: SIGINT
// and SIGTERM cancel it, so that the writer removes its temporary file
// and the command fails with one line, rather than dying with a hidden
// half-written file left beside the output. stop restores the default
// behaviour (exit), which holds while nothing is being written.
func interruptible() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// writeOut writes an output file of the command line: files.WriteAtomic
// (a temporary name in path's directory, renamed when complete; a path
// that is not a regular file refused) under interruptible.
func writeOut(path string, write func(io.Writer) error) error {
	ctx, stop := interruptible()
	defer stop()
	return files.WriteAtomic(ctx, path, write)
}

// writeData writes records to path in the format its extension names
// (files.WriteFileContext) under interruptible.
func writeData(path string, schema *arrow.Schema, recs []arrow.Record, opts files.WriteOptions) error {
	ctx, stop := interruptible()
	defer stop()
	return files.WriteFileContext(ctx, path, schema, recs, opts)
}

// writeRecord writes one record to path (writeData) and releases it.
func writeRecord(path string, rec arrow.Record) error {
	defer rec.Release()
	return writeData(path, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{})
}

// saveModel writes f to path (model.WriteFileContext, the one file
// writer) under interruptible and returns meta with its ID set.
func saveModel(path string, f *forest.Forest, meta model.Meta) (model.Meta, error) {
	ctx, stop := interruptible()
	defer stop()
	return model.WriteFileContext(ctx, path, f, meta)
}

// Package outpath checks a command's output path before any work is done
// (ARCHITECTURE.md, Command line): it must not be an input, two outputs
// must not be one file, and the directory it goes to must exist or be
// creatable. Errors begin with the path (the caller prefixes its flag).
package outpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
)

// NotInput refuses an output path that names a file the command reads —
// an input file itself, a file of an input directory, or the same file
// through another path or link — so that forestd never overwrites its
// input (an output that does not exist yet cannot be one). An output that
// is an existing directory is held to lake.CheckOutDir's rule.
func NotInput(out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		return lake.CheckOutDir(out, inputs)
	}
	var list []string
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if fi, err := os.Stat(in); err == nil && !fi.IsDir() {
			list = append(list, in) // any file, whatever its extension (a model, a mapping)
			continue
		}
		if fs, err := files.ListFiles([]string{in}); err == nil {
			list = append(list, fs...)
		}
	}
	for _, f := range list {
		if fi, err := os.Stat(f); err == nil && os.SameFile(st, fi) {
			return fmt.Errorf("%s is the input %s: forestd never overwrites its input; choose another path", out, f)
		}
	}
	return nil
}

// Same reports whether a and b name one file: the same clean or absolute
// path, or (both existing) the same file through a link.
func Same(a, b string) bool {
	same := filepath.Clean(a) == filepath.Clean(b)
	if aa, err := filepath.Abs(a); err == nil {
		if ab, err := filepath.Abs(b); err == nil {
			same = same || aa == ab
		}
	}
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			same = same || os.SameFile(sa, sb)
		}
	}
	return same
}

// ParentExists requires the directory an output file goes to to exist
// (single-file outputs do not create directories), so that a command
// fails before its work rather than after it.
func ParentExists(out string) error {
	dir := filepath.Dir(out)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTDIR): // a file above dir: name it
		return ParentCreatable(out)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: directory %s does not exist", out, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", out, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", out, dir)
	}
	return nil
}

// ParentCreatable is ParentExists for the outputs that create their
// directory (report, inspect --png): the nearest existing directory above
// out must be a directory, so that MkdirAll cannot fail on a file there.
func ParentCreatable(out string) error {
	for dir := filepath.Dir(out); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			if up := filepath.Dir(dir); up != dir {
				continue
			}
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", out, err)
		case !st.IsDir():
			return fmt.Errorf("%s: %s is not a directory", out, dir)
		}
		return nil
	}
}

// Package atomicfile is forestd's one way to write a file: whole or not at
// all (a temporary file in the same directory, synced and renamed), never
// over a node that is not a regular file, and abandoned cleanly when its
// context ends. connectors/files exports it (files.WriteAtomic) for the
// data formats and for programs outside this module; arrowforest/model
// writes model files with it.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is the error CheckTarget wraps for an output path that
// exists and is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// CheckTarget reports whether path may be an output of Write: it must not exist, or be a regular file (or a link to one),
// which the output replaces. A directory, a device, a named pipe or a
// socket is refused with an error wrapping ErrNotRegular: renaming a new
// file over it would replace the node itself (a directory cannot be
// replaced at all). Other errors (a path below a file, no permission to
// look) are left to the write.
func CheckTarget(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	kind := "special file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "directory"
	case m&os.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&os.ModeSocket != 0:
		kind = "socket"
	case m&os.ModeCharDevice != 0:
		kind = "character device"
	case m&os.ModeDevice != 0:
		kind = "device"
	}
	return fmt.Errorf("%s: %w (it is a %s); an output replaces only a regular file", path, ErrNotRegular, kind)
}

// Write writes the file at path through write, so that path only ever
// holds a complete file: the data goes to a hidden temporary file in
// path's directory (".NAME.tmp-RANDOM"), which is synced, given mode 0644
// and renamed to path once write has returned nil, and the directory is
// synced so that the rename survives a crash. On any error the temporary
// file is removed and path is left untouched. A path that exists and is
// not a regular file is refused (CheckTarget).
//
// When ctx is done before the file is complete, the temporary file is
// closed under write (its next writes fail) and removed, and the error
// wraps context.Cause(ctx); a command that cancels ctx on SIGINT and
// SIGTERM leaves nothing behind.
func Write(ctx context.Context, path string, write func(*os.File) error) (err error) {
	if err := CheckTarget(path); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		// the temporary name means nothing to the caller: name path
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	stop := context.AfterFunc(ctx, func() { tmp.Close() })
	err = write(tmp)
	if !stop() { // ctx was done: the file was (or is being) closed
		return fmt.Errorf("%s: not written: %w", path, context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = context.Cause(ctx); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

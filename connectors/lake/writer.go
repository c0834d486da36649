package lake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/files"
)

// tmpMarker is part of every temporary output name: ".<name>.forestd-tmp-<random>".
const tmpMarker = ".forestd-tmp-"

// OutputPath returns where the output for input file f goes under dir:
// dir joined with f.Rel, the partition directories kept, and the
// extension replaced by ".parquet".
func OutputPath(dir string, f File) string {
	rel := f.Rel
	if ext := path.Ext(rel); strings.EqualFold(ext, ".parquet") || strings.EqualFold(ext, ".pq") {
		rel = strings.TrimSuffix(rel, ext)
	}
	return filepath.Join(dir, filepath.FromSlash(rel)+".parquet")
}

// Done reports whether a complete output exists at path: a file there
// that is a complete Parquet file (it has both magic numbers and a
// readable footer). Outputs appear under their final name only once
// complete (see FileWriter), so a partial file is never mistaken for
// one; the footer check also guards against files from other tools.
func Done(path string) bool {
	pf, fh, err := openParquet(path)
	if err != nil {
		return false
	}
	fh.Close()
	_ = pf
	return true
}

// FileWriter writes one output Parquet file. Rows go to a hidden temporary
// file in the output's directory (".<name>.forestd-tmp-<random>", which
// lake listings skip); Commit syncs it and renames it to the final name,
// so a reader or a resumed run never sees a partial output, and Abort
// removes it.
type FileWriter struct {
	path string
	fh   *os.File
	pw   *files.ParquetWriter
	done bool
}

// Create starts the output at path for records of schema, creating its
// directory as needed; a path that exists and is not a regular file is
// refused (files.CheckTarget), as every output of forestd's is. opts are as for files.WriteFile (zstd by default);
// every Write becomes one row group.
func Create(path string, schema *arrow.Schema, opts files.WriteOptions) (*FileWriter, error) {
	if err := files.CheckTarget(path); err != nil { // the rename would replace it
		return nil, fmt.Errorf("lake: %w", err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lake: %w", err)
	}
	fh, err := os.CreateTemp(dir, "."+base+tmpMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("lake: %w", err)
	}
	pw, err := files.NewParquetWriter(fh, schema, opts)
	if err != nil {
		fh.Close()
		os.Remove(fh.Name())
		return nil, fmt.Errorf("lake: %s: %w", path, err)
	}
	return &FileWriter{path: path, fh: fh, pw: pw}, nil
}

// Path returns the final path of the output.
func (w *FileWriter) Path() string { return w.path }

// Write appends rec as one row group.
func (w *FileWriter) Write(rec arrow.Record) error {
	if w.done {
		return errors.New("lake: write after commit or abort")
	}
	if err := w.pw.Write(rec); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	if err := w.pw.Flush(); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	return nil
}

// Commit finishes the file, syncs it and renames it into place.
func (w *FileWriter) Commit() (err error) {
	if w.done {
		return errors.New("lake: commit after commit or abort")
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	if err := w.fh.Sync(); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	if err := w.fh.Chmod(0o644); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	if err := w.fh.Close(); err != nil {
		return fmt.Errorf("lake: %s: %w", w.path, err)
	}
	if err := os.Rename(w.fh.Name(), w.path); err != nil {
		return fmt.Errorf("lake: %w", err)
	}
	w.done = true
	// Make the rename durable; a failure here loses nothing but the
	// guarantee, so it is not an error.
	if d, err := os.Open(filepath.Dir(w.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Abort discards the temporary file. It is a no-op after Commit.
func (w *FileWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.fh.Close()
	os.Remove(w.fh.Name())
}

// CleanTemps removes the temporary files that interrupted writers left
// below dir (names containing ".forestd-tmp-") and returns how many it
// removed. Only call it when no other writer is working in dir.
func CleanTemps(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() && strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), tmpMarker) {
			if err := os.Remove(p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("lake: cleaning %s: %w", dir, err)
	}
	return n, nil
}

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
// removes it. Where TempLocks holds, the writer keeps an advisory lock on
// the temporary file from its creation until it is renamed or removed,
// so that CleanTemps in any process leaves it alone; the kernel drops the
// lock when the process dies, however it dies.
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
	fh, err := createLocked(dir, base)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: %w", path, err)
	}
	pw, err := files.NewParquetWriter(fh, schema, opts)
	if err != nil {
		discardTemp(fh)
		return nil, fmt.Errorf("lake: %s: %w", path, err)
	}
	return &FileWriter{path: path, fh: fh, pw: pw}, nil
}

// createLocked creates a temporary file for base in dir and takes its
// lock. A cleaner that opened the new file before the lock was taken
// takes it for stale and removes it; then another name is tried. A
// cleaner runs once per run, so one retry is almost always enough; 64
// cover a cleaner walking the directory without pause on a loaded
// machine (TestCleanTempsWhileWriting lost 8 in a row under load).
func createLocked(dir, base string) (*os.File, error) {
	for range 64 {
		fh, err := os.CreateTemp(dir, "."+base+tmpMarker+"*")
		if err != nil {
			return nil, err
		}
		ok, err := lockTemp(fh)
		if err != nil {
			discardTemp(fh)
			return nil, err
		}
		if ok {
			return fh, nil
		}
		fh.Close() // the cleaner that holds it removes it
	}
	return nil, errors.New("every temporary file was removed as soon as it was created (another process cleaning the directory?)")
}

// discardTemp removes a temporary file and then closes it, so that its
// lock (TempLocks) covers it until it is gone; where an open file cannot
// be removed (no locks there), it closes it first.
func discardTemp(fh *os.File) {
	if TempLocks {
		os.Remove(fh.Name())
		fh.Close()
		return
	}
	fh.Close()
	os.Remove(fh.Name())
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
	if TempLocks {
		// rename while the lock is held: closed first, the complete
		// temporary file would look stale to a cleaner until renamed
		if err := os.Rename(w.fh.Name(), w.path); err != nil {
			return fmt.Errorf("lake: %w", err)
		}
		w.done = true
		if err := w.fh.Close(); err != nil {
			return fmt.Errorf("lake: %s: %w", w.path, err)
		}
	} else {
		if err := w.fh.Close(); err != nil {
			return fmt.Errorf("lake: %s: %w", w.path, err)
		}
		if err := os.Rename(w.fh.Name(), w.path); err != nil {
			return fmt.Errorf("lake: %w", err)
		}
		w.done = true
	}
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
	discardTemp(w.fh)
}

// Temps counts what CleanTemps found.
type Temps struct {
	// Removed temporary files were stale: their writer is gone.
	Removed int `json:"removed"`
	// Kept temporary files are being written (their lock is held), or
	// could not be judged (no locks, another user's file).
	Kept int `json:"kept"`
}

// CleanTemps removes the temporary files that writers which are gone left
// below dir: files named as FileWriter names them (".<name>.forestd-tmp-"
// and the digits os.CreateTemp adds) and no others. Where TempLocks holds,
// a temporary file is removed only if CleanTemps can take its lock, so a
// file that a live writer — in this process or another, such as a worker
// of the same lake — is writing is kept, and CleanTemps may run at any
// time. A file that cannot be judged (no locks on this platform or file
// system, another user's file) is kept, unless all is set: then it is
// removed, which only a caller that is the only writer below dir may ask
// (a resumed run, as before writers locked their files). A directory below
// dir that cannot be read is passed over.
func CleanTemps(dir string, all bool) (Temps, error) {
	var n Temps
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || (p != dir && errors.Is(err, fs.ErrPermission)) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || !isTempName(d.Name()) {
			return nil
		}
		removed, err := removeStale(p, all)
		if err != nil {
			return err
		}
		if removed {
			n.Removed++
		} else {
			n.Kept++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("lake: cleaning %s: %w", dir, err)
	}
	return n, nil
}

// remove removes p; it reports false when p is already gone.
func remove(p string) (bool, error) {
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// isTempName reports whether name (a base name) is a FileWriter's
// temporary file name: "." + the output's name + ".forestd-tmp-" + the
// decimal digits os.CreateTemp puts in place of its "*".
func isTempName(name string) bool {
	i := strings.LastIndex(name, tmpMarker)
	if i < 2 || name[0] != '.' {
		return false
	}
	num := name[i+len(tmpMarker):]
	return num != "" && strings.Trim(num, "0123456789") == ""
}

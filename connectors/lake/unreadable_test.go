package lake

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forestd/forestd/connectors/files"
)

// denyDir is the lake's file system with one directory whose listing
// fails, as a directory without read permission does for any user but
// root (the tests run as root, for whom chmod 000 denies nothing).
type denyDir struct {
	fs.FS
	dir string
}

func (d denyDir) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == d.dir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return fs.ReadDir(d.FS, name)
}

// TestUnreadableDirectory: a directory of the lake that cannot be read
// does not stop the listing (it used to fail the whole run, even under
// Skip): it is listed as an entry with Err, which Open skips with the
// reason under Skip, and which stops the run, naming it, under Fail; the
// other partitions are read.
func TestUnreadableDirectory(t *testing.T) {
	root := letterLake(t)
	list, err := walkFS(denyDir{FS: os.DirFS(root), dir: "date=2026-11-02"}, root, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var files, bad int
	for _, f := range list {
		if f.Err == nil {
			files++
			continue
		}
		bad++
		if f.Path != filepath.Join(root, "date=2026-11-02") || !errors.Is(f.Err, fs.ErrPermission) || !strings.Contains(f.Err.Error(), f.Path) {
			t.Fatalf("entry %+v", f)
		}
	}
	if files != 2 || bad != 1 {
		t.Fatalf("%d files and %d unreadable directories listed: %+v", files, bad, list)
	}
	// partitions as List sets them
	for i := range list {
		if list[i].Err == nil {
			if list[i].Partitions, err = ParsePartitions(list[i].Rel); err != nil {
				t.Fatal(err)
			}
		}
	}

	l, err := OpenFiles(list, Options{OnError: Skip})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files()) != 2 || len(l.Skipped()) != 1 || !strings.Contains(l.Skipped()[0].Reason, "cannot be read") {
		t.Fatalf("skip: %d files, skipped %+v", len(l.Files()), l.Skipped())
	}
	_, err = OpenFiles(list, Options{OnError: Fail})
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != filepath.Join(root, "date=2026-11-02") {
		t.Fatalf("fail: %v", err)
	}

	// the real file system: the same lake lists as before
	all, err := List([]string{root})
	if err != nil || len(all) != 3 {
		t.Fatalf("List: %d files, %v", len(all), err)
	}
}

// TestFooterBombSkipped (issue 35): a lake holding the 25-byte Parquet
// file whose schema list claims 2^31-1 elements (connectors/files'
// testdata/parquet_bombs) beside good files opens under Skip with the bomb
// listed as skipped (files.ErrCorruptParquet) and the others planned;
// under Fail, Open stops naming it. Before the footer check opening it
// aborted the process (fatal error: out of memory).
func TestFooterBombSkipped(t *testing.T) {
	root := letterLake(t)
	bomb, err := os.ReadFile(filepath.Join("..", "files", "testdata", "parquet_bombs", "schema_list.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(root, "date=2026-11-02", "part-1.parquet")
	if err := os.WriteFile(bad, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open([]string{root}, Options{OnError: Skip})
	if err != nil {
		t.Fatal(err)
	}
	sk := l.Skipped()
	if len(l.Files()) != 3 || len(sk) != 1 || sk[0].File != bad || !strings.Contains(sk[0].Reason, "corrupt Parquet footer") {
		t.Fatalf("skip: %d files planned, skipped %+v", len(l.Files()), sk)
	}
	_, err = Open([]string{root}, Options{OnError: Fail})
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != bad || !errors.Is(err, files.ErrCorruptParquet) {
		t.Fatalf("fail: %v", err)
	}
}

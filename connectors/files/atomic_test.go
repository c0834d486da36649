//go:build unix

package files

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
)

// leftovers lists the hidden temporary files of WriteAtomic in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

// TestWriteAtomicRefusesNonRegular: an output path that is a named pipe
// or a directory used to be replaced by the renamed temporary file (a
// device node the same way); now WriteAtomic and WriteFile refuse it with
// ErrNotRegular, naming the path, and leave it as it was.
func TestWriteAtomicRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "d.parquet")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l.csv")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, p := range []string{fifo, sub, link} {
		err := WriteFile(p, schema, nil, WriteOptions{})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("WriteFile %s: %v", p, err)
		}
		err = WriteAtomic(context.Background(), p, func(w io.Writer) error {
			t.Errorf("%s: write called", p)
			return nil
		})
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("WriteAtomic %s: %v", p, err)
		}
		if err := CheckTarget(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("CheckTarget %s: %v", p, err)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(sub); err != nil || !st.IsDir() {
		t.Errorf("the directory was replaced: %v", err)
	}
	if tmp := leftovers(t, dir); tmp != nil {
		t.Errorf("left behind: %v", tmp)
	}
	// A regular file, an absent one and a link to a regular file are fine.
	for _, p := range []string{filepath.Join(dir, "new.csv"), filepath.Join(dir, "missing", "x.csv")} {
		if err := CheckTarget(p); err != nil {
			t.Errorf("CheckTarget %s: %v", p, err)
		}
	}
}

// TestWriteAtomicCancel: a context done while the file is being written
// (SIGINT or SIGTERM in the CLI) fails the write, removes the temporary
// file and leaves an existing output untouched; writes after the
// cancellation fail.
func TestWriteAtomicCancel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv.gz")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := WriteAtomic(ctx, p, func(w io.Writer) error {
		if _, err := w.Write([]byte("partial")); err != nil {
			return err
		}
		cancel()
		return nil // the cancellation alone must stop the rename
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), p) {
		t.Errorf("cancelled after the last write: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	err = WriteAtomic(ctx, p, func(w io.Writer) error {
		cancel()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := w.Write(make([]byte, 4096)); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		t.Error("writes kept succeeding after the cancellation")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while writing: %v", err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if err := WriteFileContext(ctx, p, schema, nil, WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFileContext with a done context: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "old" {
		t.Errorf("the existing output changed: %q %v", b, err)
	}
	if tmp := leftovers(t, dir); tmp != nil {
		t.Errorf("left behind: %v", tmp)
	}
	if err := WriteAtomic(context.Background(), p, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("replaced content %q", b)
	}
}

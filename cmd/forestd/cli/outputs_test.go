//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tempLeftovers lists the hidden temporary files a writer left in dir.
func tempLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var tmp []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") && !strings.HasSuffix(d.Name(), ".html.tmp") && !strings.HasSuffix(d.Name(), ".png.tmp") {
			tmp = append(tmp, p)
		}
		return nil
	})
	return tmp
}

// TestReportTempNameIsNotAnInput (robustness sweep, item 3): report and
// inspect --png wrote OUT.tmp and renamed it, so a model named
// r.html.tmp was destroyed by report --out r.html; now every output goes
// through files.WriteAtomic's hidden random temporary name.
func TestReportTempNameIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ model, out string }{
		{"r.html.tmp", "r.html"}, {"h.png.tmp", "h.png"},
	} {
		mdl := filepath.Join(dir, c.model)
		mustRun(t, "train", "--in", sharedData(t, "iris.parquet"), "--label", "label", "--trees", "3", "--out", mdl)
		before, err := os.ReadFile(mdl)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, c.out)
		mustRun(t, "report", "--model", mdl, "--out", out, "--grid", "2x2")
		mustRun(t, "inspect", "--model", mdl, "--png", filepath.Join(dir, "i.png"), "--grid", "2x2")
		if after, err := os.ReadFile(mdl); err != nil || !bytes.Equal(after, before) {
			t.Errorf("%s changed (%v)", mdl, err)
		}
		if _, err := os.Stat(out); err != nil {
			t.Error(err)
		}
	}
	if tmp := tempLeftovers(t, dir); tmp != nil {
		t.Errorf("left behind: %v", tmp)
	}
}

// TestWriteOutSIGTERM (robustness sweep, item 7): a SIGTERM while score
// wrote its output left the hidden temporary file behind (the default
// action killed the process); every output is now written under a context
// that SIGINT and SIGTERM cancel, the writer removes its temporary file
// and the command fails with one line. The signal goes to this test
// process, which handles it while the output is written.
func TestWriteOutSIGTERM(t *testing.T) {
	ctx, stop := interruptible()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	stop()
	if !strings.Contains(context.Cause(ctx).Error(), "terminated") {
		t.Errorf("cause %v", context.Cause(ctx))
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv.gz")
	err := writeOut(out, func(w io.Writer) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := w.Write(make([]byte, 4096)); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return errors.New("writes kept succeeding after SIGTERM")
	})
	if err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("writeOut under SIGTERM: %v", err)
	}
	if !strings.Contains(err.Error(), out) {
		t.Errorf("the error does not name %s: %v", out, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

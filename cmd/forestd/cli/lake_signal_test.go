package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestScoreLakeSIGTERM: SIGTERM during a lake run killed forestd score
// with the files being written left in OUTDIR as hidden temporary files;
// now the run stops, removes them, keeps the outputs completed, and fails
// with one line that says --resume scores the rest — which it then does.
// The signal goes to this test process, which handles it while the lake
// is scored.
func TestScoreLakeSIGTERM(t *testing.T) {
	dir := t.TempDir()
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", sharedData(t, "letter_recognition.parquet"), "--label", "label", "--trees", "5", "--out", mdl)
	lakeDir := filepath.Join(dir, "lake")
	if err := os.Mkdir(lakeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs(sharedData(t, "letter_recognition_zstd_rg1000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p1.parquet", "p2.parquet", "p3.parquet"} { // 20 row groups each
		if err := os.Symlink(src, filepath.Join(lakeDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "scored")
	hidden := func() []string {
		ents, _ := os.ReadDir(out)
		var h []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				h = append(h, e.Name())
			}
		}
		return h
	}
	// the run's writer waits, after its first chunk, until the signal has
	// been sent: on a terminal the progress bar is drawn on stderr then,
	// and stderr's first write blocks — the run is midway, a file being
	// written, when the signal comes
	started, sent := make(chan struct{}), make(chan struct{})
	stderr := &heldWriter{first: started, wait: sent}
	tty := true
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		var so bytes.Buffer
		code := Main([]string{"score", "--model", mdl, "--in", lakeDir, "--out", out, "--threads", "1"},
			Env{Stdout: &so, Stderr: stderr, TTY: &tty})
		done <- result{code, so.String(), stderr.String()}
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the run ended before it was signalled: exit %d, %s %s", r.code, r.out, r.errs)
	case <-time.After(20 * time.Second):
		t.Fatal("no chunk was written after 20 s")
	}
	if len(hidden()) == 0 {
		t.Fatal("no output is being written midway through the run")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(sent)
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("score did not stop within 20 s of SIGTERM")
	}
	if r.code != 1 || strings.Count(r.errs, "\n") != 1 || !strings.Contains(r.errs, "stopped") || !strings.Contains(r.errs, "--resume") {
		t.Fatalf("exit %d, stderr %q", r.code, r.errs)
	}
	if h := hidden(); len(h) != 0 {
		t.Fatalf("left behind in OUTDIR: %v", h)
	}
	sum := mustRun(t, "score", "--model", mdl, "--in", lakeDir, "--out", out, "--resume")
	ents, _ := os.ReadDir(out)
	if len(ents) != 3 || sum["files"].(float64)+sum["resumed"].(float64) != 3 {
		t.Fatalf("after --resume: %d entries in OUTDIR, summary files %v resumed %v", len(ents), sum["files"], sum["resumed"])
	}
}

// heldWriter is a stderr whose first write closes first and then waits
// until wait is closed; it keeps what is written.
type heldWriter struct {
	first, wait chan struct{}
	once        sync.Once
	mu          sync.Mutex
	buf         bytes.Buffer
}

func (h *heldWriter) Write(p []byte) (int, error) {
	h.once.Do(func() {
		close(h.first)
		<-h.wait
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.Write(p)
}

func (h *heldWriter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

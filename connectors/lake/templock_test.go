//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package lake

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/files"
)

var oneColumn = arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)

// tree lists the entries below dir (slash paths, directories included).
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func writeFile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("PAR1 half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// holdLock opens p and takes its lock as a writer does, through an open
// file description of its own: flock(2) locks belong to open file
// descriptions, so the lock conflicts with CleanTemps' in this process as
// it would with another process'.
func holdLock(t *testing.T, p string) *os.File {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	return fh
}

// TestCleanTempsOnlyStale: CleanTemps removes the temporary files no
// writer holds (the writer was killed: the kernel dropped its lock) and
// keeps those being written — by a FileWriter of this process, or by a
// file whose lock is held through another open file — and every file that
// is not a FileWriter's temporary file: other hidden files, names that
// only look like one, a link and a directory named like one. With all (a
// resumed run) it still keeps the files being written.
func TestCleanTempsOnlyStale(t *testing.T) {
	dir := t.TempDir()
	stale := []string{
		".part-0.parquet.forestd-tmp-123456",
		"date=2026-11-01/.part-1.parquet.forestd-tmp-42",
		"date=2026-11-01/deeper/.x.forestd-tmp-0",
	}
	for _, s := range stale {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(s)))
	}
	held := "date=2026-11-02/.part-0.parquet.forestd-tmp-777"
	writeFile(t, filepath.Join(dir, filepath.FromSlash(held)))
	holdLock(t, filepath.Join(dir, filepath.FromSlash(held)))
	others := []string{
		".hidden.parquet",                       // someone's hidden file
		".part-0.parquet.forestd-tmp-",          // no digits
		".part-0.parquet.forestd-tmp-12ab",      // not CreateTemp's digits
		"part-0.parquet.forestd-tmp-5",          // not hidden
		".forestd-tmp-5",                        // no output name
		"date=2026-11-01/part-1.parquet",        // an output
		"date=2026-11-01/_SUCCESS",              //
		"date=2026-11-02/.part-0.parquet.tmp-3", // internal/atomicfile's temporary name
	}
	for _, o := range others {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(o)))
	}
	if err := os.Symlink(filepath.Join(dir, "date=2026-11-01", "part-1.parquet"), filepath.Join(dir, ".link.parquet.forestd-tmp-9")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".dir.parquet.forestd-tmp-8"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(dir, "date=2026-11-02", "part-1.parquet"), oneColumn, files.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Base(w.fh.Name())
	before := tree(t, dir)

	n, err := CleanTemps(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if n != (Temps{Removed: len(stale), Kept: 2}) {
		t.Fatalf("CleanTemps: %+v, want %d removed and 2 kept", n, len(stale))
	}
	var want []string
	for _, e := range before {
		if !slices.Contains(stale, e) {
			want = append(want, e)
		}
	}
	if got := tree(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after CleanTemps:\n%v\nwant\n%v", got, want)
	}
	if !slices.Contains(want, "date=2026-11-02/"+live) {
		t.Fatalf("the live writer's %s is not in %v", live, want)
	}
	// a resumed run (all) removes what cannot be judged, never a file
	// whose lock is held
	if n, err := CleanTemps(dir, true); err != nil || n != (Temps{Kept: 2}) {
		t.Fatalf("CleanTemps(all): %+v, %v; want 2 kept", n, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("the writer's commit after CleanTemps: %v", err)
	}
	if !Done(w.Path()) {
		t.Fatal("the committed output is not complete")
	}
}

// TestCleanTempsOtherProcess: a temporary file whose lock another process
// holds survives CleanTemps; once that process is killed (SIGKILL), the
// file is stale and removed.
func TestCleanTempsOtherProcess(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".part-0.parquet.forestd-tmp-31337")
	writeFile(t, p)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FORESTD_TEST_HOLD_LOCK="+p)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	n, err := CleanTemps(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil || n != (Temps{Kept: 1}) {
		t.Fatalf("a file another process holds: %+v, %v", n, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	n, err = CleanTemps(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) || n != (Temps{Removed: 1}) {
		t.Fatalf("after its holder was killed: %+v, %v", n, err)
	}
}

// TestMain runs the tests, or, in the process TestCleanTempsOtherProcess
// starts, holds the lock of the file FORESTD_TEST_HOLD_LOCK names: it
// locks it, says so and waits to be killed.
func TestMain(m *testing.M) {
	p := os.Getenv("FORESTD_TEST_HOLD_LOCK")
	if p == "" {
		os.Exit(m.Run())
	}
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX); err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Hour) // until killed
}

// TestLockTempLostRace: the writer's side of a race with a cleaner that
// opened a new temporary file before the writer locked it: while the
// cleaner holds the lock, or once it has removed the file, lockTemp says
// the file is lost, and Create makes another.
func TestLockTempLostRace(t *testing.T) {
	dir := t.TempDir()
	fh, err := os.CreateTemp(dir, ".a.parquet"+tmpMarker+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	cleaner := holdLock(t, fh.Name())
	if ok, err := lockTemp(fh); ok || err != nil {
		t.Fatalf("lockTemp while a cleaner holds the file: %v, %v", ok, err)
	}
	os.Remove(fh.Name())
	cleaner.Close()
	if ok, err := lockTemp(fh); ok || err != nil {
		t.Fatalf("lockTemp after the cleaner removed the file: %v, %v", ok, err)
	}
}

// TestCleanTempsWhileWriting: CleanTemps running over and over while
// a writer creates and commits outputs in the same directory never
// breaks a commit: the writer holds its lock from creation until its file
// is renamed (closed before the rename, the complete file would look
// stale for a moment).
func TestCleanTempsWhileWriting(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var removed int
	var cleanErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := CleanTemps(dir, false)
			if err != nil {
				cleanErr = err
				return
			}
			removed += n.Removed
		}
	}()
	for i := range 200 {
		w, err := Create(filepath.Join(dir, "p", "out.parquet"), oneColumn, files.WriteOptions{})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	if cleanErr != nil {
		t.Fatal(cleanErr)
	}
	// a file the cleaner opened between its creation and its lock is
	// removed, and its writer makes another: never one written to
	t.Logf("the cleaner removed %d files as they were created", removed)
	if got := tree(t, dir); !slices.Equal(got, []string{"p", "p/out.parquet"}) {
		t.Fatalf("left: %v", got)
	}
}

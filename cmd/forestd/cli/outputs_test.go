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

// TestOutputNotRegularFile (robustness sweep, item 1): an output that
// exists and is not a regular file — /dev/full in the report, a named pipe
// or a directory here — was replaced by the renamed temporary file (exit
// 0); now every command that writes a file refuses it before any work,
// with a usage error naming the flag and the path, and leaves it alone.
func TestOutputNotRegularFile(t *testing.T) {
	dir := t.TempDir()
	data := sharedData(t, "iris.parquet")
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "label", "--trees", "3", "--out", mdl)
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
		return p
	}
	sub := filepath.Join(dir, "sub.model")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	csv, pq, html, png, js := fifo("p.csv"), fifo("p.parquet"), fifo("p.html"), fifo("p.png"), fifo("p.fdm.json")
	for _, c := range []struct {
		args []string
		flag string
		path string
	}{
		{[]string{"train", "--in", data, "--label", "label", "--out", pq}, "--out", pq},
		{[]string{"train", "--in", data, "--label", "label", "--out", sub}, "--out", sub},
		{[]string{"train", "--in", data, "--label", "label", "--forest", "drf", "--out", pq}, "--out", pq},
		{[]string{"score", "--model", mdl, "--in", data, "--out", csv}, "--out", csv},
		{[]string{"analyze", "--in", data, "--label", "label", "--out", pq}, "--out", pq},
		{[]string{"select", "--in", data, "--label", "label", "--out", pq}, "--out", pq},
		{[]string{"select", "--in", data, "--label", "label", "--out", filepath.Join(dir, "s.parquet"), "--mapping", js}, "--mapping", js},
		{[]string{"report", "--model", mdl, "--out", html}, "--out", html},
		{[]string{"report", "--model", mdl, "--grid", "2x2", "--out", png}, "--out", png},
		{[]string{"inspect", "--model", mdl, "--grid", "2x2", "--png", png}, "--png", png},
		{[]string{"gen", "xor2", "--n", "10", "--out", csv}, "--out", csv},
	} {
		code, _, errs := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.flag+" "+c.path) || !strings.Contains(errs, "not a regular file") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %s %s", c.args, code, errs, ExitUsage, c.flag, c.path)
		}
	}
	for _, p := range []string{csv, pq, html, png, js} {
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s is no longer a named pipe (%v)", p, err)
		}
	}
	if st, err := os.Stat(sub); err != nil || !st.IsDir() {
		t.Errorf("%s is no longer a directory (%v)", sub, err)
	}
	if tmp := tempLeftovers(t, dir); tmp != nil {
		t.Errorf("left behind: %v", tmp)
	}
}

// TestReportNeverOverwritesInput (robustness sweep, item 2): report did
// not check --out against what it reads, so report --model m.html --out
// m.html destroyed the model (and --in, --analysis the same way); now each
// is a usage error naming --out, and the input is unchanged.
func TestReportNeverOverwritesInput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.html") // a data file under any name
	b, err := os.ReadFile(sharedData(t, "iris.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mdl := filepath.Join(dir, "m.html")
	mustRun(t, "train", "--in", data, "--label", "label", "--trees", "3", "--out", mdl)
	an := filepath.Join(dir, "a.html")
	if err := os.WriteFile(an, []byte("a dependence report"), 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := map[string][]byte{}
	for _, p := range []string{data, mdl, an} {
		snapshot[p], _ = os.ReadFile(p)
	}
	for _, args := range [][]string{
		{"report", "--model", mdl, "--out", mdl},
		{"report", "--model", mdl, "--in", data, "--label", "label", "--out", data},
		{"report", "--analysis", an, "--out", an},
	} {
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, "--out") || !strings.Contains(errs, "never overwrites its input") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	for p, b := range snapshot {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
}

// TestLakeOutputNotInput (robustness sweep, item 4): select with a
// directory --out wrote the mapped lake over the lake it read (select --in
// lk --out lk replaced lk/d=1/a.parquet, exit 0; --apply the same way).
// Now an output directory that is an input directory, lies inside one or
// holds an input is a usage error for select and score alike, and the
// lake is unchanged.
func TestLakeOutputNotInput(t *testing.T) {
	dir, lk, a := xorLake(t)
	part := filepath.Dir(a)
	sel := filepath.Join(dir, "sel.parquet")
	mustRun(t, "select", "--in", a, "--label", "y", "--groups", "x3a_0,x3a_1", "--out", sel)
	mapping := filepath.Join(dir, "sel.fdm.json")
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", a, "--label", "y", "--trees", "3", "--out", mdl)
	before, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"select", "--in", lk, "--label", "y", "--groups", "x3a_0,x3a_1", "--out", lk},
		{"select", "--apply", mapping, "--in", lk, "--out", lk},
		{"select", "--apply", mapping, "--in", part, "--out", lk},
		{"select", "--apply", mapping, "--in", a, "--out", lk + "/"},
		{"score", "--model", mdl, "--in", lk, "--out", lk},
		{"score", "--model", mdl, "--in", lk, "--out", filepath.Join(lk, "scored")},
		{"score", "--model", mdl, "--in", filepath.Join(lk, "*", "*.parquet"), "--out", lk},
	} {
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, "--out") || !strings.Contains(errs, "never overwrites its input") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if after, err := os.ReadFile(a); err != nil || !bytes.Equal(after, before) {
		t.Errorf("%s changed (%v)", a, err)
	}
	var all []string
	filepath.WalkDir(lk, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			all = append(all, p)
		}
		return nil
	})
	if len(all) != 1 {
		t.Errorf("the lake holds %v", all)
	}
	// Outside the inputs, both write the lake.
	mustRun(t, "select", "--apply", mapping, "--in", lk, "--out", filepath.Join(dir, "mapped"))
	mustRun(t, "score", "--model", mdl, "--in", lk, "--out", filepath.Join(dir, "scored"))
}

// TestTrainLFSGraphNotInput (robustness sweep, item 5): --lfs-graph is an
// output (the learnt locality graph), and it was never checked: train --in
// d.arrows --forest lfs --lfs-graph d.arrows replaced the training data
// with the edge table. Now it is checked like --out before any work: not
// an input, not the model, not a non-regular file, a known format.
func TestTrainLFSGraphNotInput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.arrows")
	mustRun(t, "gen", "trunk", "--n", "200", "--p", "6", "--seed", "1", "--out", data)
	before, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	mdl := filepath.Join(dir, "m.model")
	pipe := filepath.Join(dir, "g.arrow")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	train := []string{"train", "--in", data, "--label", "y", "--trees", "3", "--forest", "lfs", "--lfs-graph"}
	for _, c := range []struct{ out, graph, want string }{
		{mdl, data, "never overwrites its input"},
		{filepath.Join(dir, "m.arrow"), filepath.Join(dir, "m.arrow"), "name the same file"},
		{mdl, filepath.Join(dir, "g.weird"), "unknown output format"},
		{mdl, pipe, "not a regular file"},
	} {
		code, _, errs := run(t, append(train, c.graph, "--out", c.out)...)
		if code != ExitUsage || !strings.Contains(errs, "--lfs-graph") || !strings.Contains(errs, c.want) {
			t.Errorf("--lfs-graph %s: exit %d, stderr %q; want %q", c.graph, code, errs, c.want)
		}
	}
	if after, err := os.ReadFile(data); err != nil || !bytes.Equal(after, before) {
		t.Errorf("%s changed (%v)", data, err)
	}
	for _, p := range []string{mdl, filepath.Join(dir, "m.arrow")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused run wrote %s", p)
		}
	}
	graph := filepath.Join(dir, "g.parquet")
	mustRun(t, append(train, graph, "--out", mdl)...)
	for _, p := range []string{mdl, graph} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// TestSelectOutputsChecked (robustness sweep, item 6): select wrote its
// mapping first (os.Create, not atomic), so a failed data write left it
// behind; an unknown --out format was refused only after the analysis
// (exit 1); --out and --mapping naming one file overwrote silently. Now
// both paths are checked before the analysis, the mapping is written
// atomically after the data, and a failed select leaves neither file.
func TestSelectOutputsChecked(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor2.parquet")
	mustRun(t, "gen", "xor2", "--n", "200", "--seed", "1", "--out", data)
	o := filepath.Join(dir, "o")
	if err := os.Mkdir(o, 0o755); err != nil {
		t.Fatal(err)
	}
	sel := []string{"select", "--in", data, "--label", "y", "--groups", "x3a_0,x3a_1"}
	m1 := filepath.Join(o, "m1.fdm.json")
	// A name whose temporary sibling is too long for the file system: the
	// data write fails after the analysis, where the mapping used to be
	// written already.
	long := filepath.Join(o, strings.Repeat("x", 240)+".parquet")
	for _, c := range []struct {
		args       []string
		code       int
		flag, want string
	}{
		{[]string{"--out", filepath.Join(dir, "nodir", "x.parquet"), "--mapping", m1}, ExitError, "--out", "nodir"},
		{[]string{"--out", filepath.Join(o, "x.parquet"), "--mapping", filepath.Join(dir, "nodir", "m.fdm.json")}, ExitError, "--mapping", "nodir"},
		{[]string{"--out", filepath.Join(o, "x.weird"), "--mapping", m1}, ExitUsage, "--out", "unknown output format"},
		{[]string{"--out", filepath.Join(o, "s.parquet"), "--mapping", filepath.Join(o, "s.parquet")}, ExitUsage, "--mapping", "same file"},
		{[]string{"--out", filepath.Join(o, "s.parquet"), "--mapping", filepath.Join(dir, "o", ".", "s.parquet")}, ExitUsage, "--mapping", "same file"},
		{[]string{"--out", long, "--mapping", m1}, ExitError, "", "file name too long"},
	} {
		code, _, errs := run(t, append(sel, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.flag) || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %s, %q", c.args, code, errs, c.code, c.flag, c.want)
		}
		if ents, _ := os.ReadDir(o); len(ents) > 0 {
			t.Errorf("%v left %s", c.args, ents[0].Name())
		}
	}
	mustRun(t, append(sel, "--out", filepath.Join(o, "s.parquet"), "--mapping", m1)...)
	for _, p := range []string{filepath.Join(o, "s.parquet"), m1} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// TestLakeOutputNotInsideGlob: a glob input's lake is the directory its
// fixed prefix names (what connectors/lake walks), so an output directory
// inside it is refused as for a directory input: score --in 'lk/*/*.parquet'
// --out lk/scored exited 0 and wrote predictions into the lake, which a
// later run over lk (or 'lk/**/*.parquet') reads as input.
func TestLakeOutputNotInsideGlob(t *testing.T) {
	dir, lk, a := xorLake(t)
	part := filepath.Dir(a)
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", a, "--label", "y", "--trees", "3", "--out", mdl)
	for _, args := range [][]string{
		{"score", "--model", mdl, "--in", filepath.Join(lk, "*", "*.parquet"), "--out", filepath.Join(lk, "scored")},
		{"score", "--model", mdl, "--in", filepath.Join(lk, "**", "*.parquet"), "--out", filepath.Join(lk, "scored") + "/"},
		{"score", "--model", mdl, "--in", filepath.Join(lk, "d=1", "**"), "--out", filepath.Join(part, "scored")},
	} {
		code, _, errs := run(t, args...)
		if code != ExitUsage || !strings.Contains(errs, "--out") || !strings.Contains(errs, "never overwrites its input") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if ents, err := os.ReadDir(lk); err != nil || len(ents) != 1 {
		t.Errorf("the lake holds %v (%v)", ents, err)
	}
	// beside the lake, or below the glob's root where it matches no file,
	// a glob's outputs are written
	mustRun(t, "score", "--model", mdl, "--in", filepath.Join(lk, "*", "*.parquet"), "--out", filepath.Join(dir, "scored"))
	mustRun(t, "score", "--model", mdl, "--in", filepath.Join(lk, "d=*", "*.parquet"), "--out", filepath.Join(lk, "scored"))
}

// xorLake writes a one-file hive lake, dir/lk/d=1/a.parquet (200 rows of
// xor2), and returns dir, the lake and the file.
func xorLake(t *testing.T) (dir, lk, a string) {
	t.Helper()
	dir = t.TempDir()
	lk = filepath.Join(dir, "lk")
	part := filepath.Join(lk, "d=1")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	a = filepath.Join(part, "a.parquet")
	mustRun(t, "gen", "xor2", "--n", "200", "--seed", "1", "--out", a)
	return dir, lk, a
}

// TestOutputCheckedBeforeWork (CLI audit, item 1): an output file in a
// missing directory, under a file, or of an unknown format was found only
// when written, after the training, the analysis or the scoring (and the
// error named the temporary file). Every command now checks its outputs
// first: the inputs here do not exist, so an error naming the output
// shows that nothing was read.
func TestOutputCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	absent := filepath.Join(dir, "absent.parquet")
	mdl := filepath.Join(dir, "absent.model")
	file := filepath.Join(dir, "file.csv")
	if err := os.WriteFile(file, []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodir := filepath.Join(dir, "nodir")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"train", "--in", absent, "--label", "y", "--out", filepath.Join(nodir, "x.model")}, ExitError, "--out " + filepath.Join(nodir, "x.model") + ": directory " + nodir + " does not exist"},
		{[]string{"train", "--in", absent, "--label", "y", "--out", filepath.Join(file, "x.model")}, ExitError, file + " is not a directory"},
		{[]string{"train", "--in", absent, "--label", "y", "--forest", "drf", "--out", filepath.Join(nodir, "x.model")}, ExitError, "--out " + filepath.Join(nodir, "x.model")},
		{[]string{"train", "--in", absent, "--label", "y", "--forest", "lfs", "--out", filepath.Join(dir, "x.model"), "--lfs-graph", filepath.Join(nodir, "g.csv")}, ExitError, "--lfs-graph " + filepath.Join(nodir, "g.csv")},
		{[]string{"train", "--in", absent, "--label", "y", "--forest", "lfs", "--out", filepath.Join(dir, "x.model"), "--lfs-graph", filepath.Join(dir, "g.txt")}, ExitUsage, "--lfs-graph " + filepath.Join(dir, "g.txt") + ": unknown output format"},
		{[]string{"analyze", "--in", absent, "--label", "y", "--out", filepath.Join(nodir, "r.csv")}, ExitError, "--out " + filepath.Join(nodir, "r.csv")},
		{[]string{"analyze", "--in", absent, "--label", "y", "--out", filepath.Join(dir, "r.txt")}, ExitUsage, "unknown output format"},
		{[]string{"score", "--model", mdl, "--in", absent, "--out", filepath.Join(dir, "x.txt")}, ExitUsage, "--out " + filepath.Join(dir, "x.txt") + ": unknown output format"},
		{[]string{"score", "--model", mdl, "--in", absent, "--out", filepath.Join(nodir, "p.csv")}, ExitError, "--out " + filepath.Join(nodir, "p.csv")},
		{[]string{"gen", "trunk", "--out", filepath.Join(dir, "g.txt")}, ExitUsage, "--out " + filepath.Join(dir, "g.txt") + ": unknown output format"},
		{[]string{"gen", "trunk", "--out", filepath.Join(nodir, "g.csv")}, ExitError, "--out " + filepath.Join(nodir, "g.csv")},
		{[]string{"select", "--in", absent, "--label", "y", "--out", filepath.Join(dir, "s.txt")}, ExitUsage, "unknown output format"},
		{[]string{"report", "--model", mdl, "--out", filepath.Join(file, "r.html")}, ExitError, "--out " + filepath.Join(file, "r.html") + ": " + file + " is not a directory"},
		{[]string{"inspect", "--model", mdl, "--png", filepath.Join(file, "sub", "h.png")}, ExitError, "--png " + filepath.Join(file, "sub", "h.png") + ": " + file + " is not a directory"},
	} {
		code, _, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 || strings.Contains(errs, ".tmp-") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, code, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(nodir); err == nil {
		t.Errorf("%s was created", nodir)
	}
}

// TestScoreOutNotALake (CLI audit, item 5): an --out without an extension
// was taken as a lake directory even when it exists as a file, so
// score --out /dev/null failed with exit 1 "lake: mkdir /dev/null/: file
// exists". An existing file is an output file, checked as every one is
// (a special file is a usage error), and never a lake's directory.
func TestScoreOutNotALake(t *testing.T) {
	dir := t.TempDir()
	data := sharedData(t, "iris.parquet")
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", data, "--label", "label", "--trees", "3", "--out", mdl)
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	score := []string{"score", "--model", mdl, "--in", data, "--out"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/dev/null"}, "--out /dev/null: not a regular file (it is a character device)"},
		{[]string{"/dev/null", "--resume"}, "--out /dev/null: not a regular file"},
		{[]string{pipe}, "--out " + pipe + ": not a regular file (it is a named pipe)"},
		{[]string{plain}, "--out " + plain + ": unknown output format"},
		{[]string{plain, "--dry-run"}, "--out " + plain + " is a file: a lake's output is a directory"},
	} {
		code, _, errs := run(t, append(score, c.args...)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("score --out %v: exit %d, stderr %q; want exit %d naming %q", c.args, code, errs, ExitUsage, c.want)
		}
	}
	code, _, errs := run(t, "select", "--in", data, "--label", "label", "--out", "/dev/null")
	if code != ExitUsage || !strings.Contains(errs, "--out /dev/null: not a regular file") {
		t.Errorf("select --out /dev/null: exit %d, stderr %q", code, errs)
	}
}

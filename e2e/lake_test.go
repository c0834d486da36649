package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/internal/broker"
)

// The lake tests run the forestd binary as a subprocess on hive-layout
// lakes made of the DuckDB-written Parquet files in testdata
// (symbolic links in a temporary directory), including the 20-row-group
// zstd file and the bad_* files.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// forestdBin builds cmd/forestd once per test binary.
func forestdBin(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "forestd-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "forestd")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/forestd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// forestd runs the binary and returns exit code, stdout and stderr.
func forestd(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(forestdBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func forestdJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := forestd(t, nil, args...)
	if code != 0 {
		t.Fatalf("forestd %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("forestd %s: stdout is not one JSON object: %v\n%s", args[0], err, out)
	}
	return m
}

// makeLake links shared data files into a temporary lake: rel → file.
func makeLake(t *testing.T, layout map[string]string) string {
	t.Helper()
	root := t.TempDir()
	src, err := filepath.Abs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for rel, name := range layout {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(src, name)
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("test data missing (testdata/ of the repository): %v", err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// letterModel trains a small forest on the letter data (20 trees).
func letterModel(t *testing.T) string {
	t.Helper()
	m := filepath.Join(t.TempDir(), "letter.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, "letter_recognition.parquet"), "--label", "label",
		"--out", m, "--trees", "20", "--seed", "3")
	return m
}

// readAll reads a Parquet file whole with connectors/files into one record.
func readAll(t *testing.T, path string) arrow.Record {
	t.Helper()
	schema, recs, err := files.ReadFile(path, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cols := make([]arrow.Array, schema.NumFields())
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	for j := range cols {
		var parts []arrow.Array
		for _, r := range recs {
			parts = append(parts, r.Column(j))
		}
		if len(parts) == 0 {
			cols[j] = array.MakeArrayOfNull(memory.DefaultAllocator, schema.Field(j).Type, 0)
		} else {
			a, err := array.Concatenate(parts, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			cols[j] = a
		}
		defer cols[j].Release()
	}
	return array.NewRecord(schema, cols, n)
}

func column(t *testing.T, rec arrow.Record, name string) arrow.Array {
	t.Helper()
	ix := rec.Schema().FieldIndices(name)
	if len(ix) != 1 {
		t.Fatalf("no column %s in %v", name, rec.Schema())
	}
	return rec.Column(ix[0])
}

type skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

func skippedOf(t *testing.T, m map[string]any) []skipped {
	t.Helper()
	b, _ := json.Marshal(m["skipped"])
	var s []skipped
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLakeScore scores a hive lake holding good and bad files: every good
// file gets one output with the same rows, in order, and predictions
// equal to scoring that file alone in memory; the bad files are named in
// the summary with their cause and do not stop the others.
func TestLakeScore(t *testing.T) {
	t.Parallel()
	mdl := letterModel(t)
	root := makeLake(t, map[string]string{
		"date=2026-11-01/part-0.parquet": "letter_recognition_zstd_rg1000.parquet",
		"date=2026-11-01/part-1.parquet": "bad_truncated.parquet",
		"date=2026-11-02/part-0.parquet": "letter_recognition.parquet",
		"date=2026-11-02/part-1.parquet": "bad_string_feature.parquet",
		"date=2026-11-03/a/p.parquet":    "letter_recognition_zstd_rg1000.parquet",
	})
	out := filepath.Join(t.TempDir(), "preds")
	sum := forestdJSON(t, "score", "--model", mdl, "--in", root, "--out", out, "--keep", "date,label", "--max-memory", "128MiB")
	if sum["files"].(float64) != 3 || sum["rows"].(float64) != 60000 || sum["files_listed"].(float64) != 5 {
		t.Fatalf("summary %v", sum)
	}
	for _, k := range []string{"files", "rows", "skipped", "seconds"} {
		if _, ok := sum[k]; !ok {
			t.Fatalf("summary lacks %s: %v", k, sum)
		}
	}
	sk := skippedOf(t, sum)
	reasons := map[string]string{}
	for _, s := range sk {
		rel, _ := filepath.Rel(root, s.File)
		reasons[filepath.ToSlash(rel)] = s.Reason
	}
	if len(sk) != 2 ||
		!strings.Contains(reasons["date=2026-11-01/part-1.parquet"], "not a complete Parquet file") ||
		!strings.Contains(reasons["date=2026-11-02/part-1.parquet"], "missing columns x.box") {
		t.Fatalf("skipped %v", sk)
	}

	for _, rel := range []string{"date=2026-11-01/part-0.parquet", "date=2026-11-02/part-0.parquet", "date=2026-11-03/a/p.parquet"} {
		in := filepath.Join(root, rel)
		got := readAll(t, filepath.Join(out, rel))
		src := readAll(t, in)
		if got.NumRows() != src.NumRows() {
			t.Fatalf("%s: %d output rows, %d input rows", rel, got.NumRows(), src.NumRows())
		}
		if !array.Equal(column(t, got, "label"), column(t, src, "label")) {
			t.Fatalf("%s: passthrough label differs from the input row for row", rel)
		}
		rows := column(t, got, "row").(*array.Int64)
		source := column(t, got, "source").(*array.String)
		date := column(t, got, "date").(*array.String)
		for i := 0; i < rows.Len(); i++ {
			if rows.Value(i) != int64(i) || source.Value(i) != in || date.Value(i) != strings.TrimPrefix(strings.Split(rel, "/")[0], "date=") {
				t.Fatalf("%s row %d: row %d source %s date %s", rel, i, rows.Value(i), source.Value(i), date.Value(i))
			}
		}
		// The same file scored alone, in memory, by the single-file path.
		one := filepath.Join(t.TempDir(), "one.parquet")
		forestdJSON(t, "score", "--model", mdl, "--in", in, "--out", one)
		ref := readAll(t, one)
		for _, c := range []string{"prediction", "prob_A", "prob_Z", "model_id"} {
			if !array.Equal(column(t, got, c), column(t, ref, c)) {
				t.Fatalf("%s: column %s differs from scoring the file alone", rel, c)
			}
		}
		got.Release()
		src.Release()
		ref.Release()
	}
	// Nothing but the three outputs: no temporary files, no outputs for
	// bad files.
	var found []string
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(found)
	if want := []string{"date=2026-11-01/part-0.parquet", "date=2026-11-02/part-0.parquet", "date=2026-11-03/a/p.parquet"}; !slices.Equal(found, want) {
		t.Fatalf("output tree %v, want %v", found, want)
	}

	// --on-error fail stops at the first bad file and names it.
	code, _, errs := forestd(t, nil, "score", "--model", mdl, "--in", root, "--out", filepath.Join(t.TempDir(), "x"), "--on-error", "fail")
	if code != 1 || !strings.Contains(errs, "date=2026-11-01/part-1.parquet") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("on-error fail: exit %d, stderr %q", code, errs)
	}
}

// killLake makes a lake of days × 3 letter_recognition files (20 row
// groups each), scores it once uninterrupted into full, and returns the
// score command's arguments for an output directory (and extra flags) and
// the number of files. The runs score on one thread, so that a test can
// kill one midway: a lake of many files is what keeps it busy long enough
// (there is no slowing knob).
func killLake(t *testing.T, days int) (args func(out string, extra ...string) []string, full string, files int) {
	mdl := letterModel(t)
	layout := map[string]string{}
	for d := 1; d <= days; d++ {
		for p := 0; p < 3; p++ {
			layout[fmt.Sprintf("date=2026-11-%02d/part-%d.parquet", d, p)] = "letter_recognition_zstd_rg1000.parquet"
		}
	}
	root := makeLake(t, layout)
	args = func(out string, extra ...string) []string {
		return append([]string{"score", "--model", mdl, "--in", root, "--out", out, "--keep", "label,date", "--readers", "2", "--threads", "1"}, extra...)
	}
	full = filepath.Join(t.TempDir(), "full")
	forestdJSON(t, args(full)...)
	return args, full, len(layout)
}

// startRun starts forestd with args, for a test to kill.
func startRun(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(forestdBin(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestLakeKillResume kills a lake run with SIGKILL midway and resumes it:
// the outputs are byte for byte those of an uninterrupted run, no output
// was ever visible half-written, and no temporary file is left.
func TestLakeKillResume(t *testing.T) {
	t.Parallel()
	args, full, files := killLake(t, 8)
	part := filepath.Join(t.TempDir(), "part")
	cmd := startRun(t, args(part)...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n := len(outputs(t, part)); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no output appeared within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	done := outputs(t, part)
	t.Logf("killed after %d of %d outputs", len(done), files)
	if len(done) >= files {
		t.Fatalf("the run finished before it was killed (%d outputs)", len(done))
	}
	// Every output visible after the kill is complete and final.
	for _, rel := range done {
		same(t, filepath.Join(full, rel), filepath.Join(part, rel))
	}
	sum := forestdJSON(t, args(part, "--resume")...)
	if int(sum["resumed"].(float64)) != len(done) || int(sum["files"].(float64)) != files-len(done) {
		t.Fatalf("resume summary %v after %d outputs", sum, len(done))
	}
	all := outputs(t, part)
	if len(all) != files {
		t.Fatalf("%d outputs after resuming, want %d", len(all), files)
	}
	for _, rel := range all {
		same(t, filepath.Join(full, rel), filepath.Join(part, rel))
	}
	filepath.WalkDir(part, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestLakeKillRerun kills a lake run with SIGKILL while it writes (its
// hidden temporary files stay in OUTDIR: no signal handler runs) and runs
// it again without --resume: the new run removes them before it starts
// (their writer's lock died with it), says so in its summary, and leaves
// the outputs of an uninterrupted run, byte for byte, and nothing else.
func TestLakeKillRerun(t *testing.T) {
	t.Parallel()
	args, full, files := killLake(t, 6)
	part := filepath.Join(t.TempDir(), "part")
	cmd := startRun(t, args(part)...)
	// kill it once a file is complete and the next is half written
	deadline := time.Now().Add(30 * time.Second)
	for len(outputs(t, part)) < 1 || len(temps(t, part)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no output was being written within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left := temps(t, part)
	t.Logf("killed with %d outputs and temporary files %v", len(outputs(t, part)), left)
	if len(left) == 0 {
		t.Fatal("the killed run left no temporary file: the test proves nothing")
	}
	sum := forestdJSON(t, args(part)...)
	got, _ := sum["temps"].(map[string]any)
	if got == nil || int(got["removed"].(float64)) != len(left) || got["kept"].(float64) != 0 {
		t.Fatalf("summary temps %v, want %d removed", sum["temps"], len(left))
	}
	if int(sum["files"].(float64)) != files {
		t.Fatalf("the plain re-run scored %v files, want %d", sum["files"], files)
	}
	all := outputs(t, part)
	if len(all) != files {
		t.Fatalf("%d outputs after the re-run, want %d", len(all), files)
	}
	for _, rel := range all {
		same(t, filepath.Join(full, rel), filepath.Join(part, rel))
	}
	if h := temps(t, part); len(h) != 0 {
		t.Fatalf("temporary files left: %v", h)
	}
}

// temps lists the hidden files below dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// outputs lists the final-named files below dir.
func outputs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func same(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s (%d bytes) differs from %s (%d bytes)", b, len(y), a, len(x))
	}
}

// TestLakeTrainSample trains from a hive lake with --sample: the sample
// has the requested size, stratified draws follow the class shares, bad
// files are reported, and the model bytes do not depend on the number of
// readers.
func TestLakeTrainSample(t *testing.T) {
	t.Parallel()
	root := makeLake(t, map[string]string{
		"date=2026-11-01/part-0.parquet": "letter_recognition_zstd_rg1000.parquet",
		"date=2026-11-02/part-0.parquet": "letter_recognition.parquet",
		"date=2026-11-02/part-1.parquet": "bad_truncated.parquet",
	})
	dir := t.TempDir()
	var ids []string
	for _, readers := range []string{"1", "4"} {
		m := filepath.Join(dir, "m"+readers+".model")
		rep := forestdJSON(t, "train", "--in", root, "--label", "label", "--out", m, "--trees", "10",
			"--sample", "4000", "--sample-mode", "stratified", "--seed", "5", "--readers", readers)
		if rep["rows"].(float64) != 4000 {
			t.Fatalf("trained on %v rows", rep["rows"])
		}
		s := rep["sample"].(map[string]any)
		if s["mode"] != "stratified" || s["rows"].(float64) != 4000 || s["population"].(float64) != 40000 ||
			len(s["strata"].([]any)) != 26 || len(s["skipped"].([]any)) != 1 {
			t.Fatalf("sample report %v", s)
		}
		for _, st := range s["strata"].([]any) {
			st := st.(map[string]any)
			share := 4000 * st["population"].(float64) / 40000
			if d := st["sampled"].(float64) - share; d <= -1 || d >= 1 {
				t.Fatalf("stratum %v: sampled %v, share %.2f", st["label"], st["sampled"], share)
			}
		}
		ids = append(ids, rep["model_id"].(string))
	}
	if ids[0] != ids[1] {
		t.Fatalf("model differs between 1 and 4 readers: %v", ids)
	}
	// --sample keeps its per-tree meaning too.
	forestdJSON(t, "train", "--in", filepath.Join(root, "date=2026-11-01"), "--label", "label", "--out", filepath.Join(dir, "b.model"),
		"--trees", "5", "--sample", "subsample")
	if code, _, errs := forestd(t, nil, "train", "--in", root, "--label", "label", "--out", filepath.Join(dir, "c.model"),
		"--sample", "100", "--sample-mode", "systematic"); code != 2 || !strings.Contains(errs, "systematic") {
		t.Fatalf("bad --sample-mode: exit %d %q", code, errs)
	}
}

// TestLakeWorkers: two forestd processes share a lake through a topic on
// an embedded broker (loopback, free port): one enqueues the files, both
// score what the group assigns them; together they score every good file
// exactly once, each output equals the single-process run's byte for
// byte, the bad file is named once, and both stop by themselves. The
// temporary file a worker killed in an earlier run left in the shared
// OUTDIR is removed at the start, while neither removes the other's.
func TestLakeWorkers(t *testing.T) {
	t.Parallel()
	mdl := letterModel(t)
	layout := map[string]string{"date=2026-11-03/bad.parquet": "bad_truncated.parquet"}
	for i := 0; i < 8; i++ {
		layout[fmt.Sprintf("date=2026-11-%02d/part-%d.parquet", i%2+1, i)] = "letter_recognition_zstd_rg1000.parquet"
	}
	root := makeLake(t, layout)
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	full := filepath.Join(t.TempDir(), "full")
	forestdJSON(t, "score", "--model", mdl, "--in", root, "--out", full, "--keep", "label")
	out := filepath.Join(t.TempDir(), "shared")
	// the temporary file of a worker that was killed in an earlier run
	dead := filepath.Join(out, "date=2026-11-01", ".part-0.parquet.forestd-tmp-4242")
	if err := os.MkdirAll(filepath.Dir(dead), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dead, []byte("PAR1 half"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"score", "--model", mdl, "--in", root, "--out", out, "--keep", "label",
		"--workers-topic", "lake-jobs", "--brokers", b.Addr(), "--group", "e2e", "--topic-partitions", "8"}
	type res struct {
		sum map[string]any
		err error
	}
	results := make([]res, 2)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := slices.Clone(args)
			if w == 0 {
				a = append(a, "--enqueue")
			} else {
				time.Sleep(300 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, forestdBin(t), a...)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if err := cmd.Run(); err != nil {
				results[w].err = fmt.Errorf("worker %d: %v: %s", w, err, se.String())
				return
			}
			results[w].err = json.Unmarshal(so.Bytes(), &results[w].sum)
		}()
	}
	wg.Wait()
	files, jobs, removed := 0, 0, 0
	var skippedFiles []string
	for w, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Logf("worker %d: %v files in %v jobs, temporary files found at the start %v", w, r.sum["files"], r.sum["worker"].(map[string]any)["jobs"], r.sum["temps"])
		if tm, ok := r.sum["temps"].(map[string]any); ok {
			removed += int(tm["removed"].(float64))
		}
		files += int(r.sum["files"].(float64))
		jobs += int(r.sum["worker"].(map[string]any)["jobs"].(float64))
		for _, s := range skippedOf(t, r.sum) {
			skippedFiles = append(skippedFiles, s.File)
		}
	}
	if files != 8 || jobs != 9 {
		t.Fatalf("the workers scored %d files in %d jobs, want 8 in 9", files, jobs)
	}
	if len(skippedFiles) != 1 || !strings.HasSuffix(skippedFiles[0], "bad.parquet") {
		t.Fatalf("skipped %v", skippedFiles)
	}
	got := outputs(t, out)
	if len(got) != 8 {
		t.Fatalf("%d outputs: %v", len(got), got)
	}
	// the dead worker's file is gone, and neither worker removed a file
	// the other was writing (each checks its lock): nothing breaks, and
	// nothing is left
	if h := temps(t, out); len(h) != 0 || removed < 1 {
		t.Fatalf("%d stale temporary files removed; left: %v", removed, h)
	}
	for _, rel := range got {
		same(t, filepath.Join(full, rel), filepath.Join(out, rel))
	}
}

// TestLakeSelectAnalyze: select writes the mapped lake in the input's
// layout (one output per good file, each equal to mapping that file alone
// with the stored mapping), after removing the temporary file a select
// killed earlier left there, and analyze learns from a lake sample.
func TestLakeSelectAnalyze(t *testing.T) {
	t.Parallel()
	root := makeLake(t, map[string]string{
		"day=1/a.parquet": "iris.parquet",
		"day=2/a.parquet": "iris.parquet",
		"day=2/b.parquet": "bad_string_feature.parquet",
	})
	dir := t.TempDir()
	out, mapping := filepath.Join(dir, "mapped"), filepath.Join(dir, "m.fdm.json")
	// what a select killed in an earlier run left in OUTDIR
	stale := filepath.Join(out, "day=1", ".a.parquet.forestd-tmp-77")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("PAR1 half"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := forestdJSON(t, "select", "--in", root, "--label", "label", "--out", out, "--mapping", mapping,
		"--groups", "sepal_length_cm,sepal_width_cm", "--marginal", "petal_length_cm", "--keep", "day", "--sample", "250")
	lk := rep["lake"].(map[string]any)
	// bad_string_feature has the columns select reads with other types:
	// it is skipped by name, the good files are mapped.
	if lk["files"].(float64) != 2 || rep["rows"].(float64) != 300 || len(lk["skipped"].([]any)) != 1 ||
		rep["sample"].(map[string]any)["rows"].(float64) != 250 {
		t.Fatalf("select report %v", rep)
	}
	if tm, _ := lk["temps"].(map[string]any); tm == nil || tm["removed"].(float64) != 1 || len(temps(t, out)) != 0 {
		t.Fatalf("stale temporary file: report %v, left %v", lk["temps"], temps(t, out))
	}
	for _, rel := range []string{"day=1/a.parquet", "day=2/a.parquet"} {
		got := readAll(t, filepath.Join(out, rel))
		one := filepath.Join(dir, "one.parquet")
		forestdJSON(t, "select", "--in", filepath.Join(root, rel), "--apply", mapping, "--label", "label", "--out", one)
		ref := readAll(t, one)
		if got.NumRows() != 150 || column(t, got, "day").ValueStr(0) != strings.TrimPrefix(filepath.Dir(rel), "day=") {
			t.Fatalf("%s: %d rows, day %v", rel, got.NumRows(), column(t, got, "day"))
		}
		for _, c := range []string{"petal_length_cm", "fdm_g1_1", "fdm_g1_2", "label"} {
			if !array.Equal(column(t, got, c), column(t, ref, c)) {
				t.Fatalf("%s: column %s differs from mapping the file alone", rel, c)
			}
		}
		got.Release()
		ref.Release()
	}
	an := forestdJSON(t, "analyze", "--in", root, "--label", "label", "--sample", "120", "--method", "marginal", "--max-perms", "200")
	if an["rows"].(float64) != 120 || an["sample"].(map[string]any)["population"].(float64) != 300 {
		t.Fatalf("analyze over a lake sample: rows %v, sample %v", an["rows"], an["sample"])
	}
}

// TestLakeResumeOtherModel: --resume keeps outputs of the same model and
// scores again those another model wrote.
func TestLakeResumeOtherModel(t *testing.T) {
	t.Parallel()
	root := makeLake(t, map[string]string{
		"d=1/p.parquet": "letter_recognition_zstd_rg1000.parquet",
		"d=2/p.parquet": "letter_recognition.parquet",
	})
	m1 := letterModel(t)
	m2 := filepath.Join(t.TempDir(), "other.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, "letter_recognition.parquet"), "--label", "label", "--out", m2, "--trees", "5", "--seed", "9")
	out := filepath.Join(t.TempDir(), "o")
	forestdJSON(t, "score", "--model", m1, "--in", root, "--out", out)
	if s := forestdJSON(t, "score", "--model", m1, "--in", root, "--out", out, "--resume"); s["resumed"].(float64) != 2 || s["files"].(float64) != 0 {
		t.Fatalf("same model: %v", s)
	}
	s := forestdJSON(t, "score", "--model", m2, "--in", root, "--out", out, "--resume")
	if s["resumed"].(float64) != 0 || s["files"].(float64) != 2 {
		t.Fatalf("other model: %v", s)
	}
	rec := readAll(t, filepath.Join(out, "d=1", "p.parquet"))
	defer rec.Release()
	if id := column(t, rec, "model_id").ValueStr(0); id != s["model_id"] {
		t.Fatalf("output model %s, want %v", id, s["model_id"])
	}
}

// TestLakeWrongType: a file whose model feature has the wrong type
// (bad_string_feature: petal_length_cm as text) is named with the column
// and its type; the good file is scored.
func TestLakeWrongType(t *testing.T) {
	t.Parallel()
	root := makeLake(t, map[string]string{
		"k=a/good.parquet": "iris.parquet",
		"k=b/bad.parquet":  "bad_string_feature.parquet",
	})
	m := filepath.Join(t.TempDir(), "iris.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, "iris.parquet"), "--label", "label", "--out", m, "--trees", "5")
	s := forestdJSON(t, "score", "--model", m, "--in", root, "--out", filepath.Join(t.TempDir(), "o"))
	sk := skippedOf(t, s)
	if s["files"].(float64) != 1 || s["rows"].(float64) != 150 || len(sk) != 1 ||
		!strings.HasSuffix(sk[0].File, "k=b/bad.parquet") || sk[0].Reason != "column petal_length_cm is utf8, the model needs a number" {
		t.Fatalf("summary %v", s)
	}
}

package benthos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds forestd-benthos (this module's command) and forestd
// (the main module's) once per test run.
func binaries(t *testing.T) (benthosBin, forestdBin string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "forestd-benthos-e2e")
		if buildErr != nil {
			return
		}
		for _, c := range [][]string{
			{"build", "-o", filepath.Join(binDir, "forestd-benthos"), "./cmd/forestd-benthos"},
			{"build", "-C", "../..", "-o", filepath.Join(binDir, "forestd"), "./cmd/forestd"},
		} {
			out, err := exec.Command("go", c...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go %v: %v\n%s", c, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "forestd-benthos"), filepath.Join(binDir, "forestd")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// forestdMetrics reads the forestd_rows_scored, forestd_messages_errored
// and forestd_model_version values from Benthos' json_api /metrics (nil if
// it does not answer).
func forestdMetrics(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var all map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range all {
		name, _, _ := strings.Cut(k, "{")
		if f, ok := v.(float64); ok && (name == "forestd_rows_scored" || name == "forestd_messages_errored" || name == "forestd_model_version") {
			out[name] += f
		}
	}
	return out
}

func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return out
}

// reference runs forestd score on the data set and returns, per row, the
// prediction and the probabilities of classes 0 and 1.
type refRow struct {
	pred   string
	p0, p1 float32
}

func forestdScore(t *testing.T, forestdBin, model, in, dir string) []refRow {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("ref-%d.csv", time.Now().UnixNano()))
	run(t, forestdBin, "score", "--model", model, "--in", in, "--out", out)
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(recs[0], ",")
	if head != "model_id,model_version,source,row,prediction,prob_0,prob_1" {
		t.Fatalf("forestd score wrote %s", head)
	}
	rows := make([]refRow, len(recs)-1)
	for i, r := range recs[1:] {
		p0, _ := strconv.ParseFloat(r[5], 32)
		p1, _ := strconv.ParseFloat(r[6], 32)
		rows[i] = refRow{r[4], float32(p0), float32(p1)}
	}
	return rows
}

func parseF32(t *testing.T, v any) float32 {
	t.Helper()
	f, err := strconv.ParseFloat(fmt.Sprint(v), 32)
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return float32(f)
}

// TestE2EJSONPipeline: bin/forestd-benthos runs a YAML pipeline that reads
// JSON lines of breast_cancer from stdin, batched by Benthos' batched input,
// through forestd_score to stdout, with switch routing errored messages to
// a dead-letter file. The test feeds the rows at a steady pace and replaces
// the model file (forestd train --model-version 2, renamed into place)
// midway. Every good row comes out once with the prediction forestd score
// gives for the version it names; versions never go back and version 2
// arrives; the three malformed rows (a string feature, a missing feature,
// non-JSON) are in the dead-letter file with their reasons, and nothing
// else is.
func TestE2EJSONPipeline(t *testing.T) {
	bbin, fbin := binaries(t)
	dir := t.TempDir()
	data, _ := filepath.Abs(filepath.Join(dataDir, "breast_cancer.parquet"))
	m1, m2 := filepath.Join(dir, "m1.model"), filepath.Join(dir, "m2.model")
	run(t, fbin, "train", "--in", data, "--label", "label", "--task", "classification", "--trees", "50", "--seed", "1", "--model-version", "1", "--out", m1)
	run(t, fbin, "train", "--in", data, "--label", "label", "--task", "classification", "--trees", "50", "--seed", "2", "--model-version", "2", "--out", m2)
	refs := map[int64][]refRow{1: forestdScore(t, fbin, m1, data, dir), 2: forestdScore(t, fbin, m2, data, dir)}
	live := filepath.Join(dir, "live.model")
	if err := os.Link(m1, live); err != nil {
		t.Fatal(err)
	}
	dlq := filepath.Join(dir, "dead.jsonl")
	conf := filepath.Join(dir, "pipeline.yaml")
	addr := freeAddr(t)
	mustWrite(t, conf, []byte(fmt.Sprintf(`
http: {address: %q}
metrics: {json_api: {}}
logger: {level: warn, file: {path: /dev/stderr}}
input:
  batched:
    child:
      stdin:
        scanner:
          lines: {}
    policy:
      count: 100
      period: 50ms
pipeline:
  threads: 1
  processors:
    - forestd_score:
        model: %q
        reload_interval: 20ms
output:
  switch:
    cases:
      - check: errored()
        output:
          file: {path: %q, codec: lines}
          processors:
            - mapping: |
                root.error = error()
                root.message = content().string()
      - output:
          stdout: {codec: lines}
`, addr, live, dlq)))
	run(t, bbin, "lint", conf)

	rec := readData(t, "breast_cancer.parquet")
	defer rec.Release()
	var lines [][]byte
	for i, l := range jsonRows(t, rec) {
		lines = append(lines, append([]byte(fmt.Sprintf(`{"id":%d,`, i)), l[1:]...))
	}
	malformed := [][]byte{
		[]byte(strings.Replace(string(lines[10]), `"mean_radius":`, `"mean_radius":"abc","was":`, 1)),
		[]byte(strings.Replace(string(lines[11]), `"worst_symmetry":`, `"other":`, 1)),
		[]byte(`this is not JSON`),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bbin, "-c", conf)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(stdin)
	for i, l := range lines {
		w.Write(l)
		w.WriteByte('\n')
		if i%50 == 49 {
			if i/50 == 2 {
				w.Write(malformed[0])
				w.WriteString("\n")
				w.Write(malformed[1])
				w.WriteString("\n")
			}
			if i/50 == 7 {
				w.Write(malformed[2])
				w.WriteString("\n")
			}
			w.Flush()
			time.Sleep(40 * time.Millisecond)
		}
		if i == 200 { // a corrupt replacement: kept out, warned about once over many polls
			w.Flush()
			tmp := live + ".bad"
			mustWrite(t, tmp, []byte("not a model"))
			if err := os.Rename(tmp, live); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
		}
		if i == 300 { // replace the model under traffic: a rename
			w.Flush()
			tmp := live + ".tmp"
			if err := os.Link(m2, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, live); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond)
		}
	}
	w.Flush()
	// Benthos serves the processor's metrics on its own /metrics
	want := map[string]float64{"forestd_rows_scored": float64(len(lines)), "forestd_messages_errored": 3, "forestd_model_version": 2}
	var got map[string]float64
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got = forestdMetrics(addr); maps.Equal(got, want) {
			break
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("/metrics: %v, want %v", got, want)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("forestd-benthos: %v\n%s", err, stderr.String())
	}

	if n := strings.Count(stderr.String(), "not loaded (kept the current model)"); n != 1 {
		t.Errorf("the corrupt model file was warned about %d times, want once:\n%s", n, stderr.String())
	}

	seen := map[int]bool{}
	last := int64(0)
	versions := map[int64]int{}
	for _, l := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		var o map[string]any
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber()
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		id64, _ := o["id"].(json.Number).Int64()
		id := int(id64)
		v, _ := o["model_version"].(json.Number).Int64()
		if seen[id] {
			t.Fatalf("row %d twice", id)
		}
		seen[id] = true
		if v < last {
			t.Fatalf("row %d: version %d after version %d", id, v, last)
		}
		last = v
		versions[v]++
		ref := refs[v][id]
		if o["prediction"] != ref.pred || parseF32(t, o["prob_0"]) != ref.p0 || parseF32(t, o["prob_1"]) != ref.p1 {
			t.Fatalf("row %d (version %d): %v, forestd score: %+v", id, v, o, ref)
		}
	}
	if len(seen) != len(lines) {
		t.Fatalf("%d rows out of %d", len(seen), len(lines))
	}
	if versions[1] == 0 || versions[2] == 0 {
		t.Fatalf("rows per version %v", versions)
	}
	t.Logf("rows per model version: %v", versions)
	dead, err := os.ReadFile(dlq)
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{`column \"mean_radius\": a string where a number is expected`, `no key \"worst_symmetry\"`, "neither an Arrow IPC stream"}
	dl := bytes.Split(bytes.TrimSpace(dead), []byte("\n"))
	if len(dl) != 3 {
		t.Fatalf("dead letters:\n%s", dead)
	}
	for i, d := range dl {
		if !bytes.Contains(d, []byte(reasons[i])) {
			t.Fatalf("dead letter %d %s lacks %q", i, d, reasons[i])
		}
	}
}

// TestE2EArrowPipeline: the same through Arrow IPC: bin/forestd-benthos
// reads a directory of Arrow IPC stream files (100 rows each; one lacks a
// feature) with Benthos' file input in batches of three, scores them with
// forestd_score keeping the label and naming each file in the source
// column, and writes each prediction stream to a file named after its
// input, dead letters to another directory. The predictions equal forestd
// score's on the same rows and model.
func TestE2EArrowPipeline(t *testing.T) {
	bbin, fbin := binaries(t)
	dir := t.TempDir()
	data, _ := filepath.Abs(filepath.Join(dataDir, "breast_cancer.parquet"))
	model := filepath.Join(dir, "m.model")
	run(t, fbin, "train", "--in", data, "--label", "label", "--task", "classification", "--trees", "50", "--out", model)
	ref := forestdScore(t, fbin, model, data, dir)
	rec := readData(t, "breast_cancer.parquet")
	defer rec.Release()
	in, out, dead := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "dead")
	for _, d := range []string{in, out, dead} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for lo := int64(0); lo < rec.NumRows(); lo += 100 {
		sl := rec.NewSlice(lo, min(lo+100, rec.NumRows()))
		mustWrite(t, filepath.Join(in, fmt.Sprintf("part-%03d.arrows", lo)), arrowMessage(t, sl))
		sl.Release()
		n++
	}
	noFeature := array.NewRecord(arrow.NewSchema(rec.Schema().Fields()[1:], nil), rec.Columns()[1:], rec.NumRows())
	mustWrite(t, filepath.Join(in, "bad.arrows"), arrowMessage(t, noFeature))
	noFeature.Release()
	conf := filepath.Join(dir, "arrow.yaml")
	mustWrite(t, conf, []byte(fmt.Sprintf(`
http: {enabled: false}
logger: {level: warn}
input:
  batched:
    child:
      file:
        paths: [%q]
        scanner: {to_the_end: {}}
    policy: {count: 3, period: 100ms}
pipeline:
  processors:
    - forestd_score:
        model: %q
        keep: [label]
        source: '${! @path.filepath_split().index(-1) }'
output:
  switch:
    cases:
      - check: errored()
        output:
          file: {path: '%s/${! @path.filepath_split().index(-1) }.txt', codec: all-bytes}
          processors:
            - mapping: 'root = error()'
      - output:
          file: {path: '%s/${! @path.filepath_split().index(-1) }', codec: all-bytes}
`, filepath.Join(in, "*.arrows"), model, dead, out)))
	run(t, bbin, "lint", conf)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if b, err := exec.CommandContext(ctx, bbin, "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("forestd-benthos: %v\n%s", err, b)
	}
	rows := 0
	for k := 0; k < n; k++ {
		name := fmt.Sprintf("part-%03d.arrows", k*100)
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := codec.Decode(b, "", memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		p := recs[0]
		pred := column(t, p, "prediction").(*array.String)
		p0 := column(t, p, "prob_0").(*array.Float32)
		src := column(t, p, "source").(*array.String)
		lab := column(t, p, "label")
		for i := 0; i < int(p.NumRows()); i++ {
			r := ref[k*100+i]
			if pred.Value(i) != r.pred || p0.Value(i) != r.p0 || src.Value(i) != name || lab.ValueStr(i) != rec.Column(rec.Schema().FieldIndices("label")[0]).ValueStr(k*100+i) {
				t.Fatalf("%s row %d: %s %v %s, forestd score %+v", name, i, pred.Value(i), p0.Value(i), src.Value(i), r)
			}
			rows++
		}
		release(recs)
	}
	if rows != int(rec.NumRows()) {
		t.Fatalf("%d rows scored", rows)
	}
	reason, err := os.ReadFile(filepath.Join(dead, "bad.arrows.txt"))
	if err != nil || !bytes.Contains(reason, []byte("missing feature column mean_radius")) {
		t.Fatalf("dead letter of bad.arrows: %q %v", reason, err)
	}
	if _, err := os.Stat(filepath.Join(out, "bad.arrows")); err == nil {
		t.Fatal("bad.arrows has predictions")
	}
}

// TestE2EExamples: the example configurations shipped in examples/ lint
// clean and pass their tests: blocks with forestd-benthos' lint and test
// subcommands.
func TestE2EExamples(t *testing.T) {
	bbin, _ := binaries(t)
	paths, _ := filepath.Glob("examples/*.yaml")
	if len(paths) < 3 {
		t.Fatalf("examples %v", paths)
	}
	run(t, bbin, append([]string{"lint"}, paths...)...)
	out := run(t, bbin, "test", "./examples/...")
	for _, p := range paths {
		if !bytes.Contains(out, []byte(fmt.Sprintf("Test '%s' succeeded", p))) {
			t.Fatalf("test output lacks %s:\n%s", p, out)
		}
	}
}

// TestE2EScoreExampleStreams runs examples/score.yaml as its header says
// (rows on stdin, predictions to stdout): stdout carries one JSON object
// with a prediction per good row (a line of 100 kB included) and nothing
// else — Benthos' log, which it
// writes to stdout unless the output is stdout alone, goes to stderr — and
// the row that cannot be scored is a dead letter naming its column.
func TestE2EScoreExampleStreams(t *testing.T) {
	bbin, _ := binaries(t)
	// the 100 kB line is scored too (the scanner's default stops at 64 KiB)
	b := runSwitchExample(t, bbin, "examples/score.yaml", `{"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}
{"sepal_length_cm": "wide", "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}
{"sepal_length_cm": 6.7, "sepal_width_cm": 3.0, "petal_length_cm": 5.2, "petal_width_cm": 2.3}
{"sepal_length_cm": 6.0, "sepal_width_cm": 2.9, "petal_length_cm": 4.5, "petal_width_cm": 1.5, "note": "`+strings.Repeat("x", 100000)+`"}
`, nil, 3,
		func(row map[string]any) bool { return row["prediction"] != nil })
	if n := bytes.Count(b, []byte("\n")); n != 1 || !bytes.Contains(b, []byte(`column \"sepal_length_cm\"`)) {
		t.Fatalf("dead letters (%d lines): %s", n, b)
	}
}

// TestE2ESwitchExamplesStreams runs the other switch pipelines of
// examples/ as their headers say (rows on stdin): stdout carries the good
// rows' predictions and nothing else — Benthos' log goes to stderr, as in
// score.yaml — and the row that cannot be scored is a dead letter.
func TestE2ESwitchExamplesStreams(t *testing.T) {
	bbin, _ := binaries(t)
	for _, tc := range []struct {
		config, stdin string
		env           func(dir string) []string
		predicted     func(row map[string]any) bool
	}{
		{"examples/train_score.yaml", `{"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2, "label": 0}
{"sepal_length_cm": 6.7, "sepal_width_cm": 3.0, "petal_length_cm": 5.2, "petal_width_cm": 2.3, "label": 2}
{"sepal_length_cm": [6.3], "label": 2}
`, func(dir string) []string {
			// a copy: too few rows to train, so the iris model scores
			live := filepath.Join(dir, "live.model")
			b, err := os.ReadFile("examples/iris.model")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(live, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"FORESTD_LIVE_MODEL=" + live}
		}, func(row map[string]any) bool {
			f, _ := row["forestd"].(map[string]any)
			return f["prediction"] != nil
		}},
		{"examples/select_score.yaml", `{"id": 0, "x3a_0": 0.62420326, "x3a_1": -1.0375869, "x3a_2": 1.3834429}
{"id": 1, "x3a_0": 1.2433898, "x3a_2": -0.8966829}
{"id": 2, "x3a_0": 1.2433898, "x3a_1": -0.93810457, "x3a_2": -0.8966829}
`, func(string) []string { return nil }, func(row map[string]any) bool { return row["prediction"] != nil }},
	} {
		t.Run(filepath.Base(tc.config), func(t *testing.T) {
			b := runSwitchExample(t, bbin, tc.config, tc.stdin, tc.env(t.TempDir()), 2, tc.predicted)
			if n := bytes.Count(b, []byte("\n")); n != 1 {
				t.Fatalf("dead letters (%d lines): %s", n, b)
			}
		})
	}
}

// runSwitchExample runs a switch pipeline of examples/ with stdin as its
// header says, its dead letters to a file, and checks that stdout carries
// want lines, each a prediction by predicted, and nothing else (Benthos'
// log goes to stderr); it returns the dead letters.
func runSwitchExample(t *testing.T, bbin, config, stdin string, env []string, want int, predicted func(map[string]any) bool) []byte {
	t.Helper()
	dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
	cmd := exec.Command(bbin, "-s", "http.enabled=false", "-c", config) // no server on 0.0.0.0:4195
	cmd.Env = append(append(os.Environ(), "FORESTD_DEAD_LETTERS="+dlq), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("forestd-benthos: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != want {
		t.Fatalf("stdout has %d lines, want the %d predictions:\n%.2000s", len(lines), want, stdout.String())
	}
	for _, l := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil || !predicted(row) {
			t.Fatalf("stdout line is not a prediction (%v): %s", err, l)
		}
	}
	if !strings.Contains(stderr.String(), "level=info") {
		t.Errorf("stderr lacks Benthos' log:\n%s", stderr.String())
	}
	b, err := os.ReadFile(dlq)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

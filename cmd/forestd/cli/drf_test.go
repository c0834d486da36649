package cli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/connectors/files"
)

// readTable reads a file into columns by name (float64 via the Arrow
// types the writers use).
func readTable(t *testing.T, path string) map[string][]float64 {
	t.Helper()
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	out := map[string][]float64{}
	for j, fl := range schema.Fields() {
		for _, r := range recs {
			switch a := r.Column(j).(type) {
			case *array.Float64:
				out[fl.Name] = append(out[fl.Name], a.Float64Values()...)
			case *array.Float32:
				for _, v := range a.Float32Values() {
					out[fl.Name] = append(out[fl.Name], float64(v))
				}
			case *array.Int64:
				for _, v := range a.Int64Values() {
					out[fl.Name] = append(out[fl.Name], float64(v))
				}
			}
		}
	}
	return out
}

func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key].(float64)
	if !ok {
		t.Fatalf("%q is %v, want a number", key, m[key])
	}
	return v
}

// TestDRFCommands: gen → train --forest drf → eval → score → inspect on
// the swiss roll; eval's errors agree with the scored columns.
func TestDRFCommands(t *testing.T) {
	dir := t.TempDir()
	data, mdl := filepath.Join(dir, "sr.parquet"), filepath.Join(dir, "m.arrows")
	mustRun(t, "gen", "swissroll", "--n", "500", "--seed", "4", "--clean", "--out", data)
	tr := mustRun(t, "train", "--in", data, "--label", "y0, y1,y2", "--exclude", "y0_true,y1_true,y2_true",
		"--forest", "drf", "--trees", "20", "--max-features", "3", "--embed-dim", "2", "--sigma-g", "100",
		"--gamma-g", "200", "--out", mdl, "--threads", "2")
	hasKeys(t, "train", tr, "model_id", "rows", "features", "targets", "nodes", "seconds", "params", "drf")
	if tr["forest"] != "drf" || num(t, tr, "features") != 6 || num(t, tr, "rows") != 500 {
		t.Fatalf("train report: %v", tr)
	}
	ev := mustRun(t, "eval", "--model", mdl, "--in", data)
	hasKeys(t, "eval", ev, "rows", "seconds", "rmse", "mae", "mse", "per_output")
	per := ev["per_output"].(map[string]any)
	var mse float64
	for _, tg := range []string{"y0", "y1", "y2"} {
		o := per[tg].(map[string]any)
		mse += num(t, o, "mse") / 3
		if math.Abs(num(t, o, "rmse")-math.Sqrt(num(t, o, "mse"))) > 1e-12 {
			t.Fatalf("%s: rmse² ≠ mse", tg)
		}
	}
	if rmse := num(t, ev, "rmse"); math.Abs(rmse*rmse-mse) > 1e-9 || math.Abs(num(t, ev, "mse")-mse) > 1e-9 {
		t.Fatalf("overall rmse %v is not the root of the mean per-output mse %v", rmse, mse)
	}
	out := filepath.Join(dir, "pred.parquet")
	sc := mustRun(t, "score", "--model", mdl, "--in", data, "--out", out, "--keep", "y0_true")
	if num(t, sc, "rows") != 500 {
		t.Fatalf("score report: %v", sc)
	}
	got, truth := readTable(t, out), readTable(t, data)
	var se, ae float64
	for _, tg := range []string{"y0", "y1", "y2"} {
		if len(got[tg]) != 500 {
			t.Fatalf("scored column %s has %d values", tg, len(got[tg]))
		}
		for i, v := range got[tg] {
			d := v - truth[tg][i]
			se += d * d
			ae += math.Abs(d)
		}
	}
	if math.Abs(math.Sqrt(se/1500)-num(t, ev, "rmse")) > 1e-6 || math.Abs(ae/1500-num(t, ev, "mae")) > 1e-6 {
		t.Fatalf("scored predictions give rmse %v mae %v, eval says %v %v", math.Sqrt(se/1500), ae/1500, ev["rmse"], ev["mae"])
	}
	if len(got["y0_true"]) != 500 {
		t.Fatal("--keep column missing")
	}
	if d := tr["drf"].(map[string]any); d["sigma_gamma_selected_by"] != "flags" || num(t, d, "select_mse") != 0 {
		t.Fatalf("sigma_g, gamma_g from flags reported as %v (error %v)", d["sigma_gamma_selected_by"], d["select_mse"])
	}
	// left open, they are chosen out of bag by default, by leave-one-out when asked
	for sel, want := range map[string]string{"": "out-of-bag", "loo": "leave-one-out"} {
		args := []string{"train", "--in", data, "--label", "y0,y1,y2", "--exclude", "y0_true,y1_true,y2_true",
			"--forest", "drf", "--trees", "10", "--max-features", "3", "--embed-dim", "2", "--out", filepath.Join(dir, "s.arrows")}
		if sel != "" {
			args = append(args, "--backscore-select", sel)
		}
		d := mustRun(t, args...)["drf"].(map[string]any)
		if d["sigma_gamma_selected_by"] != want || !(num(t, d, "select_mse") > 0) {
			t.Fatalf("--backscore-select %q: selected by %v, error %v; want %s", sel, d["sigma_gamma_selected_by"], d["select_mse"], want)
		}
	}
	if d := tr["drf"].(map[string]any); d["embed_dim_selected_by"] != "flags" || d["embed_dim_candidates"] != nil {
		t.Fatalf("--embed-dim 2 reported as %v, candidates %v", d["embed_dim_selected_by"], d["embed_dim_candidates"])
	}
	// --embed-dim 0: m chosen out of bag, the candidate of least error
	d := mustRun(t, "train", "--in", data, "--label", "y0,y1,y2", "--exclude", "y0_true,y1_true,y2_true",
		"--forest", "drf", "--trees", "10", "--max-features", "3", "--embed-dim", "0", "--sigma-g", "100",
		"--gamma-g", "200", "--out", filepath.Join(dir, "e.arrows"))["drf"].(map[string]any)
	cands, _ := d["embed_dim_candidates"].([]any)
	if d["embed_dim_selected_by"] != "out-of-bag" || len(cands) != len(manifold.EmbedDimCandidates()) {
		t.Fatalf("--embed-dim 0 reported as %v with candidates %v", d["embed_dim_selected_by"], d["embed_dim_candidates"])
	}
	bestDim, bestErr := 0.0, math.Inf(1)
	for k, c := range cands {
		c := c.(map[string]any)
		if int(num(t, c, "dim")) != manifold.EmbedDimCandidates()[k] || !(num(t, c, "oob_mse") > 0) {
			t.Fatalf("candidate %d: %v", k, c)
		}
		if num(t, c, "oob_mse") < bestErr {
			bestDim, bestErr = num(t, c, "dim"), num(t, c, "oob_mse")
		}
	}
	if num(t, d, "embed_dim") != bestDim || len(d["eigenvalues"].([]any)) != int(bestDim) {
		t.Fatalf("--embed-dim 0: embedding of dimension %v (%d eigenvalues), least out-of-bag error at %v", d["embed_dim"], len(d["eigenvalues"].([]any)), bestDim)
	}
	in := mustRun(t, "inspect", "--model", mdl)
	hasKeys(t, "inspect", in, "forest", "trees", "features", "importance", "drf")
	if in["forest"] != "drf" || in["label"] != "y0,y1,y2" {
		t.Fatalf("inspect: forest %v label %v", in["forest"], in["label"])
	}
	// same seed, other thread count: same bytes
	mdl2 := filepath.Join(dir, "m2.arrows")
	mustRun(t, "train", "--in", data, "--label", "y0,y1,y2", "--exclude", "y0_true,y1_true,y2_true",
		"--forest", "drf", "--trees", "20", "--max-features", "3", "--embed-dim", "2", "--sigma-g", "100",
		"--gamma-g", "200", "--out", mdl2, "--threads", "1")
	b1, _ := os.ReadFile(mdl)
	b2, _ := os.ReadFile(mdl2)
	if !bytes.Equal(b1, b2) {
		t.Fatal("1 and 2 threads give different model bytes")
	}
}

// TestDRFListLabel: one fixed-size list column as the response.
func TestDRFListLabel(t *testing.T) {
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x1", Type: arrow.PrimitiveTypes.Float64},
		{Name: "x2", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float64)},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	lb := b.Field(2).(*array.FixedSizeListBuilder)
	vb := lb.ValueBuilder().(*array.Float64Builder)
	for i := 0; i < 150; i++ {
		a := float64(i) / 150 * 2 * math.Pi
		b.Field(0).(*array.Float64Builder).Append(a)
		b.Field(1).(*array.Float64Builder).Append(float64(i % 7))
		lb.Append(true)
		vb.AppendValues([]float64{math.Cos(a), math.Sin(a)}, nil) // a circle
	}
	rec := b.NewRecord()
	b.Release()
	data := filepath.Join(dir, "circle.arrows")
	if err := files.WriteFile(data, schema, []arrow.Record{rec}, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	mdl := filepath.Join(dir, "m.arrows")
	tr := mustRun(t, "train", "--in", data, "--label", "y", "--forest", "drf", "--trees", "10", "--isomap-k", "4",
		"--embed-dim", "2", "--projection", "sparse", "--lambda", "2", "--out", mdl)
	if ts := tr["targets"].([]any); len(ts) != 2 || ts[0] != "y_0" || ts[1] != "y_1" {
		t.Fatalf("targets %v", tr["targets"])
	}
	ev := mustRun(t, "eval", "--model", mdl, "--in", data, "--label", "y")
	if num(t, ev, "rmse") > 0.3 {
		t.Fatalf("training-set rmse on a noise-free circle is %v", ev["rmse"])
	}
	out := filepath.Join(dir, "p.csv")
	mustRun(t, "score", "--model", mdl, "--in", data, "--out", out)
	got := readTable(t, out)
	if len(got["y_0"]) != 150 || len(got["y_1"]) != 150 {
		t.Fatalf("scored columns: %v", len(got))
	}
	// eval with the coordinate columns of another layout is refused
	code, _, errs := run(t, "eval", "--model", mdl, "--in", data, "--label", "x1,x2")
	if code != ExitUsage || strings.TrimSpace(errs) != "forestd eval: --label x1,x2: the model predicts 2 targets (y_0, y_1) from its label column y: give --label y, or leave --label out" {
		t.Fatalf("eval with other responses: exit %d %q", code, errs)
	}
}

// TestDRFBadInput: every mistake is one line on stderr and a non-zero exit.
func TestDRFBadInput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sr.csv")
	mustRun(t, "gen", "swissroll", "--n", "80", "--seed", "2", "--out", data)
	mdl := filepath.Join(dir, "m.arrows")
	base := []string{"train", "--in", data, "--forest", "drf", "--trees", "3", "--out", mdl}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--label", "y0,y1,y2", "--distance", "cosine"}, ExitUsage, "--distance"},
		{[]string{"--label", "y0,y1,y2", "--isomap-k", "0"}, ExitUsage, "--isomap-k"},
		{[]string{"--label", "y0,y1,y2", "--embed-dim", "-1"}, ExitUsage, "--embed-dim"},
		{[]string{"--label", "y0,y1,y2", "--embed-dim", "0", "--sample", "subsample", "--sample-fraction", "1"}, ExitError, "out of bag"},
		{[]string{"--label", "y0,y1,y2", "--gamma-g", "-1"}, ExitUsage, "--gamma-g"},
		{[]string{"--label", "y0,y1,y2", "--sigma-g", "-1"}, ExitUsage, "--sigma-g"},
		{[]string{"--label", "y0,y1,y2", "--max-rows", "1"}, ExitUsage, "--max-rows"},
		{[]string{"--label", "y0,y1,y2", "--projection", "patch"}, ExitUsage, "--projection"},
		{[]string{"--label", "y0,y1,y2", "--backscore-select", "cv"}, ExitUsage, "--backscore-select"},
		{[]string{"--label", "y0,y1,y2", "--grid", "2x3"}, ExitUsage, "--grid applies to --forest morf or lfs, not --forest drf"},
		{[]string{"--label", "y0,y1,y2", "--criterion", "mse"}, ExitUsage, "--criterion applies to --forest rf, sporf, morf, lfs or fdm, not --forest drf"},
		{[]string{"--label", ","}, ExitUsage, "empty column name"},
		{[]string{"--label", "y0,nope"}, ExitError, `response column "nope" not found (columns: x1,`},
		{[]string{"--label", "y0,y0"}, ExitUsage, `column "y0" twice`},
		{[]string{"--label", "y0,y1,y2", "--isomap-k", "1"}, ExitError, "connects it"},
		{[]string{"--label", "y0,y1,y2", "--isomap-k", "200"}, ExitError, "isomap k 200"},
		{[]string{"--label", "y0,y1,y2", "--lambda", "2"}, ExitError, "lambda applies to sparse"},
		{[]string{"--label", "y0,y1,y2", "--features", "y0"}, ExitError, "both a feature and excluded"},
	} {
		code, _, errs := run(t, append(append([]string(nil), base...), c.args...)...)
		if code != c.code || !strings.Contains(errs, c.msg) || strings.Count(strings.TrimRight(errs, "\n"), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, errs, c.code, c.msg)
		}
	}
	// a model, then eval/score mistakes
	mustRun(t, append(base, "--label", "y0,y1,y2")...)
	for _, args := range [][]string{
		{"eval", "--model", mdl, "--in", data, "--label", "y0"},
		{"score", "--model", mdl, "--in", data, "--out", filepath.Join(dir, "p.csv"), "--keep", "y1"},
		{"score", "--model", mdl, "--in", data, "--out", filepath.Join(dir, "p.csv"), "--keep", "nope"},
		// a lake holds Parquet files only (lake scoring of drf models: lake_drf_test.go)
		{"score", "--model", mdl, "--in", data, "--out", filepath.Join(dir, "lake") + "/"},
	} {
		code, _, errs := run(t, args...)
		if code == 0 || strings.Count(strings.TrimRight(errs, "\n"), "\n") > 0 || strings.Contains(errs, "internal error") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// FuzzDRFFlags appends arbitrary flags to a small `train --forest drf`
// run: forestd must answer with an exit code and at most one line on
// stderr, never an internal error.
func FuzzDRFFlags(f *testing.F) {
	for _, s := range []string{
		"--isomap-k\x003", "--embed-dim\x0050", "--embed-dim\x000", "--embed-dim\x00-1", "--sigma-g\x001e-300", "--gamma-g\x001e300",
		"--projection\x00sparse\x00--lambda\x000.01", "--max-rows\x005", "--distance\x00euclidean\x00--isomap-k\x009",
		"--max-features\x000.5", "--sample\x00subsample\x00--sample-fraction\x000.01", "--min-leaf\x0040",
		"--label\x00y0", "--max-depth\x001", "--backscore-select\x00loo", "--sigma-g\x000\x00--sample\x00subsample\x00--sample-fraction\x001",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	data := filepath.Join(dir, "sr.arrows")
	var sink bytes.Buffer
	if code := Main([]string{"gen", "swissroll", "--n", "40", "--seed", "3", "--out", data}, Env{Stdout: &sink}); code != 0 {
		f.Fatal("gen failed")
	}
	f.Fuzz(func(t *testing.T, joined string) {
		extra := strings.Split(joined, "\x00")
		for _, a := range extra {
			if strings.ContainsAny(a, "/.\\") && !strings.ContainsAny(a, "0123456789") || a == "--out" || a == "--in" || a == "--trees" {
				return // keep files and run time under control
			}
		}
		args := append([]string{"train", "--in", data, "--out", filepath.Join(dir, "m.arrows"), "--forest", "drf",
			"--label", "y0,y1,y2", "--trees", "2", "--threads", "1"}, extra...)
		var out, errb bytes.Buffer
		code := Main(args, Env{Stdout: &out, Stderr: &errb})
		if strings.Contains(errb.String(), "internal error") {
			t.Fatalf("args %q: %s", extra, errb.String())
		}
		if code != 0 && strings.Count(strings.TrimRight(errb.String(), "\n"), "\n") > 0 && !strings.Contains(errb.String(), "Usage:") {
			t.Fatalf("args %q: multi-line error %q", extra, errb.String())
		}
	})
}

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// readFloatColumns reads a file's float64 columns by name.
func readFloatColumns(t *testing.T, path string) ([]string, map[string][]float64) {
	t.Helper()
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{Mem: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	var names []string
	cols := map[string][]float64{}
	for j, f := range schema.Fields() {
		names = append(names, f.Name)
		for _, r := range recs {
			if a, ok := r.Column(j).(*array.Float64); ok {
				cols[f.Name] = append(cols[f.Name], a.Float64Values()...)
			}
		}
	}
	return names, cols
}

// TestSelect: on xor4 the search finds the marginal feature and the XOR
// triple without ground truth; the output holds the marginal column, three
// mapped columns and the label; --apply with the stored mapping maps data
// exactly as the fit did; an FDM_RF forest on the mapped data beats a plain
// forest on the raw data.
func TestSelect(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "te.parquet")
	mustRun(t, "gen", "xor4", "--n", "1000", "--seed", "1", "--out", tr)
	mustRun(t, "gen", "xor4", "--n", "1000", "--seed", "2", "--out", te)
	sel := filepath.Join(dir, "sel.parquet")
	rep := mustRun(t, "select", "--in", tr, "--label", "y", "--out", sel, "--seed", "3")
	hasKeys(t, "select", rep, "rows", "columns", "marginal", "groups", "mapping", "search")
	if rep["mapping"] != filepath.Join(dir, "sel.fdm.json") {
		t.Fatalf("default mapping path %v", rep["mapping"])
	}
	names, fit := readFloatColumns(t, sel)
	if !slices.Equal(names, []string{"m0", "fdm_g1_1", "fdm_g1_2", "fdm_g1_3", "y"}) {
		t.Fatalf("selected columns %v", names)
	}
	g := rep["groups"].([]any)[0].(map[string]any)
	if g["kind"] != "mds" || len(g["features"].([]any)) != 3 {
		t.Fatalf("group %v", g)
	}
	// the stored mapping reproduces the fitted columns bit for bit
	again := filepath.Join(dir, "again.arrow")
	mustRun(t, "select", "--in", tr, "--apply", filepath.Join(dir, "sel.fdm.json"), "--out", again, "--keep", "y")
	names2, app := readFloatColumns(t, again)
	if !slices.Equal(names2, []string{"y", "m0", "fdm_g1_1", "fdm_g1_2", "fdm_g1_3"}) {
		t.Fatalf("applied columns %v", names2)
	}
	for _, c := range []string{"fdm_g1_1", "fdm_g1_2", "fdm_g1_3"} {
		if len(fit[c]) != 1000 || !slices.Equal(fit[c], app[c]) {
			t.Fatalf("column %s differs between fit and --apply", c)
		}
	}
	// FDM_RF (dissertation §6.4): map once, then a plain forest
	selTe := filepath.Join(dir, "selte.parquet")
	mustRun(t, "select", "--in", te, "--apply", filepath.Join(dir, "sel.fdm.json"), "--label", "y", "--out", selTe)
	m1, m2 := filepath.Join(dir, "fdmrf.model"), filepath.Join(dir, "rf.model")
	mustRun(t, "train", "--in", sel, "--label", "y", "--out", m1, "--trees", "60")
	mustRun(t, "train", "--in", tr, "--label", "y", "--out", m2, "--trees", "60")
	a1 := mustRun(t, "eval", "--model", m1, "--in", selTe, "--label", "y")["accuracy"].(float64)
	a2 := mustRun(t, "eval", "--model", m2, "--in", te, "--label", "y")["accuracy"].(float64)
	t.Logf("xor4 accuracy: FDM_RF %.3f, RF %.3f", a1, a2)
	if a1 < a2+0.03 {
		t.Fatalf("FDM_RF %.3f does not beat RF %.3f on xor4", a1, a2)
	}
	// given groups and drl
	drl := mustRun(t, "select", "--in", tr, "--label", "y", "--out", filepath.Join(dir, "drl.csv"),
		"--groups", "x3a_0,x3a_1,x3a_2", "--marginal", "m0", "--fdm-map", "drl", "--mapping", filepath.Join(dir, "drl.json"))
	if drl["fdm_map"] != "drl" || drl["search"] != nil {
		t.Fatalf("drl select %v", drl)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "drl.json"))
	if !bytes.Contains(b, []byte(`"landmark"`)) {
		t.Fatalf("drl mapping has no landmarks: %s", b)
	}
}

// TestSelectBadInput: malformed mapping files and inconsistent flags fail
// with one line naming the cause.
func TestSelectBadInput(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "tr.parquet")
	mustRun(t, "gen", "xor1", "--n", "300", "--seed", "1", "--out", tr)
	bad := filepath.Join(dir, "bad.json")
	trunc := filepath.Join(dir, "trunc.json")
	other := filepath.Join(dir, "other.json")
	os.WriteFile(bad, []byte(`{"format":"forestd-fdm/1","map":"rp","groups":[{"features":["a"],"outputs":[{"name":"o","weights":[1,2],"gcor":0}]}]}`), 0o644)
	os.WriteFile(trunc, []byte(`{"format":"forestd-fdm/1","map":"rp","gro`), 0o644)
	os.WriteFile(other, []byte(`{"format":"forestd-fdm/1","map":"rp","candidates":1,"seed":1,"marginal":[],"groups":[{"features":["zz"],"outputs":[{"name":"o","weights":[1],"gcor":0}]}]}`), 0o644)
	out := filepath.Join(dir, "o.csv")
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"select", "--in", tr, "--apply", bad, "--out", out}, "parameters", 1},
		{[]string{"select", "--in", tr, "--apply", trunc, "--out", out}, "malformed mapping", 1},
		{[]string{"select", "--in", tr, "--apply", other, "--out", out}, `"zz"`, 1},
		{[]string{"select", "--in", tr, "--apply", filepath.Join(dir, "none.json"), "--out", out}, "none.json", 1},
		{[]string{"select", "--in", tr, "--out", out}, "--label", 2},
		{[]string{"select", "--in", tr, "--label", "y"}, "--out", 2},
		{[]string{"select", "--in", tr, "--label", "y", "--out", out, "--marginal", "x2a_0"}, "--groups", 2},
		{[]string{"select", "--in", tr, "--label", "y", "--out", out, "--groups", "x2a_0,nope"}, "nope", 2},
		{[]string{"select", "--in", tr, "--label", "y", "--out", out, "--method", "sideways"}, "sideways", 2},
		{[]string{"select", "--in", tr, "--label", "y", "--out", out, "--fdm-map", "pca"}, "pca", 2},
		{[]string{"select", "--in", tr, "--apply", bad, "--groups", "a", "--out", out}, "--apply", 2},
	} {
		code, _, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q (want exit %d mentioning %s)", c.args[1:], code, errs, c.code, c.want)
		}
	}
}

// TestTrainLocalKindsCLI: lfs and fdm forests through the command line —
// the same model bytes at 1 and 2 threads, eval and score work on them.
func TestTrainLocalKindsCLI(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.parquet"), filepath.Join(dir, "te.parquet")
	mustRun(t, "gen", "xor3", "--n", "600", "--seed", "1", "--out", tr)
	mustRun(t, "gen", "xor3", "--n", "400", "--seed", "2", "--out", te)
	for _, kind := range [][]string{
		{"--forest", "lfs", "--lfs-size", "2", "--lfs-distance", "corr"},
		{"--forest", "lfs", "--series", "--lfs-random", "--lfs-min", "1", "--lfs-size", "3"},
		{"--forest", "fdm"},
		{"--forest", "fdm", "--fdm-groups", "x2a_0,x2a_1", "--fdm-marginal", "m0", "--fdm-candidates", "5"},
		{"--forest", "fdm", "--fdm-map", "drl"},
		{"--forest", "fdm", "--fdm-map", "drl", "--fdm-groups", "x2a_0,x2a_1", "--fdm-marginal", "m0"},
	} {
		var ref []byte
		for _, th := range []string{"1", "2"} {
			mdl := filepath.Join(dir, "m"+th+".model")
			args := append([]string{"train", "--in", tr, "--label", "y", "--out", mdl, "--trees", "30", "--threads", th}, kind...)
			mustRun(t, args...)
			b, err := os.ReadFile(mdl)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = b
			} else if !bytes.Equal(ref, b) {
				t.Fatalf("%v: model bytes differ between 1 and 2 threads", kind)
			}
		}
		ev := mustRun(t, "eval", "--model", filepath.Join(dir, "m1.model"), "--in", te, "--label", "y")
		if ev["accuracy"].(float64) < 0.6 {
			t.Fatalf("%v: accuracy %v", kind, ev["accuracy"])
		}
		mustRun(t, "score", "--model", filepath.Join(dir, "m1.model"), "--in", te, "--out", filepath.Join(dir, "p.csv"))
		in := mustRun(t, "inspect", "--model", filepath.Join(dir, "m1.model"))
		if in["forest"] != kind[1] {
			t.Fatalf("inspect forest %v", in["forest"])
		}
		if kind[1] == "fdm" { // inspect names the mapping kind and, for landmarks, the derived inputs
			info, _ := in["fdm"].(map[string]any)
			want := "rp"
			if slices.Contains(kind, "drl") {
				want = "drl"
			}
			der, _ := info["derived_inputs"].([]any)
			if info["map"] != want || (want == "drl") != (len(der) == 1) {
				t.Fatalf("%v: inspect fdm %v", kind, info)
			}
		}
	}
	// the learnt locality graph as an Arrow edge table
	graph := filepath.Join(dir, "graph.arrow")
	mustRun(t, "train", "--in", tr, "--label", "y", "--out", filepath.Join(dir, "g.model"), "--trees", "5",
		"--forest", "lfs", "--lfs-k", "2", "--lfs-graph", graph)
	schema, recs, err := files.ReadPaths([]string{graph}, files.ReadOptions{Mem: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	if v, _ := schema.Metadata().GetValue("forestd.locality.metric"); v != "geodesic" || len(recs) != 1 || recs[0].NumRows() != 3*2 {
		t.Fatalf("graph: metric %q, %d records", v, len(recs))
	}
	ranks := recs[0].Column(4).(*array.Int32).Int32Values()
	dist := recs[0].Column(5).(*array.Float64).Float64Values()
	if !slices.Equal(ranks, []int32{1, 2, 1, 2, 1, 2}) || dist[0] > dist[1] || dist[0] <= 0 {
		t.Fatalf("graph ranks %v distances %v", ranks, dist)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--forest", "lfs", "--series", "--lfs-graph", graph}, "--lfs-graph"},
		{[]string{"--forest", "lfs", "--lfs-min", "2"}, "--lfs-random"},
		{[]string{"--forest", "rf", "--lfs-random"}, "lfs"},
		{[]string{"--forest", "rf", "--lfs-size", "2"}, "lfs"},
		{[]string{"--forest", "lfs", "--lfs-size", "9"}, "window"},
		{[]string{"--forest", "fdm", "--fdm-groups", "x2a_0,zz"}, "zz"},
		{[]string{"--forest", "fdm", "--fdm-marginal", "m0"}, "--fdm-groups"},
		{[]string{"--forest", "fdm", "--fdm-map", "pca", "--fdm-groups", "x2a_0,x2a_1"}, "pca"},
	} {
		args := append([]string{"train", "--in", tr, "--label", "y", "--out", filepath.Join(dir, "x.model"), "--trees", "3"}, c.args...)
		code, _, errs := run(t, args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want mention of %s)", c.args, code, errs, c.want)
		}
	}
}

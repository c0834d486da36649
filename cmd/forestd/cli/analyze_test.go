package cli

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// TestAnalyze runs analyze on xor3 (a marginal m0 and one XOR pair): the
// JSON report names m0 marginal (group −1), finds {x2a_0, x2a_1} as an
// MDS, and --out writes the same as a table in every format.
func TestAnalyze(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor3.parquet")
	mustRun(t, "gen", "xor3", "--n", "400", "--seed", "3", "--out", data)
	args := []string{"analyze", "--in", data, "--label", "y", "--alpha", "0.01", "--max-perms", "400", "--seed", "5"}
	rep := mustRun(t, append(args, "--threads", "1")...)
	hasKeys(t, "analyze", rep, "features", "groups", "method", "stat", "seconds", "rows", "marginal")
	feats := rep["features"].([]any)
	if len(feats) != 3 {
		t.Fatalf("%d features", len(feats))
	}
	wantGroup := map[string]float64{"m0": -1, "x2a_0": 1, "x2a_1": 1}
	for _, f := range feats {
		m := f.(map[string]any)
		hasKeys(t, "feature", m, "name", "statistic", "p_value", "group", "b", "N")
		if g := m["group"].(float64); g != wantGroup[m["name"].(string)] {
			t.Errorf("feature %v: group %v", m["name"], g)
		}
		if p := m["p_value"].(float64); p != (m["b"].(float64)+1)/(m["N"].(float64)+1) {
			t.Errorf("feature %v: p %v is not (b+1)/(N+1)", m["name"], p)
		}
	}
	groups := rep["groups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("groups %v", groups)
	}
	g := groups[0].(map[string]any)
	if !reflect.DeepEqual(g["features"], []any{"x2a_0", "x2a_1"}) || g["kind"] != "mds" || g["b"].(float64) != 0 || g["N"].(float64) != 400 {
		t.Errorf("group %v", g)
	}
	if rep["method"] != "mdc-bottomup" || rep["stat"] != "gcor" {
		t.Errorf("method %v stat %v", rep["method"], rep["stat"])
	}
	// same report at another thread count (but the time)
	rep2 := mustRun(t, append(args, "--threads", "2")...)
	delete(rep, "seconds")
	delete(rep2, "seconds")
	if !reflect.DeepEqual(rep, rep2) {
		t.Errorf("threads changed the report:\n%v\n%v", rep, rep2)
	}
	// --out in each format: one row per feature and per group
	for _, ext := range []string{"parquet", "arrow", "arrows", "csv"} {
		out := filepath.Join(dir, "report."+ext)
		mustRun(t, append(args, "--out", out)...)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		schema, recs, err := files.ReadPaths([]string{out}, files.ReadOptions{Mem: mem})
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		rows := 0
		for _, r := range recs {
			rows += int(r.NumRows())
		}
		idx := schema.FieldIndices("features")
		if rows != 4 || len(idx) != 1 {
			t.Errorf("%s: %d rows, features column %v", ext, rows, idx)
		} else if s := recs[0].Column(idx[0]).(*array.String).Value(3); s != `["x2a_0","x2a_1"]` {
			t.Errorf("%s: group members %q", ext, s)
		}
		for _, r := range recs {
			r.Release()
		}
		mem.AssertSize(t, 0)
	}
}

// The other methods and dCor run through the command line too.
func TestAnalyzeMethods(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor4.arrows")
	mustRun(t, "gen", "xor4", "--n", "300", "--seed", "2", "--out", data)
	for _, m := range []string{"marginal", "mdc-topdown", "mdc-dc", "mdc-bottomup", "sdc-bottomup"} {
		rep := mustRun(t, "analyze", "--in", data, "--label", "y", "--method", m, "--stat", "dcor", "--alpha", "0.01",
			"--max-perms", "300", "--max-rows", "250")
		if rep["method"] != m || rep["stat"] != "dcor" || rep["set_rows"].(float64) != 250 {
			t.Errorf("%s: method %v stat %v set_rows %v", m, rep["method"], rep["stat"], rep["set_rows"])
		}
		groups := rep["groups"].([]any)
		if m == "marginal" {
			if len(groups) != 0 {
				t.Errorf("marginal found groups %v", groups)
			}
			continue
		}
		if m != "sdc-bottomup" && (len(groups) != 1 || !reflect.DeepEqual(groups[0].(map[string]any)["features"], []any{"x3a_0", "x3a_1", "x3a_2"})) {
			t.Errorf("%s: groups %v, want the XOR triple", m, groups)
		}
		// every feature is in S_m or the group: nothing is left to test
		if r, ok := rep["rest"]; ok {
			t.Errorf("%s: rest %v, want none", m, r)
		}
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor1.csv")
	mustRun(t, "gen", "xor1", "--n", "50", "--out", data)
	one := filepath.Join(dir, "one.csv")
	mustRun(t, "gen", "xor1", "--n", "1", "--out", one)
	base := []string{"analyze", "--in", data, "--label", "y"}
	cases := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"analyze", "--in", data}, "--label", 2},
		{[]string{"analyze", "--label", "y"}, "--in", 2},
		{append(base, "--alpha", "1.5"), "--alpha", 2},
		{append(base, "--alpha", "-0.1"), "--alpha", 2},
		{append(base, "--alpha", "NaN"), "--alpha", 2},
		{append(base, "--stat", "pearson"), "pearson", 2},
		{append(base, "--method", "greedy"), "greedy", 2},
		{append(base, "--max-perms", "0"), "--max-perms", 2},
		{append(base, "--perms", "-3"), "--perms", 2},
		{append(base, "--max-rows", "1"), "--max-rows", 2},
		{append(base, "--max-rows", "-1"), "--max-rows", 2},
		{append(base, "--max-size", "4"), "--max-size", 2},
		{append(base, "--threads", "0"), "--threads", 2},
		{append(base, "--seed", "x"), "seed", 2},
		{append(base, "--out", filepath.Join(dir, "r.xlsx")), "xlsx", 2},
		{[]string{"analyze", "--in", data, "--label", "nope"}, "nope", 1},
		{[]string{"analyze", "--in", one, "--label", "y"}, "class", 1},
		{[]string{"analyze", "--in", filepath.Join(dir, "absent.parquet"), "--label", "y"}, "absent", 1},
		{[]string{"analyze", "--in", sharedData(t, "bad_truncated.parquet"), "--label", "label"}, "bad_truncated.parquet", 1},
		{[]string{"analyze", "--in", data, "--label", "y", "--features", "x2a_0,zz"}, "zz", 1},
	}
	for _, c := range cases {
		code, _, errs := run(t, c.args...)
		lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
		if code != c.code || len(lines) != 1 || !strings.Contains(errs, c.want) || strings.Contains(errs, "internal error") {
			t.Errorf("forestd %s: exit %d (want %d), stderr %q (want one line naming %q)", strings.Join(c.args[1:], " "), code, c.code, errs, c.want)
		}
	}
}

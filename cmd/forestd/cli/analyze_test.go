package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/connectors/files"
)

// TestAnalyze runs analyze at its defaults (Holm's control at 0.05 over
// the whole analysis) on xor3 (a marginal m0 and one XOR pair): the JSON
// report names m0 marginal (group −1), finds {x2a_0, x2a_1} as an MDS with
// raw and adjusted p-values, is the same at any thread count, and --out
// writes the same as a table in every format, with the adjusted p-values.
func TestAnalyze(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor3.parquet")
	mustRun(t, "gen", "xor3", "--n", "400", "--seed", "3", "--out", data)
	args := []string{"analyze", "--in", data, "--label", "y", "--seed", "5"}
	rep := mustRun(t, append(args, "--threads", "1")...)
	hasKeys(t, "analyze", rep, "features", "groups", "method", "stat", "seconds", "rows", "marginal", "adjust", "alpha",
		"alpha_marginal", "alpha_sets", "set_stages", "unresolved", "task", "classes")
	if rep["adjust"] != "holm" || rep["alpha"].(float64) != 0.05 || rep["task"] != "classification" || rep["unresolved"].(float64) != 0 {
		t.Errorf("adjust %v alpha %v task %v unresolved %v", rep["adjust"], rep["alpha"], rep["task"], rep["unresolved"])
	}
	feats := rep["features"].([]any)
	if len(feats) != 3 {
		t.Fatalf("%d features", len(feats))
	}
	wantGroup := map[string]float64{"m0": -1, "x2a_0": 1, "x2a_1": 1}
	for _, f := range feats {
		m := f.(map[string]any)
		hasKeys(t, "feature", m, "name", "statistic", "p_value", "p_adjusted", "group", "b", "N")
		if g := m["group"].(float64); g != wantGroup[m["name"].(string)] {
			t.Errorf("feature %v: group %v", m["name"], g)
		}
		// the χ²₁ approximation without permutations (approx, N = 0), or
		// at most p_seq/(1 − c): (b+1)/(N+1), or b/N for a sequential test
		// stopped at its second exceedance (dependence.hybridP)
		b, n, p := m["b"].(float64), m["N"].(float64), m["p_value"].(float64)
		if approx, _ := m["approx"].(bool); approx {
			if b != 0 || n != 0 {
				t.Errorf("feature %v: approximated with b %v N %v", m["name"], b, n)
			}
		} else if ps := max((b+1)/(n+1), b/n); p > ps/(1-dependence.ApproxShare)*(1+1e-12) {
			t.Errorf("feature %v: p %v with b %v N %v", m["name"], p, b, n)
		}
		if pa := m["p_adjusted"].(float64); pa < p || (pa <= 0.05) != (m["group"].(float64) == -1) {
			t.Errorf("feature %v: p %v adjusted %v, group %v", m["name"], p, pa, m["group"])
		}
	}
	groups := rep["groups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("groups %v", groups)
	}
	g := groups[0].(map[string]any)
	if !reflect.DeepEqual(g["features"], []any{"x2a_0", "x2a_1"}) || g["kind"] != "mds" || g["b"].(float64) != 0 || !(g["p_adjusted"].(float64) <= 0.05) {
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
		idx, adj := schema.FieldIndices("features"), schema.FieldIndices("p_adjusted")
		if rows != 4 || len(idx) != 1 || len(adj) != 1 {
			t.Errorf("%s: %d rows, features column %v, p_adjusted %v", ext, rows, idx, adj)
		} else {
			if s := recs[0].Column(idx[0]).(*array.String).Value(3); s != `["x2a_0","x2a_1"]` {
				t.Errorf("%s: group members %q", ext, s)
			}
			if v := recs[0].Column(adj[0]).(*array.Float64).Value(3); v != g["p_adjusted"].(float64) {
				t.Errorf("%s: the group's p_adjusted %v, JSON %v", ext, v, g["p_adjusted"])
			}
		}
		for _, r := range recs {
			r.Release()
		}
		mem.AssertSize(t, 0)
	}
	// the dissertation's per-test rule: adaptive count, every test at α
	rep = mustRun(t, append(args, "--adjust", "none", "--alpha", "0.01", "--max-perms", "400")...)
	g = rep["groups"].([]any)[0].(map[string]any)
	if rep["adjust"] != "none" || g["b"].(float64) != 0 || g["N"].(float64) != 400 || g["p_adjusted"] != g["p_value"] {
		t.Errorf("per-test rule: adjust %v group %v", rep["adjust"], g)
	}
	if _, ok := rep["set_stages"]; ok {
		t.Error("per-test rule reports set stages")
	}
	// a cap below what a threshold needs is reported, not hidden
	rep = mustRun(t, append(args, "--alpha", "0.001", "--max-perms", "300", "--exact")...)
	if rep["unresolved"].(float64) == 0 || !strings.Contains(rep["warning"].(string), "--max-perms") {
		t.Errorf("capped: unresolved %v warning %v", rep["unresolved"], rep["warning"])
	}
}

// The other methods and dCor run through the command line too.
func TestAnalyzeMethods(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor4.arrows")
	mustRun(t, "gen", "xor4", "--n", "300", "--seed", "2", "--out", data)
	for _, m := range []string{"marginal", "mdc-topdown", "mdc-dc", "mdc-bottomup", "sdc-bottomup"} {
		rep := mustRun(t, "analyze", "--in", data, "--label", "y", "--method", m, "--stat", "dcor", "--adjust", "none", "--alpha", "0.01",
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
		{append(base, "--max-perms", "-1"), "--max-perms", 2},
		{append(base, "--alpha", "0"), "--adjust none", 2},
		{append(base, "--adjust", "bonferroni"), "bonferroni", 2},
		{append(base, "--task", "ranking"), "ranking", 2},
		{append(base, "--task", "regression", "--stat", "gcor"), "--stat dcor, or --task classification", 2},
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

// TestAnalyzeNumericLabel: a float label is numeric by default (dCor_n with
// |y − y'|, not thousands of classes) and its statistic is DCor of the
// column read as float32; an integer label of more than 32 values is
// numeric too, of at most 32 classes; --task classification makes classes
// of a float label; gcor on a numeric label is refused in one line.
func TestAnalyzeNumericLabel(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "reg.csv")
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("x,z,y,k,c\n")
	xs, ys := make([]float64, 600), make([]float64, 600)
	for i := range xs {
		x := float64(float32(r.NormFloat64()))
		y := x*x + r.NormFloat64()
		xs[i], ys[i] = x, y
		fmt.Fprintf(&b, "%v,%v,%v,%d,%d\n", x, r.NormFloat64(), y, int(math.Round(8*y)), i%5)
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, "analyze", "--in", csv, "--label", "y", "--exclude", "k,c", "--method", "marginal")
	if rep["task"] != "regression" || rep["stat"] != "dcor" || rep["classes"] != nil {
		t.Fatalf("float label: task %v stat %v classes %v", rep["task"], rep["stat"], rep["classes"])
	}
	f0 := rep["features"].([]any)[0].(map[string]any)
	if want := dependence.DCor1(xs, ys); math.Abs(f0["statistic"].(float64)-want) > 1e-9 {
		t.Errorf("dCor %v, want %v", f0["statistic"], want)
	}
	if !reflect.DeepEqual(rep["marginal"], []any{"x"}) {
		t.Errorf("marginal %v", rep["marginal"])
	}
	if rep := mustRun(t, "analyze", "--in", csv, "--label", "k", "--exclude", "y,c", "--method", "marginal"); rep["task"] != "regression" {
		t.Errorf("integer label of many values: task %v", rep["task"])
	}
	if rep := mustRun(t, "analyze", "--in", csv, "--label", "c", "--exclude", "y,k", "--method", "marginal"); rep["task"] != "classification" || len(rep["classes"].([]any)) != 5 {
		t.Errorf("integer label of 5 values: task %v classes %v", rep["task"], rep["classes"])
	}
	rep = mustRun(t, "analyze", "--in", csv, "--label", "y", "--exclude", "k,c", "--method", "marginal", "--task", "classification", "--perms", "20")
	if rep["task"] != "classification" || len(rep["classes"].([]any)) != 600 || rep["stat"] != "gcor" {
		t.Errorf("--task classification: task %v, %d classes, stat %v", rep["task"], len(rep["classes"].([]any)), rep["stat"])
	}
	code, _, errs := run(t, "analyze", "--in", csv, "--label", "y", "--stat", "gcor")
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--stat dcor") || !strings.Contains(errs, "--task classification") {
		t.Errorf("gcor on a numeric label: exit %d, %q", code, errs)
	}
}

// TestAnalyzeProgressOnlyOnTTY: analyze, select and train --forest fdm
// (its group search) draw the tests done and to do on a terminal and keep
// stderr clean otherwise (for analyze and select: with the lines of
// --progress auto an hour apart).
func TestAnalyzeProgressOnlyOnTTY(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor3.arrows")
	mustRun(t, "gen", "xor3", "--n", "300", "--seed", "1", "--out", data)
	for _, cmd := range [][]string{
		{"analyze", "--in", data, "--label", "y"},
		{"select", "--in", data, "--label", "y", "--out", filepath.Join(dir, "sel.parquet")},
		{"train", "--forest", "fdm", "--trees", "5", "--label", "y", "--out", filepath.Join(dir, "fdm.model"), data},
	} {
		for _, tty := range []bool{true, false} {
			var out, errb bytes.Buffer
			if code := Main(cmd, Env{Stdout: &out, Stderr: &errb, TTY: &tty, ProgressEvery: time.Hour}); code != 0 {
				t.Fatalf("%s: exit %d: %s", cmd[0], code, errb.String())
			}
			shown := strings.Contains(errb.String(), "marginal tests") && strings.Contains(errb.String(), "sets tests")
			if shown != tty || (!tty && errb.Len() != 0) {
				t.Errorf("%s tty=%v: stderr %q", cmd[0], tty, errb.String())
			}
		}
	}
}

// TestAnalyzeProgressLines: without a terminal, analyze and select write
// progress lines (issue 30): --progress always a line per stage and one at
// the end, auto a line with the tests done and an ETA every
// Env.ProgressEvery, never nothing; a bad mode is a usage error.
func TestAnalyzeProgressLines(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "xor3.arrows")
	mustRun(t, "gen", "xor3", "--n", "300", "--seed", "1", "--out", data)
	no := false
	for _, base := range [][]string{
		{"analyze", "--in", data, "--label", "y"},
		{"select", "--in", data, "--label", "y", "--out", filepath.Join(dir, "sel.parquet")},
	} {
		for _, tc := range []struct {
			mode  string
			every time.Duration
			want  []string
		}{
			{"always", time.Hour, []string{"progress: marginal tests start", "progress: sets tests start", "progress: done, "}},
			{"auto", time.Nanosecond, []string{"progress: ", " tests ", "ETA"}},
			{"never", time.Millisecond, nil},
		} {
			var out, errb bytes.Buffer
			cmd := append(slices.Clone(base), "--progress", tc.mode)
			if code := Main(cmd, Env{Stdout: &out, Stderr: &errb, TTY: &no, ProgressEvery: tc.every}); code != 0 {
				t.Fatalf("%v: exit %d: %s", cmd, code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("%s --progress %s: stderr %q lacks %q", base[0], tc.mode, errb.String(), w)
				}
			}
			if tc.want == nil && errb.Len() != 0 {
				t.Errorf("%s --progress never: stderr %q", base[0], errb.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"analyze", "--in", data, "--label", "y", "--progress", "sometimes"}, Env{Stdout: &out, Stderr: &errb}); code != ExitUsage || !strings.Contains(errb.String(), "--progress") {
		t.Errorf("--progress sometimes: exit %d, stderr %q", code, errb.String())
	}
}

// TestAnalyzeColumnNotes: bad columns get a clear line naming them in the
// report's notes and on stderr (issue 30) — a constant column, an
// all-missing column, a feature equal to the label — and never a panic
// or a hang; a label of one class is an error naming the label.
func TestAnalyzeColumnNotes(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,const,missing,same,noise,label\n")
	var one strings.Builder
	one.WriteString("a,label\n")
	for i := range 300 {
		a := float64((i*7919)%301)/150 - 1
		y := 0
		if a+float64((i*104729)%97)/97-0.5 > 0 {
			y = 1
		}
		fmt.Fprintf(&b, "%v,3,,%d,%v,%d\n", a, y, float64((i*31)%17), y)
		fmt.Fprintf(&one, "%v,1\n", a)
	}
	data, oneClass := filepath.Join(dir, "bad.csv"), filepath.Join(dir, "one.csv")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oneClass, []byte(one.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"analyze", "--in", data, "--label", "label", "--progress", "never"}, Env{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct{ Notes []string }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`column "const": constant`, `column "missing": every value is missing`, `column "same": determines the label`} {
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) || !strings.Contains(errb.String(), want) {
			t.Errorf("no note %q: notes %q, stderr %q", want, rep.Notes, errb.String())
		}
	}
	if len(rep.Notes) != 3 {
		t.Errorf("notes %q, want 3 (a and noise are ordinary)", rep.Notes)
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"analyze", "--in", oneClass, "--label", "label"}, Env{Stdout: &out, Stderr: &errb}); code != ExitError || !strings.Contains(errb.String(), `label "label" has 1 class`) {
		t.Errorf("one class: exit %d, stderr %q", code, errb.String())
	}
}

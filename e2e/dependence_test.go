package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestRegressionLabelMatchesEnergy: forestd analyze on a numeric label
// (the float target of the repository's diabetes and boston_housing data,
// read as a regression label by default) reports each feature's dCor_n
// with the distance |y − y'| as R's energy::dcor does, to 1e-9
// (arrowforest/dependence/testdata/energy_regression.json, written by
// make_energy_regression.R beside it with the features rounded to float32
// as forestd reads them).
func TestRegressionLabelMatchesEnergy(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "arrowforest", "dependence", "testdata", "energy_regression.json"))
	if err != nil {
		t.Fatalf("reference values: %v", err)
	}
	var refs map[string]struct {
		Rows  int
		Label string
		DCor  map[string]float64
	}
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 {
		t.Fatalf("%d reference data sets, want 2", len(refs))
	}
	for name, ref := range refs {
		rep := forestdJSON(t, "analyze", "--in", filepath.Join(dataDir, name+".parquet"), "--label", ref.Label,
			"--method", "marginal", "--perms", "99", "--threads", "2")
		if rep["task"] != "regression" || rep["stat"] != "dcor" || int(rep["rows"].(float64)) != ref.Rows {
			t.Fatalf("%s: task %v stat %v rows %v", name, rep["task"], rep["stat"], rep["rows"])
		}
		feats := rep["features"].([]any)
		if len(feats) != len(ref.DCor) {
			t.Fatalf("%s: %d features, %d references", name, len(feats), len(ref.DCor))
		}
		for _, f := range feats {
			m := f.(map[string]any)
			want, ok := ref.DCor[m["name"].(string)]
			got := m["statistic"].(float64)
			if !ok || math.Abs(got-want) > 1e-9 {
				t.Errorf("%s %s: dCor %.15g, energy::dcor %.15g", name, m["name"], got, want)
			}
		}
	}
}

// nullData draws runs×n rows of forestd's xor5 data (gen xor5, 17
// features) and writes them as runs files of n rows each, with the label
// column shuffled by a seeded permutation within each file so that every
// feature is unrelated to the label; numeric replaces the label by N(0, 1)
// numbers. It returns the files.
func nullData(t *testing.T, dir string, runs, n int, seed uint64, numeric bool) []string {
	t.Helper()
	src := filepath.Join(dir, fmt.Sprintf("xor5-%d.csv", seed))
	forestdJSON(t, "gen", "xor5", "--n", strconv.Itoa(runs*n), "--seed", strconv.FormatUint(seed, 10), "--out", src)
	fh, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(fh).ReadAll()
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	y := len(rows[0]) - 1
	if rows[0][y] != "y" || len(rows) != runs*n+1 {
		t.Fatalf("xor5: %d rows, last column %q", len(rows)-1, rows[0][y])
	}
	r := rand.New(rand.NewPCG(seed, 0x6e756c6c))
	var files []string
	for run := range runs {
		body := rows[1+run*n : 1+(run+1)*n]
		perm := r.Perm(n)
		labels := make([]string, n)
		for i, p := range perm {
			labels[i] = body[p][y]
			if numeric {
				labels[i] = strconv.FormatFloat(r.NormFloat64(), 'g', -1, 64)
			}
		}
		for i := range body {
			body[i][y] = labels[i]
		}
		out := filepath.Join(dir, fmt.Sprintf("null-%d-%d.csv", seed, run))
		fo, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		w := csv.NewWriter(fo)
		if err := w.WriteAll(append([][]string{rows[0]}, body...)); err != nil {
			t.Fatal(err)
		}
		if err := fo.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, out)
	}
	return files
}

// TestNoFalseFindingsUnderIndependence: with every feature unrelated to
// the label (forestd's xor5 features, the label shuffled; or a numeric
// label of independent noise), analyze at its defaults — Holm's control of
// the whole analysis at α = 0.05, bottom-up MDC over the 17 features —
// reports any feature or group in a share of analyses within binomial
// noise of at most α; so does --adjust bh, whose false discovery rate is
// the family-wise rate here. Each analysis has its own rows, label
// permutation and permutation seed; the per-test rule (--adjust none)
// reports something in most of them.
func TestNoFalseFindingsUnderIndependence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const alpha = 0.05
	for ci, c := range []struct {
		name    string
		runs    int
		numeric bool
		args    []string
	}{
		{"holm", 200, false, nil},
		{"bh", 100, false, []string{"--adjust", "bh"}},
		{"holm, numeric label", 100, true, nil},
		{"none (the per-test rule)", 20, false, []string{"--adjust", "none", "--method", "marginal"}},
	} {
		found := 0
		for run, data := range nullData(t, dir, c.runs, 120, uint64(ci+1), c.numeric) {
			args := append([]string{"analyze", "--in", data, "--label", "y", "--seed", strconv.Itoa(1000*ci + run), "--threads", "2"}, c.args...)
			rep := forestdJSON(t, args...)
			if c.numeric != (rep["task"] == "regression") {
				t.Fatalf("%s: task %v", c.name, rep["task"])
			}
			if len(rep["marginal"].([]any)) > 0 || len(rep["groups"].([]any)) > 0 {
				found++
			}
		}
		share := float64(found) / float64(c.runs)
		limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(c.runs))
		t.Logf("%s: %d of %d analyses report a finding (%.3f; promised ≤ %v, + 3 sd = %.3f)", c.name, found, c.runs, share, alpha, limit)
		if c.args != nil && c.args[1] == "none" {
			if share < 0.3 {
				t.Errorf("the per-test rule reports a finding in %.3f of analyses: this test could not tell it from a controlled one", share)
			}
			continue
		}
		if share > limit {
			t.Errorf("%s: %d of %d analyses under independence report a finding (%.3f > %.3f)", c.name, found, c.runs, share, limit)
		}
	}
}

// TestXOR5GroupsAtDefaults: on xor5 (dissertation §5.7: 17 features, n =
// 1,000; marginal m0..m4 and the groups {x2a}, {x2b}, {x2c}, {x3a},
// {x3b}), drawn by forestd's own generator with seeds 1..10, analyze at its
// defaults recovers S_m and the five groups exactly in at least 9 of 10
// seeds.
func TestXOR5GroupsAtDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wantM := []any{"m0", "m1", "m2", "m3", "m4"}
	wantG := [][]any{{"x2a_0", "x2a_1"}, {"x2b_0", "x2b_1"}, {"x2c_0", "x2c_1"}, {"x3a_0", "x3a_1", "x3a_2"}, {"x3b_0", "x3b_1", "x3b_2"}}
	exact := 0
	for seed := 1; seed <= 10; seed++ {
		data := filepath.Join(dir, fmt.Sprintf("xor5-%d.parquet", seed))
		forestdJSON(t, "gen", "xor5", "--n", "1000", "--seed", strconv.Itoa(seed), "--out", data)
		rep := forestdJSON(t, "analyze", "--in", data, "--label", "y", "--seed", strconv.Itoa(seed))
		var groups [][]any
		for _, g := range rep["groups"].([]any) {
			groups = append(groups, g.(map[string]any)["features"].([]any))
		}
		ok := reflect.DeepEqual(rep["marginal"], wantM) && reflect.DeepEqual(groups, wantG)
		if ok {
			exact++
		}
		t.Logf("seed %d: S_m %v groups %v exact=%v (%.1f s, %v tests)", seed, rep["marginal"], groups, ok, rep["seconds"], rep["tests"])
	}
	if exact < 9 {
		t.Errorf("xor5 recovered exactly in %d of 10 seeds at the defaults, want ≥ 9", exact)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// TestDrift runs forestd drift on the R reference data (shifted feature
// b): one JSON object with the features, the joint test and drift, the
// same table with --out, and usage errors naming the flag.
func TestDrift(t *testing.T) {
	d := filepath.Join("..", "..", "..", "arrowforest", "drift", "testdata")
	ref, cur := filepath.Join(d, "shift_ref.csv"), filepath.Join(d, "shift_cur.csv")
	out := filepath.Join(t.TempDir(), "report.parquet")
	rep := mustRun(t, "drift", "--reference", ref, "--current", cur, "--seed", "2", "--out", out)
	hasKeys(t, "drift", rep, "features", "joint", "drift")
	feats := rep["features"].([]any)
	var drifted []string
	for _, f := range feats {
		m := f.(map[string]any)
		hasKeys(t, "feature", m, "name", "statistic", "p_value", "p_adjusted", "drift")
		if m["drift"].(bool) {
			drifted = append(drifted, m["name"].(string))
		}
	}
	if len(feats) != 3 || strings.Join(drifted, ",") != "b" || rep["drift"] != true {
		t.Errorf("features %v drifted %v drift %v; want 3 features, b drifted", feats, drifted, rep["drift"])
	}
	hasKeys(t, "joint", rep["joint"].(map[string]any), "statistic", "p_value", "drift")
	_, recs, err := files.ReadFile(out, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := recs[0].NumRows(); n != 4 || !recs[0].Schema().Equal(schemas.DriftReport(0.05, "holm")) {
		t.Errorf("--out has %d rows, want 4 (3 features and the joint test), schema %v", n, recs[0].Schema())
	}
	// the projected joint test on a seeded subsample of 50 of the 95 pooled rows
	capped := mustRun(t, "drift", "--reference", ref, "--current", cur, "--seed", "2", "--max-projected-rows", "50")
	if j := capped["joint"].(map[string]any); j["rows"] != 50.0 || j["method"] != "projections" {
		t.Errorf("--max-projected-rows 50: joint %v, want the projections on 50 of the 95 rows", j)
	}
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"drift", "--current", cur}, "--reference", 2},
		{[]string{"drift", "--reference", ref}, "--current", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--alpha", "1.5"}, "--alpha", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--adjust", "x"}, "--adjust", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--max-rows", "1"}, "--max-rows", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--max-projected-rows", "1"}, "--max-projected-rows", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--directions", "0"}, "--directions", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--sample", "-1"}, "--sample", 2},
		{[]string{"drift", "--reference", ref, "--current", cur, "--features", "a,nope"}, "nope", 1},
	} {
		code, _, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d naming %s", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestDriftLake reads both sides as Parquet lakes: the reference as a
// glob over hive directories, the current sample as a directory with
// --sample; the partition column stays out of the features, and the
// shifted feature b is found from the lake as from the files.
func TestDriftLake(t *testing.T) {
	d := filepath.Join("..", "..", "..", "arrowforest", "drift", "testdata")
	root := t.TempDir()
	for _, side := range []string{"ref", "cur"} {
		schema, recs, err := files.ReadFile(filepath.Join(d, "shift_"+side+".csv"), files.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// two partitions of one file each
		n := recs[0].NumRows()
		for k, part := range []arrow.Record{recs[0].NewSlice(0, n/2), recs[0].NewSlice(n/2, n)} {
			dir := filepath.Join(root, side, "day="+string(rune('1'+k)))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := files.WriteFile(filepath.Join(dir, "part.parquet"), schema, []arrow.Record{part}, files.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep := mustRun(t, "drift", "--reference", filepath.Join(root, "ref", "day=*", "*.parquet"),
		"--current", filepath.Join(root, "cur"), "--sample", "100000", "--seed", "2")
	var names, drifted []string
	for _, f := range rep["features"].([]any) {
		m := f.(map[string]any)
		names = append(names, m["name"].(string))
		if m["drift"].(bool) {
			drifted = append(drifted, m["name"].(string))
		}
	}
	if strings.Join(names, ",") != "a,b,c" || strings.Join(drifted, ",") != "b" {
		t.Errorf("features %v drifted %v; want a,b,c with b drifted", names, drifted)
	}
	if code, _, errs := run(t, "drift", "--reference", filepath.Join(root, "none*", "*.parquet"), "--current", filepath.Join(root, "cur")); code == 0 || !strings.Contains(errs, "--reference") {
		t.Errorf("a glob matching nothing: exit %d %q, want an error naming --reference", code, errs)
	}
}

// TestTrainCodesOnlyReference: from forest.CodesOnlyRows rows rf grows on
// the bin codes and train releases the float32 columns while the trees
// grow; the model's reference sample of drift tests is drawn before that.
// It used to be drawn after, from the released columns: `forestd train` of
// a 10M-row lake failed after all its trees with "internal error: index out
// of range". The sample holds every feature, and each of its values is a
// value of its column in the training data.
func TestTrainCodesOnlyReference(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "trunk.parquet"), filepath.Join(dir, "m")
	mustRun(t, "gen", "trunk", "--n", strconv.Itoa(forest.CodesOnlyRows), "--p", "3", "--seed", "1", "--out", data)
	mustRun(t, "train", "--in", data, "--label", "y", "--trees", "1", "--reference-rows", "50", "--out", out)
	m, err := scoring.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ref := m.Reference()
	if ref == nil || ref.NumRows() != 50 || ref.NumCols() != 3 {
		t.Fatalf("reference sample %v; want 50 rows of x1, x2, x3", ref)
	}
	_, recs, err := files.ReadFile(data, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for j := range 3 {
		name := ref.ColumnName(j)
		seen := map[float64]bool{}
		for _, r := range recs {
			k := r.Schema().FieldIndices(name)
			if len(k) != 1 {
				t.Fatalf("column %s: not in the data", name)
			}
			for _, v := range r.Column(k[0]).(*array.Float32).Float32Values() {
				seen[float64(v)] = true
			}
		}
		for _, v := range ref.Column(j).(*array.Float64).Float64Values() {
			if !seen[v] {
				t.Fatalf("reference %s = %v: not a training value", name, v)
			}
		}
	}
}

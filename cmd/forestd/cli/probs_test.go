package cli

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/forestd/forestd/connectors/files"
)

// manyClassesCSV writes n rows of four features and a label of k classes
// (c000, c001, …) that follows x0.
func manyClassesCSV(t *testing.T, path string, n, k int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 5))
	var b strings.Builder
	b.WriteString("x0,x1,x2,x3,label\n")
	for i := 0; i < n; i++ {
		x := [4]float64{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
		y := min(int(x[0]*float64(k)), k-1)
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%.4f,c%03d\n", x[0], x[1], x[2], x[3], y)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestScoreProbs: forestd score writes the top 5 classes of a model with
// 300 classes by default (and says so in its report), every class's
// probability with --probs all, the top k with --probs top<k> — the k
// largest prob_<class> values of the same rows, ties in class order after
// the prediction — and prediction alone with --probs none; a lake takes
// the flag too. A bad --probs, and --probs top<k> for a regression model,
// are usage errors naming the flag.
func TestScoreProbs(t *testing.T) {
	dir := t.TempDir()
	tr, te := filepath.Join(dir, "tr.csv"), filepath.Join(dir, "te.csv")
	manyClassesCSV(t, tr, 3000, 300, 1)
	manyClassesCSV(t, te, 200, 300, 2)
	mdl := filepath.Join(dir, "m.model")
	mustRun(t, "train", "--in", tr, "--label", "label", "--out", mdl, "--trees", "10")

	def := mustRun(t, "score", "--model", mdl, "--in", te, "--out", filepath.Join(dir, "def.csv"))
	if def["probs"] != "top5" {
		t.Fatalf("default report: probs %v, want top5", def["probs"])
	}
	head := readCSV(t, filepath.Join(dir, "def.csv"))[0]
	if strings.Join(head, ",") != "model_id,model_version,source,row,prediction,top1_class,top1_prob,top2_class,top2_prob,top3_class,top3_prob,top4_class,top4_prob,top5_class,top5_prob" {
		t.Fatalf("default header %v", head)
	}
	if r := mustRun(t, "score", "--model", mdl, "--in", te, "--out", filepath.Join(dir, "all.csv"), "--probs", "all"); r["probs"] != "all" {
		t.Fatalf("--probs all report: %v", r)
	}
	all := readCSV(t, filepath.Join(dir, "all.csv"))
	if len(all[0]) != 305 || all[0][5] != "prob_c000" {
		t.Fatalf("--probs all: %d columns from %s", len(all[0]), all[0][5])
	}
	mustRun(t, "score", "--model", mdl, "--in", te, "--out", filepath.Join(dir, "t7.csv"), "--probs", "top7")
	t7 := readCSV(t, filepath.Join(dir, "t7.csv"))
	if len(t7) != len(all) || len(t7[0]) != 5+14 {
		t.Fatalf("--probs top7: %d rows, %d columns", len(t7), len(t7[0]))
	}
	ties := 0
	for i := 1; i < len(all); i++ {
		type cp struct {
			class string
			p     float64
		}
		row := make([]cp, 300)
		for q := range row {
			p, err := strconv.ParseFloat(all[i][5+q], 64)
			if err != nil {
				t.Fatal(err)
			}
			row[q] = cp{strings.TrimPrefix(all[0][5+q], "prob_"), p}
		}
		pred := all[i][4]
		slices.SortStableFunc(row, func(a, b cp) int {
			switch {
			case a.p != b.p:
				return -cmpFloat(a.p, b.p)
			case a.class == pred:
				return -1
			case b.class == pred:
				return 1
			}
			return 0
		})
		if t7[i][4] != pred {
			t.Fatalf("row %d: prediction %s, all gives %s", i, t7[i][4], pred)
		}
		for q := 0; q < 7; q++ {
			p, _ := strconv.ParseFloat(t7[i][6+2*q], 64)
			if t7[i][5+2*q] != row[q].class || p != row[q].p {
				t.Fatalf("row %d rank %d: %s %s, want %s %v", i, q+1, t7[i][5+2*q], t7[i][6+2*q], row[q].class, row[q].p)
			}
			if q > 0 && row[q].p == row[q-1].p {
				ties++
			}
		}
	}
	if ties == 0 {
		t.Fatal("no tied ranks compared")
	}
	mustRun(t, "score", "--model", mdl, "--in", te, "--out", filepath.Join(dir, "none.csv"), "--probs", "none")
	if h := readCSV(t, filepath.Join(dir, "none.csv"))[0]; strings.Join(h, ",") != "model_id,model_version,source,row,prediction" {
		t.Fatalf("--probs none header %v", h)
	}
	// a lake
	lakeIn := filepath.Join(dir, "lake")
	if err := os.MkdirAll(lakeIn, 0o755); err != nil {
		t.Fatal(err)
	}
	schema, recs, err := files.ReadFile(te, files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = files.WriteFile(filepath.Join(lakeIn, "a.parquet"), schema, recs, files.WriteOptions{})
	release(recs)
	if err != nil {
		t.Fatal(err)
	}
	sum := mustRun(t, "score", "--model", mdl, "--in", lakeIn, "--out", filepath.Join(dir, "lakeout"), "--probs", "top2", "--keep", "label")
	if sum["probs"] != "top2" || sum["rows"].(float64) != 200 {
		t.Fatalf("lake summary %v", sum)
	}
	ls, lrecs, err := files.ReadFile(filepath.Join(dir, "lakeout", "a.parquet"), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release(lrecs)
	for _, name := range []string{"label", "prediction", "top1_class", "top2_prob"} {
		if !ls.HasField(name) {
			t.Errorf("lake output without %s: %v", name, ls)
		}
	}
	if ls.NumFields() != 10 {
		t.Errorf("lake output: %d columns, want 10", ls.NumFields())
	}
	// errors
	reg := filepath.Join(dir, "reg.model")
	mustRun(t, "train", "--in", tr, "--label", "x3", "--exclude", "label", "--out", reg, "--trees", "5")
	if r := mustRun(t, "score", "--model", reg, "--in", te, "--out", filepath.Join(dir, "reg.csv"), "--probs", "none"); r["probs"] != nil {
		t.Errorf("regression report names probs: %v", r)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", mdl, "--in", te, "--out", filepath.Join(dir, "x.csv"), "--probs", "top0"}, `--probs: "top0" is not auto, all, none or top<k>`},
		{[]string{"--model", mdl, "--in", te, "--out", filepath.Join(dir, "x.csv"), "--probs", "Top5"}, `--probs: "Top5"`},
		{[]string{"--model", mdl, "--in", lakeIn, "--out", filepath.Join(dir, "lx"), "--probs", "top"}, `--probs: "top"`},
		{[]string{"--model", reg, "--in", te, "--out", filepath.Join(dir, "x.csv"), "--probs", "top3"}, "--probs top3: the model is a regression model"},
		{[]string{"--model", reg, "--in", lakeIn, "--out", filepath.Join(dir, "lx"), "--probs", "top3"}, "--probs top3: the model is a regression model"},
	} {
		code, _, errs := run(t, append([]string{"score"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("score %v: exit %d, stderr %q (want 2 and %q)", c.args, code, errs, c.want)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

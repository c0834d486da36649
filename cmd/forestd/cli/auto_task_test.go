package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// TestTrainAutoIntegerLabel: forestd train --task auto draws analyze's line
// (frame.MaxAutoClasses): an integer label of more than 32 values (a price
// in whole units) is learnt as numbers — it used to become a classifier of
// ~1,000 classes with an out-of-bag error of 0.996 — one of at most 32
// stays classes, and --task classification keeps classes whatever their
// number; the lake sample path (--sample) reads the label the same way.
func TestTrainAutoIntegerLabel(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "prices.csv")
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("x1,x2,price,grade\n")
	for i := 0; i < 800; i++ {
		x1, x2 := r.Float64(), r.Float64()
		fmt.Fprintf(&b, "%v,%v,%d,%d\n", x1, x2, int(1000*x1+50*r.NormFloat64()), int(4*x2))
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m")
	train := func(extra ...string) map[string]any {
		t.Helper()
		return mustRun(t, append([]string{"train", "--in", csv, "--out", model, "--trees", "30"}, extra...)...)
	}
	rep := train("--label", "price", "--exclude", "grade")
	if rep["task"] != "regression" || rep["classes"] != nil {
		t.Fatalf("integer label of many values: task %v, classes %v", rep["task"], rep["classes"])
	}
	if r2 := rep["oob"].(map[string]any)["r2"].(float64); r2 < 0.8 {
		t.Errorf("price ≈ 1000·x1 learnt as numbers: OOB R² %v", r2)
	}
	// the same rows as Parquet, through the lake sample
	schema, recs, err := files.ReadPaths([]string{csv}, files.ReadOptions{Mem: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "prices.parquet")
	if err := files.WriteFile(pq, schema, recs, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	if rep := mustRun(t, "train", "--in", pq, "--out", model, "--trees", "30", "--label", "price", "--exclude", "grade", "--sample", "600"); rep["task"] != "regression" {
		t.Errorf("--sample: task %v", rep["task"])
	}
	if rep := train("--label", "grade", "--exclude", "price"); rep["task"] != "classification" || len(rep["classes"].([]any)) != 4 {
		t.Errorf("integer label of 4 values: task %v, classes %v", rep["task"], rep["classes"])
	}
	if rep := train("--label", "price", "--exclude", "grade", "--task", "classification"); rep["task"] != "classification" || len(rep["classes"].([]any)) <= 32 {
		t.Errorf("--task classification: task %v", rep["task"])
	}
}

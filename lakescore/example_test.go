package lakescore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// Score a hive-partitioned lake into a mirrored output directory: one
// prediction file per input file, the partition column kept.
func Example() {
	dir, _ := os.MkdirTemp("", "forestd-lake")
	defer os.RemoveAll(dir)
	iris, _ := os.ReadFile("../testdata/iris.parquet")
	for _, day := range []string{"day=1", "day=2"} {
		os.MkdirAll(filepath.Join(dir, "lake", day), 0o755)
		os.WriteFile(filepath.Join(dir, "lake", day, "part-0.parquet"), iris, 0o644)
	}
	m, err := scoring.Load("../scoring/testdata/iris.model")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := lakescore.Run(context.Background(), m, []string{filepath.Join(dir, "lake")}, filepath.Join(dir, "out"),
		lakescore.Options{Keep: []string{"day"}, Threads: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Files, "files,", sum.Rows, "rows,", len(sum.Skipped), "skipped")
	out, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.parquet"))
	for _, p := range out {
		rel, _ := filepath.Rel(dir, p)
		fmt.Println(filepath.ToSlash(rel))
	}
	// Output:
	// 2 files, 300 rows, 0 skipped
	// out/day=1/part-0.parquet
	// out/day=2/part-0.parquet
}

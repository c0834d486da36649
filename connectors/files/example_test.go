package files_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/files"
)

// Read a Parquet file written by DuckDB, build a training frame from it,
// and write the same records back out as a gzip CSV file.
func ExampleReadPaths() {
	schema, recs, err := files.ReadPaths([]string{"../../testdata/iris.parquet"}, files.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	fmt.Println(len(recs), "record(s),", schema.NumFields(), "columns; label is", schema.Field(4).Type)

	f, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.NRows, "rows,", f.P(), "features, classes", f.Classes)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "iris.csv.gz")
	if err := files.WriteFile(out, schema, recs, files.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	ft, _ := files.DetectFormat(out)
	fmt.Println("wrote", filepath.Base(out), "as", ft)

	// Output:
	// 1 record(s), 5 columns; label is int64
	// 150 rows, 4 features, classes [0 1 2]
	// wrote iris.csv.gz as csv
}

// A schema check names what is missing or mistyped.
func ExampleCheckSchema() {
	digits, recs, _ := files.ReadPaths([]string{"../../testdata/digits.arrows"}, files.ReadOptions{Columns: []string{"pixel_7_7", "label"}})
	for _, r := range recs {
		r.Release()
	}
	bad, recs, _ := files.ReadPaths([]string{"../../testdata/bad_schema.arrows"}, files.ReadOptions{})
	for _, r := range recs {
		r.Release()
	}
	fmt.Println(files.CheckSchema(digits, bad))
	// Output:
	// schema mismatch: missing field pixel_7_7; field label is utf8, want int64
}

package lake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/lake"
)

// hiveLake links the DuckDB-written letter file into two day partitions
// and adds a truncated file.
func hiveLake() (string, func()) {
	root, _ := os.MkdirTemp("", "lake-example-")
	data, _ := filepath.Abs("../../testdata")
	for rel, name := range map[string]string{
		"date=2026-11-01/part-0.parquet": "letter_recognition_zstd_rg1000.parquet",
		"date=2026-11-02/part-0.parquet": "letter_recognition.parquet",
		"date=2026-11-02/part-1.parquet": "bad_truncated.parquet",
	} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Symlink(filepath.Join(data, name), p)
	}
	return root, func() { os.RemoveAll(root) }
}

// Read two columns and the hive partition column of a lake, row group by
// row group with bounded memory, and write one output per input file in
// the same layout.
func Example() {
	root, cleanup := hiveLake()
	defer cleanup()
	out, _ := os.MkdirTemp("", "lake-example-out-")
	defer os.RemoveAll(out)

	l, err := lake.Open([]string{root}, lake.Options{Columns: []string{"date", "x.box", "label"}, MaxMemory: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(l.Files()), "files,", l.Rows(), "rows; partition keys", l.PartitionKeys())
	for _, s := range l.Skipped() {
		rel, _ := filepath.Rel(root, s.File)
		fmt.Println("skipped", rel+":", s.Reason)
	}
	var w *lake.FileWriter
	batches := 0
	_, err = l.Scan(context.Background(), nil, func(b *lake.Batch) error {
		defer b.Release()
		if b.Err != nil {
			return nil // under Skip the file is listed in l.Skipped()
		}
		batches++
		if w == nil {
			var err error
			w, err = lake.Create(lake.OutputPath(out, l.Files()[b.File].File), b.Record.Schema(), files.WriteOptions{})
			if err != nil {
				return err
			}
		}
		if err := w.Write(b.Record); err != nil {
			return err
		}
		if b.Last {
			defer func() { w = nil }()
			return w.Commit()
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(batches, "row groups read")
	for _, rel := range []string{"date=2026-11-01/part-0.parquet", "date=2026-11-02/part-0.parquet"} {
		_, err := os.Stat(filepath.Join(out, rel))
		fmt.Println(rel, "written:", err == nil)
	}
	// Output:
	// 2 files, 40000 rows; partition keys [date]
	// skipped date=2026-11-02/part-1.parquet: not a complete Parquet file: no PAR1 magic at the end (truncated or still being written?)
	// 21 row groups read
	// date=2026-11-01/part-0.parquet written: true
	// date=2026-11-02/part-0.parquet written: true
}

// Draw a stratified sample of 2600 rows from a lake: each letter gets its
// share of the rows, and the same seed gives the same rows at any number
// of readers.
func ExampleLake_Sample() {
	root, cleanup := hiveLake()
	defer cleanup()
	l, err := lake.Open([]string{root}, lake.Options{Columns: []string{"x.box", "onpix", "label"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, recs, rep, err := l.Sample(context.Background(), lake.SampleOptions{N: 2600, Mode: lake.Stratified, Seed: 1, Label: "label"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	fmt.Println(rep.Mode, rep.Rows, "of", rep.Population, "rows from", rep.Files, "files")
	fmt.Println("stratum", rep.Strata[0].Label+":", rep.Strata[0].Sampled, "of", rep.Strata[0].Population, "rows")
	// Output:
	// stratified 2600 of 40000 rows from 2 files
	// stratum A: 103 of 1578 rows
}

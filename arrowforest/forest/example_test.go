package forest_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/scoring"
)

// Train a forest from a Parquet file, save it as a model file and load it
// back for scoring: read the records, build the frame (the label column
// named, every other column a feature), train with the defaults, write.
func Example() {
	schema, recs, err := files.ReadPaths([]string{"../../testdata/iris.parquet"}, files.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label"})
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Seed = 50, 7
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fr.NRows, "rows,", len(f.Features), "features,", f.Classes, "classes")
	fmt.Printf("OOB error below 10%%: %v\n", f.OOB.Error < 0.1)

	dir, _ := os.MkdirTemp("", "forestd-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "iris.model")
	if _, err := model.WriteFile(path, f, model.Meta{Version: 1, CreatedBy: "example"}); err != nil {
		fmt.Println(err)
		return
	}
	m, err := scoring.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Kind(), m.Version(), m.Columns())
	// Output:
	// 150 rows, 4 features, [0 1 2] classes
	// OOB error below 10%: true
	// rf 1 [sepal_length_cm sepal_width_cm petal_length_cm petal_width_cm]
}

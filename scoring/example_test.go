package scoring_test

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/scoring"
)

// Score a file with a saved model: load the model, read the rows (Parquet,
// Arrow IPC or CSV), score them, and read the predicted class of each row.
func Example() {
	m, err := scoring.Load("testdata/iris.model")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, recs, err := files.ReadPaths([]string{"../testdata/iris.csv.gz"}, files.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	preds, err := m.Score(recs, scoring.Options{Source: "iris.csv.gz"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		for _, p := range preds {
			p.Release()
		}
	}()
	p := preds[0]
	class := p.Column(p.Schema().FieldIndices("prediction")[0]).(*array.String)
	for i := 0; i < 3; i++ {
		fmt.Println(p.Column(3).(*array.Int64).Value(i), class.Value(i))
	}
	fmt.Println(m.Kind(), len(m.Classes()), "classes")
	// Output:
	// 0 0
	// 1 0
	// 2 0
	// rf 3 classes
}

// Score one record with an id column kept beside each prediction.
func ExampleModel_Score() {
	m, _ := scoring.Load("testdata/iris.model")
	_, recs, _ := files.ReadPaths([]string{"../testdata/iris.parquet"}, files.ReadOptions{})
	rec := recs[0].NewSlice(50, 53) // three rows of one record
	for _, r := range recs {
		r.Release()
	}
	defer rec.Release()
	preds, err := m.Score([]arrow.Record{rec}, scoring.Options{Keep: []string{"label"}, Source: "request-17", FirstRow: 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer preds[0].Release()
	fmt.Println(preds[0].Schema().Field(4).Name, preds[0].NumRows())
	for i := 0; i < 3; i++ {
		fmt.Println(preds[0].Column(2).ValueStr(i), preds[0].Column(3).ValueStr(i), preds[0].Column(4).ValueStr(i), preds[0].Column(5).ValueStr(i))
	}
	// Output:
	// label 3
	// request-17 50 1 1
	// request-17 51 1 1
	// request-17 52 1 1
}

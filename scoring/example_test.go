package scoring_test

import (
	"fmt"
	"strings"

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

// Write the two most probable classes of each row instead of a column per
// class (Options.Probs; a model of more than MaxAllProbs classes does so by
// default, with the top DefaultTopK). Equal probabilities rank in class
// order: the second row's classes 0 and 2 both have probability 0.
func ExampleProbs() {
	m, _ := scoring.Load("testdata/iris.model")
	_, recs, _ := files.ReadPaths([]string{"../testdata/iris.parquet"}, files.ReadOptions{})
	rec := recs[0].NewSlice(70, 73)
	for _, r := range recs {
		r.Release()
	}
	defer rec.Release()
	preds, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: scoring.ProbsTop(2)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer preds[0].Release()
	p := preds[0]
	var names []string
	for _, f := range p.Schema().Fields()[4:] {
		names = append(names, f.Name)
	}
	fmt.Println(strings.Join(names, " "))
	for i := 0; i < 3; i++ {
		var row []string
		for j := 4; j < int(p.NumCols()); j++ {
			row = append(row, p.Column(j).ValueStr(i))
		}
		fmt.Println(strings.Join(row, " "))
	}
	md := p.Schema().Metadata()
	fmt.Println(md.Values()[md.FindKey("forestd.probs")])
	// Output:
	// prediction top1_class top1_prob top2_class top2_prob
	// 1 1 0.76666665 2 0.23333333
	// 1 1 1 0 0
	// 1 1 0.8333333 2 0.16666667
	// top2
}

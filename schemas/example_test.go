package schemas_test

import (
	"fmt"

	"github.com/forestd/forestd/schemas"
)

// Example prints the columns of the prediction records of a three-class
// model with its two most probable classes (--probs top2): the schema
// every producer — the command line, the daemon, the lake job, the
// Benthos processors — writes.
func Example() {
	s := schemas.Predictions(schemas.PredictionSpec{ModelID: "m", ModelVersion: 1,
		Classes: []string{"setosa", "versicolor", "virginica"}, Probs: schemas.ProbsTop, TopK: 2})
	for _, f := range s.Fields() {
		fmt.Println(f.Name, f.Type)
	}
	md := s.Metadata()
	fmt.Println(md.Values()[md.FindKey("forestd.schema")], md.Values()[md.FindKey(schemas.MetaProbs)])
	// Output:
	// model_id utf8
	// model_version int64
	// source utf8
	// row int64
	// prediction utf8
	// top1_class utf8
	// top1_prob float32
	// top2_class utf8
	// top2_prob float32
	// predictions/v1 top2
}

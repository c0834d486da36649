package operators_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
)

// Train a model, install it as the current one, and score a batch: each
// prediction carries the model version and the batch's source coordinates.
func ExampleScorer() {
	train, _ := synth.Generate(synth.Trunk, synth.Options{N: 500, Seed: 1, P: 4})
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 10, 1
	f, _ := forest.Train(train, p, forest.TrainOptions{})
	m, _ := operators.EncodeModel(f, 3, "example")

	cur := operators.NewCurrent()
	cur.Offer(m)
	s, _ := operators.NewScorer(cur, operators.ScoreOptions{})
	batch, _ := synth.Generate(synth.Trunk, synth.Options{N: 5, Seed: 2, P: 4})
	rec := batch.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	out, used, err := s.Score(context.Background(), nil, rec.Schema(), []arrow.Record{rec}, "forestd.features/0/42")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out[0].Release()
	fmt.Println(used.Meta.Version, out[0].NumRows(), out[0].Schema().Field(2).Name, out[0].Column(2).ValueStr(0))
	// Output: 3 5 source forestd.features/0/42
}

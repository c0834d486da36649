package operators_test

import (
	"context"
	"fmt"
	"time"

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

// Train behind the select stage: the latest analysis of the labelled
// window selects the marginal feature m0 and maps the XOR pair of xor3
// (dissertation §6.3); the model is trained on those columns, carries the
// mapping, and reads the raw columns when it scores.
func ExampleTrainer_TrainMapped() {
	data, _ := synth.Generate(synth.XOR3, synth.Options{N: 400, Seed: 5})
	rec := data.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	an, _ := operators.NewAnalyzer(operators.AnalyzeOptions{Label: "y", Window: 400, MinRows: 100, Seed: 5})
	an.Add(rec.Schema(), []arrow.Record{rec})
	an.Analyze(time.Now())
	sel, seq := an.Selection()

	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 10, 1
	tr, _ := operators.NewTrainer(operators.TrainOptions{Label: "y", Window: 400, Params: p})
	tr.Add(rec.Schema(), []arrow.Record{rec})
	window, _ := tr.Snapshot(time.Now())
	f, err := tr.TrainMapped(context.Background(), window, sel, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	source, _ := f.SourceColumns()
	fmt.Println("analysis", seq, "trees read", f.Features)
	fmt.Println("scoring reads", source)
	// Output:
	// analysis 1 trees read [m0 fdm_g1_1 fdm_g1_2]
	// scoring reads [m0 x2a_0 x2a_1]
}

package operators_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/scoring"
)

// A streaming scorer holds the live model in a Current: a newer model
// swaps in atomically, an older one is refused, and each batch is scored by
// the model it loaded when it began.
func ExampleCurrent() {
	train, _ := synth.Generate(synth.Trunk, synth.Options{N: 500, Seed: 1, P: 4})
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 10, 1
	f, _ := forest.Train(train, p, forest.TrainOptions{})
	v3, _ := scoring.Encode(f, 3, "example")
	v2, _ := scoring.Encode(f, 2, "example")

	cur := operators.NewCurrent()
	fmt.Println(cur.Offer(v3), errors.Is(cur.Offer(v2), operators.ErrNotNewer)) // the older version is refused

	batch, _ := synth.Generate(synth.Trunk, synth.Options{N: 5, Seed: 2, P: 4})
	rec := batch.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	m := cur.Load()
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{Source: "forestd.features/0/42", Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out[0].Release()
	fmt.Println(m.Version(), out[0].NumRows(), out[0].Schema().Field(2).Name, out[0].Column(2).ValueStr(0))
	// Output:
	// <nil> true
	// 3 5 source forestd.features/0/42
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
	an.Analyze(context.Background(), time.Now())
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

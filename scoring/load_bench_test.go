package scoring_test

import (
	"sync"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/scoring"
)

// trunkModel is a 100-tree rf model of trunk (p = 50, n = 100,000, the
// defaults): about 10⁶ nodes, trained once per process.
var trunkModel = sync.OnceValues(func() ([]byte, error) {
	tr, err := synth.Generate("trunk", synth.Options{N: 100000, P: 50, Seed: 1})
	if err != nil {
		return nil, err
	}
	p := forest.DefaultParams(tr.Task)
	p.Seed, p.Threads = 1, 2
	f, err := forest.Train(tr, p, forest.TrainOptions{})
	if err != nil {
		return nil, err
	}
	m, err := scoring.Encode(f, 1, "bench")
	if err != nil {
		return nil, err
	}
	return m.Bytes(), nil
})

// BenchmarkLoad is scoring.Decode of a trunk model of about 10⁶ nodes:
// the format checks, the one forest validation (ARCHITECTURE.md, Formats)
// and compiling. nodes is the model's node count.
//
//	go test ./scoring -run '^$' -bench Load -count 5
func BenchmarkLoad(b *testing.B) {
	data, err := trunkModel()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	f, _, err := model.DecodeBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	nodes := 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
	}
	for b.Loop() {
		if _, err := scoring.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(nodes), "nodes")
}

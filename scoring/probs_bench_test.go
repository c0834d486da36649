package scoring_test

import (
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/scoring"
)

// recordBytes is the size of a record's Arrow buffers.
func recordBytes(rec arrow.Record) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// BenchmarkScoreProbs scores 10,000 rows with a 20-tree model of k
// classes (k = 1,000 and 10,000) into every class's probability (all),
// the top 5 and none: out-MB is the size of the prediction record's Arrow
// buffers, cols its columns; ns/op is the whole Score call (the forest's
// walk included, which is the same in every mode).
//
//	go test ./scoring -run '^$' -bench ScoreProbs -benchtime 3x
func BenchmarkScoreProbs(b *testing.B) {
	const rows = 10000
	for _, k := range []int{1000, 10000} {
		tr := classesFrame(max(2*k, 20000), 8, k, 1)
		p := forest.DefaultParams(tr.Task)
		p.Trees, p.Seed, p.Threads = 20, 1, 2
		f, err := forest.Train(tr, p, forest.TrainOptions{})
		if err != nil {
			b.Fatal(err)
		}
		m, err := scoring.Encode(f, 1, "bench")
		if err != nil {
			b.Fatal(err)
		}
		rec := classesFrame(rows, 8, k, 2).ToRecord(memory.DefaultAllocator)
		for _, probs := range []scoring.Probs{scoring.ProbsAll, scoring.ProbsTop(5), scoring.ProbsNone} {
			b.Run("k="+strconv.Itoa(k)+"/"+string(probs), func(b *testing.B) {
				var size int64
				var cols int
				for i := 0; i < b.N; i++ {
					out, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: probs, Threads: 2})
					if err != nil {
						b.Fatal(err)
					}
					size, cols = recordBytes(out[0]), int(out[0].NumCols())
					release(out)
				}
				b.ReportMetric(float64(size)/1e6, "out-MB")
				b.ReportMetric(float64(cols), "cols")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
		rec.Release()
	}
}

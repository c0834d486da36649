package scoring_test

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/internal/fixture"
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

// BenchmarkScoreProbs scores 20,000 rows with a 20-tree model of k
// classes (k = 2,000 and 10,000) into every class's probability (all),
// the top 5 and none: out-MB is the size of the prediction record's Arrow
// buffers, cols its columns, alloc-MB the bytes the call allocated
// (runtime.MemStats.TotalAlloc: Go slices — the forest's blocks, the
// probabilities kept — and the record's buffers alike), per call; ns/op
// is the whole Score call (the forest's walk included, which is the same
// in every mode). all holds the 20,000 × k probability matrix; top5 and
// none rank each block of rows as the forest finishes it and hold only
// the ranks or the class, plus the forest's blocks, which do not grow
// with the rows (scoring.Model.PredictionBytes).
//
//	go test ./scoring -run '^$' -bench ScoreProbs -benchtime 3x
func BenchmarkScoreProbs(b *testing.B) {
	const rows = 20000
	for _, k := range []int{2000, 10000} {
		tr := fixture.Classes(max(2*k, 20000), 8, k, 1)
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
		rec := fixture.Classes(rows, 8, k, 2).ToRecord(memory.DefaultAllocator)
		for _, probs := range []scoring.Probs{scoring.ProbsAll, scoring.ProbsTop(5), scoring.ProbsNone} {
			b.Run("k="+strconv.Itoa(k)+"/"+string(probs), func(b *testing.B) {
				var size int64
				var cols int
				var alloc uint64
				for i := 0; i < b.N; i++ {
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					out, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: probs, Threads: 2})
					runtime.ReadMemStats(&after)
					if err != nil {
						b.Fatal(err)
					}
					alloc += after.TotalAlloc - before.TotalAlloc
					size, cols = recordBytes(out[0]), int(out[0].NumCols())
					release(out)
				}
				b.ReportMetric(float64(size)/1e6, "out-MB")
				b.ReportMetric(float64(cols), "cols")
				b.ReportMetric(float64(alloc)/float64(b.N)/1e6, "alloc-MB")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
		rec.Release()
	}
}

package codec

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/internal/benchcpu"
)

// benchLines returns n JSON objects of an "id" and p float32-valued
// features x1..xp written as forestd writes them (shortest float32 text),
// the rows of BenchmarkScoreJSONBatch in connectors/benthos.
func benchLines(n, p int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		b := append([]byte(`{"id":`), strconv.Itoa(i)...)
		for j := 1; j <= p; j++ {
			b = append(b, `,"x`...)
			b = strconv.AppendInt(b, int64(j), 10)
			b = append(b, `":`...)
			b = strconv.AppendFloat(b, float64(float32(r.NormFloat64())), 'g', -1, 32)
		}
		out[i] = append(b, '}')
	}
	return out
}

// BenchmarkJSONRows: a batch of 1,000 one-object messages of 50 features
// into one record, as forestd_score reads them (the features required,
// pinned to numbers, the id skipped: JSONOptions.Only), and the same rows
// as one JSON-lines message through DecodeJSON (the daemon's decoder);
// rows/s reported.
func BenchmarkJSONRows(b *testing.B) {
	const n, p = 1000, 50
	lines := benchLines(n, p)
	names := make([]string, p)
	kinds := map[string]Kind{}
	for j := range names {
		names[j] = fmt.Sprintf("x%d", j+1)
		kinds[names[j]] = KindNumber
	}
	mem := memory.NewGoAllocator()
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.PerRow(b, n)()
		jr := NewJSONRows(JSONOptions{Require: names, Kinds: kinds, Only: names, Single: true})
		for i := 0; i < b.N; i++ {
			jr.Reset() // reused batch after batch, as forestd_score does
			for _, err := range jr.AppendAll(lines) {
				if err != nil {
					b.Fatal(err)
				}
			}
			jr.Record(mem).Release()
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("lines", func(b *testing.B) {
		var value []byte
		for _, l := range lines {
			value = append(append(value, l...), '\n')
		}
		b.ReportAllocs()
		defer benchcpu.PerRow(b, n)()
		for i := 0; i < b.N; i++ {
			rec, err := DecodeJSON(value, mem)
			if err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
}

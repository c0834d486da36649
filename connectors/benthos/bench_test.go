package benthos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/internal/benchcpu"
	"github.com/forestd/forestd/scoring"
)

// benchProc returns a forestd_score processor on a 100-tree forest trained
// on 20,000 Trunk rows (p = 50) and 1,000 other Trunk rows (the batch).
func benchProc(b *testing.B) (*scoreProc, arrow.Record) {
	b.Helper()
	gen := func(n int, seed uint64) arrow.Record {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, P: 50, Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		return fr.ToRecord(nil)
	}
	train := gen(20000, 1)
	defer train.Release()
	m := trainModel(b, train, "y", frame.TaskAuto, 100, 1, 1)
	path := filepath.Join(b.TempDir(), "m.model")
	writeModel(b, path, m)
	conf, err := scoreSpec().ParseYAML(fmt.Sprintf("model: %q", path), nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newScoreProc(conf, service.MockResources())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close(context.Background()) })
	return p, gen(1000, 2)
}

// BenchmarkScoreJSONBatch: a batch of 1,000 one-object JSON messages through
// forestd_score's ProcessBatch (decode, score, merge); rows/s reported.
// With bad=10, ten of them are malformed (validated per message and
// rejected alone, the rest scored as one record).
func BenchmarkScoreJSONBatch(b *testing.B) {
	for _, bad := range []int{0, 10} {
		b.Run(fmt.Sprintf("bad=%d", bad), func(b *testing.B) {
			p, rec := benchProc(b)
			defer rec.Release()
			rows := jsonRows(b, rec)
			for i := 0; i < bad; i++ {
				rows[i*97] = []byte(`{"x1": "oops"}`)
			}
			b.ResetTimer()
			defer benchcpu.PerRow(b, len(rows))()
			for i := 0; i < b.N; i++ {
				batch := make(service.MessageBatch, len(rows))
				for k, r := range rows {
					batch[k] = service.NewMessage(r)
				}
				if _, err := p.ProcessBatch(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkScoreArrowBatch: batches of 1 and of 8 1,000-row Arrow IPC
// messages through forestd_score's ProcessBatch (the messages of a batch
// are scored in one Model.Score call); rows/s reported.
func BenchmarkScoreArrowBatch(b *testing.B) {
	p, rec := benchProc(b)
	defer rec.Release()
	msg := arrowMessage(b, rec)
	for _, k := range []int{1, 8} {
		b.Run(fmt.Sprintf("messages=%d", k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				batch := make(service.MessageBatch, k)
				for j := range batch {
					batch[j] = service.NewMessage(msg)
				}
				if _, err := p.ProcessBatch(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*k)*1000/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkModelScore1000: scoring.Model.Score on the same 1,000-row
// record with the processor's thread count, the floor under
// BenchmarkScoreArrowBatch (which adds Arrow IPC
// decoding and encoding and the processor's bookkeeping).
func BenchmarkModelScore1000(b *testing.B) {
	p, rec := benchProc(b)
	defer rec.Release()
	m := p.file.cur.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := m.Score([]arrow.Record{rec}, scoring.Options{Threads: p.threads})
		if err != nil {
			b.Fatal(err)
		}
		release(out)
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "rows/s")
}

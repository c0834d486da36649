package daemon

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/benchcpu"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// BenchmarkScoreMessage: the daemon's path for one features message of
// 1,000 Trunk rows (p = 50) on a 100-tree forest trained on 20,000 others
// — the daemon's decoder (content type from the header; scoreDecoder), the
// score stage, the predictions encoded as the sink's default Arrow IPC —
// with the rows as JSON lines and as an Arrow IPC stream
// (docs/performance.md), and as JSON lines decoded in full by
// kafka.NewDecoder (json-full, the decoder before scoreDecoder); json-extra
// adds five members the model does not read (json-extra-full: the same
// decoded in full).
// rows/s and the process's CPU per row reported.
func BenchmarkScoreMessage(b *testing.B) {
	gen := func(n int, seed uint64) arrow.Record {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, P: 50, Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		return fr.ToRecord(nil)
	}
	train := gen(20000, 1)
	fr, err := frame.FromRecords(train.Schema(), []arrow.Record{train}, frame.Options{Label: "y"})
	train.Release()
	if err != nil {
		b.Fatal(err)
	}
	params := forest.DefaultParams(fr.Task)
	params.Trees, params.Seed = 100, 1
	f, err := forest.Train(fr, params, forest.TrainOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "bench")
	if err != nil {
		b.Fatal(err)
	}
	cur := operators.NewCurrent()
	if err := cur.Offer(m); err != nil {
		b.Fatal(err)
	}
	rec := gen(1000, 2)
	defer rec.Release()
	// the message holds the features alone, as a producer of features sends them
	cols, fields := []arrow.Array{}, []arrow.Field{}
	for j, fl := range rec.Schema().Fields() {
		if fl.Name != "y" {
			cols, fields = append(cols, rec.Column(j)), append(fields, fl)
		}
	}
	feat := array.NewRecord(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer feat.Release()
	asJSON, err := codec.EncodeJSON(feat)
	if err != nil {
		b.Fatal(err)
	}
	// the same rows with members the model does not read, as a topic of
	// events carries them: an id, a time stamp, a note, a user and an amount
	var extra []byte
	for i, line := range bytes.Split(bytes.TrimSpace(asJSON), []byte("\n")) {
		extra = fmt.Appendf(extra, `{"id":"event-%06d","ts":"2026-11-28T01:00:%02d.%06dZ","note":"a member the model does not read","user":"u%04d","amount":%d.25,`, i, i%60, i, i%977, i%500)
		extra = append(append(extra, line[1:]...), '\n')
	}
	asArrow, err := codec.EncodeArrow(feat, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	sd := newScoreDecoder("features", "")
	full := kafka.NewDecoder(nil)
	for _, c := range []struct {
		name, ct string
		value    []byte
		decode   pipeline.Decoder
	}{
		{"json", codec.ContentTypeNDJSON, asJSON, sd.decode},
		{"json-full", codec.ContentTypeNDJSON, asJSON, full},
		{"arrow", codec.ContentTypeArrow, asArrow, sd.decode},
		{"json-extra", codec.ContentTypeNDJSON, extra, sd.decode},
		{"json-extra-full", codec.ContentTypeNDJSON, extra, full},
	} {
		decode, stage := c.decode, &scoreStage{Current: cur, Full: sd.full}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			done := benchcpu.PerRow(b, int(feat.NumRows()))
			for i := 0; i < b.N; i++ {
				env := &pipeline.Envelope{Topic: "features", Offset: int64(i), Value: c.value, Pinned: m,
					Headers: []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(c.ct)}}}
				batch, err := decode(env)
				if err != nil {
					b.Fatal(err)
				}
				outs, _, err := stage.Process(context.Background(), batch)
				batch.Release()
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					if _, err := codec.EncodeArrow(o.Record, memory.DefaultAllocator); err != nil {
						b.Fatal(err)
					}
					o.Record.Release()
				}
			}
			done()
			b.ReportMetric(float64(b.N)*float64(feat.NumRows())/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

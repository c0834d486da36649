package daemon

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// TestScoreDecoderSame: the score route's decoder (the model's columns and
// the key alone, the other members checked) and a full decode give the
// same predictions, the same headers and the same refusals, word for word:
// members nested or of two kinds, a missing feature next to a near name,
// a missing key column, a feature of the wrong kind, a tombstone.
func TestScoreDecoderSame(t *testing.T) {
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: 100, Seed: 1, P: 3})
	if err != nil {
		t.Fatal(err)
	}
	m := model(t, fr, 1)
	values := []string{
		`{"id": "a", "x1": 1, "x2": 2, "x3": 3, "note": "text", "n": 7}`,
		"{\"id\": \"b\", \"x3\": 3, \"x1\": null, \"x2\": true, \"extra\": null}\n{\"id\": \"c\", \"x3\": 0.5, \"x1\": -1, \"x2\": false, \"extra\": 2}",
		`{"id": "d", "x1": 1, "x2": 2, "x3": 3, "meta": {"src": 1}}`,
		"{\"id\": \"e\", \"x1\": 1, \"x2\": 2, \"x3\": 3, \"n\": 1}\n{\"id\": \"f\", \"x1\": 1, \"x2\": 2, \"x3\": 3, \"n\": \"one\"}",
		`{"id": "g", "x1": 1, "x2": 2, "X3": 3}`,
		`{"x1": 1, "x2": 2, "x3": 3, "ID": "h"}`,
		`{"id": "i", "x1": 1, "x2": 2, "x3": "three", "note": "x"}`,
		`{"id": "j", "x1": 1, "x2": 2, "x3": 3, "id2": "\ud800"}`,
		`{"id": "k", "x1": 1, "x2": 2, "x3": 3, "n": 1, "n": 2}`,
		"",
	}
	full := kafka.NewDecoder(nil)
	fast := newScoreDecoder("features", "id")
	for i, v := range values {
		env := func() *pipeline.Envelope {
			e := &pipeline.Envelope{Topic: "features", Offset: int64(i), Value: []byte(v), Pinned: m}
			if v == "" {
				e.Value = nil
			}
			return e
		}
		type result struct {
			decodeErr, scoreErr string
			outs                []pipeline.Output
		}
		run := func(dec pipeline.Decoder, stage *scoreStage) result {
			var r result
			b, err := dec(env())
			if err != nil {
				r.decodeErr = err.Error()
				return r
			}
			defer b.Release()
			r.outs, _, err = stage.Process(context.Background(), b)
			if err != nil {
				r.scoreErr = err.Error()
			}
			return r
		}
		want := run(full, &scoreStage{Key: "id"})
		got := run(fast.decode, &scoreStage{Key: "id", Full: fast.full})
		if got.decodeErr != want.decodeErr || got.scoreErr != want.scoreErr {
			t.Fatalf("value %d: decode %q score %q, full decode: %q, %q", i, got.decodeErr, got.scoreErr, want.decodeErr, want.scoreErr)
		}
		if len(got.outs) != len(want.outs) {
			t.Fatalf("value %d: %d outputs, full decode %d", i, len(got.outs), len(want.outs))
		}
		for k := range got.outs {
			g, w := got.outs[k], want.outs[k]
			if !array.RecordEqual(g.Record, w.Record) || !g.Record.Schema().Equal(w.Record.Schema()) || fmt.Sprint(g.Headers) != fmt.Sprint(w.Headers) || !slices.Equal(g.Key, w.Key) {
				t.Fatalf("value %d: output %d differs from the full decode's", i, k)
			}
			g.Record.Release()
			w.Record.Release()
		}
		if i == 0 && (want.scoreErr != "" || len(want.outs) == 0) {
			t.Fatalf("value 0 not scored: %+v", want)
		}
	}
	// the decoder's record holds the model's columns and the key alone
	b, err := fast.decode(&pipeline.Envelope{Topic: "features", Value: []byte(values[0]), Pinned: m})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	var names []string
	for _, f := range b.Schema.Fields() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if want := append(slices.Clone(m.Columns()), "id"); !slices.Equal(names, slices.Sorted(slices.Values(want))) {
		t.Fatalf("decoded columns %v, want %v", names, want)
	}
}

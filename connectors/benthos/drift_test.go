package benthos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/schemas"
)

// gaussRecord draws n rows of x1, x2 ~ N(0, 1), x1 shifted by shift, and a
// category c of "u" or "v".
func gaussRecord(r *rand.Rand, n int, shift float64) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "x1", Type: arrow.PrimitiveTypes.Float64},
		{Name: "x2", Type: arrow.PrimitiveTypes.Float64},
		{Name: "c", Type: arrow.BinaryTypes.String},
	}, nil))
	defer b.Release()
	for range n {
		b.Field(0).(*array.Float64Builder).Append(r.NormFloat64() + shift)
		b.Field(1).(*array.Float64Builder).Append(r.NormFloat64())
		b.Field(2).(*array.StringBuilder).Append([]string{"u", "v"}[r.IntN(2)])
	}
	return b.NewRecord()
}

// writeReference writes a reference sample of n rows as Parquet.
func writeReference(t *testing.T, r *rand.Rand, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ref.parquet")
	rec := gaussRecord(r, n, 0)
	defer rec.Release()
	if err := files.WriteFile(path, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDriftLintRules: configurations that cannot work are refused by the
// linter with a message naming the field; good ones lint clean.
func TestDriftLintRules(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{`forestd_drift: {reference: ""}`, "reference: the path of the reference sample is required"},
		{`forestd_drift: {reference: r, window: -1}`, "window must be 0 (each batch) or a positive row count"},
		{`forestd_drift: {reference: r, alpha: 1}`, "alpha must be in (0, 1)"},
		{`forestd_drift: {reference: r, directions: 0}`, "directions must be at least 1"},
		{`forestd_drift: {reference: r, threads: -2}`, "threads must be 0"},
		{`forestd_drift: {reference: r, seed: -1}`, "seed must not be negative"},
		{`forestd_drift: {reference: r, report_format: arrow}`, "report_format: applies to output: report only"},
		{`forestd_drift: {reference: r, adjust: sidak}`, "sidak"},
		{`forestd_drift: {reference: r, output: log}`, "log"},
	} {
		err := service.NewStreamBuilder().AddProcessorYAML(c.yaml)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
	for _, ok := range []string{
		`forestd_drift: {reference: r}`,
		`forestd_drift: {reference: r, features: [a, b], window: 5000, alpha: 0.01, adjust: bh, seed: 3, directions: 32, threads: 2}`,
		`forestd_drift: {reference: r, output: report, report_format: arrow}`,
	} {
		if err := service.NewStreamBuilder().AddProcessorYAML(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestDriftConfigErrors: a reference that cannot be read, or that lacks a
// named feature, fails the stream at start naming the file and column.
func TestDriftConfigErrors(t *testing.T) {
	ref := writeReference(t, rand.New(rand.NewPCG(1, 1)), 10)
	missing := filepath.Join(t.TempDir(), "none.parquet")
	for _, c := range []struct{ yaml, want string }{
		{`forestd_drift: {reference: "` + missing + `"}`, "none.parquet"},
		{`forestd_drift: {reference: "` + ref + `", features: [x1, nope]}`, `has no column "nope"`},
	} {
		b := service.NewStreamBuilder()
		if err := b.SetLoggerYAML("level: off"); err != nil {
			t.Fatal(err)
		}
		if err := b.AddInputYAML(`generate: {count: 1, interval: "", mapping: 'root = {}'}`); err != nil {
			t.Fatal(err)
		}
		if err := b.AddProcessorYAML(c.yaml); err != nil {
			t.Fatal(err)
		}
		if err := b.AddOutputYAML(`drop: {}`); err != nil {
			t.Fatal(err)
		}
		st, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = st.Run(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestDriftMetadata: with a window of 300 rows, batches of 100 JSON
// messages carry no result until the third, whose messages say whether the
// window drifted: not for rows from the reference's distribution, on x1
// alone after x1 shifts by one standard deviation. An Arrow message joins
// the window with its rows; a message without a feature is errored and
// stays out.
func TestDriftMetadata(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	ref := writeReference(t, r, 1000)
	s := startStream(t, 1, `forestd_drift: {reference: "`+ref+`", window: 300, seed: 4}`)
	send := func(shift float64, n int) []got {
		rec := gaussRecord(r, n, shift)
		defer rec.Release()
		return s.process(t, jsonRows(t, rec)...)
	}
	for _, shift := range []float64{0, 1} {
		for k := range 3 {
			out := send(shift, 100)
			meta := out[0].meta
			if k < 2 {
				if _, ok := meta[metaDrift]; ok {
					t.Fatalf("shift %v batch %d: a result before the window is full: %v", shift, k, meta)
				}
				continue
			}
			want, feats := "false", ""
			if shift != 0 {
				want, feats = "true", "x1"
			}
			for _, g := range out {
				if g.err != nil || g.meta[metaDrift] != want || !strings.HasPrefix(fmt.Sprint(g.meta[metaDriftFeatures]), feats) {
					t.Fatalf("shift %v: message %v error %v, want drift %s on %q", shift, g.meta, g.err, want, feats)
				}
			}
			var rep struct {
				CurRows  int `json:"cur_rows"`
				Features []struct {
					Name string `json:"name"`
				} `json:"features"`
			}
			if err := json.Unmarshal([]byte(fmt.Sprint(meta[metaDriftReport])), &rep); err != nil || rep.CurRows != 300 || len(rep.Features) != 3 {
				t.Errorf("report %v (%v): want 300 current rows, 3 features", meta[metaDriftReport], err)
			}
		}
	}
	// one Arrow message of 300 rows completes a window by itself; the
	// JSON message without x2 is errored
	rec := gaussRecord(r, 300, 0)
	defer rec.Release()
	out := s.process(t, arrowMessage(t, rec), []byte(`{"x1": 1, "c": "u"}`))
	if out[0].meta[metaDrift] != "false" || out[1].err == nil || !strings.Contains(out[1].err.Error(), "x2") {
		t.Errorf("arrow message %v; JSON without x2: error %v", out[0].meta, out[1].err)
	}
}

// TestDriftReportOutput: with output: report each batch (window 0) becomes
// one report message, JSON or an Arrow stream of schemas.DriftReport.
func TestDriftReportOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	ref := writeReference(t, r, 500)
	rec := gaussRecord(r, 200, 1)
	defer rec.Release()
	for _, format := range []string{"json", "arrow"} {
		b := service.NewStreamBuilder()
		send, err := b.AddBatchProducerFunc()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddProcessorYAML(`forestd_drift: {reference: "` + ref + `", output: report, report_format: ` + format + `}`); err != nil {
			t.Fatal(err)
		}
		if err := b.SetLoggerYAML("level: off"); err != nil {
			t.Fatal(err)
		}
		outs := make(chan []byte, 4)
		if err := b.AddConsumerFunc(func(_ context.Context, m *service.Message) error {
			body, err := m.AsBytes()
			outs <- append([]byte(nil), body...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		st, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- st.Run(context.Background()) }()
		batch := service.MessageBatch{}
		for _, line := range jsonRows(t, rec) {
			batch = append(batch, service.NewMessage(line))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := send(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cancel()
		body := <-outs
		if len(outs) != 0 {
			t.Errorf("%s: %d more messages, want one report per batch", format, len(outs))
		}
		switch format {
		case "json":
			var rep map[string]any
			if err := json.Unmarshal(body, &rep); err != nil || rep["drift"] != true {
				t.Errorf("json report %s (%v), want drift", body, err)
			}
		case "arrow":
			schema, recs, err := codec.Decode(body, codec.ContentTypeArrow, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if !schema.Equal(schemas.DriftReport(0.05, "holm")) || recs[0].NumRows() != 4 {
				t.Errorf("arrow report %v", recs[0])
			}
			release(recs)
		}
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := st.Stop(stopCtx); err != nil {
			t.Error(err)
		}
		stopCancel()
		<-done
	}
}

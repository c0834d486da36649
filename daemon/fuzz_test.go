package daemon

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// ipcStream writes recs (sharing schema) as one Arrow IPC stream.
func ipcStream(t testing.TB, schema *arrow.Schema, recs ...arrow.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// messageSeeds are the message kinds of the reliability issue: valid Arrow
// and JSON, zero-row batches, schema-only streams, all-null columns,
// truncations, missing and wrong-typed features, non-finite numbers.
func messageSeeds(t testing.TB) [][]byte {
	t.Helper()
	schema, recs, err := files.ReadFile("../testdata/iris.parquet", files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	few := recs[0].NewSlice(0, 5)
	defer few.Release()
	none := recs[0].NewSlice(0, 0)
	defer none.Release()
	nulls := make([]arrow.Array, schema.NumFields())
	for j, f := range schema.Fields() {
		nulls[j] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 3)
		defer nulls[j].Release()
	}
	allNull := array.NewRecord(schema, nulls, 3)
	defer allNull.Release()
	valid := ipcStream(t, schema, few)
	return [][]byte{
		valid,
		ipcStream(t, schema, none),
		ipcStream(t, schema, none, few, none),
		ipcStream(t, schema),
		ipcStream(t, schema, allNull),
		valid[:len(valid)/2],
		valid[:9],
		[]byte(`{"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}`),
		[]byte("{\"sepal_length_cm\": 5.1, \"sepal_width_cm\": 3.5, \"petal_length_cm\": 1.4, \"petal_width_cm\": 0.2}\n{\"sepal_length_cm\": 6}\n"),
		[]byte(`{"sepal_length_cm": "wide", "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}`),
		[]byte(`{"sepal_length_cm": 1e400, "sepal_width_cm": null, "petal_length_cm": -0, "petal_width_cm": {"x": 1}}`),
		[]byte(`{"petal_width_cm": 0.2}`),
		[]byte(`{}`),
		[]byte(`[1, 2]`),
		{},
		nil,
	}
}

// FuzzMessagePath: the whole path a feature message takes in the daemon —
// decode (Arrow IPC or JSON, by content type or sniffed), the score stage
// with the live model (frame, mapping, predict, prediction records), and
// the encoding of the outputs (Arrow IPC and JSON) — returns predictions
// or an input error for any message, never panics, never fails in a way
// the runtime would retry (which would stall the partition), and frees
// all it allocates.
func FuzzMessagePath(f *testing.F) {
	for _, s := range messageSeeds(f) {
		for ct := byte(0); ct < 3; ct++ {
			f.Add(s, ct)
		}
	}
	m, err := scoring.Load("../scoring/testdata/iris.model")
	if err != nil {
		f.Fatal(err)
	}
	cur := operators.NewCurrent()
	if err := cur.Offer(m); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte, ct byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		env := &pipeline.Envelope{Topic: "forestd.features", Partition: 1, Offset: 7, Value: value, Pinned: m}
		switch ct % 3 {
		case 1:
			env.Headers = []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeArrow)}}
		case 2:
			env.Headers = []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeJSON)}}
		}
		b, err := kafka.NewDecoder(mem)(env)
		if err != nil {
			return // a decoder error is an input error: the runtime quarantines it
		}
		defer b.Release()
		st := &scoreStage{Current: cur, Key: "petal_width_cm", Mem: mem}
		outs, _, err := st.Process(context.Background(), b)
		if err != nil {
			if !errors.Is(err, pipeline.ErrBadInput) {
				t.Fatalf("not an input error (would be retried forever): %v", err)
			}
			return
		}
		var rows int64
		for _, o := range outs {
			rows += o.Record.NumRows()
			if _, err := codec.EncodeJSON(o.Record); err != nil {
				t.Fatalf("encoding predictions as JSON: %v", err)
			}
			if _, err := codec.EncodeArrow(o.Record, mem); err != nil {
				t.Fatalf("encoding predictions as Arrow: %v", err)
			}
			o.Record.Release()
		}
		if rows != int64(b.Rows()) {
			t.Fatalf("%d predictions for %d rows", rows, b.Rows())
		}
	})
}

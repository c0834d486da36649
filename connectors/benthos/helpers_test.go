package benthos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/scoring"
)

const dataDir = "../../testdata"

// readData reads a data set of the repository's testdata/ as one record.
func readData(t testing.TB, name string) arrow.Record {
	t.Helper()
	schema, recs, err := files.ReadPaths([]string{filepath.Join(dataDir, name)}, files.ReadOptions{})
	if err != nil {
		t.Fatalf("test data missing (testdata/ of the repository): %v", err)
	}
	defer release(recs)
	tbl := array.NewTableFromRecords(schema, recs)
	defer tbl.Release()
	tr := array.NewTableReader(tbl, tbl.NumRows())
	defer tr.Release()
	tr.Next()
	rec := tr.Record()
	rec.Retain()
	return rec
}

// trainModel trains a forest on rec (label column label) and encodes it as
// version version.
func trainModel(t testing.TB, rec arrow.Record, label string, task frame.Task, trees int, seed uint64, version int64) *scoring.Model {
	t.Helper()
	return trainWith(t, rec, frame.Options{Label: label, Task: task}, trees, seed, version)
}

// trainWith is trainModel with the frame read by opts.
func trainWith(t testing.TB, rec arrow.Record, opts frame.Options, trees int, seed uint64, version int64) *scoring.Model {
	t.Helper()
	fr, err := frame.FromRecords(rec.Schema(), []arrow.Record{rec}, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Seed, p.Threads = trees, seed, 2
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, version, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func writeModel(t testing.TB, path string, m *scoring.Model) {
	t.Helper()
	if err := writeFileAtomic(path, m.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// jsonRows encodes the rows of rec as one JSON object each.
func jsonRows(t testing.TB, rec arrow.Record) [][]byte {
	t.Helper()
	lines, err := jsonLines(rec)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// got is one message as the consumer saw it.
type got struct {
	content []byte
	err     error
	meta    map[string]any
}

func (g got) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(g.content))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("output %q: %v", g.content, err)
	}
	return m
}

// stream is a Benthos stream built with NewStreamBuilder: batches sent
// through send come out, processed, in received.
type stream struct {
	send service.MessageBatchHandlerFunc
	mu   sync.Mutex
	out  map[string][]got // by the test_batch metadata of process
	seq  int
	stop func()
}

// startStream runs processors (YAML of the pipeline's processor list) on
// threads pipeline threads.
func startStream(t testing.TB, threads int, processors ...string) *stream {
	t.Helper()
	b := service.NewStreamBuilder()
	s := &stream{out: map[string][]got{}}
	var err error
	if s.send, err = b.AddBatchProducerFunc(); err != nil {
		t.Fatal(err)
	}
	for _, p := range processors {
		if err := b.AddProcessorYAML(p); err != nil {
			t.Fatalf("processor %s: %v", p, err)
		}
	}
	b.SetThreads(threads)
	if err := b.SetLoggerYAML("level: off"); err != nil {
		t.Fatal(err)
	}
	if err := b.AddBatchConsumerFunc(func(ctx context.Context, batch service.MessageBatch) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range batch {
			c, err := m.AsBytes()
			if err != nil {
				return err
			}
			g := got{content: bytes.Clone(c), err: m.GetError(), meta: map[string]any{}}
			_ = m.MetaWalkMut(func(k string, v any) error { g.meta[k] = v; return nil })
			id, _ := m.MetaGet("test_batch")
			s.out[id] = append(s.out[id], g)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Run(context.Background()) }()
	s.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Stop(ctx); err != nil {
			t.Errorf("stopping the stream: %v", err)
		}
		<-done
	}
	t.Cleanup(s.stop)
	return s
}

// process sends one batch of message contents and returns what came out of
// it.
func (s *stream) process(t testing.TB, contents ...[]byte) []got {
	t.Helper()
	s.mu.Lock()
	s.seq++
	id := fmt.Sprint(s.seq)
	s.mu.Unlock()
	batch := make(service.MessageBatch, len(contents))
	for i, c := range contents {
		batch[i] = service.NewMessage(c)
		batch[i].MetaSet("test_batch", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.send(ctx, batch); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.out[id]
	delete(s.out, id)
	if len(out) != len(contents) {
		t.Fatalf("%d messages out of a batch of %d", len(out), len(contents))
	}
	return out
}

// predictions scores rec with m (the reference: scoring.Model.Score).
func predictions(t testing.TB, m *scoring.Model, rec arrow.Record) arrow.Record {
	t.Helper()
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// column returns a record's column by name.
func column(t testing.TB, rec arrow.Record, name string) arrow.Array {
	t.Helper()
	ix := rec.Schema().FieldIndices(name)
	if len(ix) == 0 {
		t.Fatalf("no column %q", name)
	}
	return rec.Column(ix[0])
}

func mustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func arrowMessage(t testing.TB, rec arrow.Record) []byte {
	t.Helper()
	b, err := codec.EncodeArrow(rec, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package benthos

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// TestScoreJSONPool: forestd_score's JSON batches return every buffer of
// their records to the pool, and a batch scored on reused (dirty) buffers
// comes out byte for byte as it did on fresh ones: rows with nulls, then
// rows without, then the first rows again.
func TestScoreJSONPool(t *testing.T) {
	rec, _, path := breastCancer(t, t.TempDir())
	conf, err := scoreSpec().ParseYAML(fmt.Sprintf("model: %q", path), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newScoreProc(conf, service.MockResources())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	rows := jsonRows(t, rec)
	withNulls := make([][]byte, 200)
	for i := range withNulls {
		withNulls[i] = rows[i]
		if i%3 == 0 {
			withNulls[i] = []byte(strings.Replace(string(rows[i]), `"mean_area":`, `"mean_area":null,"was":`, 1))
		}
	}
	score := func(values [][]byte) []string {
		batch := make(service.MessageBatch, len(values))
		for i, v := range values {
			batch[i] = service.NewMessage(v)
		}
		out, err := p.ProcessBatch(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, msg := range out[0] {
			if msg.GetError() != nil {
				t.Fatalf("message not scored: %v", msg.GetError())
			}
			b, err := msg.AsBytes()
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
		if n := p.jsonMem.Stats().Live; n != 0 {
			t.Fatalf("%d bytes of the pool not returned after a batch", n)
		}
		return texts
	}
	first := score(withNulls)
	if !strings.Contains(first[0], `"mean_area":null`) || !strings.Contains(first[0], `"prediction":`) {
		t.Fatalf("scored: %s", first[0])
	}
	score(rows[200:])
	again := score(withNulls)
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("message %d scored on reused buffers:\n%s\nwant\n%s", i, again[i], first[i])
		}
	}
	if p.jsonMem.Stats().Asked == 0 {
		t.Fatal("the JSON batches took no buffer from the pool")
	}
}

package benthos

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// TestBufPool: buffers are 64-byte aligned, of the size asked for and
// zeroed, also when reused after being written; Reallocate keeps the bytes
// (in place within a class, copied beyond it) and zeroes the new ones;
// buffers above the largest class are not counted; every byte handed out
// comes back; and buffers are reused (far fewer made than asked for).
func TestBufPool(t *testing.T) {
	p := &bufPool{}
	for _, size := range []int{1, 63, 64, 65, 1000, 8000, 1 << maxPoolClass, 1<<maxPoolClass + 1} {
		for round := 0; round < 100; round++ {
			b := p.Allocate(size)
			if len(b) != size || uintptr(unsafe.Pointer(&b[0]))%poolAlign != 0 {
				t.Fatalf("size %d: len %d at %p", size, len(b), &b[0])
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("size %d, round %d: byte %d is %d, want 0", size, round, i, c)
				}
			}
			for i := range b {
				b[i] = byte(i) | 1
			}
			p.Free(b)
		}
	}
	if n := p.fresh.Load(); n > 7*50 { // 7 pooled sizes × 100 rounds without reuse
		t.Fatalf("%d buffers made for 700 allocations of 7 sizes", n)
	}
	b := p.Allocate(100)
	copy(b, "forestd")
	b = p.Reallocate(120, b) // within the 128-byte class
	if string(b[:7]) != "forestd" || len(b) != 120 || !bytes.Equal(b[100:], make([]byte, 20)) {
		t.Fatalf("in place: %q", b)
	}
	b = p.Reallocate(1000, b) // another class
	if string(b[:7]) != "forestd" || len(b) != 1000 || !bytes.Equal(b[120:], make([]byte, 880)) {
		t.Fatalf("copied: %q", b[:10])
	}
	p.Free(b)
	if n := p.live.Load(); n != 0 {
		t.Fatalf("%d bytes not returned", n)
	}
}

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
		if n := p.jsonMem.live.Load(); n != 0 {
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
	if p.jsonMem.fresh.Load() == 0 {
		t.Fatal("the JSON batches took no buffer from the pool")
	}
}

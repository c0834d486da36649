package benthos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// TestDriftCloseStops: closing forestd_drift stops the drift test running
// on a batch (drift.Options.Context): Close waits for it, the batch's
// messages say it was cancelled, and a later batch is errored, not tested
// against a released reference. The window (2 × 40,000 rows, x1 shifted a
// little, so that the permutation tests run long) takes seconds to test
// (9 s on a loaded machine), a stopped test a fraction of one; without the
// context, the batch comes back tested, not cancelled.
func TestDriftCloseStops(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const n = 40000
	ref := writeReference(t, r, n)
	conf, err := driftSpec().ParseYAML(fmt.Sprintf("reference: %q\nwindow: %d\nthreads: 1", ref, n), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newDriftProc(conf, service.MockResources())
	if err != nil {
		t.Fatal(err)
	}
	rec := gaussRecord(r, n, 0.02)
	msg := arrowMessage(t, rec)
	rec.Release()
	batch := service.MessageBatch{service.NewMessage(msg)}
	returned := make(chan time.Time, 1)
	go func() {
		_, _ = p.ProcessBatch(context.Background(), batch)
		returned <- time.Now()
	}()
	deadline := time.Now().Add(time.Minute)
	for { // poll until the batch's window is under test
		p.mu.Lock()
		tested := p.tested
		p.mu.Unlock()
		if tested == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the window was never tested")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v (the running test did not stop)", err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Close returned while the test was still running")
	}
	if err := batch[0].GetError(); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("the batch under test when the processor closed: error %v, want it cancelled", err)
	}
	later := service.MessageBatch{service.NewMessage(msg)}
	if _, err := p.ProcessBatch(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	if err := later[0].GetError(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a batch after Close: error %v, want the processor closed", err)
	}
}

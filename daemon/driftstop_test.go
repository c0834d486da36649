package daemon

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/operators"
)

// doneContext is a context that is already cancelled and counts how often
// its Err is asked.
type doneContext struct {
	context.Context
	asked atomic.Int64
}

func (c *doneContext) Err() error {
	c.asked.Add(1)
	return context.Canceled
}

// TestDriftLoopStops: the drift stage passes its context to the test
// (drift.Options.Context), so a stop cuts a test short instead of waiting
// for it; a test so stopped reports nothing and is not counted.
func TestDriftLoopStops(t *testing.T) {
	m := driftModel(t)
	cur := operators.NewCurrent()
	if err := cur.Offer(m); err != nil {
		t.Fatal(err)
	}
	dm := newDriftMetrics(prometheus.NewRegistry())
	w := &driftWindow{rows: 1000, now: time.Now}
	w.add(m, []arrow.Record{trafficBatch(t, 1000, 7, nil)}, "f/0/1")
	l := &driftLoop{Window: w, Current: cur, MinRows: 10, EveryRows: 500, Options: drift.Options{Seed: 1},
		Metrics: dm, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Retry: fastRetry}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	ctx := &doneContext{Context: context.Background()}
	if rep := l.testOnce(ctx); rep != nil {
		t.Fatalf("a stopped test reported %+v", rep)
	}
	if ctx.asked.Load() < 2 {
		t.Errorf("the test never asked the stage's context (%d asks, the stage's own only)", ctx.asked.Load())
	}
	if n := testutil.ToFloat64(dm.Tests); n != 0 {
		t.Errorf("%v tests counted, want none", n)
	}
}

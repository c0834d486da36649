package drift

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
)

// stopAt is a context whose Err turns to context.Canceled at its n-th
// call (n < 0: never) and counts every call and those after the turn.
type stopAt struct {
	context.Context
	n            int64
	calls, after atomic.Int64
}

func (c *stopAt) Err() error {
	k := c.calls.Add(1)
	if c.n < 0 || k < c.n {
		return nil
	}
	if k > c.n {
		c.after.Add(1)
	}
	return context.Canceled
}

// TestContextStops: Test stops promptly on a large input (2 × 10,000 rows
// of 10 features) once its context is done — cancelled before the start,
// between features or inside the permutation loops of a feature or of
// the joint test (the context turns at its first, middle and last check
// of a whole run) — returning an error that wraps context.Canceled after
// at most a few more checks (one per worker, then the error path).
func TestContextStops(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ref := []arrow.Record{gauss(r, 10_000, 10, 0, 0)}
	cur := []arrow.Record{gauss(r, 10_000, 10, 0, 0.5)}
	run := func(ctx context.Context) (Report, error) {
		return Test(ref, cur, Options{Seed: 1, Threads: 2, Perms: 100, MaxRows: 2000, Context: ctx})
	}
	whole := &stopAt{Context: context.Background(), n: -1}
	if _, err := run(whole); err != nil {
		t.Fatal(err)
	}
	total := whole.calls.Load()
	t.Logf("%d checks in a whole run", total)
	if total < 20 {
		t.Fatalf("only %d checks of the context in a whole run", total)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := run(cancelled); !errors.Is(err, context.Canceled) || len(rep.Features) != 0 {
		t.Errorf("cancelled before the start: %v after %d features, want context.Canceled before any", err, len(rep.Features))
	}
	for _, n := range []int64{1, total / 2, total - 1} {
		ctx := &stopAt{Context: context.Background(), n: n}
		rep, err := run(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stopped at check %d of %d: %v, want context.Canceled", n, total, err)
			continue
		}
		if a := ctx.after.Load(); a > 6 {
			t.Errorf("stopped at check %d of %d: %d more checks after it (%d features tested), want ≤ 6", n, total, a, len(rep.Features))
		}
	}
}

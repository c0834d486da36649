package operators

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/forestd/forestd/scoring"
)

// inputErr is an input error (scoring.ErrInput: one errors.Is check covers
// scoring, training and analysis).
func inputErr(format string, a ...any) error {
	return scoring.InputError(fmt.Errorf(format, a...))
}

// Current holds the model that scores now, for a streaming scorer that
// swaps models while it runs (the daemon, a Redpanda Connect processor);
// scoring itself needs no holder (scoring.Model.Score). Swapping is atomic
// (an atomic pointer): a message is scored entirely by the model loaded
// when its scoring began, and versions only move forward (ARCHITECTURE.md,
// the daemon's promises: hot swap).
type Current struct {
	p     atomic.Pointer[scoring.Model]
	first atomic.Pointer[scoring.Model]
	mu    sync.Mutex // serialises Offer
	ready chan struct{}
	once  sync.Once
}

// NewCurrent returns an empty holder.
func NewCurrent() *Current { return &Current{ready: make(chan struct{})} }

// Load returns the current model, nil before the first.
func (c *Current) Load() *scoring.Model { return c.p.Load() }

// Offer installs m if it is newer than the current model
// (scoring.Model.Newer) and reports whether it did.
func (c *Current) Offer(m *scoring.Model) bool {
	if m == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !m.Newer(c.p.Load()) {
		return false
	}
	c.p.Store(m)
	c.once.Do(func() {
		c.first.Store(m)
		close(c.ready)
	})
	return true
}

// First waits for the first model ever installed and returns it (not the
// current one): work that was waiting for a model before any existed is
// scored by the first, so that it never gets a newer model than work that
// arrived after it (see the daemon's model pinning).
func (c *Current) First(ctx context.Context) (*scoring.Model, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ready:
		return c.first.Load(), nil
	}
}

// Wait returns the current model, waiting for the first one until ctx is
// done.
func (c *Current) Wait(ctx context.Context) (*scoring.Model, error) {
	if m := c.p.Load(); m != nil {
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ready:
		return c.p.Load(), nil
	}
}

package operators

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
//
// A model that reads other source columns than the live one is refused
// (ErrColumnsChanged) unless AllowColumnChange is set: a model published
// for other data would otherwise take over and send every message to the
// dead letters.
type Current struct {
	// AllowColumnChange lets a model that reads other source columns than
	// the live one replace it. Set it before the first Offer.
	AllowColumnChange bool

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

// Errors of Offer: why a model was not installed.
var (
	// ErrLive: the model is the live one already.
	ErrLive = errors.New("the model is live already")
	// ErrNotNewer: the model orders before the live one (scoring.Model.Newer).
	ErrNotNewer = errors.New("the model is not newer than the live one")
	// ErrColumnsChanged: the model reads other source columns than the live
	// one, and AllowColumnChange is not set.
	ErrColumnsChanged = errors.New("the model reads other columns than the live one")
)

// Offer installs m if it is newer than the current model
// (scoring.Model.Newer) and reads the same source columns (unless
// AllowColumnChange); otherwise it returns why not (ErrLive, ErrNotNewer,
// ErrColumnsChanged, wrapped with the details).
func (c *Current) Offer(m *scoring.Model) error {
	if m == nil {
		return errors.New("operators: no model")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.p.Load()
	switch {
	case cur != nil && m.ID() == cur.ID():
		return ErrLive
	case !m.Newer(cur):
		return fmt.Errorf("%w: version %d (%.12s) against %d (%.12s)", ErrNotNewer, m.Version(), m.ID(), cur.Version(), cur.ID())
	case cur != nil && !c.AllowColumnChange && !slices.Equal(m.Columns(), cur.Columns()):
		return fmt.Errorf("%w: version %d reads %s, the live version %d reads %s", ErrColumnsChanged,
			m.Version(), brief(m.Columns()), cur.Version(), brief(cur.Columns()))
	}
	c.p.Store(m)
	c.once.Do(func() {
		c.first.Store(m)
		close(c.ready)
	})
	return nil
}

// brief lists up to five column names.
func brief(cols []string) string {
	if len(cols) <= 5 {
		return "[" + strings.Join(cols, " ") + "]"
	}
	return fmt.Sprintf("[%s … %d columns]", strings.Join(cols[:5], " "), len(cols))
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

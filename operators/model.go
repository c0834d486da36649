package operators

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
)

// ErrInput marks input that does not fit an operator: a schema without the
// model's features, a wrong-typed or categorical column, a label of the wrong
// kind. Retrying cannot help; the runtime quarantines such messages.
var ErrInput = errors.New("input does not fit")

func inputErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, a...))
}

// Model is a decoded, compiled forest with its identity, ready to score.
// It is immutable once built and shared between goroutines.
type Model struct {
	Forest   *forest.Forest
	Compiled *forest.Compiled
	// Multi, for a model with several outputs (forest.IsMultiOutput: a
	// multi-output regression forest, whose Compiled it is, or a distance
	// random forest, Compiled nil), predicts them: score_multi.go.
	Multi forest.MultiOutput
	Meta  model.Meta
	// Bytes is the encoded model (nil when unknown).
	Bytes []byte
}

// NewModel compiles f for scoring.
func NewModel(f *forest.Forest, meta model.Meta, data []byte) (*Model, error) {
	if f.Kind == forest.KindDRF {
		return newDRFModel(f, meta, data)
	}
	c, err := forest.Compile(f)
	if err != nil {
		return nil, fmt.Errorf("operators: compiling model %s: %w", meta.ID, err)
	}
	m := &Model{Forest: f, Compiled: c, Meta: meta, Bytes: data}
	if forest.IsMultiOutput(f) {
		m.Multi = c
	}
	return m, nil
}

// DecodeModel decodes (with all of model.Decode's checks) and compiles an
// encoded model.
func DecodeModel(data []byte) (*Model, error) {
	f, meta, err := model.DecodeBytes(data)
	if err != nil {
		return nil, err
	}
	return NewModel(f, meta, data)
}

// EncodeModel encodes f as model version `version` and compiles it.
// Encoding is deterministic, so the same forest and version give the same
// bytes and model ID.
func EncodeModel(f *forest.Forest, version int64, createdBy string) (*Model, error) {
	data, meta, err := model.EncodeBytes(f, model.Meta{Version: version, CreatedBy: createdBy})
	if err != nil {
		return nil, err
	}
	return NewModel(f, meta, data)
}

// Newer reports whether m orders after o: a higher version, or the same
// version and a larger model ID (content hash), so that replicas that
// trained concurrently converge on one model. Any model is newer than nil.
func (m *Model) Newer(o *Model) bool {
	if o == nil {
		return true
	}
	if m.Meta.Version != o.Meta.Version {
		return m.Meta.Version > o.Meta.Version
	}
	return m.Meta.ID > o.Meta.ID
}

// Current holds the model that scores now. Swapping is atomic (an atomic
// pointer): a message is scored entirely by the model loaded when its
// scoring began, and versions only move forward (DESIGN.md §5, hot swap).
type Current struct {
	p     atomic.Pointer[Model]
	first atomic.Pointer[Model]
	mu    sync.Mutex // serialises Offer
	ready chan struct{}
	once  sync.Once
}

// NewCurrent returns an empty holder.
func NewCurrent() *Current { return &Current{ready: make(chan struct{})} }

// Load returns the current model, nil before the first.
func (c *Current) Load() *Model { return c.p.Load() }

// Offer installs m if it is newer than the current model (Model.Newer) and
// reports whether it did.
func (c *Current) Offer(m *Model) bool {
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
// arrived after it (see pipeline's model pinning).
func (c *Current) First(ctx context.Context) (*Model, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ready:
		return c.first.Load(), nil
	}
}

// Wait returns the current model, waiting for the first one until ctx is
// done.
func (c *Current) Wait(ctx context.Context) (*Model, error) {
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

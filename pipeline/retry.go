package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential backoff with jitter: attempt k (from 0)
// waits Initial·Multiplier^k, capped at Max, scaled by a uniform factor in
// [1−Jitter, 1].
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
	// MaxAttempts bounds the attempts of Do; 0 means until ctx is done.
	MaxAttempts int
}

// DefaultBackoff starts at 50 ms and doubles up to 5 s.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 50 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.2}
}

// Validate checks the backoff and fills zero fields with the defaults.
func (b *Backoff) Validate() error {
	d := DefaultBackoff()
	if b.Initial == 0 {
		b.Initial = d.Initial
	}
	if b.Max == 0 {
		b.Max = d.Max
	}
	if b.Multiplier == 0 {
		b.Multiplier = d.Multiplier
	}
	switch {
	case b.Initial < 0 || b.Max < b.Initial:
		return fmt.Errorf("pipeline: backoff initial %v, max %v: need 0 < initial ≤ max", b.Initial, b.Max)
	case b.Multiplier < 1:
		return fmt.Errorf("pipeline: backoff multiplier %v < 1", b.Multiplier)
	case b.Jitter < 0 || b.Jitter > 1:
		return fmt.Errorf("pipeline: backoff jitter %v outside [0, 1]", b.Jitter)
	case b.MaxAttempts < 0:
		return fmt.Errorf("pipeline: backoff max attempts %d < 0", b.MaxAttempts)
	}
	return nil
}

// delay is the wait before retry number attempt (0 = the first retry); rng
// may be nil for no jitter.
func (b Backoff) delay(attempt int, rng *rand.Rand) time.Duration {
	d := float64(b.Initial)
	for i := 0; i < attempt && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	d = min(d, float64(b.Max))
	if rng != nil && b.Jitter > 0 {
		d *= 1 - b.Jitter*rng.Float64()
	}
	return time.Duration(d)
}

// stopped is the error of a retry loop whose context ended after fn
// failed with err: both wrapped, on one line.
func stopped(ctx context.Context, err error) error {
	return fmt.Errorf("%w; last attempt: %w", ctx.Err(), err)
}

// Do calls fn until it succeeds, returns an error that retryable rejects
// (nil retryable retries everything), MaxAttempts is reached or ctx is done.
// onRetry, when set, is called with each error about to be retried. It
// returns fn's last error, or ctx's error with it, both wrapped, on one
// line ("context canceled; last attempt: …").
func (b Backoff) Do(ctx context.Context, fn func() error, retryable func(error) bool, onRetry func(attempt int, err error)) error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if retryable != nil && !retryable(err) {
			return err
		}
		if b.MaxAttempts > 0 && attempt+1 >= b.MaxAttempts {
			return err
		}
		if ctx.Err() != nil {
			return stopped(ctx, err)
		}
		if onRetry != nil {
			onRetry(attempt, err)
		}
		t := time.NewTimer(b.delay(attempt, rng))
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(ctx, err)
		case <-t.C:
		}
	}
}

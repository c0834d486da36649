// Package status is the daemon's live status page: a Recorder that the
// daemon feeds with what happens — models going live and being trained
// (with their OOB estimates, training rows and times), dead letters, the
// latest dependence analysis — and that samples the daemon's Prometheus
// registry on a ticker into a bounded ring of traffic samples (rows in and
// out per second, batch and end-to-end latency quantiles, consumer lag per
// partition); and an http.Handler serving the page at /, the same facts as
// JSON at /api/status, and the page's charts as SVG at
// /status/chart/NAME.svg (drawn by package report, the generators
// `forestd report` uses).
//
// /api/status without a query is the whole document. The page reads it
// once, then polls with the document's instance and the revisions of the
// parts it holds (StatusSince, ParseHeld): the parts that did not change
// are left out and named in "unchanged", and only the traffic samples
// after the held one come, so the per-second poll is a few hundred bytes
// whatever the size of the model (every class name, every feature's
// importances) and of the analysis.
//
// Memory is bounded: the model history, the traffic samples and the list
// of recent dead letters are rings of fixed size (Options), and only the
// latest analysis is kept. The page is read-only (GET only), its assets
// are embedded in the binary and it loads nothing from the network; its
// script puts data into the page with textContent only, and the charts are
// SVG built with html/template (every data string escaped) and parsed as
// image/svg+xml. A Content-Security-Policy forbids inline scripts and
// other origins besides.
package status

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/internal/report"
	"github.com/forestd/forestd/scoring"
)

// Options configure a Recorder. Zero values take the defaults noted.
type Options struct {
	// Gatherer is sampled for the traffic charts (the daemon's registry,
	// with the metrics of pipeline.Metrics); nil: no traffic.
	Gatherer prometheus.Gatherer
	// Interval between traffic samples (default 1 s); Window is how far
	// back the traffic ring reaches (default 10 min).
	Interval, Window time.Duration
	// History is the number of model versions kept (default 100);
	// DeadLetters the number of recent dead letters kept (default 20).
	History, DeadLetters int
	// Ready reports whether the daemon is ready (its /readyz); nil: always.
	Ready func() error
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (o *Options) resolve() error {
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Window == 0 {
		o.Window = 10 * time.Minute
	}
	if o.History == 0 {
		o.History = 100
	}
	if o.DeadLetters == 0 {
		o.DeadLetters = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.Interval < 10*time.Millisecond:
		return fmt.Errorf("status: sample interval %v < 10ms", o.Interval)
	case o.Window < o.Interval:
		return fmt.Errorf("status: window %v shorter than the sample interval %v", o.Window, o.Interval)
	case o.Window/o.Interval > 100000:
		return fmt.Errorf("status: window %v holds more than 100000 samples of %v", o.Window, o.Interval)
	case o.History < 1 || o.DeadLetters < 1:
		return errors.New("status: history and dead-letter counts must be positive")
	}
	return nil
}

// Recorder collects what the status page shows. Its methods are safe for
// concurrent use; the daemon calls them from its stages and loops.
type Recorder struct {
	opts     Options
	started  time.Time
	instance string

	mu       sync.Mutex
	live     *liveModel
	history  ring[ModelVersion]
	trained  map[string]training // by model ID, until the model goes live
	traffic  ring[Sample]
	prev     *counters // the previous registry reading
	samples  int64
	dlTotal  int64
	dlStage  map[string]int64
	dlKind   map[string]int64
	dlLast   ring[DeadLetter]
	analysis *Analysis
	drift    *driftState // drift.go
	rev      Revisions
	cache    map[string]cached
	zpool    sync.Pool // *gzip.Writer, reused across responses
}

type liveModel struct {
	m     *scoring.Model
	facts report.ModelFacts
	ver   ModelVersion
}

type training struct {
	at      time.Time
	rows    int
	seconds float64
}

type cached struct {
	rev string
	svg []byte
	gz  []byte // svg gzipped, once a client asked for it
}

// New returns a Recorder; Run starts its traffic sampling.
func New(o Options) (*Recorder, error) {
	if err := o.resolve(); err != nil {
		return nil, err
	}
	n := int(o.Window / o.Interval)
	return &Recorder{opts: o, started: o.Now(), instance: rand.Text(), history: newRing[ModelVersion](o.History), trained: map[string]training{},
		traffic: newRing[Sample](n), dlStage: map[string]int64{}, dlKind: map[string]int64{}, dlLast: newRing[DeadLetter](o.DeadLetters),
		cache: map[string]cached{}}, nil
}

// ModelTrained records that this daemon trained m on rows rows in seconds
// (call it before the model is offered: ModelLive then shows when and on
// how many rows the live model was trained). A model that never goes live
// is forgotten after History further trainings.
func (r *Recorder) ModelTrained(m *scoring.Model, rows int, seconds float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.trained) >= r.opts.History {
		clear(r.trained)
	}
	r.trained[m.ID()] = training{at: r.opts.Now(), rows: rows, seconds: seconds}
}

// ModelLive records that m went live (a hot swap); origin says where it
// came from ("trained", "model topic", "seed file …").
func (r *Recorder) ModelLive(m *scoring.Model, origin string) {
	facts, err := report.DescribeModel(m, projection.Topology{})
	if err != nil { // a layout that does not fit: show the model without it
		facts.Layout = nil
	}
	now := r.opts.Now()
	v := ModelVersion{Version: m.Version(), ID: m.ID(), Kind: string(m.Kind()), Trees: m.NumTrees(),
		Features: len(m.Forest().Features), Origin: origin, LiveAt: now, OOBError: NaN(), OOBR2: NaN()}
	if o := m.Forest().OOB; o != nil {
		v.OOBError = Float(o.Error)
		if facts.Task == "regression" {
			v.OOBR2 = Float(o.R2)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.trained[m.ID()]; ok {
		at, rows, secs := t.at, t.rows, Float(t.seconds)
		v.TrainedAt, v.TrainingRows, v.TrainingSeconds = &at, &rows, &secs
		delete(r.trained, m.ID())
	}
	r.live = &liveModel{m: m, facts: facts, ver: v}
	r.history.push(v)
	r.rev.Model++
	r.rev.History++
}

// DeadLetter records a quarantined message: its source coordinates, the
// stage that refused it, the kind of its reason (a short, bounded label the
// page counts by) and the reason itself.
func (r *Recorder) DeadLetter(topic string, partition int32, offset int64, stage, kind, reason string) {
	if len(reason) > 500 {
		reason = reason[:500]
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dlTotal++
	count(r.dlStage, stage)
	count(r.dlKind, kind)
	r.dlLast.push(DeadLetter{At: now, Topic: topic, Partition: partition, Offset: offset,
		Source: fmt.Sprintf("%s/%d/%d", topic, partition, offset), Stage: stage, Kind: kind, Reason: reason})
	r.rev.DeadLetters++
}

// Analysis records the latest dependence analysis (seq numbers the
// daemon's analyses).
func (r *Recorder) Analysis(seq int64, d *report.Dependence) {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.analysis = &Analysis{Seq: seq, At: now, Dependence: d}
	r.rev.Analysis++
}

// Float is a number that marshals NaN and infinities as JSON null.
type Float = report.Number

// NaN is the missing Float.
func NaN() Float { return Float(math.NaN()) }

// ring is a bounded FIFO: pushing onto a full ring drops the oldest.
type ring[T any] struct {
	buf  []T
	next int
	full bool
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) push(v T) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// items returns the elements oldest first (a copy).
func (r *ring[T]) items() []T {
	if !r.full {
		return append([]T(nil), r.buf[:r.next]...)
	}
	return append(append([]T(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// last returns the newest n elements (at most all), oldest first (a copy).
func (r *ring[T]) last(n int64) []T {
	size := r.next
	if r.full {
		size = len(r.buf)
	}
	if n <= 0 {
		return nil
	}
	if n >= int64(size) {
		return r.items()
	}
	out := make([]T, 0, n)
	for i := r.next - int(n); i < r.next; i++ {
		out = append(out, r.buf[(i+len(r.buf))%len(r.buf)])
	}
	return out
}

// count adds one to m[k], keeping m to 64 keys (the rest count as other).
func count(m map[string]int64, k string) {
	if _, ok := m[k]; ok || len(m) < 64 {
		m[k]++
	} else {
		m["other"]++
	}
}

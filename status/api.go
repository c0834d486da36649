package status

import (
	"slices"
	"time"

	"github.com/forestd/forestd/report"
)

// Status is the JSON document of /api/status: everything the page shows.
// Numbers that are undefined (no observation yet, no OOB estimate) are
// null.
type Status struct {
	// Now is when the document was made; Started when the recorder was
	// created (the daemon's start).
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	// Ready is the daemon's readiness (/readyz); NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// Revisions count the changes of each part (the page refetches a
	// chart only when its part changed).
	Revisions Revisions `json:"revisions"`
	// Model is the live model (null before the first).
	Model *LiveModel `json:"model"`
	// History lists every model version this daemon has seen go live,
	// oldest first (at most Options.History).
	History []ModelVersion `json:"history"`
	Traffic Traffic        `json:"traffic"`
	// DeadLetters counts quarantined messages and lists the latest.
	DeadLetters DeadLetters `json:"dead_letters"`
	// Analysis is the latest dependence analysis (null before the first,
	// and without the analyze or select stage).
	Analysis *Analysis `json:"analysis"`
}

// Revisions count the changes of each part of the status.
type Revisions struct {
	Model       int64 `json:"model"`
	History     int64 `json:"history"`
	Traffic     int64 `json:"traffic"`
	DeadLetters int64 `json:"dead_letters"`
	Analysis    int64 `json:"analysis"`
}

// LiveModel is the live model's facts (report.ModelFacts: version, id,
// kind, trees, features, OOB estimates, importances, layout, parameters)
// and when and how it went live.
type LiveModel struct {
	report.ModelFacts
	// Origin is where the model came from: "trained" (by this daemon),
	// "model topic" (another replica), "seed file PATH".
	Origin string `json:"origin"`
	// LiveAt is when this daemon swapped it in.
	LiveAt time.Time `json:"live_at"`
	// TrainedAt, TrainingRows and TrainingSeconds: when this daemon
	// trained it, on how many rows of its window, in how long; null for a
	// model this daemon did not train (the model file does not record
	// them, to keep model bytes deterministic: see OOB.rows for the rows
	// with an out-of-bag estimate).
	TrainedAt       *time.Time `json:"trained_at"`
	TrainingRows    *int       `json:"training_rows"`
	TrainingSeconds *Float     `json:"training_seconds"`
}

// ModelVersion is one entry of the model history.
type ModelVersion struct {
	Version  int64     `json:"version"`
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Trees    int       `json:"trees"`
	Features int       `json:"features"`
	Origin   string    `json:"origin"`
	LiveAt   time.Time `json:"live_at"`
	// OOBError is the OOB misclassification rate (classification) or mean
	// squared error (regression); OOBR2 the regression R².
	OOBError Float `json:"oob_error"`
	OOBR2    Float `json:"oob_r2"`
	// TrainedAt, TrainingRows and TrainingSeconds as in LiveModel: null
	// for a version this daemon did not train.
	TrainedAt       *time.Time `json:"trained_at"`
	TrainingRows    *int       `json:"training_rows"`
	TrainingSeconds *Float     `json:"training_seconds"`
}

// Traffic is the ring of traffic samples, oldest first.
type Traffic struct {
	IntervalSeconds float64  `json:"interval_seconds"`
	Samples         []Sample `json:"samples"`
	// Partitions lists the "topic/partition" keys of the lag series.
	Partitions []string `json:"partitions"`
}

// Sample is the traffic between two readings of the daemon's metrics,
// taken at At: rows decoded from source messages and rows delivered (all
// output streams) per second; the median and 99th percentile of the time a
// stage spent on one batch (every stage but decoding) and of the end-to-end
// latency (source message timestamp to the acknowledgement of its
// outputs), in seconds, estimated from the histogram buckets (null when
// nothing was observed); and the commit lag per partition (high watermark
// minus committed offset) at At.
type Sample struct {
	At               time.Time          `json:"at"`
	RowsInPerSecond  Float              `json:"rows_in_per_second"`
	RowsOutPerSecond Float              `json:"rows_out_per_second"`
	BatchP50         Float              `json:"batch_p50_seconds"`
	BatchP99         Float              `json:"batch_p99_seconds"`
	EndToEndP50      Float              `json:"end_to_end_p50_seconds"`
	EndToEndP99      Float              `json:"end_to_end_p99_seconds"`
	Lag              map[string]float64 `json:"lag"`
}

// DeadLetters counts quarantined messages by the kind of their reason
// (undecodable, missing column, wrong column type, internal error,
// undeliverable, other input error) and by the stage that refused them
// (decode: not Arrow IPC or JSON; score, train, analyze, select: input that
// does not fit; sink: undeliverable output; route: a topic without a
// route), and lists the latest, newest first, with their full reasons.
type DeadLetters struct {
	Total    int64            `json:"total"`
	ByReason map[string]int64 `json:"by_reason"`
	ByStage  map[string]int64 `json:"by_stage"`
	Last     []DeadLetter     `json:"last"`
}

// DeadLetter is one quarantined message.
type DeadLetter struct {
	At        time.Time `json:"at"`
	Source    string    `json:"source"` // topic/partition/offset
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Stage     string    `json:"stage"`
	Kind      string    `json:"kind"`
	Reason    string    `json:"reason"`
}

// Analysis is the latest dependence analysis.
type Analysis struct {
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	*report.Dependence
}

// Status returns the current status document.
func (r *Recorder) Status() Status { return r.status(true) }

// status is Status; without ready it does not ask Options.Ready (the
// charts draw no readiness, and the daemon's check takes its locks).
func (r *Recorder) status(ready bool) Status {
	var notReady error
	if ready && r.opts.Ready != nil {
		notReady = r.opts.Ready()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Status{Now: r.opts.Now(), Started: r.started, Ready: notReady == nil, Revisions: r.rev, History: r.history.items(),
		Traffic: Traffic{IntervalSeconds: r.opts.Interval.Seconds(), Samples: r.traffic.items()},
		DeadLetters: DeadLetters{Total: r.dlTotal, ByStage: make(map[string]int64, len(r.dlStage)),
			ByReason: make(map[string]int64, len(r.dlKind))}, Analysis: r.analysis}
	if notReady != nil {
		s.NotReady = notReady.Error()
	}
	s.Traffic.Partitions = lagKeys(s.Traffic.Samples)
	if s.Traffic.Samples == nil {
		s.Traffic.Samples = []Sample{}
	}
	if s.History == nil {
		s.History = []ModelVersion{}
	}
	for k, v := range r.dlKind {
		s.DeadLetters.ByReason[k] = v
	}
	for k, v := range r.dlStage {
		s.DeadLetters.ByStage[k] = v
	}
	last := r.dlLast.items()
	slices.Reverse(last) // newest first
	s.DeadLetters.Last = last
	if last == nil {
		s.DeadLetters.Last = []DeadLetter{}
	}
	if l := r.live; l != nil {
		s.Model = &LiveModel{ModelFacts: l.facts, Origin: l.ver.Origin, LiveAt: l.ver.LiveAt,
			TrainedAt: l.ver.TrainedAt, TrainingRows: l.ver.TrainingRows, TrainingSeconds: l.ver.TrainingSeconds}
	}
	return s
}

package status

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/forestd/forestd/internal/report"
)

// Status is the JSON document of /api/status: everything the page shows.
// Numbers that are undefined (no observation yet, no OOB estimate) are
// null.
//
// The whole document is what Status returns and /api/status serves
// without query parameters. A client that holds parts from an earlier
// document of the same Instance asks for the rest only (StatusSince,
// Held): the parts it holds at their current revision are then left out
// of the JSON and named in Unchanged, and Traffic holds only the samples
// after the client's traffic revision (Traffic.Since).
type Status struct {
	// Now is when the document was made; Started when the recorder was
	// created (the daemon's start).
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	// Instance names the recorder (a random text drawn at its creation):
	// revisions count changes within one instance, so a client sends it
	// back with the revisions it holds, and a restarted daemon (or another
	// replica behind the same address) answers with the whole document.
	Instance string `json:"instance"`
	// Ready is the daemon's readiness (/readyz); NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// Revisions count the changes of each part (the page refetches a
	// chart only when its part changed).
	Revisions Revisions `json:"revisions"`
	// Unchanged names the parts (model, history, dead_letters, analysis, drift)
	// left out of this document because the client holds them at their
	// current revision (see Held); absent from the whole document. An
	// omitted part is absent from the JSON, never null (null is "no model"
	// and "no analysis").
	Unchanged []string `json:"unchanged,omitempty"`
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
	// Drift is the drift stage's tests (null without the stage, and
	// before its first test; drift.go).
	Drift *Drift `json:"drift"`
}

// Revisions count the changes of each part of the status.
type Revisions struct {
	Model       int64 `json:"model"`
	History     int64 `json:"history"`
	Traffic     int64 `json:"traffic"`
	DeadLetters int64 `json:"dead_letters"`
	Analysis    int64 `json:"analysis"`
	Drift       int64 `json:"drift"`
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
	IntervalSeconds float64 `json:"interval_seconds"`
	// Since, when set, is the traffic revision the client held (Held):
	// Samples are then only those recorded after it that the ring still
	// holds (the revision counts samples, so revisions.traffic − since of
	// them while that is no more than the ring's size). Absent from the
	// whole document, whose Samples are the whole ring.
	Since   *int64   `json:"since,omitempty"`
	Samples []Sample `json:"samples"`
	// Partitions lists the "topic/partition" keys of the lag series (of
	// the samples in the document).
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

// Status returns the current status document, whole.
func (r *Recorder) Status() Status { return r.status(true, Held{}) }

// StatusSince returns the status document for a client that holds h: the
// parts h holds at their current revision are left out (named in
// Unchanged) and the traffic samples are those after h's traffic
// revision. When h is of another instance (a restarted daemon, another
// replica) or holds nothing, the document is whole.
func (r *Recorder) StatusSince(h Held) Status { return r.status(true, h) }

// status is Status, less what h holds; without ready it does not ask
// Options.Ready (the charts draw no readiness, and the daemon's check
// takes its locks).
func (r *Recorder) status(ready bool, h Held) Status {
	var notReady error
	if ready && r.opts.Ready != nil {
		notReady = r.opts.Ready()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.Instance != r.instance {
		h = Held{}
	}
	s := Status{Now: r.opts.Now(), Started: r.started, Instance: r.instance, Ready: notReady == nil, Revisions: r.rev,
		Traffic: Traffic{IntervalSeconds: r.opts.Interval.Seconds()}}
	if notReady != nil {
		s.NotReady = notReady.Error()
	}
	for _, p := range []string{PartModel, PartHistory, PartDeadLetters, PartAnalysis, PartDrift} {
		if rev, ok := h.Revisions[p]; ok && rev == r.rev.part(p) {
			s.Unchanged = append(s.Unchanged, p)
		}
	}
	if since, ok := h.Revisions[PartTraffic]; ok && since <= r.rev.Traffic {
		s.Traffic.Since = &since
		s.Traffic.Samples = r.traffic.last(r.rev.Traffic - since)
	} else {
		s.Traffic.Samples = r.traffic.items()
	}
	s.Traffic.Partitions = lagKeys(s.Traffic.Samples)
	if s.Traffic.Samples == nil {
		s.Traffic.Samples = []Sample{}
	}
	if !s.unchanged(PartHistory) {
		s.History = r.history.items()
		if s.History == nil {
			s.History = []ModelVersion{}
		}
	}
	if !s.unchanged(PartDeadLetters) {
		s.DeadLetters = DeadLetters{Total: r.dlTotal, ByStage: make(map[string]int64, len(r.dlStage)),
			ByReason: make(map[string]int64, len(r.dlKind))}
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
	}
	if l := r.live; l != nil && !s.unchanged(PartModel) {
		s.Model = &LiveModel{ModelFacts: l.facts, Origin: l.ver.Origin, LiveAt: l.ver.LiveAt,
			TrainedAt: l.ver.TrainedAt, TrainingRows: l.ver.TrainingRows, TrainingSeconds: l.ver.TrainingSeconds}
	}
	if !s.unchanged(PartAnalysis) {
		s.Analysis = r.analysis
	}
	if !s.unchanged(PartDrift) {
		s.Drift = r.drift.status()
	}
	return s
}

// unchanged reports whether part is left out of s.
func (s *Status) unchanged(part string) bool { return slices.Contains(s.Unchanged, part) }

// MarshalJSON writes s with the parts named in Unchanged left out (absent,
// not null); without Unchanged, every field as its struct tags say.
func (s Status) MarshalJSON() ([]byte, error) {
	type whole Status // the fields, without this method
	if len(s.Unchanged) == 0 {
		return json.Marshal(whole(s))
	}
	// part holds a part, or nothing when it is left out: a nil interface
	// is omitted, a nil pointer in one is null.
	part := func(name string, v any) any {
		if s.unchanged(name) {
			return nil
		}
		return v
	}
	return json.Marshal(struct {
		Now         time.Time `json:"now"`
		Started     time.Time `json:"started"`
		Instance    string    `json:"instance"`
		Ready       bool      `json:"ready"`
		NotReady    string    `json:"not_ready,omitempty"`
		Revisions   Revisions `json:"revisions"`
		Unchanged   []string  `json:"unchanged"`
		Model       any       `json:"model,omitempty"`
		History     any       `json:"history,omitempty"`
		Traffic     Traffic   `json:"traffic"`
		DeadLetters any       `json:"dead_letters,omitempty"`
		Analysis    any       `json:"analysis,omitempty"`
		Drift       any       `json:"drift,omitempty"`
	}{s.Now, s.Started, s.Instance, s.Ready, s.NotReady, s.Revisions, s.Unchanged,
		part(PartModel, s.Model), part(PartHistory, s.History), s.Traffic,
		part(PartDeadLetters, s.DeadLetters), part(PartAnalysis, s.Analysis), part(PartDrift, s.Drift)})
}

package status

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// The parts of the status document, by their JSON names: the query
// parameters of a conditional /api/status and the names in
// Status.Unchanged.
const (
	PartModel       = "model"
	PartHistory     = "history"
	PartTraffic     = "traffic"
	PartDeadLetters = "dead_letters"
	PartAnalysis    = "analysis"
	PartDrift       = "drift"
)

// Parts lists the parts a client can hold (Held.Revisions' keys).
func Parts() []string {
	return []string{PartModel, PartHistory, PartTraffic, PartDeadLetters, PartAnalysis, PartDrift}
}

// Held is what a client holds from an earlier document: the document's
// Instance and, by part name (Parts), the revision of each part it holds.
// A part it does not name is sent whole.
type Held struct {
	Instance  string
	Revisions map[string]int64
}

// part is the revision of one part (0 for an unknown name).
func (v Revisions) part(name string) int64 {
	switch name {
	case PartModel:
		return v.Model
	case PartHistory:
		return v.History
	case PartTraffic:
		return v.Traffic
	case PartDeadLetters:
		return v.DeadLetters
	case PartAnalysis:
		return v.Analysis
	case PartDrift:
		return v.Drift
	}
	return 0
}

// ParseHeld reads Held from the query of a conditional /api/status:
// instance=INSTANCE and, for each part the client holds, PART=REVISION
// (model, history, traffic, dead_letters, analysis, drift; a non-negative
// integer). Other parameters are ignored (a query without these asks for
// the whole document, as before). A parameter given twice, an empty
// instance, a revision that is not a non-negative integer, or revisions
// without their instance are errors of one line.
func ParseHeld(q url.Values) (Held, error) {
	var h Held
	if vs, ok := q["instance"]; ok {
		if len(vs) != 1 || vs[0] == "" {
			return Held{}, errors.New("status: query parameter instance must be given once, not empty (the document's \"instance\")")
		}
		h.Instance = vs[0]
	}
	for _, p := range Parts() {
		vs, ok := q[p]
		if !ok {
			continue
		}
		if len(vs) != 1 {
			return Held{}, fmt.Errorf("status: query parameter %s is given %d times", p, len(vs))
		}
		rev, err := strconv.ParseInt(vs[0], 10, 64)
		if err == nil && rev < 0 {
			err = errors.New("negative")
		}
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
			err = ne.Err // invalid syntax, value out of range: without the value again
		}
		if err != nil {
			return Held{}, fmt.Errorf("status: query parameter %s=%s is not a revision (a non-negative integer): %w", p, clip(vs[0]), err)
		}
		if h.Revisions == nil {
			h.Revisions = map[string]int64{}
		}
		h.Revisions[p] = rev
	}
	if h.Revisions != nil && h.Instance == "" {
		return Held{}, errors.New("status: revisions need the instance they belong to: add instance= (the document's \"instance\")")
	}
	return h, nil
}

// clip quotes a query value for an error message, cut to 40 bytes.
func clip(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}

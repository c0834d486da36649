package model

import (
	"github.com/forestd/forestd/arrowforest/forest"
)

// keyTuning carries forest.Tuning, the out-of-bag hyperparameter search
// that chose a tuned forest's params (forestd train --tune): the metric,
// the rounds of both stages, every candidate with its scores at the tree
// counts it reached, the winner and the search's tree count, as compact
// JSON.
// Absent for an untuned forest, whose bytes it therefore leaves as they
// were; present exactly when forestd.params has "tune": true. Format
// version 4.
const keyTuning = "forestd.tuning"

func encodeTuning(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
	if f.Tuning == nil {
		return "", false, nil
	}
	return jsonString(f.Tuning)
}

// decodeTuning reads forestd.tuning strictly: one JSON object, no unknown
// fields, nothing after it. forest.Validate checks the content once the
// forest is decoded.
func decodeTuning(v string, st *decodeState) error {
	t := new(forest.Tuning)
	if err := decodeStrict(v, t, "the tuning record"); err != nil {
		return err
	}
	st.f.Tuning = t
	return nil
}

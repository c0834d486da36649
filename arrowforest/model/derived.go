package model

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/forestd/forestd/arrowforest/forest"
)

// keyDerived carries forest.Derived, the input columns a forest computes
// from its features before its trees see them (RF_FDM with landmark
// mappings: one group norm per feature group, dissertation §6.1.2 and
// §6.4), as JSON {"norms":[{"inputs":[…],"centre":[…]},…]}. Centres are
// finite float64s, which encoding/json writes in their shortest exact form,
// so scoring recomputes the training values bit for bit. Absent when the
// forest has none.
const keyDerived = "forestd.derived"

func encodeDerived(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
	if f.Derived == nil {
		return "", false, nil
	}
	return jsonString(f.Derived)
}

// decodeStrict decodes v, one JSON object, into dst with no unknown
// fields and nothing after it; what names the object in that error.
func decodeStrict(v string, dst any, what string) error {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after %s", what)
	}
	return nil
}

// decodeDerived reads forestd.derived strictly: one JSON object, no
// unknown fields, nothing after it. forest.Validate checks the content
// once the trees are decoded.
func decodeDerived(v string, st *decodeState) error {
	d := new(forest.Derived)
	if err := decodeStrict(v, d, "the derived inputs"); err != nil {
		return err
	}
	if d.Norms == nil {
		return fmt.Errorf("no norms")
	}
	st.f.Derived = d
	return nil
}

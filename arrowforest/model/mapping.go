package model

import (
	"encoding/json"
	"strings"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
)

// keyMapping carries forest.Mapping, the FDM_RF feature mapping a forest
// was trained behind (dissertation §6.3), in the format of the mapping
// files that forestd select writes and --apply reads: the JSON of
// fdm.Transform, decoded by the same strict (and fuzzed) fdm.ReadTransform.
// Model and mapping are thereby one checksummed, content-addressed unit.
const keyMapping = "forestd.mapping"

func encodeMapping(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
	if f.Mapping == nil {
		return "", false, nil
	}
	b, err := json.Marshal(f.Mapping)
	return string(b), true, err
}

// decodeMapping parses forestd.mapping with fdm.ReadTransform; that the
// mapping's outputs are the forest's features is checked with the whole
// forest (forest.Validate).
func decodeMapping(v string, st *decodeState) error {
	t, err := fdm.ReadTransform(strings.NewReader(v))
	if err != nil {
		return err
	}
	st.f.Mapping = t
	return nil
}

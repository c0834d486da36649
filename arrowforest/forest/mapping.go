package forest

import (
	"fmt"
	"slices"

	"github.com/forestd/forestd/arrowforest/frame"
)

// A forest trained behind a feature dependence mapping (FDM_RF,
// dissertation §6.3: X' = [X_{S_m}, f(X_{S_1}; θ*_1), …]) carries the
// mapping in Forest.Mapping, so that the model and the mapping it was
// trained on always travel together: a scorer reads the mapping's input
// columns from the data (SourceColumns), maps them (FromSource) and only
// then lets the trees see them. The trees' input features
// (InputFeatures) are the mapping's output columns.
//
// SourceColumns and FromSource are the whole path from named data columns
// to the frame Compiled.Predict reads, for every forest: without a
// Mapping they are InputFeatures/inputLevels and Derive (derived.go).

// SourceColumns returns the columns a scorer reads from the data, with
// their category levels (nil entries for numeric columns; nil when no
// column is categorical): InputFeatures and inputLevels, or, with a
// Mapping, the mapping's input features — the marginally dependent
// features (which keep their levels) and then every group feature
// (numeric).
func (f *Forest) SourceColumns() (names []string, levels [][]string) {
	if f.Mapping == nil {
		return f.InputFeatures(), f.inputLevels()
	}
	names = f.Mapping.Inputs()
	in := f.inputLevels()
	if in == nil {
		return names, nil
	}
	levels = make([][]string, len(names))
	// the marginal features lead both Mapping.Inputs and Mapping.Names
	copy(levels, in[:min(len(f.Mapping.Marginal), len(in))])
	return names, levels
}

// FromSource turns a frame of the SourceColumns into the frame the
// compiled trees score: the Mapping, when set, applied by
// fdm.Transform.Apply (§6.3; each mapped column evaluated in float64 and
// rounded to float32, as in training), then the derived columns (Derive).
// A forest with neither returns fr itself.
func (f *Forest) FromSource(fr *frame.Frame) (*frame.Frame, error) {
	if f.Mapping != nil {
		var err error
		if fr, err = f.Mapping.Apply(fr); err != nil {
			return nil, fmt.Errorf("forest: mapping the input: %w", err)
		}
	}
	return f.Derive(fr)
}

// validateMapping checks a forest's Mapping: a valid transform whose
// output columns are exactly the input features (InputFeatures), in
// order, with numeric mapped columns; a distance random forest takes no
// mapping. A forest without a mapping passes. It never panics.
func (f *Forest) validateMapping() error {
	t := f.Mapping
	if t == nil {
		return nil
	}
	if f.Kind == KindDRF {
		return fmt.Errorf("forest: a %s forest cannot carry a feature mapping", KindDRF)
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("forest: mapping: %w", err)
	}
	in := f.InputFeatures()
	if names := t.Names(); !slices.Equal(names, in) {
		return fmt.Errorf("forest: the mapping's output columns %v are not the forest's input features %v", names, in)
	}
	if lv := f.inputLevels(); lv != nil {
		for j := len(t.Marginal); j < len(lv); j++ {
			if lv[j] != nil {
				return fmt.Errorf("forest: mapped column %q has category levels", in[j])
			}
		}
	}
	return nil
}

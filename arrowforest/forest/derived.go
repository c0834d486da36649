package forest

import (
	"fmt"
	"slices"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Derived lists the input columns a forest computes from its input
// features before its trees see them. Today these are the group norms of
// RF_FDM with landmark mappings (forest "fdm", FDMMap "drl"; dissertation
// §6.1.2 and §6.4): a distance to a landmark |x_G − x_l| becomes the
// linear atom −2(x_l − c)·x_G + s_G over the features and the derived
// input s_G(x) = Σ_{j∈G}(x_j − c_j)², whose splits are the splits on the
// distance (see package fdm, landmark.go). The scoring loop stays a sum of
// weighted columns.
//
// The derived columns follow the input features: Features[NumInputs()+g]
// is fdm.NormName(g+1), the value Norms[g].Eval of the input columns. The
// training frame goes through the same Derive as scored frames, so trees
// see the same float32 values in both.
type Derived struct {
	Norms []fdm.Norm `json:"norms"`
}

// Len is the number of derived columns (0 for a nil Derived).
func (d *Derived) Len() int {
	if d == nil {
		return 0
	}
	return len(d.Norms)
}

// NumInputs is the number of input features: the columns read from data,
// len(Features) less the derived ones.
func (f *Forest) NumInputs() int { return len(f.Features) - f.Derived.Len() }

// InputFeatures returns the names of the columns scoring reads from data
// (Features without the derived columns), in the order Derive expects.
func (f *Forest) InputFeatures() []string { return f.Features[:max(f.NumInputs(), 0)] }

// inputLevels returns the category levels of the input features (nil when
// the forest has none), aligned with InputFeatures.
func (f *Forest) inputLevels() [][]string {
	if f.Levels == nil {
		return nil
	}
	return f.Levels[:min(max(f.NumInputs(), 0), len(f.Levels))]
}

// Derive returns the frame the compiled forest scores: fr, whose features
// are InputFeatures in order, with the derived columns appended. A forest
// without derived columns returns fr itself. Callers that build frames by
// name use InputFeatures and inputLevels, then Derive, then Predict.
func (f *Forest) Derive(fr *frame.Frame) (*frame.Frame, error) {
	if f.Derived.Len() == 0 {
		return fr, nil
	}
	if fr.P() != f.NumInputs() {
		return nil, fmt.Errorf("forest: frame has %d features, the model reads %d input features (%d more are derived from them)",
			fr.P(), f.NumInputs(), f.Derived.Len())
	}
	return f.Derived.extend(fr), nil
}

// extend appends the derived columns to a copy of fr (the feature slices
// are shared, the label too).
func (d *Derived) extend(fr *frame.Frame) *frame.Frame {
	out := *fr
	p := fr.P()
	out.Names = slices.Clip(slices.Clone(fr.Names))
	out.Cols = slices.Clip(slices.Clone(fr.Cols))
	if fr.Levels != nil {
		out.Levels = slices.Clip(slices.Clone(fr.Levels))
	}
	for g := range d.Norms {
		out.Names = append(out.Names, fdm.NormName(g+1))
		out.Cols = append(out.Cols, d.Norms[g].Eval(fr.Cols[:p], make([]float32, 0, fr.NRows)))
		if out.Levels != nil {
			out.Levels = append(out.Levels, nil)
		}
	}
	return &out
}

// validateDerived checks f.Derived against f: present exactly when f is
// an fdm forest with landmark mappings and feature groups, one norm per
// group of Params.FDMGroups over that group's features, every norm valid
// over the input features, the derived columns named as Derive names them
// and without category levels. It never panics.
func (f *Forest) validateDerived() error {
	d := f.Derived
	var groups [][]int
	if f.Kind == KindFDM && f.Params.FDMMap == fdm.MapDRL {
		var err error
		if groups, err = fdm.ParseSets(f.Params.FDMGroups); err != nil {
			return err
		}
	}
	if (len(groups) > 0) != (d != nil) {
		if d == nil {
			return fmt.Errorf("fdm forest with landmark mappings without its derived inputs")
		}
		return fmt.Errorf("%q forest (mapping %q, groups %q) with derived inputs", f.Kind, f.Params.FDMMap, f.Params.FDMGroups)
	}
	if d == nil {
		return nil
	}
	if len(d.Norms) != len(groups) {
		return fmt.Errorf("derived inputs: %d norms for %d feature groups", len(d.Norms), len(groups))
	}
	for g, grp := range groups {
		if !slices.Equal(d.Norms[g].Inputs, slices.Sorted(slices.Values(grp))) {
			return fmt.Errorf("derived input %d reads features %v, its group is %v", g+1, d.Norms[g].Inputs, grp)
		}
	}
	p := f.NumInputs()
	if len(d.Norms) == 0 || p < 1 {
		return fmt.Errorf("derived inputs: %d norms for %d features", len(d.Norms), len(f.Features))
	}
	for g := range d.Norms {
		if err := d.Norms[g].Validate(p); err != nil {
			return fmt.Errorf("derived input %d: %w", g+1, err)
		}
		if name := f.Features[p+g]; name != fdm.NormName(g+1) {
			return fmt.Errorf("derived input %d is named %q, want %q", g+1, name, fdm.NormName(g+1))
		}
		if f.Levels != nil && f.Levels[p+g] != nil {
			return fmt.Errorf("derived input %d has category levels", g+1)
		}
	}
	for _, name := range f.Features[:p] {
		for g := range d.Norms {
			if name == fdm.NormName(g+1) {
				return fmt.Errorf("input feature %q has the name of a derived input", name)
			}
		}
	}
	return nil
}

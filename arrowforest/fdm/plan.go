package fdm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Plan is the structure FDM works on (§6.3): the marginally dependent
// features S_m, kept as they are, and the disjoint jointly dependent groups
// S_1..S_s (MDS's or SDS's), each mapped. Features in neither are left out
// of the mapped data, as in X' = [X_{S_m}, X'_{S_1}, …, X'_{S_s}].
type Plan struct {
	Marginal []int
	Groups   [][]int
}

// Validate checks the plan against p features: indices in range, no
// feature twice, no empty group, something to use.
func (pl Plan) Validate(p int) error {
	seen := make(map[int]bool)
	use := func(j int) error {
		if j < 0 || j >= p {
			return fmt.Errorf("fdm: feature %d outside 0..%d", j, p-1)
		}
		if seen[j] {
			return fmt.Errorf("fdm: feature %d is in two sets", j)
		}
		seen[j] = true
		return nil
	}
	for _, j := range pl.Marginal {
		if err := use(j); err != nil {
			return err
		}
	}
	for g, grp := range pl.Groups {
		if len(grp) == 0 {
			return fmt.Errorf("fdm: group %d is empty", g+1)
		}
		for _, j := range grp {
			if err := use(j); err != nil {
				return err
			}
		}
	}
	if len(seen) == 0 {
		return fmt.Errorf("fdm: no marginally dependent feature and no dependent group to map")
	}
	return nil
}

// sorted returns a copy with every set in increasing order.
func (pl Plan) sorted() Plan {
	out := Plan{Marginal: slices.Sorted(slices.Values(pl.Marginal))}
	for _, g := range pl.Groups {
		out.Groups = append(out.Groups, slices.Sorted(slices.Values(g)))
	}
	return out
}

// Discover finds the plan with the MDS/SDS search of dissertation ch. 5
// (dependence.Search: S_m by Algorithm 1, then the groups by the chosen
// algorithm among the remaining features), using no ground truth. cols
// are the float32 feature columns; y and k the class labels.
func Discover(cols [][]float32, y []int32, k int, opt dependence.SearchOptions) (Plan, *dependence.SearchResult, error) {
	return DiscoverLabel(cols, dependence.Classes(y, k), opt)
}

// DiscoverLabel is Discover for a class or numeric label
// (dependence.SearchLabel; a numeric label takes dcor).
func DiscoverLabel(cols [][]float32, lab dependence.Label, opt dependence.SearchOptions) (Plan, *dependence.SearchResult, error) {
	x := make([][]float64, len(cols))
	for j, c := range cols {
		v := make([]float64, len(c))
		for i, f := range c {
			v[i] = float64(f)
		}
		x[j] = v
	}
	res, err := dependence.SearchLabel(x, lab, opt)
	if err != nil {
		return Plan{}, nil, fmt.Errorf("fdm: group search: %w", err)
	}
	pl := Plan{Marginal: append([]int(nil), res.Marginal...)}
	for _, g := range res.Groups {
		pl.Groups = append(pl.Groups, append([]int(nil), g.Features...))
	}
	return pl, res, nil
}

// LabelOf is the label FDM learns from a frame: its classes, or its one
// regression target. Several targets, or no label, are an error.
func LabelOf(fr *frame.Frame) (dependence.Label, error) {
	switch {
	case fr.Task == frame.TaskClassification && fr.NumClasses() >= 2:
		return dependence.Classes(fr.Y, fr.NumClasses()), nil
	case fr.Task == frame.TaskRegression && fr.YReg != nil && fr.Targets == nil:
		return dependence.Numeric(fr.YReg), nil
	case fr.Targets != nil:
		return dependence.Label{}, fmt.Errorf("fdm: label %s is %d targets; dependence mapping learns one label", fr.LabelName, len(fr.Targets))
	}
	return dependence.Label{}, fmt.Errorf("fdm: mappings are selected by their dependence on the label; the frame has no label of two or more classes or numeric values")
}

// FormatSets writes sets of feature indices as "0,1;2,3,4" (the form of
// forest.Params.FDMGroups and FDMMarginal).
func FormatSets(sets [][]int) string {
	var b strings.Builder
	for s, set := range sets {
		if s > 0 {
			b.WriteByte(';')
		}
		for i, j := range set {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(j))
		}
	}
	return b.String()
}

// ParseSets reads FormatSets' form; "" is no sets.
func ParseSets(s string) ([][]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out [][]int
	for _, part := range strings.Split(s, ";") {
		var set []int
		for _, f := range strings.Split(part, ",") {
			j, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || j < 0 {
				return nil, fmt.Errorf("fdm: feature sets %q: %q is not a feature index", s, f)
			}
			set = append(set, j)
		}
		out = append(out, set)
	}
	return out, nil
}

package operators

import (
	"fmt"
	"math"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
)

// SearchFrame runs the dependence search opt on a labelled frame's
// features against lab (dependence.SearchLabel: dissertation ch. 5).
func SearchFrame(fr *frame.Frame, lab dependence.Label, opt dependence.SearchOptions) (*dependence.SearchResult, error) {
	x := make([][]float64, fr.P())
	for j, c := range fr.Cols {
		x[j] = make([]float64, len(c))
		for i, v := range c {
			x[j][i] = float64(v)
		}
	}
	return dependence.SearchLabel(x, lab, opt)
}

// columnNote says what is wrong with a feature column whose test cannot
// mean what a user expects (issue 30): every value missing or constant
// (no test is possible: p = 1), or a statistic of 1 (the column
// determines the label: the label itself, or a copy or encoding of it).
// Empty for an ordinary column.
func columnNote(col []float32, stat float64) string {
	seen, constant := 0, true
	var first float32
	for _, v := range col {
		if v != v { // NaN: missing
			continue
		}
		if seen == 0 {
			first = v
		} else if v != first {
			constant = false
		}
		seen++
	}
	switch {
	case seen == 0:
		return "every value is missing: not tested (p = 1)"
	case constant:
		return fmt.Sprintf("constant (every value %v): it cannot depend on the label, not tested (p = 1)", first)
	case stat >= 1-1e-9:
		return "determines the label exactly (statistic 1): the label itself, or a copy or encoding of it?"
	}
	return ""
}

// jsonNum maps NaN (an undefined statistic) to null.
func jsonNum(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

// SearchSummary is the JSON form of a dependence search of a labelled
// frame that forestd analyze prints: per feature its statistic, p-values,
// permutation counts, group and a note when its test cannot mean what a
// user expects (columnNote); the groups; the search's settings, its
// false-discovery stages (dependence.SearchResult) and a warning when
// tests stayed unresolved. opt is the search's options.
func SearchSummary(fr *frame.Frame, res *dependence.SearchResult, opt dependence.SearchOptions) map[string]any {
	feats := make([]map[string]any, fr.P())
	for j, name := range fr.Names {
		feats[j] = map[string]any{
			"name": name, "statistic": jsonNum(res.Statistic[j]), "p_value": res.PValue[j], "p_adjusted": res.AdjPValue[j],
			"b": res.B[j], "N": res.N[j], "group": res.Label[j],
		}
		if res.FeatureUnresolved[j] {
			feats[j]["unresolved"] = true
		}
		if res.Approx[j] {
			feats[j]["approx"] = true
		}
		if note := columnNote(fr.Cols[j], res.Statistic[j]); note != "" {
			feats[j]["note"] = note
		}
	}
	names := func(idx []int) []string {
		out := make([]string, len(idx))
		for i, j := range idx {
			out[i] = fr.Names[j]
		}
		return out
	}
	groups := make([]map[string]any, len(res.Groups))
	for g, gr := range res.Groups {
		groups[g] = map[string]any{
			"group": g + 1, "features": names(gr.Features), "kind": gr.Kind,
			"statistic": jsonNum(gr.Statistic), "p_value": gr.PValue, "p_adjusted": gr.AdjPValue, "b": gr.B, "N": gr.N,
		}
		if gr.Approx {
			groups[g]["approx"] = true
		}
	}
	var notes []string
	for j, f := range feats {
		if n, ok := f["note"].(string); ok {
			notes = append(notes, fmt.Sprintf("column %q: %s", fr.Names[j], n))
		}
	}
	rep := map[string]any{
		"notes": notes,
		"rows":  fr.NRows, "skipped_labels": fr.SkippedLabels, "label": fr.LabelName, "task": fr.Task.String(),
		"stat": res.Stat, "method": res.Method, "alpha": res.Alpha, "adjust": res.Adjust, "seed": opt.Test.Seed,
		"max_perms": res.MaxPerms, "perms": opt.Test.Perms, "max_rows": opt.Test.MaxRows, "set_rows": res.SetRows,
		"features": feats, "marginal": names(res.Marginal), "groups": groups, "tests": res.Tests,
		"unresolved": res.Unresolved,
	}
	if fr.Task == frame.TaskClassification {
		rep["classes"] = fr.Classes
	}
	if res.Adjust != dependence.AdjustNone {
		stages := make([]map[string]any, len(res.Stages))
		for i, st := range res.Stages {
			stages[i] = map[string]any{"size": st.Size, "family": st.Family, "threshold": st.Threshold, "max_perms": st.MaxN, "capped": st.Capped,
				"screen_rows": st.ScreenRows, "screened": st.Screened, "approx_only": st.ApproxOnly, "unreachable": st.Unreachable}
		}
		rep["alpha_marginal"], rep["alpha_sets"] = res.AlphaMarginal, res.AlphaSets
		rep["marginal_threshold"] = res.AlphaMarginal / float64(fr.P())
		rep["marginal_max_perms"] = res.MarginalMaxN
		rep["set_stages"] = stages
	}
	if res.Unresolved > 0 {
		rep["warning"] = fmt.Sprintf("%d test(s) were left undecided by --max-perms %d (marked unresolved; in a set stage with approx_only no allowed permutation count reaches the threshold): a p-value at their threshold needs more permutations; raise --max-perms or shrink the family (fewer features, --max-size 2)", res.Unresolved, res.MaxPerms)
	}
	if res.Rest != nil {
		var rest []int
		for j, l := range res.Label {
			if l == 0 {
				rest = append(rest, j)
			}
		}
		rep["rest"] = map[string]any{"features": names(rest), "statistic": jsonNum(res.Rest.Statistic),
			"p_value": res.Rest.PValue, "p_adjusted": res.RestAdjPValue, "b": res.Rest.B, "N": res.Rest.N}
	}
	return rep
}

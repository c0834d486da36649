package cli

import (
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
)

// fdmMappingNames describes the mapping kinds of dissertation §6.1.
var fdmMappingNames = map[string]string{
	fdm.MapRP:  "random projection (§6.1.1)",
	fdm.MapDRL: "distance to a random landmark (§6.1.2)",
}

// fdmInfo is what inspect reports about an RF_FDM forest (--forest fdm,
// dissertation §6.4): the mapping kind each tree draws per group, the
// candidates per group, the groups and marginal features by name, and,
// for landmark mappings, the derived inputs (one group norm per group,
// computed from the named features before the trees see them).
func fdmInfo(f *forest.Forest) map[string]any {
	p := f.Params
	names := func(set []int) []string {
		out := make([]string, 0, len(set))
		for _, j := range set {
			if j >= 0 && j < f.NumInputs() {
				out = append(out, f.Features[j])
			}
		}
		return out
	}
	groups, _ := fdm.ParseSets(p.FDMGroups)
	marg, _ := fdm.ParseSets(p.FDMMarginal)
	info := map[string]any{
		"map": p.FDMMap, "mapping": fdmMappingNames[p.FDMMap], "candidates": p.FDMCandidates,
		"groups": [][]string{}, "marginal": []string{},
	}
	gs := make([][]string, 0, len(groups))
	for _, g := range groups {
		gs = append(gs, names(g))
	}
	info["groups"] = gs
	if len(marg) == 1 {
		info["marginal"] = names(marg[0])
	}
	if p.FDMSearch != "" {
		info["search"] = p.FDMSearch
		if p.FDMAdjust != "" {
			info["adjust"], info["alpha"] = p.FDMAdjust, p.FDMAlpha
		}
	}
	if f.Derived != nil {
		var der []map[string]any
		for g := range f.Derived.Norms {
			n := &f.Derived.Norms[g]
			der = append(der, map[string]any{"name": fdm.NormName(g + 1), "inputs": names(n.Inputs), "centre": n.Centre})
		}
		info["derived_inputs"] = der
	}
	return info
}

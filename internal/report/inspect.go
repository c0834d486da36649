package report

import (
	"math"
	"sort"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/scoring"
)

// Inspect is what forestd inspect prints about a model (ARCHITECTURE.md,
// Command line): its id, kind, task, features and outputs, the size of its
// trees, its importances by name (the primary kind: permutation when the
// model has it, else impurity) and the parts a kind adds (dRF, RF_FDM, a
// mapping read through, the tuning that chose its parameters).
// f must hold its trees (model.ReadFile; scoring.Load keeps a format-5
// model compiled without them).
func Inspect(f *forest.Forest, meta model.Meta) map[string]any {
	nodes, leaves, depth := 0, 0, 0
	for _, t := range f.Trees {
		nodes += t.NumNodes()
		leaves += t.NumLeaves()
		depth = max(depth, t.Depth())
	}
	imps := map[string]map[string]float64{}
	for kind, v := range f.Importances {
		imps[kind] = byName(f.Features, v)
	}
	primary := forest.ImportanceImpurity
	if _, ok := f.Importances[forest.ImportancePermutation]; ok {
		primary = forest.ImportancePermutation
	}
	rep := map[string]any{
		"model_id": meta.ID, "model_version": meta.Version,
		"forest": f.Kind, "task": f.Task.String(), "label": f.LabelName,
		"trees": len(f.Trees), "features": f.Features, "n_features": len(f.Features),
		"classes": f.Classes, "targets": f.Targets, "nodes": nodes, "leaves": leaves, "max_depth": depth,
		"params":          f.Params,
		"importance_kind": primary, "importance": byName(f.Features, f.Importances[primary]),
		"importances": imps, "top_features": topNames(f.Features, f.Importances[primary]),
	}
	if f.OOB != nil {
		rep["oob"] = f.OOB
	} else {
		rep["oob"] = nil
	}
	if f.DRF != nil {
		rep["drf"] = DRFInfo(f)
	}
	if f.Kind == forest.KindFDM { // RF_FDM: which mapping the trees draw
		rep["fdm"] = fdmInfo(f)
	}
	if f.Mapping != nil { // the FDM mapping the trees read through (forestd serve select → train)
		rep["mapping"] = f.Mapping
	}
	if f.Tuning != nil { // the out-of-bag search that chose the params (train --tune)
		rep["tuning"] = f.Tuning
	}
	return rep
}

// byName returns a name → value map for JSON output (encoding/json sorts
// map keys, so output is stable).
func byName(names []string, vals []float64) map[string]float64 {
	m := make(map[string]float64, len(names))
	for j, n := range names {
		if j < len(vals) {
			m[n] = vals[j]
		}
	}
	return m
}

// topNames lists names by decreasing value (ties by name).
func topNames(names []string, vals []float64) []string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if vals[idx[a]] != vals[idx[b]] {
			return vals[idx[a]] > vals[idx[b]]
		}
		return names[idx[a]] < names[idx[b]]
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = names[j]
	}
	return out
}

// DRFInfo describes a forest's dRF part (Distributional Random Forests;
// the embedding of forestd's drf) for forestd train's and inspect's JSON.
func DRFInfo(f *forest.Forest) map[string]any {
	d := f.DRF
	return map[string]any{
		"targets": d.Targets, "label_columns": frame.SplitLabel(f.LabelName),
		"distance": d.Distance, "isomap_k": d.IsomapK, "projection": d.Projection,
		"embed_dim": d.Dim(), "eigenvalues": d.Eigenvalues, "sigma_g": d.SigmaG, "gamma_g": d.GammaG,
		"rows": d.Rows(), "input_rows": d.InputRows, "predict": d.Predict, "backscore_center": d.Offset != nil,
		"backscore_offset": d.Offset, "sigma_gamma_selected_by": selectedBy(d), "select_mse": d.SelectMSE,
	}
}

// selectedBy says how a model's σ_G and γ_G were set, for reports.
func selectedBy(d *forest.DRF) string {
	switch d.SelectedBy {
	case "":
		return "flags"
	case forest.SelectedByOOB:
		return "out-of-bag"
	}
	return "leave-one-out"
}

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

// TotalVariation is Σ |m_a − m_b| over horizontally and vertically
// adjacent cells of the map v (one value per feature) laid out on g,
// normalised to sum 1 (per channel, summed): lower means a smoother map
// (the MORF paper's Fig. 5 claim, made a number).
func TotalVariation(g projection.Topology, v []float64) float64 {
	at := func(c, r, q int) float64 { return v[g.Feature(c, r, q)] }
	var s float64
	for _, x := range v {
		s += math.Abs(x)
	}
	if s == 0 {
		return 0
	}
	var tv float64
	for c := 0; c < g.C; c++ {
		for r := 0; r < g.H; r++ {
			for q := 0; q < g.W; q++ {
				x := at(c, r, q)
				if q+1 < g.W {
					tv += math.Abs(x - at(c, r, q+1))
				}
				if r+1 < g.H {
					tv += math.Abs(x - at(c, r+1, q))
				}
			}
		}
	}
	return tv / s
}

// EvalSummary is what forestd eval prints about an evaluation (besides
// the model): rows, time, skipped labels, and accuracy and error for
// classes or RMSE, MAE and MSE for numbers, per output for a model with
// several.
func EvalSummary(ev *scoring.Evaluation) map[string]any {
	rep := map[string]any{
		"rows": ev.Rows, "seconds": ev.Seconds,
		"rows_per_second": float64(ev.Rows) / math.Max(ev.Seconds, 1e-9), "skipped_labels": ev.SkippedLabels,
	}
	switch {
	case ev.Classification:
		rep["accuracy"], rep["error"] = ev.Accuracy, ev.Error
		if ev.UnknownClassRows > 0 {
			rep["unknown_class_rows"] = ev.UnknownClassRows
		}
	default:
		rep["rmse"], rep["mae"], rep["mse"] = ev.RMSE, ev.MAE, ev.MSE
	}
	if ev.PerOutput != nil { // several outputs
		per := map[string]any{}
		for t, e := range ev.PerOutput {
			per[t] = map[string]float64{"rmse": e.RMSE, "mse": e.MSE, "mae": e.MAE}
		}
		rep["per_output"], rep["setup_seconds"] = per, ev.SetupSeconds
	}
	return rep
}

// TrainSummary is what forestd train prints about a forest it trained
// (besides the model file): its id, kind, task, size, the training rows
// and features, parameters, out-of-bag estimates and tuning.
func TrainSummary(f *forest.Forest, id string, rows, skipped, nFeatures int, secs float64) map[string]any {
	rep := map[string]any{
		"model_id": id, "forest": f.Kind, "task": f.Task.String(),
		"trees": len(f.Trees), "rows": rows, "skipped_labels": skipped,
		"features": nFeatures, "classes": f.Classes, "targets": f.Targets, "nodes": countNodes(f), "seconds": secs,
		"params": f.Params,
	}
	if f.OOB != nil {
		rep["oob"] = f.OOB
	}
	if f.Tuning != nil {
		rep["tuning"] = f.Tuning
	}
	return rep
}

// DRFTrainSummary is what forestd train --forest drf prints about the
// distance forest it trained: TrainSummary's size and parameters, the
// response coordinates (targets) and the dRF part (DRFInfo), with how the
// embedding dimension m was set — the model stores the embedding only, so
// train alone reports this: the candidates' out-of-bag errors when chosen.
func DRFTrainSummary(f *forest.Forest, id string, rows, skipped, nFeatures int, targets []string, secs float64) map[string]any {
	info := DRFInfo(f)
	info["embed_dim_selected_by"] = "flags"
	if f.DRF.EmbedDims != nil {
		info["embed_dim_selected_by"] = "out-of-bag"
		info["embed_dim_candidates"] = f.DRF.EmbedDims
	}
	return map[string]any{
		"model_id": id, "forest": f.Kind, "task": f.Task.String(),
		"trees": len(f.Trees), "rows": rows, "skipped_labels": skipped, "features": nFeatures,
		"targets": targets, "nodes": countNodes(f), "seconds": secs, "params": f.Params, "drf": info,
	}
}

// countNodes counts the forest's nodes.
func countNodes(f *forest.Forest) int {
	n := 0
	for _, t := range f.Trees {
		n += t.NumNodes()
	}
	return n
}

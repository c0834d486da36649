package report

import (
	"fmt"
	"html/template"
	"slices"
	"sort"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/scoring"
)

// ModelFacts is what a person wants to know about a model at a glance;
// the status page's JSON (/api/status "model") and the model report show
// the same fields.
type ModelFacts struct {
	ID        string   `json:"id"`
	Version   int64    `json:"version"`
	CreatedBy string   `json:"created_by"`
	Kind      string   `json:"kind"`
	Task      string   `json:"task"`
	Label     string   `json:"label"`
	Trees     int      `json:"trees"`
	Features  []string `json:"features"`
	Classes   []string `json:"classes,omitempty"`
	Targets   []string `json:"targets,omitempty"`
	// OOB are the out-of-bag estimates (nil without bootstrap): the
	// error (misclassification rate, or MSE for regression), Breiman's
	// strength and correlation (classification, dissertation §1.6 eqs.
	// 1.25–1.28) or R² (regression), and the rows with an estimate.
	OOB *forest.OOB `json:"oob"`
	// ImportanceKind is the kind drawn by default (Primary).
	ImportanceKind string `json:"importance_kind"`
	// Importances holds one value per feature for each kind the model
	// carries (impurity, projection-count, permutation).
	Importances map[string][]float64 `json:"importances"`
	// Layout is the feature layout of a MORF model (grid, series, cyclic):
	// importances are drawn as a heatmap on it.
	Layout *Layout        `json:"layout,omitempty"`
	Params *forest.Params `json:"params"`
}

// Layout is a feature layout: C channels of H×W.
type Layout struct {
	Kind string `json:"kind"` // grid, series or cyclic
	H    int    `json:"height"`
	W    int    `json:"width"`
	C    int    `json:"channels"`

	top projection.Topology
}

// Topology is the layout as the MORF samplers see it.
func (l *Layout) Topology() projection.Topology { return l.top }

// Primary is the importance kind shown by default: permutation importance
// when the model has it (it measures the effect on OOB accuracy), else the
// impurity decrease.
func Primary(imps map[string][]float64) string {
	if _, ok := imps[forest.ImportancePermutation]; ok {
		return forest.ImportancePermutation
	}
	if _, ok := imps[forest.ImportanceImpurity]; ok || len(imps) == 0 {
		return forest.ImportanceImpurity
	}
	ks := make([]string, 0, len(imps))
	for k := range imps {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks[0]
}

// DescribeModel collects a model's facts. grid, when not zero, lays the
// features out for the heatmap when the model has no layout of its own
// (an rf trained on images).
func DescribeModel(m *scoring.Model, grid projection.Topology) (ModelFacts, error) {
	f, meta := m.Forest(), m.Meta()
	p := f.Params
	mf := ModelFacts{ID: meta.ID, Version: meta.Version, CreatedBy: meta.CreatedBy, Kind: string(f.Kind), Task: f.Task.String(),
		Label: f.LabelName, Trees: m.NumTrees(), Features: slices.Clone(f.Features), Classes: f.Classes, Targets: m.Targets(),
		OOB: f.OOB, Importances: f.Importances, ImportanceKind: Primary(f.Importances), Params: &p}
	if mf.Importances == nil {
		mf.Importances = map[string][]float64{}
	}
	switch {
	case grid.H > 0:
		if err := grid.Validate(len(f.Features)); err != nil {
			return mf, fmt.Errorf("report: layout: %w", err)
		}
		mf.Layout = &Layout{Kind: "grid", H: grid.H, W: grid.W, C: grid.C, top: grid}
	case p.Layout != "":
		top, err := p.Topology(len(f.Features))
		if err != nil {
			return mf, fmt.Errorf("report: model %s layout: %w", meta.ID, err)
		}
		mf.Layout = &Layout{Kind: p.Layout, H: top.H, W: top.W, C: top.C, top: top}
	}
	return mf, nil
}

// ImportanceChart draws the importances of one kind: a heatmap on the
// model's layout when it has one, else one bar per feature (class
// "importances" on the <svg>).
func (mf ModelFacts) ImportanceChart(kind string) (template.HTML, error) {
	v, ok := mf.Importances[kind]
	if !ok {
		return Bars(BarChart{Title: "no " + kind + " importances", Class: "importances"})
	}
	title := fmt.Sprintf("%s importance, %s forest, %d trees", kind, mf.Kind, mf.Trees)
	if mf.Layout != nil && len(v) == len(mf.Features) {
		return Heatmap(HeatmapChart{Title: title, Class: "importances", Layout: mf.Layout.top, Values: v, Names: mf.Features})
	}
	bars := make([]Bar, 0, len(v))
	for j, name := range mf.Features {
		if j < len(v) {
			bars = append(bars, Bar{Label: name, Value: v[j]})
		}
	}
	return Bars(BarChart{Title: title, Class: "importances", Bars: bars})
}

// ImportanceKinds lists the model's importance kinds, the primary first.
func (mf ModelFacts) ImportanceKinds() []string {
	ks := []string{mf.ImportanceKind}
	rest := make([]string, 0, len(mf.Importances))
	for k := range mf.Importances {
		if k != mf.ImportanceKind {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(ks, rest...)
}

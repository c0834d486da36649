package report

import (
	"encoding/json"
	"html/template"
	"io"
	"math"
	"sort"
)

// pageCSS styles the standalone reports (inline: the file loads nothing).
const pageCSS = `body{font-family:sans-serif;margin:24px;max-width:980px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:13px}
th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}
.chart{display:block;margin:10px 0}.muted{color:#666}`

var modelPage = template.Must(template.New("model").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>forestd model {{.M.Version}} {{.M.Kind}}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>` + pageCSS + `</style></head><body>
<h1>Model version {{.M.Version}}: {{.M.Kind}} forest, {{.M.Task}}</h1>
<table class="facts">
<tr><th>id</th><td><code>{{.M.ID}}</code></td></tr>
<tr><th>created by</th><td>{{.M.CreatedBy}}</td></tr>
<tr><th>label</th><td>{{.M.Label}}</td></tr>
<tr><th>trees</th><td class="num">{{.M.Trees}}</td></tr>
<tr><th>features</th><td class="num">{{len .M.Features}}</td></tr>
{{- if .M.Classes}}<tr><th>classes</th><td>{{range $i, $c := .M.Classes}}{{if $i}}, {{end}}{{$c}}{{end}}</td></tr>{{end}}
{{- if .M.Targets}}<tr><th>targets</th><td>{{range $i, $c := .M.Targets}}{{if $i}}, {{end}}{{$c}}{{end}}</td></tr>{{end}}
{{- if .M.Layout}}<tr><th>layout</th><td>{{.M.Layout.Kind}} {{.M.Layout.W}}×{{.M.Layout.H}}, {{.M.Layout.C}} channel(s)</td></tr>{{end}}
</table>
<h2>Out-of-bag estimates</h2>
{{- with .M.OOB}}
<table class="oob"><tr><th>rows with an estimate</th><td class="num">{{.Rows}}</td></tr>
{{- if $.Classification}}
<tr><th>OOB error</th><td class="num">{{num .Error}}</td></tr>
<tr><th>strength s</th><td class="num">{{num .Strength}}</td></tr>
<tr><th>correlation ρ̄</th><td class="num">{{num .Correlation}}</td></tr>
{{- else}}
<tr><th>OOB mean squared error</th><td class="num">{{num .Error}}</td></tr>
<tr><th>R²</th><td class="num">{{num .R2}}</td></tr>
{{- end}}</table>
{{- else}}{{if eq $.M.Kind "drf"}}<p class="muted">A drf forest is trained on bootstrap samples but has no forest out-of-bag estimates: σ<sub>G</sub> and γ<sub>G</sub> are chosen by the out-of-bag error of the whole prediction, or by leave-one-out (forestd inspect: drf.sigma_gamma_selected_by, drf.select_mse).</p>
{{- else}}<p class="muted">The model was trained without bootstrap or subsampling: no out-of-bag estimates.</p>{{end}}{{end}}
<h2>Parameters</h2>
<table class="params">{{range .Params}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</table>
<h2>Feature importances</h2>
{{range .Charts}}{{.}}{{end}}
{{- with .Ev}}
<h2>Evaluation on {{$.In}}</h2>
<table class="eval"><tr><th>rows</th><td class="num">{{.Summary.Rows}}</td></tr>
<tr><th>rows skipped (no label)</th><td class="num">{{.Summary.SkippedLabels}}</td></tr>
{{- if .Summary.Classification}}
<tr><th>accuracy</th><td class="num">{{num .Summary.Accuracy}}</td></tr><tr><th>error</th><td class="num">{{num .Summary.Error}}</td></tr>
{{- else}}
<tr><th>RMSE</th><td class="num">{{num .Summary.RMSE}}</td></tr><tr><th>MAE</th><td class="num">{{num .Summary.MAE}}</td></tr>
{{- range $k, $v := .Summary.PerOutput}}<tr><th>RMSE of {{$k}}</th><td class="num">{{num $v.RMSE}}</td></tr>{{end}}
{{- end}}</table>
{{$.EvChart}}
{{- end}}
<p class="muted">Written by forestd report.</p>
</body></html>
`))

// ModelOptions are what a model report shows besides the model.
type ModelOptions struct {
	// Eval, when set, adds the evaluation on labelled data (In names it).
	Eval *Evaluation
	In   string
}

type kv struct{ K, V string }

// ModelHTML writes the model's report: a standalone HTML page with its
// facts, OOB estimates, parameters, an importance chart per kind (heatmaps
// on a feature layout) and, with o.Eval, the evaluation (confusion matrix
// or residual plot). The page has no script and loads nothing.
func ModelHTML(w io.Writer, mf ModelFacts, o ModelOptions) error {
	var charts []template.HTML
	for _, k := range mf.ImportanceKinds() {
		if _, ok := mf.Importances[k]; !ok {
			continue
		}
		c, err := mf.ImportanceChart(k)
		if err != nil {
			return err
		}
		charts = append(charts, c)
	}
	var evChart template.HTML
	if o.Eval != nil {
		var err error
		if evChart, err = o.Eval.Chart(); err != nil {
			return err
		}
	}
	return modelPage.Execute(w, map[string]any{"M": mf, "Classification": mf.Task == "classification", "Params": params(mf),
		"Charts": charts, "Ev": o.Eval, "EvChart": evChart, "In": o.In})
}

// params lists the training parameters (the model's params JSON) sorted by
// name.
func params(mf ModelFacts) []kv {
	if mf.Params == nil {
		return nil
	}
	m, err := structFields(mf.Params)
	if err != nil {
		return []kv{{"params", err.Error()}}
	}
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}

var depPage = template.Must(template.New("dependence").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>forestd dependence report</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>` + pageCSS + `</style></head><body>
{{- if .Known}}
<h1>Dependence report: {{.D.Method}} with {{.D.Stat}}</h1>
<table class="facts"><tr><th>rows</th><td class="num">{{.D.Rows}}</td></tr><tr><th>α</th><td class="num">{{num .Alpha}}</td></tr>
<tr><th>adjustment</th><td>{{.D.Adjust}}</td></tr><tr><th>seed</th><td class="num">{{.D.Seed}}</td></tr><tr><th>features</th>
{{- else}}
<h1>Dependence report</h1>
<p class="muted">This table does not record the analysis' settings (method, statistic, rows, α, adjustment, seed): CSV keeps no metadata. Write analyze's report as Arrow IPC or Parquet to keep them.</p>
<table class="facts"><tr><th>features</th>
{{- end}}<td class="num">{{len .D.Features}}</td></tr>
<tr><th>marginally dependent</th><td class="num">{{len .Marginal}}</td></tr><tr><th>groups</th><td class="num">{{len .D.Groups}}</td></tr></table>
<h2>Features by p-value</h2>
{{.PChart}}
<h2>Groups</h2>
{{.GChart}}
{{- if .D.Groups}}
<table class="groups"><tr><th>group</th><th>kind</th><th>features</th><th>statistic</th><th>p-value</th><th>permutations</th></tr>
{{- range .D.Groups}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{range $i, $f := .Features}}{{if $i}}, {{end}}{{$f}}{{end}}</td><td class="num">{{num .Statistic}}</td><td class="num">{{num .PValue}}</td><td class="num">{{.N}}</td></tr>{{end}}
</table>{{end}}
<h2>Every feature</h2>
<table class="features"><tr><th>feature</th><th>kind</th><th>statistic</th><th>p-value</th><th>adjusted{{if .D.Adjust}} ({{.D.Adjust}}){{end}}</th><th>permutations</th></tr>
{{- range .D.Features}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td class="num">{{num .Statistic}}</td><td class="num">{{num .PValue}}</td><td class="num">{{num .Adjusted}}</td><td class="num">{{.N}}</td></tr>{{end}}
</table>
<p class="muted">p-values are (b+1)/(N+1) of seeded permutation tests. {{.AdjustNote}} Written by forestd report.</p>
</body></html>
`))

// DependenceHTML writes the dependence report as a standalone HTML page:
// features by p-value (raw and adjusted), the groups as a graph, and the
// tables. The page has no script and loads nothing.
func DependenceHTML(w io.Writer, d *Dependence) error {
	pc, err := PValues(d)
	if err != nil {
		return err
	}
	gc, err := Groups(d)
	if err != nil {
		return err
	}
	return depPage.Execute(w, map[string]any{"D": d, "Alpha": float64(d.Alpha), "Marginal": d.Marginal(), "PChart": pc, "GChart": gc,
		"Known": !math.IsNaN(float64(d.Alpha)), "AdjustNote": adjustNote(d.Adjust)})
}

// adjustNote says what the adjusted p-values of a report with procedure
// adjust are (docs/dependence.md, "False discoveries are controlled across
// the analysis"): a feature or group is a finding when its adjusted p-value is
// at most α.
func adjustNote(adjust string) string {
	switch adjust {
	case "holm":
		return "Adjusted (holm): a finding when adjusted ≤ α; Holm's step-down over the marginal screen at α/2 (all of α for the marginal method) and Bonferroni over the set search at α/2, so the chance of any false feature or group is at most α."
	case "bh":
		return "Adjusted (bh): a finding when adjusted ≤ α; Benjamini–Hochberg over the marginal screen, the set search at a family-wise α/2, so the expected share of false findings is at most α (for positively dependent tests)."
	case "none":
		return "Adjusted (none): the dissertation's per-test rule, each test at α on its own; adjusted equals raw."
	}
	return "The adjustment procedure is not recorded in this table."
}

// paramText is a parameter's JSON value as a reader wants it: a string
// without its JSON quotes (gini, not "gini"; an empty one, a setting left
// to its default, as "default"), anything else as JSON writes it.
func paramText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) != nil {
		return string(raw)
	}
	if str == "" {
		return "default"
	}
	return str
}

// structFields flattens v's JSON object into name → value text.
func structFields(v any) (map[string]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, raw := range m {
		out[k] = paramText(raw)
	}
	return out, nil
}

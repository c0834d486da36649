package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/schemas"
)

// Dependence is a dependence report (dissertation ch. 5): every feature's
// marginal test against the label (Algorithm 1) and the groups the search
// found among the rest, as `forestd analyze --out` writes it and the
// daemon's analyze stage publishes it (schemas.DependenceReport).
type Dependence struct {
	Stat   string `json:"stat"`
	Method string `json:"method"`
	Alpha  Number `json:"alpha"` // NaN (null) when unknown
	// Adjust is the analysis' false-discovery control: holm, bh or none
	// (the per-test rule; also every report written before adjusted
	// p-values existed); "" when unknown (a table without metadata).
	Adjust string `json:"adjust"`
	// Task is the label's: classification or regression ("" when unknown).
	Task string `json:"task"`
	Seed uint64 `json:"seed"`
	Rows int    `json:"rows"`
	// Features in report order.
	Features []DependenceFeature `json:"features"`
	Groups   []DependenceGroup   `json:"groups"`
}

// DependenceFeature is one feature's marginal test.
type DependenceFeature struct {
	Name string `json:"name"`
	// Group is the labelling of dissertation Table 5.3: −1 marginally
	// dependent, 0 in no group, g ≥ 1 a member of group g.
	Group     int     `json:"group"`
	Kind      string  `json:"kind"` // marginal, none, mds or sds
	Statistic float64 `json:"statistic"`
	PValue    float64 `json:"p_value"`
	// Adjusted is the p-value the analysis adjusted for its family (a
	// finding when ≤ α; the raw p-value under the per-test rule).
	Adjusted float64 `json:"p_adjusted"`
	B        int     `json:"b"`
	N        int     `json:"n_perms"`
}

// DependenceGroup is one discovered MDS or SDS.
type DependenceGroup struct {
	Name      string   `json:"name"` // g1, g2, …
	Features  []string `json:"features"`
	Kind      string   `json:"kind"`
	Statistic float64  `json:"statistic"`
	PValue    float64  `json:"p_value"`
	Adjusted  float64  `json:"p_adjusted"`
	B         int      `json:"b"`
	N         int      `json:"n_perms"`
}

// MarshalJSON writes undefined statistics (NaN) as null.
func (f DependenceFeature) MarshalJSON() ([]byte, error) {
	type plain DependenceFeature
	return json.Marshal(struct {
		plain
		Statistic *float64 `json:"statistic"`
	}{plain(f), finite(f.Statistic)})
}

// MarshalJSON writes an undefined statistic (NaN) as null.
func (g DependenceGroup) MarshalJSON() ([]byte, error) {
	type plain DependenceGroup
	return json.Marshal(struct {
		plain
		Statistic *float64 `json:"statistic"`
	}{plain(g), finite(g.Statistic)})
}

// Number is a float64 that marshals NaN and infinities (undefined or
// unknown values) as JSON null.
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// Marginal lists the marginally dependent features (Group −1).
func (d *Dependence) Marginal() []DependenceFeature {
	var out []DependenceFeature
	for _, f := range d.Features {
		if f.Group < 0 {
			out = append(out, f)
		}
	}
	return out
}

// ReadDependence reads a dependence report from its records (one or more,
// following schemas.DependenceReport, v2 or v1): the raw and the adjusted
// p-values the analysis computed. A v1 report (before false-discovery
// control) used the per-test rule: its adjusted p-values are the raw ones.
func ReadDependence(recs []arrow.Record) (*Dependence, error) {
	if len(recs) == 0 {
		return nil, errors.New("report: no dependence report records")
	}
	md := recs[0].Schema().Metadata()
	get := func(k string) string {
		if i := md.FindKey(k); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	// CSV files (and Parquet files written before forestd kept the schema
	// metadata in their key-value metadata) have none: then the columns
	// identify the report, and the analysis' settings are unknown (Alpha
	// NaN, Rows 0).
	d := &Dependence{Stat: get(schemas.MetaReportStat), Method: get(schemas.MetaReportMethod), Alpha: Number(math.NaN()),
		Adjust: get(schemas.MetaReportAdjust), Task: get(schemas.MetaReportTask)}
	if s := get("forestd.schema"); s != "" {
		switch s {
		case "dependence-report/v1":
			d.Adjust = "none"
		case "dependence-report/v2":
		default:
			return nil, fmt.Errorf("report: not a dependence report (forestd.schema %q, want dependence-report/v2 or v1)", s)
		}
		a, err := strconv.ParseFloat(get(schemas.MetaReportAlpha), 64)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", schemas.MetaReportAlpha, err)
		}
		d.Alpha = Number(a)
		if d.Seed, err = strconv.ParseUint(get(schemas.MetaReportSeed), 10, 64); err != nil {
			return nil, fmt.Errorf("report: %s: %w", schemas.MetaReportSeed, err)
		}
		if d.Rows, err = strconv.Atoi(get(schemas.MetaReportRows)); err != nil {
			return nil, fmt.Errorf("report: %s: %w", schemas.MetaReportRows, err)
		}
	}
	for _, r := range recs {
		if err := d.add(r); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func (d *Dependence) add(r arrow.Record) error {
	sc := r.Schema()
	col := func(name string) (arrow.Array, error) {
		ix := sc.FieldIndices(name)
		if len(ix) == 0 {
			return nil, fmt.Errorf("report: dependence report has no column %s", name)
		}
		return r.Column(ix[0]), nil
	}
	names := [9]string{schemas.ColReportRecord, schemas.ColReportName, schemas.ColReportMembers, schemas.ColReportGroup,
		schemas.ColReportKind, schemas.ColReportStatistic, schemas.ColReportPValue, schemas.ColReportB, schemas.ColReportN}
	var cols [9]arrow.Array
	for i, name := range names {
		c, err := col(name)
		if err != nil {
			return err
		}
		cols[i] = c
	}
	adjusted, _ := col(schemas.ColReportPAdjusted) // nil: a v1 table (the per-test rule)
	str := func(k, i int) (string, error) {
		if s, ok := cols[k].(*array.String); ok {
			return s.Value(i), nil
		}
		return "", fmt.Errorf("report: dependence report column %s is %s, want utf8", names[k], cols[k].DataType())
	}
	num := func(name string, c arrow.Array, i int) (float64, error) {
		if c.IsNull(i) {
			return math.NaN(), nil
		}
		switch a := c.(type) {
		case *array.Float64:
			return a.Value(i), nil
		case *array.Int64:
			return float64(a.Value(i)), nil
		case *array.Int32:
			return float64(a.Value(i)), nil
		}
		return 0, fmt.Errorf("report: dependence report column %s is %s, want a number", name, c.DataType())
	}
	for i := 0; i < int(r.NumRows()); i++ {
		var vals [9]float64
		for k := 3; k < 9; k++ {
			if k == 4 {
				continue
			}
			v, err := num(names[k], cols[k], i)
			if err != nil {
				return err
			}
			vals[k] = v
		}
		rec, err := str(0, i)
		if err != nil {
			return err
		}
		name, err := str(1, i)
		if err != nil {
			return err
		}
		kind, err := str(4, i)
		if err != nil {
			return err
		}
		adj := vals[6]
		if adjusted != nil {
			if adj, err = num(schemas.ColReportPAdjusted, adjusted, i); err != nil {
				return err
			}
		}
		switch rec {
		case schemas.RecordFeature:
			d.Features = append(d.Features, DependenceFeature{Name: name, Group: int(vals[3]), Kind: kind,
				Statistic: vals[5], PValue: vals[6], Adjusted: adj, B: int(vals[7]), N: int(vals[8])})
		case schemas.RecordGroup:
			m, err := str(2, i)
			if err != nil {
				return err
			}
			var members []string
			if err := json.Unmarshal([]byte(m), &members); err != nil {
				return fmt.Errorf("report: group %s: members %q: %w", name, m, err)
			}
			d.Groups = append(d.Groups, DependenceGroup{Name: name, Features: members, Kind: kind,
				Statistic: vals[5], PValue: vals[6], Adjusted: adj, B: int(vals[7]), N: int(vals[8])})
		default:
			return fmt.Errorf("report: dependence report row %d: record %q, want feature or group", i, rec)
		}
	}
	return nil
}

var pvalTmpl = parse("pvalues", `<svg xmlns="http://www.w3.org/2000/svg" class="chart pvalues" width="{{.W}}" height="{{c .H}}" viewBox="0 0 {{.W}} {{c .H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="features by p-value">
<title>features by marginal p-value (−log10 p; bar raw, tick adjusted)</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">Features by marginal p-value (−log10 p: bar raw, black tick adjusted{{if .Adjust}}, {{.Adjust}}{{end}})</text>
{{- range .Rows}}
<g class="feature"><text x="{{c $.LabelX}}" y="{{c .TY}}" text-anchor="end">{{.Short}}</text><rect class="bar" x="{{c $.X0}}" y="{{c .Y}}" width="{{c .Wd}}" height="12" fill="{{.Fill}}" data-label="{{.Name}}"><title>{{.Name}}: p = {{num .P}}, adjusted {{num .Adj}}, {{.Kind}}</title></rect><line class="adjusted" x1="{{c .AX}}" y1="{{c .Y}}" x2="{{c .AX}}" y2="{{c .Y2}}" stroke="#000" stroke-width="2"/><text x="{{c $.ValueX}}" y="{{c .TY}}" fill="#333">{{num .P}} / {{num .Adj}}</text></g>
{{- end}}
{{- if .HasAlpha}}
<line class="alpha" x1="{{c .AlphaX}}" y1="28" x2="{{c .AlphaX}}" y2="{{c .Bottom}}" stroke="#c0392b" stroke-dasharray="4 3"/><text x="{{c .AlphaX}}" y="{{c .AlphaY}}" text-anchor="middle" fill="#c0392b">α = {{num .Alpha}}</text>
{{- end}}
{{- if .More}}
<text x="{{c .LabelX}}" y="{{c .MoreY}}" text-anchor="end" fill="#666">… {{.More}} more</text>
{{- end}}
</svg>`)

type pvalRow struct {
	Name, Short, Kind, Fill string
	P, Adj                  float64
	Y, Y2, TY, Wd, AX       float64
}

// PValues draws the features by marginal p-value, smallest first (at most
// 40): a bar of −log10 p, a tick at −log10 of the adjusted p-value, and
// the significance level α as a dashed line. Marginally dependent features
// are coloured apart from group members and the rest.
func PValues(d *Dependence) (template.HTML, error) {
	fs := slices.Clone(d.Features)
	slices.SortStableFunc(fs, func(a, b DependenceFeature) int { return cmp.Compare(nanHigh(a.PValue), nanHigh(b.PValue)) })
	more := 0
	if len(fs) > 40 {
		more, fs = len(fs)-40, fs[:40]
	}
	const top, rowH, labelW, valueW = 30.0, 16.0, 180.0, 110.0
	nl := func(p float64) float64 {
		if math.IsNaN(p) || p <= 0 {
			return 0
		}
		return -math.Log10(p)
	}
	hi := nl(float64(d.Alpha))
	for _, f := range fs {
		hi = math.Max(hi, nl(f.PValue))
	}
	if hi == 0 {
		hi = 1
	}
	ax := axis{lo: 0, hi: hi * 1.05, p0: labelW + 8, p1: chartWidth - valueW}
	rows := make([]pvalRow, len(fs))
	for i, f := range fs {
		y := top + float64(i)*rowH
		fill := "#bbb"
		switch {
		case f.Group < 0:
			fill = PaletteColor(0)
		case f.Group > 0:
			fill = PaletteColor(f.Group)
		}
		rows[i] = pvalRow{Name: f.Name, Short: short(f.Name, 26), Kind: f.Kind, Fill: fill, P: f.PValue, Adj: f.Adjusted,
			Y: y, Y2: y + 12, TY: y + 10, Wd: math.Max(ax.at(nl(f.PValue))-ax.p0, 0.5), AX: ax.at(nl(f.Adjusted))}
	}
	bottom := top + float64(len(fs))*rowH
	h := bottom + 24
	if more > 0 {
		h += rowH
	}
	return render(pvalTmpl, map[string]any{"W": chartWidth, "H": h, "Rows": rows, "LabelX": labelW, "X0": ax.p0,
		"ValueX": chartWidth - valueW + 6, "AlphaX": ax.at(nl(float64(d.Alpha))), "AlphaY": bottom + 14, "Alpha": float64(d.Alpha),
		"Bottom": bottom, "More": more, "MoreY": bottom + 28, "HasAlpha": !math.IsNaN(float64(d.Alpha)), "Adjust": d.Adjust})
}

func nanHigh(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

var graphTmpl = parse("groups", `<svg xmlns="http://www.w3.org/2000/svg" class="chart groups" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="feature groups">
<title>the label, its marginally dependent features and the discovered groups</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">Dependence graph: label, marginal features, groups ({{.Method}})</text>
{{- range .Edges}}
<line class="edge {{.Class}}" x1="{{c .X1}}" y1="{{c .Y1}}" x2="{{c .X2}}" y2="{{c .Y2}}" stroke="{{.Color}}" stroke-width="{{.Width}}"{{if .Dash}} stroke-dasharray="3 3"{{end}}/>
{{- end}}
<circle class="label-node" cx="{{c .CX}}" cy="{{c .CY}}" r="16" fill="#333"/><text x="{{c .CX}}" y="{{c .CY}}" dy="4" text-anchor="middle" fill="#fff">label</text>
{{- range .Nodes}}
<g class="node" data-group="{{.Group}}"><circle cx="{{c .X}}" cy="{{c .Y}}" r="7" fill="{{.Color}}"><title>{{.Name}} ({{.Kind}})</title></circle><text x="{{c .TX}}" y="{{c .TY}}" text-anchor="{{.Anchor}}">{{.Short}}</text></g>
{{- end}}
{{- range .Legend}}
<rect x="{{c .X}}" y="{{c .Y}}" width="10" height="10" fill="{{.Color}}"/><text x="{{c .TX}}" y="{{c .TY}}">{{.Text}}</text>
{{- end}}
{{- if .More}}
<text class="more" x="{{c .CX}}" y="{{c .MoreY}}" text-anchor="middle" fill="#666">{{.More}}</text>
{{- end}}
{{- if not .Nodes}}
<text x="{{c .CX}}" y="{{c .EmptyY}}" text-anchor="middle" fill="#666">no dependent feature found</text>
{{- end}}
</svg>`)

type graphNode struct {
	Name, Short, Kind, Color, Anchor string
	Group                            int
	X, Y, TX, TY                     float64
}

type graphEdge struct {
	X1, Y1, X2, Y2 float64
	Color, Class   string
	Width          float64
	Dash           bool
}

// legendItem is an entry of a chart's legend: a 10×10 swatch at (X, Y)
// and its text at (TX, TY).
type legendItem struct {
	X, TX, Y, TY float64
	Color, Text  string
}

// legendRow is the height of a row of legend entries.
const legendRow = 16.0

// wrapLegend lays the legend out left to right from (x0, y0), an entry
// taking 14 + perRune per rune of its text + gap, and starts a row
// legendRow below at x0 when an entry would pass right (an entry wider
// than the whole row still takes a row of its own). It returns the number
// of rows below the first, by which the chart grows.
func wrapLegend(items []legendItem, x0, y0, right, perRune, gap float64) int {
	x, row := x0, 0
	for i := range items {
		wd := 14 + perRune*float64(len([]rune(items[i].Text))) + gap
		if x > x0 && x+wd > right {
			x, row = x0, row+1
		}
		items[i].X, items[i].TX, items[i].Y = x, x+14, y0+float64(row)*legendRow
		items[i].TY = items[i].Y + 9
		x += wd
	}
	return row
}

// The graph draws at most graphMarginal marginal features (the smallest
// p-values) and the first graphGroups groups; a note counts the rest.
const (
	graphMarginal = 40
	graphGroups   = 12
)

// Groups draws the analysis as a graph of features: the label in the
// centre, each marginally dependent feature joined to it, and each group's
// members on the circle joined to one another (a group is dependent on the
// label only jointly, dashed to the label from its first member).
// Features in no group and not marginal are left out. A screen of many
// features draws the graphMarginal marginal features of least p-value and
// the first graphGroups groups, and says how many more the report lists.
func Groups(d *Dependence) (template.HTML, error) {
	marg := d.Marginal()
	slices.SortStableFunc(marg, func(a, b DependenceFeature) int { return cmp.Compare(nanHigh(a.PValue), nanHigh(b.PValue)) })
	moreMarg, groups, moreGroups := 0, d.Groups, 0
	if len(marg) > graphMarginal {
		moreMarg, marg = len(marg)-graphMarginal, marg[:graphMarginal]
	}
	if len(groups) > graphGroups {
		moreGroups, groups = len(groups)-graphGroups, groups[:graphGroups]
	}
	var nodes []graphNode
	pos := map[string]int{}
	for _, f := range marg {
		pos[f.Name] = len(nodes)
		nodes = append(nodes, graphNode{Name: f.Name, Kind: "marginal", Group: -1, Color: PaletteColor(0)})
	}
	for g, gr := range groups {
		for _, name := range gr.Features {
			if _, dup := pos[name]; dup {
				continue
			}
			pos[name] = len(nodes)
			nodes = append(nodes, graphNode{Name: name, Kind: gr.Kind + " " + gr.Name, Group: g + 1, Color: PaletteColor(g + 1)})
		}
	}
	const cx, cy, w = chartWidth / 2.0, 250.0, float64(chartWidth)
	h := 520.0
	rad := 170.0
	for i := range nodes {
		a := 2*math.Pi*float64(i)/float64(max(len(nodes), 1)) - math.Pi/2
		n := &nodes[i]
		n.X, n.Y = cx+rad*math.Cos(a), cy+rad*math.Sin(a)
		n.TX, n.TY = cx+(rad+12)*math.Cos(a), cy+(rad+12)*math.Sin(a)+4
		n.Anchor = "start"
		if math.Cos(a) < -0.2 {
			n.Anchor = "end"
		} else if math.Abs(math.Cos(a)) <= 0.2 {
			n.Anchor = "middle"
			n.TY = cy + (rad+18)*math.Sin(a) + 4
		}
		n.Short = short(n.Name, 20)
	}
	var edges []graphEdge
	for _, n := range nodes {
		if n.Group < 0 {
			edges = append(edges, graphEdge{X1: cx, Y1: cy, X2: n.X, Y2: n.Y, Color: PaletteColor(0), Class: "marginal", Width: 1.5})
		}
	}
	for g, gr := range groups {
		for a := 0; a < len(gr.Features); a++ {
			na := nodes[pos[gr.Features[a]]]
			if a == 0 {
				edges = append(edges, graphEdge{X1: cx, Y1: cy, X2: na.X, Y2: na.Y, Color: PaletteColor(g + 1), Class: "joint", Width: 1, Dash: true})
			}
			for b := a + 1; b < len(gr.Features); b++ {
				nb := nodes[pos[gr.Features[b]]]
				edges = append(edges, graphEdge{X1: na.X, Y1: na.Y, X2: nb.X, Y2: nb.Y, Color: PaletteColor(g + 1), Class: "group", Width: 2.5})
			}
		}
	}
	legend := []legendItem{{Color: PaletteColor(0), Text: "marginal"}}
	for g, gr := range groups {
		legend = append(legend, legendItem{Color: PaletteColor(g + 1), Text: fmt.Sprintf("%s (%s, p = %s)", short(gr.Name, 20), gr.Kind, Num(gr.PValue))})
	}
	// the legend at the bottom, in rows that fit the width
	row := wrapLegend(legend, 8, h-22, w, 6.5, 14)
	var note []string
	if moreMarg > 0 {
		note = append(note, fmt.Sprintf("%d more marginal features", moreMarg))
	}
	if moreGroups > 0 {
		note = append(note, fmt.Sprintf("%d more groups", moreGroups))
	}
	more := ""
	if note != nil {
		more = "… and " + strings.Join(note, " and ") + " (in the report's table)"
	}
	h += float64(row) * legendRow // the rows below the first
	return render(graphTmpl, map[string]any{"W": w, "H": h, "Method": d.Method, "Edges": edges, "Nodes": nodes, "CX": cx, "CY": cy,
		"Legend": legend, "EmptyY": cy + 40,
		"More": more, "MoreY": cy + rad + 44})
}

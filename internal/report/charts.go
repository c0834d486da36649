package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"

	"github.com/forestd/forestd/arrowforest/projection"
)

// Bar is one labelled value of a bar chart.
type Bar struct {
	Label string
	Value float64
}

// BarChart is a horizontal bar chart, largest value first.
type BarChart struct {
	Title string
	// Class is added to the <svg> element's class (e.g. "importances").
	Class string
	Bars  []Bar
	// Max bars drawn (0: 40); the rest are counted in a note.
	Max int
}

var barsTmpl = parse("bars", `<svg xmlns="http://www.w3.org/2000/svg" class="chart bars {{.Class}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="{{.Title}}">
<title>{{.Title}}</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">{{.Title}}</text>
{{- range .Bars}}
<g class="row"><text x="{{c $.LabelX}}" y="{{c .TY}}" text-anchor="end">{{.Short}}</text><rect class="bar" x="{{c .X}}" y="{{c .Y}}" width="{{c .Wd}}" height="{{c $.BarH}}" fill="{{.Fill}}" data-label="{{.Label}}" data-value="{{num .Value}}"><title>{{.Label}}: {{num .Value}}</title></rect><text x="{{c .VX}}" y="{{c .TY}}" fill="#333">{{num .Value}}</text></g>
{{- end}}
{{- if .Zero}}
<line x1="{{c .ZeroX}}" y1="28" x2="{{c .ZeroX}}" y2="{{c .Bottom}}" stroke="#666" stroke-width="1"/>
{{- end}}
{{- if .More}}
<text class="more" x="{{c .LabelX}}" y="{{c .MoreY}}" text-anchor="end" fill="#666">… {{.More}} more</text>
{{- end}}
{{- if not .Bars}}
<text x="8" y="44" fill="#666">no values</text>
{{- end}}
</svg>`)

type barRow struct {
	Bar
	Short        string
	X, Y, Wd, TY float64
	VX           float64
	Fill         string
}

// Bars draws c as SVG: one <rect class="bar"> per drawn bar, carrying its
// label and value in data-label and data-value.
func Bars(c BarChart) (template.HTML, error) {
	limit := c.Max
	if limit <= 0 {
		limit = 40
	}
	bars := slices.Clone(c.Bars)
	slices.SortStableFunc(bars, func(a, b Bar) int { return cmp.Compare(nanLow(b.Value), nanLow(a.Value)) })
	more := 0
	if len(bars) > limit {
		more = len(bars) - limit
		bars = bars[:limit]
	}
	const top, rowH, barH, labelW, valueW = 30.0, 16.0, 12.0, 200.0, 60.0
	vals := make([]float64, len(bars))
	for i, b := range bars {
		vals[i] = b.Value
	}
	lo, hi, _ := span(vals)
	lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	ax := axis{lo: lo, hi: hi, p0: labelW + 8, p1: chartWidth - valueW}
	if hi == lo {
		ax.hi = lo + 1
	}
	zero := ax.at(0)
	rows := make([]barRow, len(bars))
	for i, b := range bars {
		y := top + float64(i)*rowH
		v := b.Value
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		x0, x1 := zero, ax.at(v)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		fill := PaletteColor(0)
		if v < 0 {
			fill = PaletteColor(3)
		}
		rows[i] = barRow{Bar: b, Short: short(b.Label, 30), X: x0, Y: y, Wd: math.Max(x1-x0, 0.5), TY: y + barH - 2,
			VX: math.Max(x1, zero) + 4, Fill: fill}
	}
	bottom := top + float64(len(bars))*rowH
	h := bottom + 8
	if more > 0 {
		h += rowH
	}
	if len(bars) == 0 {
		h = 56
	}
	return render(barsTmpl, map[string]any{"Title": c.Title, "Class": c.Class, "W": chartWidth, "H": coord(h), "Bars": rows,
		"LabelX": labelW, "BarH": barH, "Zero": lo < 0, "ZeroX": zero, "Bottom": bottom, "More": more, "MoreY": bottom + 12})
}

func nanLow(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	return v
}

// HeatmapChart is an importance map on a feature layout: one panel per
// channel of H×W cells (the MORF paper's Fig. 5), coloured by Viridis from
// the smallest to the largest value.
type HeatmapChart struct {
	Title  string
	Class  string
	Layout projection.Topology
	Values []float64 // one per feature, in feature order
	// Names, when given, label each cell's tooltip (one per feature).
	Names []string
}

var heatTmpl = parse("heatmap", `<svg xmlns="http://www.w3.org/2000/svg" class="chart heatmap {{.Class}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="{{.Title}}">
<title>{{.Title}}</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">{{.Title}}</text>
{{- range .Cells}}
<rect class="cell" x="{{c .X}}" y="{{c .Y}}" width="{{c $.Cell}}" height="{{c $.Cell}}" fill="{{.Fill}}">{{if .Name}}<title>{{.Name}}: {{num .V}}</title>{{end}}</rect>
{{- end}}
{{- range .Scale}}
<rect class="scale" x="{{c .X}}" y="{{c $.ScaleY}}" width="{{c $.ScaleW}}" height="10" fill="{{.Fill}}"/>
{{- end}}
<text x="8" y="{{c .LabelY}}">{{num .Lo}}</text>
<text x="{{c .HiX}}" y="{{c .LabelY}}" text-anchor="end">{{num .Hi}}</text>
</svg>`)

type heatCell struct {
	X, Y, V float64
	Fill    string
	Name    string
}

// Heatmap draws c as SVG: one <rect class="cell"> per feature.
func Heatmap(c HeatmapChart) (template.HTML, error) {
	l := c.Layout
	if err := l.Validate(len(c.Values)); err != nil {
		return "", fmt.Errorf("report: heatmap: %w", err)
	}
	if c.Names != nil && len(c.Names) != len(c.Values) {
		return "", fmt.Errorf("report: heatmap: %d names for %d values", len(c.Names), len(c.Values))
	}
	cell := math.Max(2, math.Floor(240/float64(max(l.H, l.W))))
	const margin, top = 8.0, 28.0
	pw, ph := float64(l.W)*cell, float64(l.H)*cell
	w := math.Max(margin+float64(l.C)*(pw+margin), 240)
	lo, hi, _ := span(c.Values)
	rng := hi - lo
	if rng <= 0 {
		rng = 1
	}
	cells := make([]heatCell, 0, len(c.Values))
	for ch := 0; ch < l.C; ch++ {
		x0 := margin + float64(ch)*(pw+margin)
		for r := 0; r < l.H; r++ {
			for q := 0; q < l.W; q++ {
				j := l.Feature(ch, r, q)
				v := c.Values[j]
				hc := heatCell{X: x0 + float64(q)*cell, Y: top + float64(r)*cell, V: v, Fill: hex(Viridis((v - lo) / rng))}
				if c.Names != nil {
					hc.Name = c.Names[j]
				}
				cells = append(cells, hc)
			}
		}
	}
	const steps = 32
	scaleW := (w - 2*margin) / steps
	scale := make([]heatCell, steps)
	for i := range scale {
		scale[i] = heatCell{X: margin + float64(i)*scaleW, Fill: hex(Viridis(float64(i) / (steps - 1)))}
	}
	scaleY := top + ph + margin
	return render(heatTmpl, map[string]any{"Title": c.Title, "Class": c.Class, "W": coord(w), "H": coord(scaleY + 30),
		"Cells": cells, "Cell": cell, "Scale": scale, "ScaleY": scaleY, "ScaleW": scaleW + 0.05,
		"LabelY": scaleY + 24, "HiX": w - margin, "Lo": lo, "Hi": hi})
}

// Series is one line of a LineChart; NaN values leave gaps.
type Series struct {
	Name string
	Y    []float64
}

// LineChart is one or more series over shared x values.
type LineChart struct {
	Title string
	Class string
	// X holds the x values (increasing); XUnit is appended to the axis
	// labels (e.g. "s").
	X      []float64
	XUnit  string
	Series []Series
	// Points draws a marker at every value (for short series such as a
	// model history). Without it a value alone between gaps (or at an
	// end next to a gap) is still drawn as a marker, since a line of one
	// point draws nothing.
	Points bool
	// YMin0 starts the y axis at zero (rates, counts).
	YMin0 bool
	// XInteger labels the x axis at whole numbers only (model versions:
	// no version 2.5 between 2 and 3).
	XInteger bool
}

var linesTmpl = parse("lines", `<svg xmlns="http://www.w3.org/2000/svg" class="chart lines {{.Class}}" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="{{.Title}}">
<title>{{.Title}}</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">{{.Title}}</text>
<rect x="{{c .L}}" y="{{c .T}}" width="{{c .PW}}" height="{{c .PH}}" fill="none" stroke="#ccc"/>
{{- range .YTicks}}
<line x1="{{c $.L}}" y1="{{c .P}}" x2="{{c $.R}}" y2="{{c .P}}" stroke="#eee"/><text x="{{c $.YLabelX}}" y="{{c .P}}" text-anchor="end" dy="4">{{.Label}}</text>
{{- end}}
{{- range .XTicks}}
<text x="{{c .P}}" y="{{c $.XLabelY}}" text-anchor="middle">{{.Label}}</text>
{{- end}}
{{- range $i, $s := .Lines}}
{{- range .Paths}}
<polyline class="series" fill="none" stroke="{{$s.Color}}" stroke-width="1.5" points="{{.}}"/>
{{- end}}
{{- range .Points}}
<circle class="point" cx="{{c .X}}" cy="{{c .Y}}" r="3" fill="{{$s.Color}}"><title>{{$s.Name}}: {{num .V}}</title></circle>
{{- end}}
<rect x="{{c .Legend.X}}" y="{{c .Legend.Y}}" width="10" height="10" fill="{{.Color}}"/><text x="{{c .Legend.TX}}" y="{{c .Legend.TY}}">{{.Legend.Text}}{{if ne .Legend.Text .Name}}<title>{{.Name}}</title>{{end}}</text>
{{- end}}
{{- if .Empty}}
<text x="{{c .MidX}}" y="{{c .MidY}}" text-anchor="middle" fill="#666">no data yet</text>
{{- end}}
</svg>`)

type linePoint struct{ X, Y, V float64 }

// legendRunes is the longest series name a line chart's legend shows
// whole: an entry of a longer one would not fit a row.
const legendRunes = 60

type lineSeries struct {
	Name   string
	Color  string
	Paths  []string
	Points []linePoint
	Legend legendItem
}

// Lines draws c as SVG: a <polyline class="series"> per unbroken run of
// two or more values of each series, and a <circle class="point"> per
// value with Points, or else per run of one value.
func Lines(c LineChart) (template.HTML, error) {
	for _, s := range c.Series {
		if len(s.Y) != len(c.X) {
			return "", fmt.Errorf("report: line chart %q: series %q has %d values for %d x values", c.Title, s.Name, len(s.Y), len(c.X))
		}
	}
	const l, t, r, b = 56.0, 28.0, 12.0, 44.0
	const h = 200.0
	ys := make([][]float64, len(c.Series))
	for i, s := range c.Series {
		ys[i] = s.Y
	}
	ylo, yhi, ok := span(ys...)
	if c.YMin0 {
		ylo = math.Min(ylo, 0)
	}
	if yhi == ylo {
		yhi = ylo + 1
	}
	xlo, xhi, _ := span(c.X)
	xa := axis{lo: xlo, hi: xhi, p0: l, p1: chartWidth - r}
	ya := axis{lo: ylo, hi: yhi, p0: h - b, p1: t}
	// the legend below the x axis, in rows that fit the width (the chart
	// grows by the rows below the first)
	legend := make([]legendItem, len(c.Series))
	for i, s := range c.Series {
		legend[i].Text = short(s.Name, legendRunes) // the tooltip has it whole
	}
	rows := wrapLegend(legend, l, h-8, chartWidth, 7, 16)
	lines := make([]lineSeries, len(c.Series))
	for i, s := range c.Series {
		ls := lineSeries{Name: s.Name, Color: PaletteColor(i), Legend: legend[i]}
		var cur []byte
		var run []linePoint // the values of cur
		end := func() {
			switch {
			case len(run) > 1:
				ls.Paths = append(ls.Paths, string(cur))
				if c.Points {
					ls.Points = append(ls.Points, run...)
				}
			case len(run) == 1: // a polyline of one point draws nothing
				ls.Points = append(ls.Points, run[0])
			}
			cur, run = cur[:0], run[:0]
		}
		for k, v := range s.Y {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(c.X[k]) {
				end()
				continue
			}
			x, y := xa.at(c.X[k]), ya.at(v)
			if len(run) > 0 {
				cur = append(cur, ' ')
			}
			cur = append(cur, coord(x)+","+coord(y)...)
			run = append(run, linePoint{X: x, Y: y, V: v})
		}
		end()
		lines[i] = ls
	}
	var xt []tick
	if len(c.X) > 0 {
		n := min(4, max(len(c.X)-1, 1))
		ticks := xa.ticks(n)
		if c.XInteger {
			ticks = xa.intTicks(4)
		}
		for _, tk := range ticks {
			tk.Label += c.XUnit
			xt = append(xt, tk)
		}
	}
	return render(linesTmpl, map[string]any{"Title": c.Title, "Class": c.Class, "W": chartWidth, "H": h + 18 + float64(rows)*legendRow,
		"L": l, "T": t, "R": chartWidth - r, "PW": chartWidth - r - l, "PH": h - b - t, "YTicks": ya.ticks(4), "YLabelX": l - 4,
		"XTicks": xt, "XLabelY": h - b + 14, "Lines": lines,
		"Empty": !ok, "MidX": (l + chartWidth - r) / 2, "MidY": (t + h - b) / 2})
}

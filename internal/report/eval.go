package report

import (
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/scoring"
)

// Evaluation is a model's predictions on labelled data laid out for
// pictures: a confusion matrix (classification) or the predicted and
// actual values (regression), beside scoring's summary.
type Evaluation struct {
	Label string
	// Summary is scoring.Model.Evaluate's result on the same data.
	Summary *scoring.Evaluation
	// Classification: Classes names the matrix's rows and columns (the
	// model's classes, then classes only the data has); Confusion[a][p]
	// counts rows of actual class a predicted as p.
	// With more than MaxConfusionClasses classes, the last row and column
	// pool the Pooled classes with the fewest actual rows.
	Classes   []string
	Confusion [][]int64
	Pooled    int
	// Regression (one output): the prediction and the label of every
	// labelled row.
	Pred, Actual []float64
}

// Evaluate evaluates m on recs (scoring.Model.EvaluateRows: one
// prediction pass) and tabulates predictions against the label; rows with
// a null or NaN label are left out. For a model with several outputs only
// the summary is filled (label may then be empty: the model's own
// columns).
func Evaluate(m *scoring.Model, recs []arrow.Record, label string, threads int) (*Evaluation, error) {
	if len(recs) == 0 {
		return nil, scoring.ErrNoRows
	}
	ev := &Evaluation{Label: label}
	if m.Targets() != nil {
		var labels []string
		if label != "" {
			labels = frame.SplitLabel(label) // "y0,y1,y2", as train --label wrote it
		}
		sum, err := m.Evaluate(recs, labels, threads)
		if err != nil {
			return nil, err
		}
		ev.Summary = sum
		return ev, nil
	}
	if label == "" {
		return nil, errors.New("report: evaluation needs the label column")
	}
	sum, rows, err := m.EvaluateRows(recs, label, threads)
	if err != nil {
		return nil, err
	}
	ev.Summary = sum
	if !sum.Classification {
		ev.Actual, ev.Pred = rows.ActualValues, rows.PredictedValues
		return ev, nil
	}
	ev.Classes = append(ev.Classes, m.Classes()...)
	classIdx := map[string]int{}
	for i, c := range ev.Classes {
		classIdx[c] = i
	}
	class := func(s string) int {
		i, ok := classIdx[s]
		if !ok {
			i = len(ev.Classes)
			ev.Classes = append(ev.Classes, s)
			classIdx[s] = i
		}
		return i
	}
	type pair struct{ a, p int }
	pairs := make([]pair, len(rows.Actual))
	for i := range rows.Actual {
		pairs[i] = pair{class(rows.Actual[i]), class(rows.Predicted[i])}
	}
	// Beyond MaxConfusionClasses the matrix keeps the classes with the
	// most rows and pools the others into one row and column.
	to := pooledClasses(ev.Classes, func(yield func(int)) {
		for _, p := range pairs {
			yield(p.a)
		}
	})
	if to != nil {
		kept := make([]string, 0, MaxConfusionClasses)
		for i, c := range ev.Classes {
			if to[i] < MaxConfusionClasses-1 {
				kept = append(kept, c)
			}
		}
		ev.Pooled = len(ev.Classes) - len(kept)
		ev.Classes = append(kept, fmt.Sprintf("(%d other classes)", ev.Pooled))
		for i := range pairs {
			pairs[i] = pair{to[pairs[i].a], to[pairs[i].p]}
		}
	}
	k := len(ev.Classes)
	ev.Confusion = make([][]int64, k)
	for i := range ev.Confusion {
		ev.Confusion[i] = make([]int64, k)
	}
	for _, p := range pairs {
		ev.Confusion[p.a][p.p]++
	}
	return ev, nil
}

// MaxConfusionClasses bounds the confusion matrix of an Evaluation: a
// label with more classes (an identifier taken for a label, say) would
// otherwise draw k² cells.
const MaxConfusionClasses = 40

// pooledClasses maps the classes to at most MaxConfusionClasses indices:
// the MaxConfusionClasses−1 classes with the most actual rows (ties to the
// earlier class) keep their order, every other class maps to the last
// index. It returns nil when the classes fit.
func pooledClasses(classes []string, actual func(yield func(int))) []int {
	if len(classes) <= MaxConfusionClasses {
		return nil
	}
	rows := make([]int, len(classes))
	actual(func(a int) { rows[a]++ })
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rows[b] - rows[a] })
	keep := make([]bool, len(classes))
	for _, i := range order[:MaxConfusionClasses-1] {
		keep[i] = true
	}
	to := make([]int, len(classes))
	n := 0
	for i := range classes {
		if keep[i] {
			to[i] = n
			n++
		} else {
			to[i] = MaxConfusionClasses - 1
		}
	}
	return to
}

// Chart draws the evaluation: the confusion matrix or the residual plot
// (empty for a model with several outputs).
func (ev *Evaluation) Chart() (template.HTML, error) {
	switch {
	case ev.Confusion != nil:
		return Confusion(ev.Classes, ev.Confusion)
	case ev.Pred != nil:
		return Residuals(ev.Pred, ev.Actual)
	}
	return "", nil
}

var confTmpl = parse("confusion", `<svg xmlns="http://www.w3.org/2000/svg" class="chart confusion" width="{{c .W}}" height="{{c .H}}" viewBox="0 0 {{c .W}} {{c .H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="confusion matrix">
<title>confusion matrix: rows are the actual classes, columns the predicted ones</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">Confusion matrix (rows: actual, columns: predicted)</text>
{{- range .Cols}}
{{- if $.Rotate}}
<text class="col" x="{{c .X}}" y="{{c $.ColY}}" text-anchor="start" transform="rotate(-45 {{c .X}} {{c $.ColY}})">{{.Short}}<title>{{.Name}}</title></text>
{{- else}}
<text class="col" x="{{c .X}}" y="{{c $.ColY}}" text-anchor="middle">{{.Short}}<title>{{.Name}}</title></text>
{{- end}}
{{- end}}
{{- range .Rows}}
<text class="row" x="{{c $.RowX}}" y="{{c .TY}}" text-anchor="end">{{.Short}}<title>{{.Name}}</title></text>
{{- range .Cells}}
<rect class="cell" x="{{c .X}}" y="{{c .Y}}" width="{{c $.Cell}}" height="{{c $.Cell}}" fill="{{.Fill}}" stroke="#fff" data-count="{{.N}}"><title>{{.Title}}</title></rect>{{if $.Counts}}<text x="{{c .TX}}" y="{{c .TY}}" text-anchor="middle" fill="{{.Ink}}">{{.N}}</text>{{end}}
{{- end}}
{{- end}}
</svg>`)

type confCell struct {
	X, Y, TX, TY float64
	N            int64
	Fill, Ink    string
	Title        string
}

type confRow struct {
	Name, Short string
	TY          float64
	Cells       []confCell
}

// confCharW is the width of one character of a column label, an upper
// estimate at fontSize (digits and most letters are narrower).
const confCharW = 0.62 * fontSize

// cellNameRunes bounds a class name in a confusion cell's tooltip: the
// k² cells would otherwise repeat every name 2k times (the row and column
// labels' tooltips keep the full names).
const cellNameRunes = 80

// Confusion draws a confusion matrix: cell (a, p) counts rows of actual
// class a predicted as p, shaded by its share of row a.
func Confusion(classes []string, counts [][]int64) (template.HTML, error) {
	k := len(classes)
	if len(counts) != k {
		return "", fmt.Errorf("report: confusion matrix: %d rows for %d classes", len(counts), k)
	}
	cell := math.Max(8, math.Min(40, 480/float64(max(k, 1))))
	const labelW = 130.0
	// column labels stand upright over their column when every one fits
	// its width (short class names: 0, 1, 2 turned 45° read as glyphs);
	// longer ones are turned 45° with room above for the longest
	longest := 0
	for _, c := range classes {
		longest = max(longest, utf8.RuneCountInString(short(c, 18)))
	}
	rotate := float64(longest)*confCharW > cell-4
	top := 30 + fontSize + 8.0
	if rotate {
		top = 30 + math.Min(110, float64(longest)*confCharW*math.Sqrt2/2+12)
	}
	rows := make([]confRow, k)
	for a := 0; a < k; a++ {
		if len(counts[a]) != k {
			return "", fmt.Errorf("report: confusion matrix: row %d has %d cells for %d classes", a, len(counts[a]), k)
		}
		var tot int64
		for _, n := range counts[a] {
			tot += n
		}
		y := top + float64(a)*cell
		rows[a] = confRow{Name: classes[a], Short: short(classes[a], 18), TY: y + cell/2 + 4}
		for p := 0; p < k; p++ {
			n := counts[a][p]
			share := 0.0
			if tot > 0 {
				share = float64(n) / float64(tot)
			}
			x := labelW + float64(p)*cell
			ink := "#000"
			if share > 0.5 {
				ink = "#fff"
			}
			rows[a].Cells = append(rows[a].Cells, confCell{X: x, Y: y, TX: x + cell/2, TY: y + cell/2 + 4, N: n,
				Fill: hex(blues(share)), Ink: ink,
				Title: fmt.Sprintf("actual %s, predicted %s: %d (%.1f%% of the row)", short(classes[a], cellNameRunes), short(classes[p], cellNameRunes), n, 100*share)})
		}
	}
	type colLabel struct {
		Name, Short string
		X           float64
	}
	cl := make([]colLabel, k)
	for p := range cl {
		cl[p] = colLabel{Name: classes[p], Short: short(classes[p], 18), X: labelW + float64(p)*cell + cell/2}
	}
	w := labelW + float64(k)*cell + 16
	return render(confTmpl, map[string]any{"W": math.Max(w, 360), "H": top + float64(k)*cell + 12, "Cols": cl, "ColY": top - 6,
		"Rows": rows, "RowX": labelW - 6, "Cell": cell, "Counts": cell >= 24, "Rotate": rotate})
}

// blues shades a share in [0, 1] from white to dark blue.
func blues(t float64) color.RGBA {
	t = math.Max(0, math.Min(1, t))
	return color.RGBA{R: uint8(247 - t*(247-8) + 0.5), G: uint8(251 - t*(251-48) + 0.5), B: uint8(255 - t*(255-107) + 0.5), A: 255}
}

var residTmpl = parse("residuals", `<svg xmlns="http://www.w3.org/2000/svg" class="chart residuals" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="`+fontFamily+`" font-size="`+fmt.Sprint(fontSize)+`" role="img" aria-label="residual plot">
<title>residuals (actual − predicted) against the prediction</title>
<text x="8" y="18" font-size="`+fmt.Sprint(titleSize)+`" font-weight="bold">Residuals (actual − predicted) by prediction{{if .Sampled}}, {{.Drawn}} of {{.N}} rows{{end}}</text>
<rect x="{{c .L}}" y="{{c .T}}" width="{{c .PW}}" height="{{c .PH}}" fill="none" stroke="#ccc"/>
{{- range .YTicks}}
<text x="{{c $.YLabelX}}" y="{{c .P}}" text-anchor="end" dy="4">{{.Label}}</text>
{{- end}}
{{- range .XTicks}}
<text x="{{c .P}}" y="{{c $.XLabelY}}" text-anchor="middle">{{.Label}}</text>
{{- end}}
<line class="zero" x1="{{c .L}}" y1="{{c .ZeroY}}" x2="{{c .R}}" y2="{{c .ZeroY}}" stroke="#c0392b"/>
{{- range .Points}}
<circle class="point" cx="{{c .X}}" cy="{{c .Y}}" r="2" fill="#3b528b" fill-opacity="0.5"/>
{{- end}}
</svg>`)

// maxResidualPoints bounds the points a residual plot draws (every k-th
// row beyond it).
const maxResidualPoints = 2000

// Residuals draws actual − predicted against the prediction, one
// <circle class="point"> per row (every k-th row beyond 2000 rows).
func Residuals(pred, actual []float64) (template.HTML, error) {
	if len(pred) != len(actual) {
		return "", fmt.Errorf("report: residuals: %d predictions for %d labels", len(pred), len(actual))
	}
	n := len(pred)
	step := max(1, (n+maxResidualPoints-1)/maxResidualPoints)
	res := make([]float64, n)
	for i := range pred {
		res[i] = actual[i] - pred[i]
	}
	const l, t, r, b, h = 56.0, 28.0, 12.0, 30.0, 260.0
	xlo, xhi, _ := span(pred)
	ylo, yhi, _ := span(res)
	m := math.Max(math.Abs(ylo), math.Abs(yhi))
	if m == 0 {
		m = 1
	}
	if xhi == xlo {
		xhi = xlo + 1
	}
	xa := axis{lo: xlo, hi: xhi, p0: l, p1: chartWidth - r}
	ya := axis{lo: -m, hi: m, p0: h - b, p1: t}
	var pts []linePoint
	for i := 0; i < n; i += step {
		pts = append(pts, linePoint{X: xa.at(pred[i]), Y: ya.at(res[i])})
	}
	return render(residTmpl, map[string]any{"W": chartWidth, "H": h, "L": l, "T": t, "R": chartWidth - r, "PW": chartWidth - r - l,
		"PH": h - b - t, "YTicks": ya.ticks(4), "YLabelX": l - 4, "XTicks": xa.ticks(4), "XLabelY": h - b + 14,
		"ZeroY": ya.at(0), "Points": pts, "Sampled": step > 1, "Drawn": len(pts), "N": n})
}

package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"unicode/utf8"
)

// Chart geometry shared by every chart.
const (
	chartWidth = 640
	fontSize   = 11
	titleSize  = 13
	fontFamily = "sans-serif"
)

// funcs are the template helpers: coordinates with one decimal (stable
// bytes), display numbers, colours.
var funcs = template.FuncMap{
	"c":   coord,
	"num": Num,
	"fmt": fmt.Sprintf,
}

func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// Num formats a value for display: four significant digits, "–" for NaN
// (an undefined statistic) and infinities.
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// render executes t with data into an SVG fragment. The template is
// html/template, so data strings are escaped for the context they land in.
func render(t *template.Template, data any) (template.HTML, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("report: %s: %w", t.Name(), err)
	}
	return template.HTML(b.String()), nil // #nosec: built by html/template
}

func parse(name, text string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(text))
}

// short cuts a label to n runes for display (the full text goes into the
// element's <title>).
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Viridis maps t in [0, 1] onto the viridis colour map (5 anchors,
// interpolated), perceptually uniform; the importance heatmaps (SVG and
// PNG) use it.
func Viridis(t float64) color.RGBA {
	anchors := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	if math.IsNaN(t) {
		t = 0
	}
	t = math.Max(0, math.Min(1, t))
	x := t * float64(len(anchors)-1)
	i := int(x)
	if i >= len(anchors)-1 {
		i = len(anchors) - 2
	}
	f := x - float64(i)
	var c [3]uint8
	for k := 0; k < 3; k++ {
		c[k] = uint8(anchors[i][k] + f*(anchors[i+1][k]-anchors[i][k]) + 0.5)
	}
	return color.RGBA{c[0], c[1], c[2], 255}
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// palette colours series, groups and bars.
var palette = []string{"#3b528b", "#21918c", "#e3a21a", "#c0392b", "#8e44ad", "#5ec962", "#34495e", "#d35400"}

// PaletteColor is the i-th colour of the chart palette (cycling).
func PaletteColor(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// axis maps data values onto pixels.
type axis struct{ lo, hi, p0, p1 float64 }

func (a axis) at(v float64) float64 {
	if a.hi == a.lo {
		return (a.p0 + a.p1) / 2
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// span returns the finite minimum and maximum of vs (0, 0 when none).
func span(vs ...[]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	if lo > hi {
		return 0, 0, false
	}
	return lo, hi, true
}

// tick is one axis tick: its pixel position and label.
type tick struct {
	P     float64
	Label string
}

// ticks are n+1 evenly spaced ticks of a.
// intTicks are ticks at whole numbers from ⌈lo⌉ to ⌊hi⌋, at most n+1 of
// them, a whole step apart (versions 1..9: 1, 3, 5, 7, 9).
func (a axis) intTicks(n int) []tick {
	lo, hi := math.Ceil(a.lo), math.Floor(a.hi)
	if hi < lo {
		return nil
	}
	step := math.Max(1, math.Ceil((hi-lo)/float64(max(n, 1))))
	var out []tick
	for v := lo; v <= hi; v += step {
		out = append(out, tick{P: a.at(v), Label: Num(v)})
	}
	return out
}

func (a axis) ticks(n int) []tick {
	out := make([]tick, 0, n+1)
	for i := 0; i <= n; i++ {
		v := a.lo + (a.hi-a.lo)*float64(i)/float64(n)
		out = append(out, tick{P: a.at(v), Label: Num(v)})
	}
	return out
}

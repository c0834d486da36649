package report

import (
	"fmt"
	"image"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/forestd/forestd/arrowforest/projection"
)

// HeatmapPNG renders an importance map on a feature layout as a PNG: one
// panel per channel, cells scaled to at least 200 px per panel side, the
// Viridis colour bar with the value range, and a title line — the picture
// of Heatmap, for `forestd inspect --png` and `forestd report --out x.png`.
func HeatmapPNG(w io.Writer, l projection.Topology, values []float64, title string) error {
	if err := l.Validate(len(values)); err != nil {
		return fmt.Errorf("report: heatmap: %w", err)
	}
	cell := max(4, 240/max(l.H, l.W))
	pw, ph := l.W*cell, l.H*cell
	const margin, top, barH = 12, 28, 14
	width := margin + l.C*(pw+margin)
	width = max(width, 300, 2*margin+7*len(title))
	height := top + ph + margin + barH + 24
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	rng := hi - lo
	if rng <= 0 {
		rng = 1
	}
	for c := 0; c < l.C; c++ {
		x0 := margin + c*(pw+margin)
		for r := 0; r < l.H; r++ {
			for q := 0; q < l.W; q++ {
				col := Viridis((values[l.Feature(c, r, q)] - lo) / rng)
				for y := 0; y < cell; y++ {
					for x := 0; x < cell; x++ {
						img.SetRGBA(x0+q*cell+x, top+r*cell+y, col)
					}
				}
			}
		}
	}
	by := top + ph + margin
	bw := width - 2*margin
	for x := 0; x < bw; x++ {
		col := Viridis(float64(x) / float64(bw-1))
		for y := 0; y < barH; y++ {
			img.SetRGBA(margin+x, by+y, col)
		}
	}
	label(img, margin, 18, title)
	label(img, margin, by+barH+14, fmt.Sprintf("%.3g", lo))
	hiText := fmt.Sprintf("%.3g", hi)
	label(img, width-margin-7*len(hiText), by+barH+14, hiText)
	return png.Encode(w, img)
}

func label(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

package cli

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/forestd/forestd/arrowforest/projection"
)

// gridMap is a feature importance vector laid out on a feature topology
// (C channels of H×W).
type gridMap struct {
	projection.Topology
	V []float64 // one value per feature
}

func (g gridMap) at(c, r, q int) float64 { return g.V[g.Feature(c, r, q)] }

// totalVariation is Σ |m_a − m_b| over horizontally and vertically adjacent
// cells of the map normalised to sum 1 (per channel, summed): lower means a
// smoother map (the MORF paper's Fig. 5 claim, made a number).
func (g gridMap) totalVariation() float64 {
	var s float64
	for _, v := range g.V {
		s += math.Abs(v)
	}
	if s == 0 {
		return 0
	}
	var tv float64
	for c := 0; c < g.C; c++ {
		for r := 0; r < g.H; r++ {
			for q := 0; q < g.W; q++ {
				v := g.at(c, r, q)
				if q+1 < g.W {
					tv += math.Abs(v - g.at(c, r, q+1))
				}
				if r+1 < g.H {
					tv += math.Abs(v - g.at(c, r+1, q))
				}
			}
		}
	}
	return tv / s
}

// viridis is a perceptually uniform colour map (5 anchors, interpolated).
func viridis(t float64) color.RGBA {
	anchors := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
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

// writeHeatmap renders the map as a PNG: one panel per channel, cells
// scaled to at least 200 px per panel side, a colour bar with the value
// range, and a title line.
func writeHeatmap(path string, g gridMap, title string) error {
	cell := max(4, 240/max(g.H, g.W))
	pw, ph := g.W*cell, g.H*cell
	const margin, top, barH = 12, 28, 14
	width := margin + g.C*(pw+margin)
	width = max(width, 300, 2*margin+7*len(title))
	height := top + ph + margin + barH + 24
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range g.V {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	span := hi - lo
	if span <= 0 {
		span = 1
	}
	for c := 0; c < g.C; c++ {
		x0 := margin + c*(pw+margin)
		for r := 0; r < g.H; r++ {
			for q := 0; q < g.W; q++ {
				col := viridis((g.at(c, r, q) - lo) / span)
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
		col := viridis(float64(x) / float64(bw-1))
		for y := 0; y < barH; y++ {
			img.SetRGBA(margin+x, by+y, col)
		}
	}
	label(img, margin, 18, title)
	label(img, margin, by+barH+14, fmt.Sprintf("%.3g", lo))
	hiText := fmt.Sprintf("%.3g", hi)
	label(img, width-margin-7*len(hiText), by+barH+14, hiText)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func label(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

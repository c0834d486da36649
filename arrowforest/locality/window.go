package locality

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Window draws the local feature subset of one tree on a learned locality
// (dissertation §4.1, non-image data): a feature chosen uniformly at random
// together with its m−1 nearest features, where the window size m is fixed
// (Min = Max) or drawn per tree uniformly from Min..Max (§4.2, "LFS-random").
// It implements projection.Window.
type Window struct {
	D        *Distances
	Min, Max int

	order []int32
}

// NewWindow validates the window sizes against d.
func NewWindow(d *Distances, minSize, maxSize int) (*Window, error) {
	if d == nil || d.P < 1 {
		return nil, fmt.Errorf("locality: window needs feature distances")
	}
	if minSize < 1 || maxSize < minSize || maxSize > d.P {
		return nil, fmt.Errorf("locality: window sizes %d..%d outside 1..%d", minSize, maxSize, d.P)
	}
	return &Window{D: d, Min: minSize, Max: maxSize}, nil
}

// Draw appends the subset's features to dst[:0] in increasing order.
func (w *Window) Draw(rng *rand.Rand, dst []int32) []int32 {
	m := w.Min
	if w.Max > w.Min {
		m += rng.IntN(w.Max - w.Min + 1)
	}
	j := rng.IntN(w.D.P)
	w.order = w.D.orderFrom(j, w.order)
	dst = append(dst[:0], w.order[:m]...)
	slices.Sort(dst)
	return dst
}

// Clone returns a window sharing the distances but not the scratch buffer,
// for another worker.
func (w *Window) Clone() *Window { return &Window{D: w.D, Min: w.Min, Max: w.Max} }

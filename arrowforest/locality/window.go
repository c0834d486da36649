package locality

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/forestd/forestd/arrowforest/projection"
)

// window draws the local feature subset of one tree on a learned locality
// (dissertation §4.1, non-image data): a feature chosen uniformly at random
// together with its m−1 nearest features, where the window size m is fixed
// (Min = Max) or drawn per tree uniformly from Min..Max (§4.2, "LFS-random").
type window struct {
	D        *Distances
	Min, Max int

	order []int32
}

// NewWindow returns the window of an lfs forest on the locality d: a
// feature and its m−1 nearest features, m in minSize..maxSize (window). It
// validates the sizes against d.
func NewWindow(d *Distances, minSize, maxSize int) (projection.Window, error) {
	if d == nil || d.P < 1 {
		return nil, fmt.Errorf("locality: window needs feature distances")
	}
	if minSize < 1 || maxSize < minSize || maxSize > d.P {
		return nil, fmt.Errorf("locality: window sizes %d..%d outside 1..%d", minSize, maxSize, d.P)
	}
	return &window{D: d, Min: minSize, Max: maxSize}, nil
}

// Draw appends the subset's features to dst[:0] in increasing order.
func (w *window) Draw(rng *rand.Rand, dst []int32) []int32 {
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

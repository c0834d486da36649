package projection

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPatchWindowShapes: every draw is a full s×s square of pixels with all
// their channels, lying wholly inside the image; sides span Min..Max; every
// valid corner occurs.
func TestPatchWindowShapes(t *testing.T) {
	top := Topology{H: 5, W: 6, C: 2, Interleaved: true}
	w, err := NewPatchWindow(top, 60, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	corners := map[[3]int]int{}
	var dst []int32
	for r := 0; r < 4000; r++ {
		dst = w.Draw(rng, dst)
		if !slices.IsSorted(dst) {
			t.Fatal("not sorted")
		}
		// decode pixels (interleaved: feature = (row·W + col)·C + ch)
		rows, cols := map[int]bool{}, map[int]bool{}
		perPixel := map[int]int{}
		for _, f := range dst {
			px := int(f) / 2
			perPixel[px]++
			rows[px/6], cols[px%6] = true, true
		}
		s := len(rows)
		if s != len(cols) || s < 2 || s > 3 || len(perPixel) != s*s {
			t.Fatalf("draw %v is not a square patch", dst)
		}
		for _, c := range perPixel {
			if c != 2 {
				t.Fatalf("draw %v misses a channel", dst)
			}
		}
		u, v := 99, 99
		for r := range rows {
			u = min(u, r)
		}
		for c := range cols {
			v = min(v, c)
		}
		if u+s > 5 || v+s > 6 {
			t.Fatalf("patch %d at (%d,%d) leaves the image", s, u, v)
		}
		corners[[3]int{s, u, v}]++
	}
	// side 2: 4×5 corners, side 3: 3×4 corners
	if len(corners) != 20+12 {
		t.Fatalf("%d distinct (side, corner) pairs, want 32", len(corners))
	}
	if _, err := NewPatchWindow(top, 60, 3, 7); err == nil {
		t.Fatal("side 7 accepted on a 5×6 image")
	}
	if _, err := NewPatchWindow(top, 61, 1, 2); err == nil {
		t.Fatal("topology mismatch accepted")
	}
}

// TestPatchWindowCyclicSeries: a cyclic series wraps around.
func TestPatchWindowCyclicSeries(t *testing.T) {
	w, err := NewPatchWindow(Topology{H: 1, W: 10, C: 1, CyclicW: true}, 10, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	wrapped := false
	var dst []int32
	for r := 0; r < 200; r++ {
		dst = w.Draw(rng, dst)
		if len(dst) != 4 {
			t.Fatalf("draw %v", dst)
		}
		if dst[0] == 0 && dst[3] == 9 {
			wrapped = true
		}
	}
	if !wrapped {
		t.Fatal("no patch wrapped around the cycle")
	}
}

type fixedWindow []int32

func (f fixedWindow) Draw(_ *rand.Rand, dst []int32) []int32 { return append(dst[:0], f...) }

// TestLocalSampler: atoms are distinct axis atoms of the tree's subset, as
// many as the rule gives for the subset's size.
func TestLocalSampler(t *testing.T) {
	s, err := newLocal(fixedWindow{3, 7, 8, 20, 21}, func(size int) int { return size - 2 })
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if err := s.BeginTree(rng, nil); err != nil {
		t.Fatal(err)
	}
	var c Candidates
	seen := map[int32]bool{}
	for r := 0; r < 300; r++ {
		c.Reset()
		s.Sample(rng, &c)
		if c.Len() != 3 {
			t.Fatalf("%d atoms, want 3", c.Len())
		}
		got := map[int32]bool{}
		for i := 0; i < c.Len(); i++ {
			j, ok := c.IsAxis(i)
			if !ok || !slices.Contains([]int32{3, 7, 8, 20, 21}, j) || got[j] {
				t.Fatalf("atom %d: feature %d axis %v", i, j, ok)
			}
			got[j], seen[j] = true, true
		}
	}
	if len(seen) != 5 {
		t.Fatalf("features drawn %v", seen)
	}
	if _, err := newLocal(nil, nil); err == nil {
		t.Fatal("nil window accepted")
	}
	empty, _ := newLocal(fixedWindow{}, func(int) int { return 1 })
	if err := empty.BeginTree(rng, nil); err == nil {
		t.Fatal("empty subset accepted")
	}
}

// TestRandomWindow: the subspace baseline draws distinct features, all
// of them over many trees, with sizes spanning Min..Max.
func TestRandomWindow(t *testing.T) {
	w, err := NewRandomWindow(12, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	sizes, feats := map[int]bool{}, map[int32]bool{}
	var dst []int32
	for r := 0; r < 500; r++ {
		dst = w.Draw(rng, dst)
		sizes[len(dst)] = true
		for i, j := range dst {
			feats[j] = true
			if j < 0 || j >= 12 || (i > 0 && dst[i-1] >= j) {
				t.Fatalf("draw %v", dst)
			}
		}
	}
	if len(sizes) != 4 || len(feats) != 12 {
		t.Fatalf("sizes %v features %v", sizes, feats)
	}
	if _, err := NewRandomWindow(12, 3, 13); err == nil {
		t.Fatal("13 of 12 accepted")
	}
}

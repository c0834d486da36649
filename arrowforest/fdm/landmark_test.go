package fdm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/synth"
)

// atomValue evaluates a linear atom on row i as the trees do (tree.project
// and forest.Compiled.project): float32, in atom order.
func atomValue(cols [][]float32, idx []int32, w []float32, i int) float32 {
	var v float32
	for q, j := range idx {
		v += cols[j][i] * w[q]
	}
	return v
}

// TestLandmarkAtomExact: on values where float32 arithmetic is exact
// (multiples of 1/8 with a dyadic centre), the linear atom over [x_G, s_G]
// equals |x_G − x_l|² − K(x_l) for every row, so it orders the rows
// exactly as the landmark distance does, ties included (landmark.go).
func TestLandmarkAtomExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 400
	cols := make([][]float32, 4)
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(rng.IntN(33)-16) / 8
		}
	}
	nm := Norm{Inputs: []int{0, 2, 3}, Centre: []float64{0.5, -0.25, 0}}
	all := append(slices.Clone(cols), nm.Eval(cols, nil))
	for l := 0; l < 20; l++ {
		mp := Mapping{Kind: MapDRL, Inputs: nm.Inputs}
		for _, j := range nm.Inputs {
			mp.Theta = append(mp.Theta, float64(cols[j][l]))
		}
		idx, w := landmarkAtom(&mp, &nm, 4, nil, nil)
		if !slices.Equal(idx, []int32{0, 2, 3, 4}) || w[3] != 1 {
			t.Fatalf("atom %v %v", idx, w)
		}
		var k float64 // K(x_l) = |x_l − c|² + 2 (x_l − c)·c
		for a := range nm.Inputs {
			d := mp.Theta[a] - nm.Centre[a]
			k += d*d + 2*d*nm.Centre[a]
		}
		d := mp.Eval(cols, nil, nil)
		for i := 0; i < n; i++ {
			if got, want := float64(atomValue(all, idx, w, i))+k, d[i]*d[i]; math.Abs(got-want) > 1e-12 {
				t.Fatalf("landmark %d row %d: atom + K = %v, |x − l|² = %v", l, i, got, want)
			}
		}
		for i := 0; i < n; i++ {
			for r := 0; r < n; r++ {
				ai, ar := atomValue(all, idx, w, i), atomValue(all, idx, w, r)
				if (ai < ar) != (d[i] < d[r]) || (ai == ar) != (d[i] == d[r]) {
					t.Fatalf("landmark %d: rows %d, %d ordered differently (atom %v %v, distance %v %v)", l, i, r, ai, ar, d[i], d[r])
				}
			}
		}
	}
}

// TestLandmarkAtomOrder: on continuous XOR data with the training-mean
// centres of newNorms, the tree sampler's landmark atoms (over the input
// columns and the appended s_G) order the rows as the selected mappings'
// distances do, up to float32 rounding: every pair of rows whose squared
// distances differ by more than 1e-5 is ordered alike, and the atom plus
// K(x_l) is the squared distance to 1e-5.
func TestLandmarkAtomOrder(t *testing.T) {
	fr := xorFrame(t, synth.XOR4, 600, 3)
	pl := Plan{Marginal: []int{0}, Groups: [][]int{{3, 1, 2}}}
	s, err := newTreeSampler(fr.Cols, fr.Y, 2, pl, Options{Map: MapDRL}, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	norms := s.Norms()
	if len(norms) != 1 || !slices.Equal(norms[0].Inputs, []int{1, 2, 3}) {
		t.Fatalf("norms %+v", norms)
	}
	for a, j := range norms[0].Inputs {
		var m float64
		for _, v := range fr.Cols[j] {
			m += float64(v)
		}
		if math.Abs(norms[0].Centre[a]-m/float64(fr.NRows)) > 1e-12 {
			t.Fatalf("centre %d = %v, mean %v", a, norms[0].Centre[a], m/float64(fr.NRows))
		}
	}
	all := append(slices.Clone(fr.Cols), norms[0].Eval(fr.Cols, nil))
	rows := make([]int32, 0, fr.NRows)
	for i := 0; i < fr.NRows; i += 3 {
		rows = append(rows, int32(i))
	}
	if err := s.BeginTree(rand.New(rand.NewPCG(5, 1)), rows); err != nil {
		t.Fatal(err)
	}
	maps := s.mappings()
	if len(maps) != 3 {
		t.Fatalf("%d mappings, want |G| = 3", len(maps))
	}
	// every atom of the tree: the marginal axis atom and one landmark atom per mapping
	var c projection.Candidates
	s.Sample(rand.New(rand.NewPCG(1, 1)), &c)
	if c.Len() != 4 {
		t.Fatalf("%d candidates, want 4", c.Len())
	}
	checked := 0
	for q := 0; q < c.Len(); q++ {
		idx, w := c.Atom(q)
		if len(idx) == 1 {
			continue
		}
		if !slices.Equal(idx, []int32{1, 2, 3, 4}) || w[3] != 1 {
			t.Fatalf("landmark atom %v %v", idx, w)
		}
		var mp *Mapping
		for m := range maps { // the mapping whose weights these are
			if float32(-2*(maps[m].Theta[0]-norms[0].Centre[0])) == w[0] {
				mp = &maps[m]
			}
		}
		if mp == nil {
			t.Fatalf("atom %v matches no selected mapping", w)
		}
		var k float64
		for a := range norms[0].Inputs {
			d := mp.Theta[a] - norms[0].Centre[a]
			k += d*d + 2*d*norms[0].Centre[a]
		}
		d := mp.Eval(fr.Cols, nil, nil)
		for i := range d {
			if got, want := float64(atomValue(all, idx, w, i))+k, d[i]*d[i]; math.Abs(got-want) > 1e-5 {
				t.Fatalf("row %d: atom + K = %v, |x − l|² = %v", i, got, want)
			}
		}
		for i := range d {
			for r := range d {
				ai, ar := atomValue(all, idx, w, i), atomValue(all, idx, w, r)
				if math.Abs(d[i]*d[i]-d[r]*d[r]) > 1e-5 && (ai < ar) != (d[i] < d[r]) {
					t.Fatalf("rows %d, %d ordered differently (atom %v %v, distance %v %v)", i, r, ai, ar, d[i], d[r])
				}
			}
		}
		checked++
	}
	if checked != 3 {
		t.Fatalf("%d landmark atoms checked, want 3", checked)
	}
}

// TestNormValidate: malformed derived inputs are rejected, missing inputs
// give NaN.
func TestNormValidate(t *testing.T) {
	for _, n := range []Norm{
		{},
		{Inputs: []int{0, 1}, Centre: []float64{0}},
		{Inputs: []int{1, 0}, Centre: []float64{0, 0}},
		{Inputs: []int{0, 5}, Centre: []float64{0, 0}},
		{Inputs: []int{-1}, Centre: []float64{0}},
		{Inputs: []int{0}, Centre: []float64{math.NaN()}},
		{Inputs: []int{0}, Centre: []float64{math.Inf(1)}},
	} {
		if err := n.Validate(3); err == nil {
			t.Errorf("accepted %+v", n)
		}
	}
	n := Norm{Inputs: []int{0, 2}, Centre: []float64{1, 0}}
	if err := n.Validate(3); err != nil {
		t.Fatal(err)
	}
	got := n.Eval([][]float32{{1, 3, 0}, {9, 9, 9}, {2, float32(math.NaN()), -1}}, nil)
	if got[0] != 4 || !math.IsNaN(float64(got[1])) || got[2] != 2 {
		t.Fatalf("eval %v", got)
	}
}

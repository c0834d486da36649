package forest

import (
	"math"
	"reflect"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
	"github.com/forestd/forestd/internal/fixture"
)

// TestTreeWalkSameLeaves: the out-of-bag passes' walk of the trees as
// grown (treeWalk) reaches, for every tree and row, a leaf whose values
// add the same bits to a row's sums as the compiled forest's leaf, with
// the same majority class and used features, for axis and oblique atoms,
// missing values, the rank map, many classes, regression and several
// outputs; so the out-of-bag estimates and permutation importances, and
// with them the model bytes, are what they were when they scored on the
// compiled forest.
func TestTreeWalkSameLeaves(t *testing.T) {
	type tc struct {
		name string
		fr   *frame.Frame
		p    Params
	}
	rf := DefaultParams(frame.TaskClassification)
	sporf := rf
	sporf.Forest = KindSPORF
	rank := sporf
	rank.Rank = true
	reg := DefaultParams(frame.TaskRegression)
	regSporf := reg
	regSporf.Forest = KindSPORF
	trunk := trunkFrame(600, 8, 1)
	withMissing(trunk, 0.05, 2)
	cases := []tc{
		{"rf", trunk, rf},
		{"sporf", trunk, sporf},
		{"sporf-rank", trunk, rank},
		{"classes", fixture.Classes(600, 4, 40, 1), rf},
		{"regression", regressionFrame(600, 6, 1), reg},
		{"regression-sporf", regressionFrame(600, 6, 2), regSporf},
		{"multi", multiFrame(400, 1, 0.05), reg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Trees, c.p.Threads = 6, 2
			f, err := Train(c.fr, c.p, TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			comp, err := Compile(f)
			if err != nil {
				t.Fatal(err)
			}
			w := newTreeWalk(f)
			n, p := c.fr.NRows, c.fr.P()
			x := make([]float32, n*p)
			transpose(c.fr.Cols, w.rank, 0, n, x)
			// and rows at the trees' thresholds, at ±0, and NaN: the
			// comparison's ties and signs (treeWalk.leaf compares keys)
			extra := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(-1))}
			for _, tr := range f.Trees[:2] {
				for i, l := range tr.Left {
					if l >= 0 && i%7 == 0 {
						extra = append(extra, tr.Threshold[i], math.Nextafter32(tr.Threshold[i], 0))
					}
				}
			}
			for _, v := range extra {
				for j := 0; j < p; j++ {
					x = append(x, v)
				}
				n++
			}
			want := make([]float64, w.stride)
			got := make([]float64, w.stride)
			for tr := range f.Trees {
				if a, b := comp.usedFeaturesCompiled(tr), w.usedFeatures(tr); !equalBools(a, b) {
					t.Fatalf("tree %d: used features %v, compiled %v", tr, b, a)
				}
				for i := 0; i < n; i++ {
					row := x[i*p : (i+1)*p]
					s := comp.leaf(comp.roots[tr], row)
					l := w.leaf(tr, row)
					clear(want)
					clear(got)
					want[0], got[0] = 0.25, 0.25 // a sum already under way
					comp.addLeaf(want, s)
					w.addLeaf(got, tr, l)
					for q := range want {
						if want[q] != got[q] {
							t.Fatalf("tree %d row %d: walk adds %v, compiled %v", tr, i, got, want)
						}
					}
					if w.k > 0 && comp.majority(s) != w.leafClass(tr, l) {
						t.Fatalf("tree %d row %d: walk's class %d, compiled %d", tr, i, w.leafClass(tr, l), comp.majority(s))
					}
					if w.k == 0 {
						for o := 0; o < w.q; o++ {
							if a, b := comp.leafVal[int(s)*w.q+o], w.leafValue(tr, l, o); a != b {
								t.Fatalf("tree %d row %d output %d: walk %v, compiled %v", tr, i, o, b, a)
							}
						}
					}
				}
				// the out-of-bag pass's walk (four rows at once, or eight on
				// an rf tree's axis splits) reaches the same leaves, for rows
				// in any order and a count not a multiple of 4 or 8
				if c.p.Forest == KindRF && !w.axis[tr] {
					t.Fatalf("tree %d: rf tree not walked as axis splits", tr)
				}
				var rows []int32
				for i := n - 1; i >= 0; i -= 1 + i%3 {
					rows = append(rows, int32(i))
				}
				out := make([]int32, len(rows))
				w.leaves(tr, x, rows, out, new([]axisNode))
				for q, r := range rows {
					if l := w.leaf(tr, x[int(r)*p:][:p]); out[q] != l {
						t.Fatalf("tree %d row %d: out-of-bag walk leaf %d, walk %d", tr, r, out[q], l)
					}
				}
			}
		})
	}
}

// majority is the first most probable class of leaf slot s.
func (c *Compiled) majority(s int32) int32 {
	idx, lv := c.leafValues(s)
	best := 0
	for e, v := range lv {
		if v > lv[best] {
			best = e
		}
	}
	return idx[best]
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// usedFeaturesCompiled marks the features of tree t's atoms as the
// compiled forest holds them (what permutation importance read before
// it walked the trees).
func (c *Compiled) usedFeaturesCompiled(t int) []bool {
	used := make([]bool, c.p)
	end := int32(len(c.nodes))
	if t+1 < len(c.roots) {
		end = c.roots[t+1]
	}
	for i := c.roots[t]; i < end; i++ {
		n := c.nodes[i]
		if n.right < 0 {
			continue
		}
		if n.feat >= 0 {
			used[n.feat&featMask] = true
			continue
		}
		s := (-1 - n.feat) >> 1
		for q := c.atomOff[s]; q < c.atomOff[s+1]; q++ {
			used[c.atomIdx[q]] = true
		}
	}
	return used
}

// The out-of-bag estimates do not depend on how the pass cuts the rows
// into blocks (oobBlockRows), for two classes, which count each tree's
// votes as they go, for three, which keep them until ĵ is known, and for
// regression.
func TestOOBBlocksSameEstimates(t *testing.T) {
	for name, fr := range oobFrames(0) {
		f, p := trainOOB(t, fr, TrainOptions{})
		in := inBagSets(fr.NRows, p.Trees, p.Seed)
		c := newTreeWalk(f)
		want := outOfBag(c, fr, in, 2)
		for _, bs := range []int{64, 333, 2000} {
			c.oobBlock = bs
			if got := outOfBag(c, fr, in, 2); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, blocks of %d rows: %+v, want %+v", name, bs, got, want)
			}
		}
	}
}

// oobBlockRows gives a forest of rf trees whose 16-byte copy outweighs a
// block's rows (ten million rows: 656,000 nodes a tree) blocks of up to
// half a tree's nodes in rows, within two bytes a node of buffers, as many
// blocks as a multiple of the threads; smaller trees (a million rows:
// 76,000 nodes), or more than two classes (whose blocks hold a slot a
// tree and row), keep blockRows'.
func TestOOBBlockRows(t *testing.T) {
	walk := func(trees, nodes, k int) *treeWalk {
		w := &treeWalk{p: 50, k: k, stride: k}
		for range trees {
			w.trees = append(w.trees, &tree.Tree{Left: make([]int32, nodes)})
			w.axis = append(w.axis, true)
		}
		return w
	}
	const n, threads = 10_000_000, 2
	big := walk(100, 656_000, 2)
	b := big.oobBlockRows(n, threads, 0)
	rowBytes := 4*50 + 8*2 + 4*2 + 16
	if b < 250_000 || b*rowBytes > 2*100*656_000/threads || (n+b-1)/b%threads != 0 {
		t.Fatalf("10M rows, 100 trees of 656,000 nodes: blocks of %d rows", b)
	}
	if b, want := big.oobBlockRows(n, threads, 100), blockRows(n, threads, 50, 100, 4); b != want {
		t.Fatalf("with slots: blocks of %d rows, blockRows gives %d", b, want)
	}
	mid := walk(100, 76_000, 2)
	if b, want := mid.oobBlockRows(1_000_000, threads, 0), blockRows(1_000_000, threads, 50, 0, 4); b != want {
		t.Fatalf("1M rows, trees of 76,000 nodes: blocks of %d rows, blockRows gives %d", b, want)
	}
}

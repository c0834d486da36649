package forest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/forestd/forestd/arrowforest/frame"
)

// specials are the float32 values whose comparison orderKey must keep.
var specials = []float32{float32(math.NaN()), -float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5, -0.5}

// TestOrderKeyKeepsComparison checks that key(v) ≤ key(t) exactly when
// v ≤ t for every non-NaN threshold t, that NaN fails every test with
// the key MaxUint32, and that −0 and +0 share a key.
func TestOrderKeyKeepsComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := append([]float32{}, specials...)
	for range 2000 {
		vals = append(vals, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64()))
	}
	for _, v := range vals {
		// the NaN-low columns find NaN by its key; ±0 share one
		if v != v && orderKey(v) != math.MaxUint32 || v == 0 && orderKey(v) != 1<<31 {
			t.Fatalf("v=%v (%#x): key %#x", v, math.Float32bits(v), orderKey(v))
		}
	}
	for _, thr := range vals {
		if thr != thr {
			continue
		}
		for _, v := range vals {
			if got, want := orderKey(v) <= orderKey(thr), v <= thr; got != want {
				t.Fatalf("v=%v (%#x) thr=%v (%#x): key test %v, float test %v", v, math.Float32bits(v), thr, math.Float32bits(thr), got, want)
			}
		}
	}
}

// TestAxisWalkMatchesLeaf scores rows full of NaN, ±0 and ±Inf with the
// branch-free layout and with Compiled.leaf, tree by tree, on forests
// trained with missing values (so nodes send NaN both ways), for
// classification and regression and for row counts that leave a partial
// group of eight.
func TestAxisWalkMatchesLeaf(t *testing.T) {
	for _, task := range []frame.Task{frame.TaskClassification, frame.TaskRegression} {
		tr := trunkFrame(3000, 8, 1)
		withMissing(tr, 0.1, 1)
		if task == frame.TaskRegression {
			tr.Task, tr.YReg = frame.TaskRegression, make([]float64, tr.NRows)
			for i, y := range tr.Y {
				tr.YReg[i] = float64(y) + float64(tr.Cols[0][i])
				if tr.YReg[i] != tr.YReg[i] {
					tr.YReg[i] = 0
				}
			}
			tr.Y, tr.Classes = nil, nil
		}
		p := DefaultParams(task)
		p.Trees, p.Threads = 10, 2
		_, c := trainCompiled(t, tr, p)
		w := c.axis
		if w == nil {
			t.Fatal("an axis-only forest did not get the axis layout")
		}
		if len(w.lowOf) == 0 {
			t.Fatal("no node sends missing values left: the test would not cover the NaN-low columns")
		}
		te := trunkFrame(1003, 8, 2)
		withMissing(te, 0.1, 2)
		rng := rand.New(rand.NewPCG(3, 4))
		for _, col := range te.Cols {
			for i := range col {
				if rng.IntN(5) == 0 {
					col[i] = specials[rng.IntN(len(specials))]
				}
			}
		}
		m := te.NRows
		kx := make([]uint32, m*w.stride)
		w.keys(te.Cols, c.rank, 0, m, kx)
		got := make([]int32, m)
		row := make([]float32, c.p)
		for ti, root := range c.roots {
			w.leaves(root, kx, m, got)
			for r := 0; r < m; r++ {
				for j := range row {
					row[j] = te.Cols[j][r]
				}
				if want := c.leaf(root, row); got[r] != want {
					t.Fatalf("task %v tree %d row %d: axis walk leaf %d, Compiled.leaf %d (row %v)", task, ti, r, got[r], want, row)
				}
			}
		}
	}
}

// TestObliqueForestKeepsPlainWalk: a forest with an oblique node is scored
// by Compiled.leaf (the axis layout cannot evaluate atoms).
func TestObliqueForestKeepsPlainWalk(t *testing.T) {
	tr := trunkFrame(500, 6, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Forest, p.Threads = 5, "sporf", 1
	_, c := trainCompiled(t, tr, p)
	if len(c.atomOff) > 1 && c.axis != nil {
		t.Fatal("a forest with oblique nodes got the axis layout")
	}
}

// TestAxisWalkLinks: a node is 8 bytes; a right child too far for
// anode.link and a forest of more than maxKeyCols key columns get no
// axis layout, and such a forest scores through Compiled.leaf the same
// as through its compact form (CompileCompact).
func TestAxisWalkLinks(t *testing.T) {
	if s := unsafe.Sizeof(anode{}); s != 8 {
		t.Fatalf("anode is %d bytes, want 8", s)
	}
	if _, ok := link(3, 3+linkDistMask, 7); !ok {
		t.Fatal("the largest distance does not fit")
	}
	if _, ok := link(3, 4+linkDistMask, 7); ok {
		t.Fatal("a distance beyond linkDistMask fits")
	}
	tr := trunkFrame(200, maxKeyCols, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 3, 1
	f, c := trainCompiled(t, tr, p)
	if c.axis != nil {
		t.Fatalf("%d key columns got the axis layout", maxKeyCols+1)
	}
	cp, err := ToCompact(f)
	if err != nil {
		t.Fatal(err)
	}
	h := *f
	h.Trees = nil
	c2, err := CompileCompact(&h, cp)
	if err != nil || c2.axis != nil {
		t.Fatalf("CompileCompact: axis %v, %v", c2 != nil && c2.axis != nil, err)
	}
	te := trunkFrame(50, maxKeyCols, 2)
	a, err := c.Predict(te, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c2.Predict(te, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Prob, b.Prob) || a.Prob[0]+a.Prob[1] < 0.999 {
		t.Fatalf("Compile and CompileCompact predict %v and %v", a.Prob[:2], b.Prob[:2])
	}
}

// TestWalk8Kernel: walk8 (the assembly kernel on amd64) reaches the same
// leaf node as walk8Go, the Go walk it stands for, for every group of
// eight rows and every tree of a forest trained with missing values and
// scored on rows with NaN, ±Inf, ±0 and values equal to thresholds (so
// every kind of node, ties, the NaN-low columns and the leaves' sentinel
// are taken).
func TestWalk8Kernel(t *testing.T) {
	tr := trunkFrame(4000, 12, 1)
	withMissing(tr, 0.1, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 8, 2
	_, c := trainCompiled(t, tr, p)
	w := c.axis
	if w == nil || len(w.lowOf) == 0 {
		t.Fatal("no axis layout with NaN-low columns: the test would not cover them")
	}
	// each feature's thresholds, as floats (the inverse of orderKey), so
	// that rows also hold values equal to a threshold ("≤" goes left)
	thr := make([][]float32, c.p)
	for _, n := range w.nodes {
		if col := int(n.link >> linkDistBits); col < c.p {
			b := ^n.thr
			if n.thr&(1<<31) != 0 {
				b = n.thr &^ (1 << 31)
			}
			thr[col] = append(thr[col], math.Float32frombits(b))
		}
	}
	te := trunkFrame(2000, 12, 2)
	withMissing(te, 0.1, 2)
	rng := rand.New(rand.NewPCG(5, 6))
	for j, col := range te.Cols {
		for i := range col {
			switch rng.IntN(5) {
			case 0:
				col[i] = specials[rng.IntN(len(specials))]
			case 1:
				if len(thr[j]) > 0 {
					col[i] = thr[j][rng.IntN(len(thr[j]))]
				}
			}
		}
	}
	m := te.NRows
	kx := make([]uint32, m*w.stride)
	w.keys(te.Cols, c.rank, 0, m, kx)
	got, want := make([]int32, 8), make([]int32, 8)
	deep := 0
	for ti, root := range c.roots {
		for q := 0; q+8 <= m; q += 8 {
			x := kx[q*w.stride : (q+8)*w.stride]
			w.walk8(root, x, got)
			w.walk8Go(root, x, want)
			if !slices.Equal(got, want) {
				t.Fatalf("tree %d rows %d..%d: walk8 leaves %v, walk8Go %v", ti, q, q+7, got, want)
			}
			for _, n := range want {
				if n-root > 200 {
					deep++
				}
			}
		}
	}
	if deep == 0 {
		t.Fatal("no row reached a node 200 past its root: the test would not cover long right links")
	}
}

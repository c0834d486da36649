package forest

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
)

// multiFrame draws n rows of 5 features (x4 noise, values rounded to
// 1/8 so that every distinct value has its own bin) and three targets
// (y0 = 2·x0 + ε, y1 = 3·sin(2·x1) + ε, y2 = x0·x2 + ε), with a share
// miss of missing feature values.
func multiFrame(n int, seed uint64, miss float64) *frame.Frame {
	rng := rand.New(rand.NewPCG(seed, 11))
	fr := &frame.Frame{NRows: n}
	for j := 0; j < 5; j++ {
		fr.Names = append(fr.Names, "x"+string(rune('0'+j)))
		c := make([]float32, n)
		for i := range c {
			c[i] = float32(math.Round(rng.NormFloat64()*8) / 8)
		}
		fr.Cols = append(fr.Cols, c)
	}
	y := make([]float64, 3*n)
	for i := 0; i < n; i++ {
		x0, x1, x2 := float64(fr.Cols[0][i]), float64(fr.Cols[1][i]), float64(fr.Cols[2][i])
		y[3*i] = 2*x0 + 0.3*rng.NormFloat64()
		y[3*i+1] = 3*math.Sin(2*x1) + 0.3*rng.NormFloat64()
		y[3*i+2] = x0*x2 + 0.3*rng.NormFloat64()
	}
	withMissing(fr, miss, seed)
	if err := fr.SetTargets([]string{"y0", "y1", "y2"}, y); err != nil {
		panic(err)
	}
	return fr
}

// output returns a single-output copy of fr's target o.
func output(fr *frame.Frame, o int) *frame.Frame {
	g := *fr
	q := fr.NumOutputs()
	g.YReg = make([]float64, fr.NRows)
	for i := range g.YReg {
		g.YReg[i] = fr.YReg[i*q+o]
	}
	g.Targets, g.LabelName = nil, fr.Targets[o]
	return &g
}

// TestMultiOutputCopiesMatchSingle: a multi-output forest on two copies
// of one target sums the same proxy twice, so it must grow exactly the
// single-output forest's trees, with each leaf value repeated — with the
// sorted search on axis and oblique atoms, missing values and honest
// leaves. (The histogram search is compared the same way, per node, in
// package tree: in a forest the cost model may pick the sorted search for
// a small node at one output count and the histogram at the other.)
func TestMultiOutputCopiesMatchSingle(t *testing.T) {
	src := multiFrame(600, 1, 0.05)
	one := output(src, 2)
	two := *one
	two.YReg = make([]float64, 2*one.NRows)
	for i, v := range one.YReg {
		two.YReg[2*i], two.YReg[2*i+1] = v, v
	}
	two.Targets = []string{"a", "b"}
	for _, c := range []struct {
		kind  Kind
		split string
	}{{KindRF, "exact"}, {KindSPORF, "exact"}} {
		p := DefaultParams(frame.TaskRegression)
		p.Forest, p.Split, p.Trees, p.Threads, p.Honest = c.kind, c.split, 8, 2, 0.2
		fs, err := Train(one, p, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fm, err := Train(&two, p, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, ts := range fs.Trees {
			tm := fm.Trees[k]
			if !slices.Equal(ts.Threshold, tm.Threshold) || !slices.Equal(ts.AtomFeature, tm.AtomFeature) ||
				!slices.Equal(ts.Left, tm.Left) || !slices.Equal(ts.MissingLeft, tm.MissingLeft) {
				t.Fatalf("%s/%s tree %d: the two-output tree splits differently", c.kind, c.split, k)
			}
			for i := 0; i < ts.NumNodes(); i++ {
				if !ts.IsLeaf(i) {
					continue
				}
				v := ts.LeafValue[ts.LeafStart[i]]
				if got := tm.LeafValue[tm.LeafStart[i]:tm.LeafStart[i+1]]; len(got) != 2 || got[0] != v || got[1] != v {
					t.Fatalf("%s/%s tree %d leaf %d: %v, want [%v %v]", c.kind, c.split, k, i, got, v, v)
				}
			}
		}
		imp1, imp2 := fs.Importances[ImportanceImpurity], fm.Importances[ImportanceImpurity]
		for j := range imp1 {
			if math.Abs(imp1[j]-imp2[j]) > 1e-12 {
				t.Fatalf("%s/%s: importances %v, single-output %v", c.kind, c.split, imp2, imp1)
			}
		}
	}
}

// TestMultiOutputPredictAndOOB recomputes, from the trees alone, what
// Compile/Predict and the out-of-bag estimates report: the mean of the
// leaves' q values over the trees, and per output the OOB mean squared
// error (averaged into OOB.Error) and R² (averaged into OOB.R2) over the
// rows with OOB trees, the in-bag rows redrawn from each tree's stream.
func TestMultiOutputPredictAndOOB(t *testing.T) {
	fr := multiFrame(500, 3, 0.04)
	te := multiFrame(333, 4, 0.04)
	p := DefaultParams(frame.TaskRegression)
	p.Trees, p.Threads, p.Permutation = 25, 2, true
	f, c := trainCompiled(t, fr, p)
	q := 3
	pred, err := c.Predict(te, 3)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < te.NRows; r++ {
		for o := 0; o < q; o++ {
			var want float64
			for _, tr := range f.Trees {
				l := tr.Leaf(te.Cols, r)
				want += float64(float32(tr.LeafValue[tr.LeafStart[l]+int32(o)]))
			}
			want /= float64(len(f.Trees))
			if got := pred.Value[r*q+o]; math.Abs(got-want) > 1e-9 {
				t.Fatalf("row %d output %d: compiled %v, trees %v", r, o, got, want)
			}
		}
	}
	n := fr.NRows
	sum := make([]float64, n*q)
	cnt := make([]int, n)
	counts := make([]uint32, n)
	for k, tr := range f.Trees {
		_, _, in := drawSample(treeRNG(p.Seed, k), n, true, 1, counts)
		for r := 0; r < n; r++ {
			if in.has(r) {
				continue
			}
			cnt[r]++
			l := tr.Leaf(fr.Cols, r)
			for o := 0; o < q; o++ {
				sum[r*q+o] += float64(float32(tr.LeafValue[tr.LeafStart[l]+int32(o)]))
			}
		}
	}
	var rows int
	var mse, r2 float64
	for o := 0; o < q; o++ {
		var se, sy, sy2 float64
		rows = 0
		for r := 0; r < n; r++ {
			if cnt[r] == 0 {
				continue
			}
			rows++
			y := fr.YReg[r*q+o]
			d := sum[r*q+o]/float64(cnt[r]) - y
			se += d * d
			sy += y
			sy2 += y * y
		}
		m := se / float64(rows)
		mean := sy / float64(rows)
		mse += m / float64(q)
		r2 += (1 - m/(sy2/float64(rows)-mean*mean)) / float64(q)
	}
	if f.OOB == nil || f.OOB.Rows != rows || math.Abs(f.OOB.Error-mse) > 1e-9*mse || math.Abs(f.OOB.R2-r2) > 1e-9 {
		t.Fatalf("OOB %+v; recomputed rows %d, error %v, R² %v", f.OOB, rows, mse, r2)
	}
	if !(r2 > 0.5) {
		t.Fatalf("OOB R² %v: the forest learnt nothing", r2)
	}
	// permutation importance: the targets use x0, x1 and x2 (x2 in one
	// product only); x3 and x4 are noise
	perm := f.Importances[ImportancePermutation]
	if !(min(perm[0], perm[1]) > perm[2] && perm[2] > max(perm[3], perm[4])) {
		t.Fatalf("permutation importances %v: want x0, x1 > x2 > x3, x4", perm)
	}
}

// TestMultiOutputDeterministicAndValid: the same seed gives the same
// multi-output forest at any thread count; the forest validates; a
// target-less or mismatched forest does not.
func TestMultiOutputDeterministicAndValid(t *testing.T) {
	fr := multiFrame(400, 5, 0.02)
	var ref *Forest
	for _, threads := range []int{1, 2, 3} {
		p := DefaultParams(frame.TaskRegression)
		p.Trees, p.Threads = 9, threads
		f, err := Train(fr, p, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.Params.Threads = 0
		if ref == nil {
			ref = f
			continue
		}
		if !reflect.DeepEqual(ref, f) {
			t.Fatalf("multi-output forest trained with %d threads differs from 1 thread", threads)
		}
	}
	if err := ref.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(f *Forest){
		"no targets":     func(f *Forest) { f.Targets = nil },
		"one target":     func(f *Forest) { f.Targets = f.Targets[:1] },
		"four targets":   func(f *Forest) { f.Targets = append(f.Targets, "y3") },
		"repeated":       func(f *Forest) { f.Targets[1] = f.Targets[0] },
		"empty name":     func(f *Forest) { f.Targets[2] = "" },
		"classification": func(f *Forest) { f.Task, f.Classes = frame.TaskClassification, []string{"a", "b"} },
	} {
		g := *ref
		g.Targets = slices.Clone(ref.Targets)
		mutate(&g)
		if err := g.Validate(); err == nil {
			t.Errorf("%s: Validate accepted the forest", name)
		}
	}
	p := DefaultParams(frame.TaskRegression)
	p.Forest = "fdm"
	if _, err := Train(fr, p, TrainOptions{}); err == nil {
		t.Error("fdm trained on several targets")
	}
}

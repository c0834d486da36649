package forest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// naiveLeaf walks a tree.Tree directly (the storage layout, not the
// compiled one) for row r of fr: the reference for compiled scoring.
func naiveLeaf(t *tree.Tree, fr *frame.Frame, r int) int {
	i := 0
	for !t.IsLeaf(i) {
		var v float32
		for e := t.AtomStart[i]; e < t.AtomStart[i+1]; e++ {
			v += fr.Cols[t.AtomFeature[e]][r] * t.AtomWeight[e]
		}
		left := v <= t.Threshold[i]
		if v != v {
			left = t.MissingLeft[i]
		}
		if left {
			i = int(t.Left[i])
		} else {
			i = int(t.Right[i])
		}
	}
	return i
}

func naivePredict(f *Forest, fr *frame.Frame, r int) []float64 {
	k := max(f.NumClasses(), 1)
	acc := make([]float64, k)
	for _, t := range f.Trees {
		l := naiveLeaf(t, fr, r)
		for e := t.LeafStart[l]; e < t.LeafStart[l+1]; e++ {
			if f.NumClasses() > 0 {
				acc[t.LeafClass[e]] += float64(float32(t.LeafValue[e]))
			} else {
				acc[0] += float64(float32(t.LeafValue[e]))
			}
		}
	}
	for q := range acc {
		acc[q] /= float64(len(f.Trees))
	}
	return acc
}

func withMissing(fr *frame.Frame, rate float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for _, c := range fr.Cols {
		for i := range c {
			if rng.Float64() < rate {
				c[i] = float32(math.NaN())
			}
		}
	}
}

func TestCompiledMatchesTrees(t *testing.T) {
	for _, split := range []string{"binned", "exact"} {
		tr := trunkFrame(2000, 10, 1)
		te := trunkFrame(700, 10, 2) // not a multiple of the block size
		withMissing(tr, 0.05, 1)
		withMissing(te, 0.05, 2)
		p := DefaultParams(frame.TaskClassification)
		p.Trees, p.Threads, p.Split = 20, 2, split
		f, c := trainCompiled(t, tr, p)
		pred, err := c.Predict(te, 3)
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < te.NRows; r++ {
			want := naivePredict(f, te, r)
			for q, w := range want {
				if got := float64(pred.Prob[r*2+q]); math.Abs(got-w) > 1e-6 {
					t.Fatalf("%s: row %d class %d: compiled %v, naive %v", split, r, q, got, w)
				}
			}
		}
	}
}

func TestDeterministicAcrossThreads(t *testing.T) {
	for _, task := range []frame.Task{frame.TaskClassification, frame.TaskRegression} {
		fr := trunkFrame(3000, 8, 5)
		withMissing(fr, 0.02, 5)
		if task == frame.TaskRegression {
			fr.YReg = make([]float64, fr.NRows)
			for i := range fr.YReg {
				fr.YReg[i] = float64(fr.Cols[0][i]) * 3
				if math.IsNaN(fr.YReg[i]) {
					fr.YReg[i] = 1
				}
			}
			fr.Y, fr.Classes, fr.Task = nil, nil, frame.TaskRegression
		}
		var ref *Forest
		for _, threads := range []int{1, 2, 5} {
			p := DefaultParams(task)
			p.Trees, p.Threads, p.Permutation = 12, threads, true
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
				t.Fatalf("%v: forest trained with %d threads differs from 1 thread", task, threads)
			}
		}
	}
}

func TestSeedChangesForest(t *testing.T) {
	fr := trunkFrame(500, 5, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees = 3
	a, _ := Train(fr, p, TrainOptions{})
	p.Seed = 2
	b, _ := Train(fr, p, TrainOptions{})
	if reflect.DeepEqual(a.Trees, b.Trees) {
		t.Fatal("different seeds gave identical trees")
	}
}

// TestMissingnessIsLearnt: the class is visible only through whether x0 is
// missing, so a forest that learns a default direction for NaN must
// separate the classes; one that dropped or zero-filled NaN could not.
func TestMissingnessIsLearnt(t *testing.T) {
	n := 2000
	fr := trunkFrame(n, 3, 9)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < n; i++ {
		for j := range fr.Cols {
			fr.Cols[j][i] = float32(rng.NormFloat64())
		}
		if fr.Y[i] == 1 {
			fr.Cols[0][i] = float32(math.NaN())
		}
	}
	for _, split := range []string{"binned", "exact"} {
		p := DefaultParams(frame.TaskClassification)
		p.Trees, p.Split, p.MaxFeatures = 30, split, "all"
		f, err := Train(fr, p, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if f.OOB.Error > 0.01 {
			t.Fatalf("%s: OOB error %v; the NaN pattern of x0 decides the class", split, f.OOB.Error)
		}
		if imp := f.Importances[ImportanceImpurity]; imp[0] < 0.9 {
			t.Fatalf("%s: x0 impurity importance %v, want > 0.9", split, imp[0])
		}
	}
}

// TestFeatureWithoutValues: a feature null (NaN) in every training row is
// refused naming it and the row count, for every kind and with tuning (it
// used to train silently, and the model then asked every scored row for
// it); one value is enough to train.
func TestFeatureWithoutValues(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		tune bool
	}{{KindRF, false}, {KindSPORF, false}, {KindRF, true}} {
		fr := trunkFrame(200, 4, 3)
		for i := range fr.Cols[2] {
			fr.Cols[2][i] = float32(math.NaN())
		}
		p := DefaultParams(frame.TaskClassification)
		p.Forest, p.Trees, p.Tune = tc.kind, 5, tc.tune
		_, err := Train(fr, p, TrainOptions{})
		if !errors.Is(err, frame.ErrNoValues) || !strings.Contains(err.Error(), `feature "x2" has no value in any of the 200 training rows`) {
			t.Fatalf("%s (tune %v): %v", tc.kind, tc.tune, err)
		}
		fr.Cols[2][17] = 1
		if _, err := Train(fr, p, TrainOptions{}); err != nil {
			t.Fatalf("%s (tune %v) with one value: %v", tc.kind, tc.tune, err)
		}
	}
}

func TestRegressionLearnsSignal(t *testing.T) {
	n := 3000
	rng := rand.New(rand.NewPCG(4, 4))
	fr := &frame.Frame{NRows: n, Names: []string{"a", "b", "c"}, Task: frame.TaskRegression, YReg: make([]float64, n)}
	for j := 0; j < 3; j++ {
		fr.Cols = append(fr.Cols, make([]float32, n))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			fr.Cols[j][i] = float32(rng.Float64())
		}
		fr.YReg[i] = 10*float64(fr.Cols[0][i]) + 5*math.Sin(6*float64(fr.Cols[1][i])) + 0.1*rng.NormFloat64()
	}
	p := DefaultParams(frame.TaskRegression)
	p.Trees, p.Permutation = 50, true
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.OOB.R2 < 0.9 {
		t.Fatalf("OOB R² %v, want > 0.9", f.OOB.R2)
	}
	perm := f.Importances[ImportancePermutation]
	if !(perm[0] > perm[2] && perm[1] > perm[2]) || perm[2] > 0.01*perm[1] {
		t.Fatalf("permutation importance %v: the noise feature c should rank last near 0", perm)
	}
}

// TestStrengthCorrelationNaive recomputes Breiman's OOB strength and
// correlation (dissertation §1.6, eqs 1.25–1.28) the slow, literal way
// from per-tree OOB votes and compares with the single-pass version.
func TestStrengthCorrelationNaive(t *testing.T) {
	for _, K := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d classes", K), func(t *testing.T) { strengthCorrelationNaive(t, K) })
	}
}

// strengthCorrelationNaive is TestStrengthCorrelationNaive on K classes:
// with three ĵ is a real choice and the pass keeps each tree's votes until
// it knows ĵ; with two ĵ is the other class and the pass counts as it goes.
func strengthCorrelationNaive(t *testing.T, K int) {
	fr := trunkFrame(1500, 6, 11)
	if K == 3 {
		threeClasses(fr)
	}
	p := DefaultParams(frame.TaskClassification)
	p.Trees = 25
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// regenerate in-bag sets from the tree seeds
	n, T := fr.NRows, len(f.Trees)
	inbag := make([][]bool, T)
	counts := make([]uint32, n)
	for tt := 0; tt < T; tt++ {
		_, _, in := drawSample(treeRNG(p.Seed, tt), n, true, 1, counts)
		inbag[tt] = make([]bool, n)
		for i := 0; i < n; i++ {
			inbag[tt][i] = in.has(i)
		}
	}
	vote := func(tt, r int) int { // majority class of the leaf
		tr := f.Trees[tt]
		l := naiveLeaf(tr, fr, r)
		best, bv := 0, -1.0
		for e := tr.LeafStart[l]; e < tr.LeafStart[l+1]; e++ {
			if tr.LeafValue[e] > bv {
				best, bv = int(tr.LeafClass[e]), tr.LeafValue[e]
			}
		}
		return best
	}
	Q := make([][]float64, n)
	jhat := make([]int, n)
	var s, s2 float64
	rows := 0
	for r := 0; r < n; r++ {
		Q[r] = make([]float64, K)
		cnt := 0
		for tt := 0; tt < T; tt++ {
			if !inbag[tt][r] {
				Q[r][vote(tt, r)]++
				cnt++
			}
		}
		if cnt == 0 {
			jhat[r] = -1
			continue
		}
		for k := range Q[r] {
			Q[r][k] /= float64(cnt)
		}
		y := int(fr.Y[r])
		jhat[r] = -1
		for k := 0; k < K; k++ {
			if k != y && (jhat[r] < 0 || Q[r][k] > Q[r][jhat[r]]) {
				jhat[r] = k
			}
		}
		mr := Q[r][y] - Q[r][jhat[r]] // eq. 1.25
		s += mr
		s2 += mr * mr
		rows++
	}
	s /= float64(rows)
	varMr := s2/float64(rows) - s*s // eq. 1.27
	var sdSum float64
	for tt := 0; tt < T; tt++ {
		var p1, p2, m float64
		for r := 0; r < n; r++ {
			if inbag[tt][r] || jhat[r] < 0 {
				continue
			}
			h := vote(tt, r)
			m++
			if h == int(fr.Y[r]) {
				p1++
			}
			if h == jhat[r] {
				p2++
			}
		}
		p1, p2 = p1/m, p2/m
		sdSum += math.Sqrt(p1 + p2 - (p1-p2)*(p1-p2)) // eq. 1.28
	}
	sd := sdSum / float64(T)
	rho := varMr / (sd * sd) // eq. 1.26
	if f.OOB.Rows != rows {
		t.Fatalf("OOB rows %d, naive %d", f.OOB.Rows, rows)
	}
	if math.Abs(f.OOB.Strength-s) > 1e-12 || math.Abs(f.OOB.Correlation-rho) > 1e-12 {
		t.Fatalf("strength %v correlation %v; naive %v %v", f.OOB.Strength, f.OOB.Correlation, s, rho)
	}
	if !(s > 0 && s < 1 && rho > 0 && rho < 1) {
		t.Fatalf("implausible strength %v / correlation %v", s, rho)
	}
}

func TestParamsValidation(t *testing.T) {
	fr := trunkFrame(100, 4, 1)
	bad := []func(*Params){
		func(p *Params) { p.Trees = 0 },
		func(p *Params) { p.MinLeaf = 0 },
		func(p *Params) { p.MaxFeatures = "7" },
		func(p *Params) { p.MaxFeatures = "1.5" },
		func(p *Params) { p.MaxFeatures = "cube" },
		func(p *Params) { p.Criterion = "mse" },
		func(p *Params) { p.Sample = "jackknife" },
		func(p *Params) { p.Split = "approx" },
		func(p *Params) { p.Bins = 300 },
		func(p *Params) { p.Sample, p.SampleFraction = "subsample", 1.5 },
		func(p *Params) { p.MaxDepth = -1 },
		func(p *Params) { p.MeanDiff = true }, // rf: mean-diff is for sporf and morf
	}
	for i, mod := range bad {
		p := DefaultParams(frame.TaskClassification)
		p.Trees = 2
		mod(&p)
		if _, err := Train(fr, p, TrainOptions{}); err == nil {
			t.Errorf("case %d: bad params accepted: %+v", i, p)
		}
	}
	for s, want := range map[string]int{"sqrt": 2, "log2": 2, "all": 4, "3": 3, "0.5": 2, "": 2} {
		if got, err := MTry(s, 4, frame.TaskClassification); err != nil || got != want {
			t.Errorf("MTry(%q, 4) = %d, %v; want %d", s, got, err, want)
		}
	}
}

func TestMaxDepthAndMinLeaf(t *testing.T) {
	fr := trunkFrame(2000, 5, 3)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.MaxDepth, p.MinLeaf = 5, 3, 20
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range f.Trees {
		if d := tr.Depth(); d > 3 {
			t.Fatalf("tree %d depth %d > 3", i, d)
		}
		for n := 0; n < tr.NumNodes(); n++ {
			if tr.IsLeaf(n) && tr.Count[n] < 20 {
				t.Fatalf("tree %d leaf %d holds weight %v < min leaf 20", i, n, tr.Count[n])
			}
		}
	}
}

func TestSubsampleAndOOB(t *testing.T) {
	fr := trunkFrame(1000, 5, 3)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Sample = 30, "subsample"
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range f.Trees {
		if tr.Count[0] != 632 {
			t.Fatalf("tree %d root weight %v, want 632 distinct rows", i, tr.Count[0])
		}
	}
	if f.OOB == nil || f.OOB.Rows != 1000 || f.OOB.Error > 0.2 {
		t.Fatalf("OOB %+v", f.OOB)
	}
}

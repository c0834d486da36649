package forest

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/fixture"
)

// inBagSets is inBag (tune_test.go) as the bitsets the OOB code reads.
func inBagSets(rows, trees int, seed uint64) []bitset {
	in := inBag(rows, trees, seed)
	bs := make([]bitset, trees)
	for k := range bs {
		bs[k] = newBitset(rows)
		for r, b := range in[k] {
			if b {
				bs[k].set(r)
			}
		}
	}
	return bs
}

// TestSparseLeaves: the sparse leaf layout of many-class forests scores,
// estimates out-of-bag error and scores tuning candidates to the same
// bits as the dense layout (a sum that skips a class's zeros is the same
// float64 sum), Compile chooses it for many classes and not for two
// classes or regression, and it holds a forest whose label is an
// identifier (a class per row) in memory proportional to the forest
// instead of to leaves × classes.
func TestSparseLeaves(t *testing.T) {
	fr := fixture.Classes(1200, 4, 40, 1)
	te := fixture.Classes(700, 4, 40, 2)
	withMissing(te, 0.05, 3)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 30, 2
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dense, err := compile(f, sparseNever)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := compile(f, sparseAlways)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if dense.leafOff != nil || sparse.leafOff == nil || auto.leafOff == nil {
		t.Fatalf("layouts: forced dense sparse=%v, forced sparse sparse=%v, auto (40 classes) sparse=%v",
			dense.leafOff != nil, sparse.leafOff != nil, auto.leafOff != nil)
	}
	want, err := dense.Predict(te, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sparse.Predict(te, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatal("sparse and dense leaves predict differently")
	}
	for r := 0; r < te.NRows; r += 97 {
		naive := naivePredict(f, te, r)
		for q, w := range naive {
			if g := float64(got.Prob[r*40+q]); math.Abs(g-w) > 1e-6 {
				t.Fatalf("row %d class %d: sparse %v, naive %v", r, q, g, w)
			}
		}
	}
	in := inBagSets(fr.NRows, p.Trees, p.Seed)
	// training's out-of-bag estimates walk the trees, whatever the
	// compiled layout (TestTreeWalkSameLeaves)
	if a, b := outOfBag(newTreeWalk(f), fr, in, 2), outOfBag(newTreeWalk(f), fr, in, 1); !reflect.DeepEqual(a, b) {
		t.Fatalf("out-of-bag estimates: 2 threads %+v, 1 thread %+v", a, b)
	}
	a, b := oobScore(dense, fr, in, p.Seed, 2), oobScore(sparse, fr, in, p.Seed, 2)
	if a.Error != b.Error || a.Brier != b.Brier || a.OOBError != b.OOBError || a.Rows != b.Rows {
		t.Fatalf("tuning scores: dense %+v, sparse %+v", a, b)
	}
	for r := range a.PerRow {
		if x, y := a.PerRow[r], b.PerRow[r]; x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			t.Fatalf("row %d's tuning term: dense %v, sparse %v", r, x, y)
		}
	}

	// two classes and regression stay dense
	two, err := Compile(trainForest(t, trunkFrame(500, 5, 1), 10))
	if err != nil {
		t.Fatal(err)
	}
	reg := regressionFrame(500, 5, 1)
	rp := DefaultParams(frame.TaskRegression)
	rp.Trees, rp.Threads = 10, 2
	rf, err := Train(reg, rp, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Compile(rf)
	if err != nil {
		t.Fatal(err)
	}
	if two.leafOff != nil || rc.leafOff != nil {
		t.Fatalf("two classes sparse=%v, regression sparse=%v: both should be dense", two.leafOff != nil, rc.leafOff != nil)
	}

	// an identifier as the label: 2,000 rows, 2,000 classes, 20 trees. The
	// dense table would be ≈ 20·1,270 leaves·2,000 classes·4 bytes ≈ 200 MB.
	ids := fixture.Classes(2000, 3, 2000, 4)
	for i := range ids.Y {
		ids.Y[i] = int32(i)
	}
	fi := trainForest(t, ids, 20)
	ci, err := Compile(fi)
	if err != nil {
		t.Fatal(err)
	}
	if ci.leafOff == nil {
		t.Fatal("a forest of 2,000 classes compiled dense")
	}
	leaves := 0
	for _, n := range ci.nodes {
		if n.right < 0 {
			leaves++
		}
	}
	bytes := 4*len(ci.leafOff) + 4*len(ci.leafIdx) + 4*len(ci.leafW)
	if bytes > 40*leaves {
		t.Fatalf("sparse leaf tables of %d leaves take %d bytes", leaves, bytes)
	}
	if leaves < 20*1000 {
		t.Fatalf("only %d leaves: the test needs deep trees", leaves)
	}
}

// trainForest trains trees trees of the default classification params on
// fr with 2 threads.
func trainForest(t testing.TB, fr *frame.Frame, trees int) *Forest {
	t.Helper()
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = trees, 2
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// BenchmarkPredictClasses scores 20,000 rows with 100 trees on k classes
// in each leaf layout; cpu-ns/row is the CPU per row (see
// BenchmarkPredictTrunk).
func BenchmarkPredictClasses(b *testing.B) {
	for _, k := range []int{4, 26, 1000} {
		fr := fixture.Classes(20000, 8, k, 1)
		te := fixture.Classes(20000, 8, k, 2)
		f := trainForest(b, fr, 100)
		for _, layout := range []struct {
			name string
			mode int
		}{{"dense", sparseNever}, {"sparse", sparseAlways}, {"auto", sparseAuto}} {
			c, err := compile(f, layout.mode)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("k="+strconv.Itoa(k)+"/"+layout.name, func(b *testing.B) {
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if _, err := c.Predict(te, 2); err != nil {
						b.Fatal(err)
					}
				}
				rows := float64(te.NRows) * float64(b.N)
				b.ReportMetric(float64(cpuTime()-cpu0)/rows, "cpu-ns/row")
			})
		}
	}
}

// BenchmarkTrainClasses trains 20 trees on 20,000 rows of k classes with
// 2 threads: past tree.sparseClasses classes the builder's per-node work
// follows the node's classes, not all k.
func BenchmarkTrainClasses(b *testing.B) {
	for _, k := range []int{4, 100, 1000} {
		fr := fixture.Classes(20000, 8, k, 1)
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				trainForest(b, fr, 20)
			}
		})
	}
}

// TestBlockRowsPerRow: a block's per-row state stays within 2^23 words
// (64 MiB) however many classes the accumulator has — 10,000 classes made
// the OOB pass's accumulators 1.2 GB on 10,000 rows — while two classes
// keep the blocks they had.
func TestBlockRowsPerRow(t *testing.T) {
	for _, k := range []int{2, 26, 1000, 10000, 100000} {
		for _, n := range []int{1000, 100000, 1000000} {
			b := blockRows(n, 2, 10, 100, 2*k)
			if b*2*k > 1<<23 && b > 64 {
				t.Fatalf("%d rows, %d classes: blocks of %d rows keep %d words per worker", n, k, b, b*2*k)
			}
			if k == 2 && b != blockRows(n, 2, 10, 100, 0) {
				t.Fatalf("%d rows, 2 classes: blocks of %d rows, %d without the per-row bound", n, b, blockRows(n, 2, 10, 100, 0))
			}
		}
	}
}

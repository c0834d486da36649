package forest

import (
	"slices"
	"sync"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/fixture"
)

// TestPredictBlocks: PredictBlocks hands over every row exactly once, in
// blocks that together hold the classes and probabilities Predict
// returns, bit for bit, at any thread count, for the axis walk and the
// plain walk (sporf) and for dense and sparse leaves; it refuses a
// regression forest and a frame of other features, and calls nothing for
// no rows. BlockBytes grows with the rows only up to a block per thread.
func TestPredictBlocks(t *testing.T) {
	fr := fixture.Classes(1500, 5, 40, 1)
	te := fixture.Classes(2100, 5, 40, 2)
	withMissing(te, 0.05, 3)
	for _, kind := range []Kind{KindRF, KindSPORF} {
		p := DefaultParams(frame.TaskClassification)
		p.Forest, p.Trees, p.Threads = kind, 12, 2
		f, err := Train(fr, p, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []int{sparseNever, sparseAlways} {
			c, err := compile(f, mode)
			if err != nil {
				t.Fatal(err)
			}
			if (c.axis != nil) != (kind == KindRF) {
				t.Fatalf("%s: axis walk %v", kind, c.axis != nil)
			}
			want, err := c.Predict(te, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, threads := range []int{0, 1, 2, 3, 7} {
				class := make([]int32, te.NRows)
				prob := make([]float32, te.NRows*c.k)
				seen := make([]int, te.NRows)
				var mu sync.Mutex
				blocks := 0
				err := c.PredictBlocks(te, threads, func(r0, r1 int, cl []int32, pr []float32) {
					if len(cl) != r1-r0 || len(pr) != (r1-r0)*c.k {
						t.Errorf("block [%d, %d): %d classes, %d probabilities", r0, r1, len(cl), len(pr))
						return
					}
					copy(class[r0:r1], cl)
					copy(prob[r0*c.k:r1*c.k], pr)
					mu.Lock()
					defer mu.Unlock()
					blocks++
					for r := r0; r < r1; r++ {
						seen[r]++
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if i := slices.IndexFunc(seen, func(n int) bool { return n != 1 }); i >= 0 {
					t.Fatalf("%s mode %d threads %d: row %d handed over %d times", kind, mode, threads, i, seen[i])
				}
				if threads > 1 && blocks < 2 {
					t.Fatalf("%s threads %d: %d block(s)", kind, threads, blocks)
				}
				if !slices.Equal(class, want.Class) || !slices.Equal(prob, want.Prob) {
					t.Fatalf("%s mode %d threads %d: the blocks differ from Predict", kind, mode, threads)
				}
			}
			calls := 0
			if err := c.PredictBlocks(emptyLike(te), 2, func(int, int, []int32, []float32) { calls++ }); err != nil || calls != 0 {
				t.Fatalf("no rows: %v, %d calls", err, calls)
			}
			if err := c.PredictBlocks(&frame.Frame{Cols: [][]float32{{1}}, NRows: 1}, 1, func(int, int, []int32, []float32) {}); err == nil {
				t.Fatal("a frame of one feature: no error")
			}
		}
	}
	_, reg := trainCompiled(t, multiFrame(300, 2, 0), DefaultParams(frame.TaskRegression))
	if err := reg.PredictBlocks(emptyLike(multiFrame(10, 2, 0)), 1, func(int, int, []int32, []float32) {}); err == nil {
		t.Fatal("a regression forest: no error")
	}
}

// TestBlockBytes: a worker's block memory grows with the rows until each
// thread has a full block, then stays within the rounding of equal blocks
// (2^23 sums per block at most), and
// PredictBlocks' blocks add the block's probabilities to the sums.
func TestBlockBytes(t *testing.T) {
	const k = 4000
	fr := fixture.Classes(4500, 3, k, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Trees, p.Threads = 2, 2
	_, c := trainCompiled(t, fr, p)
	if c.BlockBytes(0, 2, true) != 0 {
		t.Fatal("no rows: block memory")
	}
	small, full, more := c.BlockBytes(1000, 1, true), c.BlockBytes(100_000, 1, true), c.BlockBytes(1_000_000, 1, true)
	if small >= full || more < full*99/100 || more > full*101/100 {
		t.Fatalf("one thread: %d bytes for 1,000 rows, %d for 100,000, %d for 1,000,000", small, full, more)
	}
	bs := blockRows(100_000, 1, c.p, 0, c.stride)
	if bs*k > 1<<23 || full < int64(bs*k*12) || full > int64(bs*k*13) {
		t.Fatalf("a block of %d rows × %d classes: %d bytes", bs, k, full)
	}
	if all := c.BlockBytes(100_000, 1, false); all >= full || all < int64(bs*k*8) {
		t.Fatalf("Predict's blocks: %d bytes, PredictBlocks' %d", all, full)
	}
	if two := c.BlockBytes(100_000, 2, true); two < 2*full*9/10 || two > 2*full {
		t.Fatalf("two threads: %d bytes, one %d", two, full)
	}
}

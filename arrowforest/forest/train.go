package forest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/tree"
)

// TrainOptions are the run-time knobs that never change the model.
type TrainOptions struct {
	// Progress, when set, is called after each tree (from any goroutine,
	// serialised) with the number of trees done.
	Progress func(done, total int)
	// Context cancels training early.
	Context context.Context
	// MaxBytes bounds the memory training may take (0: no bound): the
	// bookkeeping every tree needs and the binned data are estimated from
	// the parameters and the frame before any tree grows, and the forest's
	// size is projected from the trees grown so far as each completes;
	// training stops with an ErrMemory error as soon as either exceeds it.
	MaxBytes int64
}

// ErrMemory marks a training run that would exceed TrainOptions.MaxBytes.
var ErrMemory = errors.New("forest: not enough memory")

// perTreeFixed is the memory every tree of a forest on n rows and p
// features needs besides its nodes: its slot in the tree, in-bag and
// importance slices, its in-bag bitset (kept for the out-of-bag
// estimates) and its impurity decreases.
func perTreeFixed(n, p int) int64 {
	return 3*24 + 24 + int64(n+63)/64*8 + 24 + int64(p)*8
}

// treeBytes is the memory a grown tree holds, and what compiling and
// encoding it adds (about as much again).
func treeBytes(t *tree.Tree) int64 {
	b := int64(len(t.Left))*(4+4+4+1+4+4+4) + int64(len(t.AtomFeature))*8 + int64(len(t.LeafClass))*4 + int64(len(t.LeafValue))*8
	return 2 * b
}

// treeRNG returns the random stream of tree t: it depends on the seed and
// the tree index alone, so the worker count cannot change the model.
func treeRNG(seed uint64, t int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(t)*0xbf58476d1ce4e5b9))
}

// bitset is one bit per training row.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// drawSample draws tree t's in-bag rows: a bootstrap of round(fraction·n)
// draws with replacement (weights = multiplicities) or a subsample without
// replacement. It returns the distinct rows in increasing order, their
// weights, and the in-bag bitset.
func drawSample(rng *rand.Rand, n int, bootstrap bool, fraction float64, counts []uint32) ([]int32, []float64, bitset) {
	m := int(math.Round(fraction * float64(n)))
	m = max(m, 1)
	clear(counts)
	if bootstrap {
		for i := 0; i < m; i++ {
			counts[rng.IntN(n)]++
		}
	} else {
		m = min(m, n)
		// Floyd's algorithm: m distinct rows.
		for j := n - m; j < n; j++ {
			r := rng.IntN(j + 1)
			if counts[r] != 0 {
				r = j
			}
			counts[r] = 1
		}
	}
	in := newBitset(n)
	var rows []int32
	var w []float64
	for i, c := range counts {
		if c > 0 {
			rows = append(rows, int32(i))
			w = append(w, float64(c))
			in.set(i)
		}
	}
	return rows, w, in
}

// Train grows a forest on fr, which must carry a label. The same frame,
// params and seed give the same forest for any p.Threads.
func Train(fr *frame.Frame, p Params, opts TrainOptions) (*Forest, error) {
	if err := fr.Validate(); err != nil {
		return nil, err
	}
	if !fr.HasLabel() {
		return nil, errors.New("forest: training needs a label")
	}
	if fr.NRows < 2 {
		return nil, fmt.Errorf("forest: need at least 2 labelled rows, have %d", fr.NRows)
	}
	r, err := p.resolve(fr.P(), fr.Task)
	if err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	cols := fr.Cols
	var rank *RankMap
	if p.Rank {
		rank = NewRankMap(fr.Cols)
		cols = rank.Transform(fr.Cols)
	}
	newSampler := r.sampler
	var derived *Derived
	if newSampler == nil { // lfs and fdm draw on the training data (local.go)
		if newSampler, derived, err = p.dataSampler(fr, cols); err != nil {
			return nil, fmt.Errorf("forest: %w", err)
		}
	}
	// The trees see fr plus the derived columns (RF_FDM landmark norms,
	// derived.go), computed as scoring computes them.
	if derived != nil {
		fr = derived.extend(fr)
		cols = fr.Cols
	}
	if fr.NumOutputs() > 1 && !p.Forest.MultiOutputKind() {
		return nil, fmt.Errorf("forest: --forest %s learns one label; several targets (%v) need rf, sporf, morf or lfs", p.Forest, fr.Targets)
	}
	d := &tree.Data{Cols: cols, Y: fr.Y, K: fr.NumClasses(), YReg: fr.YReg, Outputs: len(fr.Targets)}
	if r.binned {
		d.Bins = tree.NewBinned(cols, p.Bins, p.Threads)
	}
	cfg := tree.Config{Criterion: r.criterion, MinLeaf: float64(p.MinLeaf), MinSplit: float64(p.MinSplit), MaxDepth: p.MaxDepth}

	f := &Forest{
		Kind:      p.Forest,
		Task:      fr.Task,
		Features:  append([]string(nil), fr.Names...),
		LabelName: fr.LabelName,
		Classes:   append([]string(nil), fr.Classes...),
		Targets:   slices.Clone(fr.Targets),
		Trees:     make([]*tree.Tree, p.Trees),
		Params:    p,
		Rank:      rank,
		Derived:   derived,
	}
	if fr.Levels != nil {
		f.Levels = fr.Levels
	}
	if err := f.ValidateDerived(); err != nil {
		return nil, fmt.Errorf("forest: %w", err)
	}
	n := fr.NRows
	if opts.MaxBytes > 0 {
		need := int64(p.Trees)*perTreeFixed(n, fr.P()) + int64(n)*int64(fr.P()) // + the bins
		if need > opts.MaxBytes {
			return nil, fmt.Errorf("%w: %d trees need about %s before the first grows (%s each on %d rows), more than %s",
				ErrMemory, p.Trees, FormatBytes(need), FormatBytes(perTreeFixed(n, fr.P())), n, FormatBytes(opts.MaxBytes))
		}
	}
	var grown, grownBytes atomic.Int64
	fixed := int64(p.Trees)*perTreeFixed(n, fr.P()) + int64(n)*int64(fr.P())
	inbag := make([]bitset, p.Trees)
	imps := make([][]float64, p.Trees)
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		done     atomic.Int64
		firstErr error
		errOnce  sync.Once
		progMu   sync.Mutex
	)
	workers := min(p.Threads, p.Trees)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			smp, err := newSampler()
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			b, err := tree.NewBuilder(d, cfg, smp)
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			counts := make([]uint32, n)
			for {
				t := int(next.Add(1) - 1)
				if t >= p.Trees || ctx.Err() != nil {
					return
				}
				rng := treeRNG(p.Seed, t)
				rows, wts, in := drawSample(rng, n, r.bootstrap, r.fraction, counts)
				var estRows []int32
				var estW []float64
				if p.Honest > 0 {
					rows, wts, estRows, estW = honestSplit(rng, rows, wts, p.Honest)
				}
				if ts, ok := smp.(projection.TreeSampler); ok {
					if err := ts.BeginTree(rng, rows); err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("forest: tree %d: %w", t, err) })
						return
					}
				}
				tr, imp, err := b.Grow(rng, rows, wts)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("forest: tree %d: %w", t, err) })
					return
				}
				if len(estRows) > 0 {
					tr.Reestimate(d, estRows, estW)
				}
				f.Trees[t], imps[t], inbag[t] = tr, imp, in
				if opts.MaxBytes > 0 {
					// project the forest from the trees grown so far
					g, gb := grown.Add(1), grownBytes.Add(treeBytes(tr))
					if proj := fixed + gb/g*int64(p.Trees); proj > opts.MaxBytes {
						errOnce.Do(func() {
							firstErr = fmt.Errorf("%w: %d trees of about %s each (measured on %d grown) need about %s, more than %s",
								ErrMemory, p.Trees, FormatBytes(gb/g), g, FormatBytes(proj), FormatBytes(opts.MaxBytes))
						})
						next.Store(int64(p.Trees)) // the other workers stop too
						return
					}
				}
				if opts.Progress != nil {
					progMu.Lock()
					opts.Progress(int(done.Add(1)), p.Trees)
					progMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("forest: training cancelled: %w", err)
	}
	f.Importances = map[string][]float64{
		ImportanceImpurity:        impurityImportance(imps, fr.P()),
		ImportanceProjectionCount: projectionCounts(f.Trees, fr.P()),
	}
	c, err := Compile(f)
	if err != nil {
		return nil, err
	}
	oobRows := 0
	if r.bootstrap || r.fraction < 1 {
		f.OOB = outOfBag(c, fr, inbag, p.Threads)
		oobRows = f.OOB.Rows
	}
	if p.Permutation {
		if oobRows == 0 {
			return nil, errors.New("forest: permutation importance needs out-of-bag rows (bootstrap or subsample < 1)")
		}
		f.Importances[ImportancePermutation] = permutationImportance(c, fr, inbag, p.Seed, p.Threads)
	}
	return f, nil
}

// impurityImportance is the mean decrease in impurity: each tree's
// decreases are normalised to sum 1, averaged over trees in tree order,
// and normalised again (as scikit-learn's feature_importances_).
func impurityImportance(imps [][]float64, p int) []float64 {
	out := make([]float64, p)
	for _, imp := range imps {
		var s float64
		for _, v := range imp {
			s += v
		}
		if s <= 0 {
			continue
		}
		for j, v := range imp {
			out[j] += v / s
		}
	}
	return normalize(out)
}

// projectionCounts is π_k = Σ_T Σ_{j∈T} I(a*_jk ≠ 0), normalised to sum 1
// (MORF paper §3.2).
func projectionCounts(trees []*tree.Tree, p int) []float64 {
	out := make([]float64, p)
	for _, t := range trees {
		for i := 0; i < t.NumNodes(); i++ {
			for e := t.AtomStart[i]; e < t.AtomStart[i+1]; e++ {
				if t.AtomWeight[e] != 0 {
					out[t.AtomFeature[e]]++
				}
			}
		}
	}
	return normalize(out)
}

func normalize(v []float64) []float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	if s > 0 {
		for i := range v {
			v[i] /= s
		}
	}
	return v
}

// honestSplit moves each distinct in-bag row to the estimation set with
// probability frac, keeping at least one row on each side when it can.
func honestSplit(rng *rand.Rand, rows []int32, w []float64, frac float64) (sr []int32, sw []float64, er []int32, ew []float64) {
	for q, r := range rows {
		if rng.Float64() < frac {
			er, ew = append(er, r), append(ew, w[q])
		} else {
			sr, sw = append(sr, r), append(sw, w[q])
		}
	}
	if len(sr) == 0 && len(er) > 1 {
		sr, sw, er, ew = er[:1], ew[:1], er[1:], ew[1:]
	}
	return sr, sw, er, ew
}

// FormatBytes writes a byte count with a binary unit (KiB, MiB, GiB, TiB).
func FormatBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b), 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[u])
}

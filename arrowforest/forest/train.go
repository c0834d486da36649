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

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/tree"
	"github.com/forestd/forestd/internal/bytefmt"
)

// TrainOptions are the run-time knobs that never change the model.
type TrainOptions struct {
	// Progress, when set, is called after each tree (from any goroutine,
	// serialised) with the number of trees done.
	Progress func(done, total int)
	// SearchProgress, when set, is called after each permutation test of
	// the MDS/SDS search an fdm forest runs on its training data when its
	// groups are not given (dependence.SearchOptions.Progress), before
	// any tree grows.
	SearchProgress func(dependence.SearchProgress)
	// Context cancels training early.
	Context context.Context
	// MaxBytes bounds the memory training may take (0: no bound): the
	// bookkeeping every tree needs and the binned data are estimated from
	// the parameters and the frame before any tree grows, and the forest's
	// size is projected from the trees grown so far as each completes;
	// training stops with an ErrMemory error as soon as either exceeds it.
	MaxBytes int64
	// DropColumns lets Train release fr's feature columns (fr.Cols[j] set
	// to nil) once they are binned, when the trees need only the bin codes
	// (rf in binned mode, not tuned): the float32 copy of the data is then
	// freed while the trees grow (issue 31). fr keeps its labels and
	// metadata; the model does not depend on this option.
	DropColumns bool
	// codesFrom is the rows from which rf in binned mode grows on the bin
	// codes alone (0: CodesOnlyRows); tests set it to take that path on
	// small frames.
	codesFrom int
}

// CodesOnlyRows is the number of rows from which rf in binned mode grows
// on the bin codes alone (every split at a bin edge, the float32 columns
// released with DropColumns). Below it small nodes still search the raw
// values, which keeps small data's accuracy: on 5,000 rows of Trunk
// (p = 50, 10 trees) codes alone cost 0.005 of test error, on 100,000
// rows 0.0012 (docs/performance.md, "A million rows").
const CodesOnlyRows = 250_000

// ErrMemory marks a training run that would exceed TrainOptions.MaxBytes.
var ErrMemory = errors.New("forest: not enough memory")

// perTreeFixed is the memory every tree of a forest on n rows and p
// features needs besides its nodes: its slot in the tree, in-bag and
// importance slices, its in-bag bitset (kept for the out-of-bag
// estimates) and its impurity decreases.
func perTreeFixed(n, p int) int64 {
	return 3*24 + 24 + int64(n+63)/64*8 + 24 + int64(p)*8
}

// fixedBytes is what a forest of trees trees on fr holds whatever its trees'
// sizes: trees × perTreeFixed plus the rank bins (a byte per value).
func fixedBytes(trees int, fr *frame.Frame) int64 {
	return int64(trees)*perTreeFixed(fr.NRows, fr.P()) + int64(fr.NRows)*int64(fr.P())
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
	return drawSampleInto(rng, n, bootstrap, fraction, counts, nil, nil)
}

// drawSampleInto is drawSample appending the rows and weights to rows[:0]
// and w[:0]: a worker reuses them from tree to tree (the builder copies
// them), so a million-row forest does not leave 12 bytes a row of
// garbage per tree for the collector to let the heap grow by.
func drawSampleInto(rng *rand.Rand, n int, bootstrap bool, fraction float64, counts []uint32, rows []int32, w []float64) ([]int32, []float64, bitset) {
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
	rows, w = rows[:0], w[:0]
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
// params and seed give the same forest for any p.Threads. With p.Tune the
// hyperparameters are chosen out of bag first (tune.go). A feature with no
// value in any row (frame.Frame.CheckValues) is an error wrapping
// frame.ErrNoValues.
func Train(fr *frame.Frame, p Params, opts TrainOptions) (*Forest, error) {
	if opts.MaxBytes > 0 {
		n := fr.NRows
		need := fixedBytes(p.Trees, fr)
		if need > opts.MaxBytes {
			return nil, fmt.Errorf("%w: %d trees need about %s before the first grows (%s each on %d rows), more than %s",
				ErrMemory, p.Trees, bytefmt.Format(need), bytefmt.Format(perTreeFixed(n, fr.P())), n, bytefmt.Format(opts.MaxBytes))
		}
	}
	if p.Tune {
		return tune(fr, p, opts)
	}
	s, g, err := begin(fr, p, opts)
	if err != nil {
		return nil, err
	}
	if opts.DropColumns && s.d.Cols == nil {
		clear(fr.Cols) // the out-of-bag passes read the bins (oob.go: colSource)
	}
	if err := s.grow(opts, g, p.Trees, progressFunc(opts, 0, p.Trees)); err != nil {
		return nil, err
	}
	if s.d.Bins != nil {
		s.d.Bins.DropRows() // no more trees grow
	}
	return s.finish(g)
}

// session is what every forest grown on one training frame shares: the
// frame the trees see (with any derived columns), its columns after the
// rank map, and the binned data.
type session struct {
	fr      *frame.Frame
	d       *tree.Data
	rank    *RankMap
	derived *Derived
	threads int
}

// growing is one parameter setting's forest while its trees grow: tree t
// of it depends on the params, the session and t alone, so a forest grown
// to T trees in several steps equals one grown to T at once.
type growing struct {
	p          Params
	r          resolved
	newSampler func() (projection.Sampler, error)
	cfg        tree.Config
	trees      []*tree.Tree
	imps       [][]float64
	inbag      []bitset
	work       []int64 // each tree's split-search work (tree.Builder.Work)
}

// begin checks fr and p, resolves p and prepares the session and the empty
// forest of p.
func begin(fr *frame.Frame, p Params, opts TrainOptions) (*session, *growing, error) {
	if err := fr.Validate(); err != nil {
		return nil, nil, err
	}
	if !fr.HasLabel() {
		return nil, nil, errors.New("forest: training needs a label")
	}
	if fr.NRows < 2 {
		return nil, nil, fmt.Errorf("forest: need at least 2 labelled rows, have %d", fr.NRows)
	}
	if err := fr.CheckValues(); err != nil { // a feature null in every row
		return nil, nil, fmt.Errorf("forest: %w", err)
	}
	r, err := p.resolve(fr.P(), fr.Task)
	if err != nil {
		return nil, nil, fmt.Errorf("forest: %w", err)
	}
	cols := fr.Cols
	var rank *RankMap
	if p.Rank {
		rank = newRankMap(fr.Cols)
		cols = rank.Transform(fr.Cols)
	}
	newSampler := r.sampler
	var derived *Derived
	if newSampler == nil { // lfs and fdm draw on the training data (local.go)
		if newSampler, derived, err = p.dataSampler(fr, cols, opts); err != nil {
			return nil, nil, fmt.Errorf("forest: %w", err)
		}
	}
	// The trees see fr plus the derived columns (RF_FDM landmark norms,
	// derived.go), computed as scoring computes them.
	if derived != nil {
		fr = derived.extend(fr)
		cols = fr.Cols
	}
	if fr.NumOutputs() > 1 && !p.Forest.multiOutputKind() {
		return nil, nil, fmt.Errorf("forest: --forest %s learns one label; several targets (%v) need rf, sporf, morf or lfs", p.Forest, fr.Targets)
	}
	d := &tree.Data{Cols: cols, Y: fr.Y, K: fr.NumClasses(), YReg: fr.YReg, Outputs: len(fr.Targets)}
	if r.binned {
		d.Bins = tree.NewBinned(cols, p.Bins, p.Threads)
		from := opts.codesFrom
		if from == 0 {
			from = CodesOnlyRows
		}
		if p.Forest == KindRF && fr.NRows >= from {
			// axis atoms only: the builder needs the codes alone, and
			// every split falls on a bin edge (tree.Builder)
			d.Cols = nil
		}
	}
	s := &session{fr: fr, d: d, rank: rank, derived: derived, threads: p.Threads}
	if err := s.forest(&growing{p: p}).validateDerived(); err != nil {
		return nil, nil, fmt.Errorf("forest: %w", err)
	}
	return s, s.start(p, r, newSampler), nil
}

// start returns the empty forest of the resolved params p.
func (s *session) start(p Params, r resolved, newSampler func() (projection.Sampler, error)) *growing {
	cfg := tree.Config{Criterion: r.criterion, MinLeaf: float64(p.MinLeaf), MinSplit: float64(p.MinSplit), MaxDepth: p.MaxDepth}
	return &growing{p: p, r: r, newSampler: newSampler, cfg: cfg}
}

// forest returns g's trees so far as a Forest (no estimates yet).
func (s *session) forest(g *growing) *Forest {
	fr := s.fr
	f := &Forest{
		Kind:      g.p.Forest,
		Task:      fr.Task,
		Features:  append([]string(nil), fr.Names...),
		LabelName: fr.LabelName,
		Classes:   append([]string(nil), fr.Classes...),
		Targets:   slices.Clone(fr.Targets),
		Trees:     g.trees,
		Params:    g.p,
		Rank:      s.rank,
		Derived:   s.derived,
	}
	if fr.Levels != nil {
		f.Levels = fr.Levels
	}
	return f
}

// progressFunc reports the trees of one grow call as done trees of a run of
// total trees, of which offset were done before it.
func progressFunc(opts TrainOptions, offset, total int) func(done int) {
	if opts.Progress == nil {
		return nil
	}
	return func(done int) { opts.Progress(offset+done, total) }
}

// grow adds trees len(g.trees)..upto-1 to g on the session's worker pool;
// progress, when set, is called serialised with the number of trees this
// call has grown.
func (s *session) grow(opts TrainOptions, g *growing, upto int, progress func(done int)) error {
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	from := len(g.trees)
	if upto <= from {
		return nil
	}
	g.trees = append(g.trees, make([]*tree.Tree, upto-from)...)
	g.imps = append(g.imps, make([][]float64, upto-from)...)
	g.inbag = append(g.inbag, make([]bitset, upto-from)...)
	g.work = append(g.work, make([]int64, upto-from)...)
	d, r, p := s.d, g.r, g.p
	n := s.fr.NRows
	// the memory bound: the forest's size projected from the trees grown
	// so far (TrainOptions.MaxBytes)
	var grown, grownBytes atomic.Int64
	total := max(upto, p.Trees)
	fixed := fixedBytes(total, s.fr)
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		done     atomic.Int64
		firstErr error
		errOnce  sync.Once
		progMu   sync.Mutex
	)
	next.Store(int64(from))
	workers := min(s.threads, upto-from)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			smp, err := g.newSampler()
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			b, err := tree.NewBuilder(d, g.cfg, smp)
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				return
			}
			counts := make([]uint32, n)
			var rowBuf []int32
			var wBuf []float64
			for {
				t := int(next.Add(1) - 1)
				if t >= upto || ctx.Err() != nil {
					return
				}
				rng := treeRNG(p.Seed, t)
				rows, wts, in := drawSampleInto(rng, n, r.bootstrap, r.fraction, counts, rowBuf, wBuf)
				rowBuf, wBuf = rows, wts
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
				g.trees[t], g.imps[t], g.inbag[t], g.work[t] = tr, imp, in, b.Work()
				if opts.MaxBytes > 0 {
					k, kb := grown.Add(1), grownBytes.Add(treeBytes(tr))
					if proj := fixed + kb/k*int64(total); proj > opts.MaxBytes {
						errOnce.Do(func() {
							firstErr = fmt.Errorf("%w: %d trees of about %s each (measured on %d grown) need about %s, more than %s",
								ErrMemory, total, bytefmt.Format(kb/k), k, bytefmt.Format(proj), bytefmt.Format(opts.MaxBytes))
						})
						next.Store(int64(upto)) // the other workers stop too
						return
					}
				}
				if progress != nil {
					progMu.Lock()
					progress(int(done.Add(1)))
					progMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("forest: training cancelled: %w", err)
	}
	return nil
}

// finish turns g's trees into the trained forest: importances and the
// out-of-bag estimates.
func (s *session) finish(g *growing) (*Forest, error) {
	fr, r, p := s.fr, g.r, g.p
	f := s.forest(g)
	f.Importances = map[string][]float64{
		ImportanceImpurity:        impurityImportance(g.imps, fr.P()),
		ImportanceProjectionCount: projectionCounts(f.Trees, fr.P()),
	}
	if err := f.validateGrown(); err != nil { // a tuned forest's record comes later
		return nil, err
	}
	// the out-of-bag passes walk the trees as grown: a compiled copy
	// (Compile) would hold as much memory again as the forest
	c := newTreeWalk(f)
	c.bins = s.d.Bins // for the columns DropColumns released
	oobRows := 0
	if r.bootstrap || r.fraction < 1 {
		f.OOB = outOfBag(c, fr, g.inbag, s.threads)
		oobRows = f.OOB.Rows
	}
	if p.Permutation {
		if oobRows == 0 {
			return nil, errors.New("forest: permutation importance needs out-of-bag rows (bootstrap or subsample < 1)")
		}
		f.Importances[ImportancePermutation] = permutationImportance(c, fr, g.inbag, p.Seed, s.threads)
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

package manifold

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/tree"
)

// Options are the training options of a distance random forest. Start
// from DefaultOptions; Train validates them.
type Options struct {
	// Trees, Seed and Threads as for any forest; Threads never changes
	// the model.
	Trees   int
	Seed    uint64
	Threads int
	// MaxFeatures: candidate atoms per node as forest.MTry reads it
	// ("sqrt", "log2", "all", a count, a fraction); empty means p/3.
	MaxFeatures string
	// MinLeaf is the minimum in-bag weight of a leaf, MinSplit of a node
	// that may be split; MaxDepth 0 is unlimited (the paper grows trees
	// without pruning: §3.1).
	MinLeaf, MinSplit, MaxDepth int
	// Sample is "bootstrap" or "subsample"; SampleFraction of N rows per
	// tree (default 1 for bootstrap, 0.632 for subsample).
	Sample         string
	SampleFraction float64
	// Projection is forest.ProjectionAxis (Breiman) or
	// forest.ProjectionSparse (SPORF atoms, non-zeros ~ Poisson(Lambda),
	// default Lambda 1.5).
	Projection string
	Lambda     float64
	// Distance is forest.DistanceEuclidean or forest.DistanceIsomap with
	// IsomapK neighbours (default 7).
	Distance string
	IsomapK  int
	// EmbedDim is m, the MDS embedding dimension (§2.3.2; fewer when the
	// distance matrix has fewer positive eigenvalues), or 0: chosen out
	// of bag among EmbedDimCandidates (embeddim.go; the candidates' errors
	// are forest.DRF.EmbedDims). Choosing m runs the σ_G/γ_G search once
	// per candidate, and needs at least 3 training rows out of bag.
	EmbedDim int
	// SigmaG and GammaG are σ_G and γ_G of eqs. (8)–(9). Either left 0 is
	// chosen as Select says (the other, when given, stays fixed).
	SigmaG, GammaG float64
	// Select is SelectOOB (the default: the error of the backscored
	// out-of-bag predictions of the training rows, selectBackscoreOOB) or
	// SelectLOO (leave-one-out cross-validation of the backscoring map on
	// the training pairs, selectBackscoreRef). SelectOOB falls back to
	// SelectLOO, and the model records it, when fewer than 3 training rows
	// are out of bag in any tree (every tree subsampling all rows, say).
	Select string
	// Center fits the backscoring map to the responses minus their mean
	// and adds the mean back (forest.DRF.Offset): eq. (7) plus a constant
	// term. Everything else in dRF depends on the responses through their
	// distances only, so it is translation invariant; the paper's eq. (7)
	// alone shrinks towards the origin of the response coordinates
	// wherever the kernel weights are small. False is the paper's map.
	Center bool
	// Predict is forest.PredictWeighted (the a-weighted mean on the
	// embedding, the default) or forest.PredictAlgorithm1 (the paper's
	// Algorithm 1, which depends on a only through its argmax).
	Predict string
	// MaxRows bounds N, the training rows behind the N×N distance matrix
	// (8·N² bytes, and as much again for MDS): more labelled rows are
	// subsampled uniformly without replacement (seeded).
	MaxRows int
	// Progress, when set, is called after each tree (serialised).
	Progress func(done, total int)
	// Context cancels training early.
	Context context.Context
}

// DefaultOptions are the paper's swiss-roll settings where it gives them
// (§3.1: Isomap distance with k = 7, trees grown without pruning) and our
// choices elsewhere: 100 trees, p/3 candidate features, embedding
// dimension 10, σ_G and γ_G by out-of-bag error, a centred
// backscoring map, the weighted prediction, at most 2000 training rows.
func DefaultOptions() Options {
	return Options{
		Trees: 100, Seed: 1, Threads: runtime.NumCPU(),
		MinLeaf: 1, MinSplit: 2, Sample: "bootstrap",
		Projection: forest.ProjectionAxis,
		Distance:   forest.DistanceIsomap, IsomapK: defaultIsomapK,
		EmbedDim: 24, Center: true, MaxRows: 2000, Predict: forest.PredictWeighted, Select: SelectOOB,
	}
}

func (o *Options) validate(p int) (mtry int, err error) {
	if o.Trees < 1 {
		return 0, fmt.Errorf("trees must be at least 1, got %d", o.Trees)
	}
	if o.Threads < 1 {
		o.Threads = 1
	}
	if o.MinLeaf < 1 {
		return 0, fmt.Errorf("min leaf must be at least 1, got %d", o.MinLeaf)
	}
	if o.MinSplit < 0 || o.MaxDepth < 0 {
		return 0, fmt.Errorf("min split %d and max depth %d must not be negative", o.MinSplit, o.MaxDepth)
	}
	switch o.Sample {
	case "bootstrap", "":
		o.Sample = "bootstrap"
		if o.SampleFraction == 0 {
			o.SampleFraction = 1
		}
	case "subsample":
		if o.SampleFraction == 0 {
			o.SampleFraction = 0.632
		}
		if o.SampleFraction > 1 {
			return 0, fmt.Errorf("subsample fraction %v must be at most 1", o.SampleFraction)
		}
	default:
		return 0, fmt.Errorf("unknown sample scheme %q (want bootstrap or subsample)", o.Sample)
	}
	if !(o.SampleFraction > 0) || o.SampleFraction > 10 {
		return 0, fmt.Errorf("sample fraction %v must be in (0, 10]", o.SampleFraction)
	}
	switch o.Projection {
	case forest.ProjectionAxis, "":
		o.Projection = forest.ProjectionAxis
		if o.Lambda != 0 {
			return 0, fmt.Errorf("lambda applies to sparse projections only")
		}
	case forest.ProjectionSparse:
		if o.Lambda == 0 {
			o.Lambda = 1.5
		}
		if !(o.Lambda > 0) || math.IsInf(o.Lambda, 0) {
			return 0, fmt.Errorf("lambda %v must be positive", o.Lambda)
		}
	default:
		return 0, fmt.Errorf("unknown projection %q (want %s or %s)", o.Projection, forest.ProjectionAxis, forest.ProjectionSparse)
	}
	switch o.Predict {
	case "":
		o.Predict = forest.PredictWeighted
	case forest.PredictWeighted, forest.PredictAlgorithm1:
	default:
		return 0, fmt.Errorf("unknown prediction mode %q (want %s or %s)", o.Predict, forest.PredictWeighted, forest.PredictAlgorithm1)
	}
	switch o.Select {
	case "":
		o.Select = SelectOOB
	case SelectOOB, SelectLOO:
	default:
		return 0, fmt.Errorf("unknown backscoring selection %q (want %s or %s)", o.Select, SelectOOB, SelectLOO)
	}
	switch o.Distance {
	case forest.DistanceEuclidean:
		o.IsomapK = 0
	case forest.DistanceIsomap:
		if o.IsomapK == 0 {
			o.IsomapK = defaultIsomapK
		}
		if o.IsomapK < 1 {
			return 0, fmt.Errorf("isomap k %d must be at least 1", o.IsomapK)
		}
	default:
		return 0, fmt.Errorf("unknown distance %q (want %s or %s)", o.Distance, forest.DistanceEuclidean, forest.DistanceIsomap)
	}
	if o.EmbedDim < 0 {
		return 0, fmt.Errorf("embedding dimension %d must not be negative (0 = chosen out of bag)", o.EmbedDim)
	}
	if o.SigmaG < 0 || math.IsNaN(o.SigmaG) || math.IsInf(o.SigmaG, 0) {
		return 0, fmt.Errorf("sigma_g %v must be positive and finite (0 = chosen)", o.SigmaG)
	}
	if o.GammaG < 0 || math.IsNaN(o.GammaG) || math.IsInf(o.GammaG, 0) {
		return 0, fmt.Errorf("gamma_g %v must be positive and finite (0 = chosen)", o.GammaG)
	}
	if o.MaxRows < 2 {
		return 0, fmt.Errorf("max rows %d must be at least 2", o.MaxRows)
	}
	if o.MaxFeatures == "" {
		return max(p/3, 1), nil
	}
	if o.Projection == forest.ProjectionSparse {
		// SPORF may draw more atoms than features
		return forestMTryOblique(o.MaxFeatures, p)
	}
	return forest.MTry(o.MaxFeatures, p, frame.TaskRegression)
}

// forestMTryOblique resolves max features for sparse atoms: a count may
// exceed p; fractions and names are read as for axis atoms.
func forestMTryOblique(s string, p int) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 1<<20 {
			return 0, fmt.Errorf("max features %d must be at least 1", n)
		}
		return n, nil
	}
	return forest.MTry(s, p, frame.TaskRegression)
}

// treeRNG is tree t's random stream: it depends on the seed and the tree
// index alone, so the worker count cannot change the model.
func treeRNG(seed uint64, t int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x6d616e69666f6c64, 0x9e3779b97f4a7c15^uint64(t)*0xbf58476d1ce4e5b9))
}

// subsampleRows picks k of n rows uniformly without replacement (seeded),
// in increasing order.
func subsampleRows(seed uint64, n, k int) []int {
	rng := rand.New(rand.NewPCG(seed, 0x726f7773))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + rng.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	out := perm[:k]
	slices.Sort(out)
	return out
}

// Train grows a distance random forest (dRF paper §2.2) on the features x
// (a frame without label; its NRows rows are the training rows) and the
// responses y (NRows×q row-major, finite) named targets, then computes
// what prediction needs (§2.3): the MDS embedding of the training
// responses and the backscoring coefficients. The same inputs and options
// give the same forest, and the same model bytes, for any Threads. A
// feature with no value in any row is an error (frame.Frame.CheckValues).
func Train(x *frame.Frame, y []float64, targets []string, opts Options) (*forest.Forest, error) {
	if x == nil {
		return nil, errors.New("manifold: no feature frame")
	}
	if err := x.Validate(); err != nil {
		return nil, fmt.Errorf("manifold: %w", err)
	}
	q := len(targets)
	if q == 0 {
		return nil, errors.New("manifold: no response columns")
	}
	if x.P() == 0 {
		return nil, errors.New("manifold: no feature columns")
	}
	if err := x.CheckValues(); err != nil { // a feature null in every row
		return nil, fmt.Errorf("manifold: %w", err)
	}
	if len(y) != x.NRows*q {
		return nil, fmt.Errorf("manifold: %d response values for %d rows × %d targets", len(y), x.NRows, q)
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("manifold: response %s of row %d is %v", targets[i%q], i/q, v)
		}
	}
	if x.NRows < 2 {
		return nil, fmt.Errorf("manifold: need at least 2 training rows, have %d", x.NRows)
	}
	mtry, err := opts.validate(x.P())
	if err != nil {
		return nil, fmt.Errorf("manifold: %w", err)
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	inputRows := x.NRows
	cols := x.Cols
	if x.NRows > opts.MaxRows {
		keep := subsampleRows(opts.Seed, x.NRows, opts.MaxRows)
		cols = make([][]float32, x.P())
		for j, c := range x.Cols {
			cols[j] = make([]float32, len(keep))
			for k, r := range keep {
				cols[j][k] = c[r]
			}
		}
		ys := make([]float64, 0, len(keep)*q)
		for _, r := range keep {
			ys = append(ys, y[r*q:r*q+q]...)
		}
		y = ys
	} else {
		y = slices.Clone(y)
	}
	n := len(y) / q
	if opts.Distance == forest.DistanceIsomap && opts.IsomapK >= n {
		return nil, fmt.Errorf("manifold: isomap k %d needs more than %d training rows", opts.IsomapK, n)
	}

	d2, err := SquaredDistances(y, n, q, opts.Distance, opts.IsomapK, opts.Threads)
	if err != nil {
		return nil, err
	}
	trees, leaves, imps, err := growTrees(ctx, cols, d2, n, mtry, &opts)
	if err != nil {
		return nil, err
	}
	var (
		emb  *Embedding
		bs   *backscoreFit
		dims []forest.EmbedDimError
	)
	if opts.EmbedDim == 0 {
		if emb, bs, dims, err = chooseEmbedDim(ctx, trees, leaves, cols, d2, y, n, q, &opts); err != nil {
			return nil, err
		}
	} else {
		if emb, err = ClassicalMDS(d2, n, opts.EmbedDim, opts.Threads); err != nil {
			return nil, err
		}
		var oob *oobPointSet
		if (opts.SigmaG == 0 || opts.GammaG == 0) && opts.Select == SelectOOB {
			oob = oobPoints(trees, leaves, cols, d2, emb, opts.Predict, maxOOBPoints, opts.Threads)
		}
		if bs, err = fitBackscore(emb, y, n, q, oob, &opts); err != nil {
			return nil, err
		}
	}

	p := forest.Params{
		Forest: forest.KindDRF, Trees: opts.Trees, Seed: opts.Seed, Threads: opts.Threads,
		MaxFeatures: opts.MaxFeatures, MTry: mtry, Criterion: tree.Distance.String(),
		MinLeaf: opts.MinLeaf, MinSplit: opts.MinSplit, MaxDepth: opts.MaxDepth,
		Sample: opts.Sample, SampleFraction: opts.SampleFraction, Split: "exact", Lambda: opts.Lambda,
	}
	f := &forest.Forest{
		Kind: forest.KindDRF, Task: frame.TaskRegression,
		Features: slices.Clone(x.Names), Levels: x.Levels,
		LabelName: strings.Join(targets, ","), Trees: trees, Params: p,
		Importances: map[string][]float64{
			forest.ImportanceImpurity:        forest.ImpurityImportance(imps, x.P()),
			forest.ImportanceProjectionCount: forest.ProjectionCounts(trees, x.P()),
		},
		DRF: &forest.DRF{
			Targets: slices.Clone(targets), Distance: opts.Distance, IsomapK: opts.IsomapK,
			Projection: opts.Projection, SigmaG: bs.sigma, GammaG: bs.gamma, Predict: opts.Predict, InputRows: inputRows,
			Responses: y, Embedding: emb.Z, Eigenvalues: emb.Lambda, Coef: bs.coef, Offset: bs.offset,
			SelectedBy: bs.selectedBy, SelectMSE: bs.selectMSE, EmbedDims: dims, Leaves: leaves,
		},
	}
	if err := f.ValidateDRF(); err != nil {
		return nil, fmt.Errorf("manifold: internal error: %w", err)
	}
	return f, nil
}

// growTrees grows the trees on a worker pool. Tree t draws its sample and
// atoms from treeRNG(seed, t) only, and results are stored by index.
func growTrees(ctx context.Context, cols [][]float32, d2 []float64, n, mtry int, o *Options) ([]*tree.Tree, [][]int32, [][]float64, error) {
	data := &tree.Data{Cols: cols, Dist: &tree.Distances{N: n, D2: d2}}
	cfg := tree.Config{Criterion: tree.Distance, MinLeaf: float64(o.MinLeaf), MinSplit: float64(o.MinSplit), MaxDepth: o.MaxDepth}
	p := len(cols)
	newSampler := func() (projection.Sampler, error) {
		if o.Projection == forest.ProjectionSparse {
			return projection.NewSparse(p, mtry, o.Lambda, false)
		}
		return projection.NewAxis(p, mtry)
	}
	if _, err := newSampler(); err != nil {
		return nil, nil, nil, fmt.Errorf("manifold: %w", err)
	}
	trees := make([]*tree.Tree, o.Trees)
	leaves := make([][]int32, o.Trees)
	imps := make([][]float64, o.Trees)
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		done     atomic.Int64
		errOnce  sync.Once
		firstErr error
		progMu   sync.Mutex
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	for w := 0; w < min(o.Threads, o.Trees); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			smp, err := newSampler()
			if err != nil {
				fail(err)
				return
			}
			b, err := tree.NewBuilder(data, cfg, smp)
			if err != nil {
				fail(fmt.Errorf("manifold: %w", err))
				return
			}
			counts := make([]uint32, n)
			for {
				t := int(next.Add(1) - 1)
				if t >= o.Trees || ctx.Err() != nil {
					return
				}
				rng := treeRNG(o.Seed, t)
				rows, wts := forest.DrawSample(rng, n, o.Sample == "bootstrap", o.SampleFraction, counts)
				tr, imp, err := b.Grow(rng, rows, wts)
				if err != nil {
					fail(fmt.Errorf("manifold: tree %d: %w", t, err))
					return
				}
				lv := make([]int32, n)
				for i := range lv {
					lv[i] = -1
				}
				for _, r := range rows {
					lv[r] = tr.Leaf(cols, int(r))
				}
				trees[t], leaves[t], imps[t] = tr, lv, imp
				if o.Progress != nil {
					progMu.Lock()
					o.Progress(int(done.Add(1)), o.Trees)
					progMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("manifold: training cancelled: %w", err)
	}
	return trees, leaves, imps, nil
}

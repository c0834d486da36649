package forest

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/tree"
)

// Topology returns the MORF feature layout described by the params. A
// layout missing, unknown or not fitting nFeatures is a *ParamError of
// parameter "layout".
func (p *Params) Topology(nFeatures int) (projection.Topology, error) {
	t, err := p.topology(nFeatures)
	if err != nil {
		return t, &ParamError{Param: "layout", Err: err}
	}
	return t, nil
}

func (p *Params) topology(nFeatures int) (projection.Topology, error) {
	ch := max(p.Channels, 1)
	t := projection.Topology{H: p.Height, W: p.Width, C: ch, Interleaved: p.Interleaved}
	switch p.Layout {
	case "grid":
	case "series", "cyclic":
		t.H = 1
		if t.W == 0 {
			t.W = nFeatures / ch
		}
		t.CyclicW = p.Layout == "cyclic"
	case "":
		return t, fmt.Errorf("morf needs a feature layout: --grid WxH, --series or --cyclic")
	default:
		return t, fmt.Errorf("unknown layout %q (want grid, series or cyclic)", p.Layout)
	}
	return t, t.Validate(nFeatures)
}

// SetLayout sets the feature layout from its one-word form: "series",
// "cyclic", or "WxH" for a W×H grid (e.g. "28x28"); "" clears it. It is
// the daemon's train.layout, the counterpart of train's --series,
// --cyclic and --grid (one channel).
func (p *Params) SetLayout(s string) error {
	switch s {
	case "", "series", "cyclic":
		p.Layout, p.Width, p.Height = s, 0, 0
		return nil
	}
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 {
		return fmt.Errorf("layout %q: want series, cyclic or a grid WxH like 28x28", s)
	}
	p.Layout, p.Width, p.Height = "grid", w, h
	return nil
}

// samplerFactory returns a constructor of per-worker samplers for the kind.
func (p *Params) samplerFactory(nFeatures, m int) (func() (projection.Sampler, error), error) {
	if p.Forest != KindSPORF && p.Lambda != 0 {
		return nil, paramErrorf("lambda", "lambda applies to --forest sporf only")
	}
	if p.Forest != KindSPORF && p.Rank {
		return nil, paramErrorf("rank", "rank applies to --forest sporf only")
	}
	if p.MeanDiff && p.Forest != KindSPORF && p.Forest != KindMORF {
		return nil, paramErrorf("mean_diff", "mean-diff applies to --forest sporf and morf only")
	}
	if p.Forest != KindMORF && ((p.Layout != "" && p.Forest != KindLFS) || p.PatchHMax != 0 || p.PatchWMax != 0) {
		return nil, fmt.Errorf("layouts and patch sizes apply to --forest morf (and layouts to lfs) only")
	}
	if err := p.checkLocal(); err != nil {
		return nil, err
	}
	switch p.Forest {
	case KindRF:
		if _, err := projection.NewAxis(nFeatures, m); err != nil {
			return nil, err
		}
		return func() (projection.Sampler, error) { return projection.NewAxis(nFeatures, m) }, nil
	case KindSPORF:
		if p.Lambda == 0 {
			p.Lambda = 1.5
		}
		if _, err := projection.NewSparse(nFeatures, m, p.Lambda, p.MeanDiff); err != nil {
			return nil, err
		}
		return func() (projection.Sampler, error) {
			return projection.NewSparse(nFeatures, m, p.Lambda, p.MeanDiff)
		}, nil
	case KindMORF:
		top, err := p.Topology(nFeatures)
		if err != nil {
			return nil, err
		}
		if p.PatchHMin == 0 {
			p.PatchHMin = 1
		}
		if p.PatchWMin == 0 {
			p.PatchWMin = 1
		}
		if p.PatchHMax == 0 {
			p.PatchHMax = min(max(p.PatchHMin, 3), top.H)
		}
		if p.PatchWMax == 0 {
			p.PatchWMax = min(max(p.PatchWMin, 3), top.W)
		}
		if _, err := projection.NewPatch(top, nFeatures, m, p.PatchHMin, p.PatchHMax, p.PatchWMin, p.PatchWMax, p.MeanDiff); err != nil {
			return nil, err
		}
		return func() (projection.Sampler, error) {
			return projection.NewPatch(top, nFeatures, m, p.PatchHMin, p.PatchHMax, p.PatchWMin, p.PatchWMax, p.MeanDiff)
		}, nil
	case KindLFS, KindFDM:
		return nil, nil // drawn on the training data: Train calls dataSampler (local.go)
	}
	return nil, fmt.Errorf("unknown forest %q (want rf, sporf, morf, lfs or fdm)", p.Forest)
}

// Params are the training options of a forest. The zero value is not
// valid; use DefaultParams, and Check before training.
type Params struct {
	// Forest is the kind: "rf" (Breiman, axis atoms), "sporf" (sparse
	// oblique, Randomer paper §2), "morf" (manifold oblique patches,
	// MORF paper §3.1), "lfs" (local feature sampling, dissertation ch. 4)
	// or "fdm" (RF_FDM, dissertation §6.4).
	Forest Kind   `json:"forest"`
	Trees  int    `json:"trees"`
	Seed   uint64 `json:"seed"`
	// Threads bounds the worker pool; it never changes the model.
	Threads int `json:"-"`

	// MaxFeatures: "sqrt", "log2", "all", a count ("12") or a fraction
	// ("0.3"). Empty means sqrt for classification and p/3 for regression.
	MaxFeatures string `json:"max_features"`
	// MTry is the resolved number of candidate atoms per node (set by Train).
	MTry int `json:"mtry"`
	// Criterion: "gini" or "entropy" (classification), "mse" (regression).
	Criterion string `json:"criterion"`
	MinLeaf   int    `json:"min_leaf"`
	// MinSplit: nodes with less in-bag weight are not split.
	MinSplit int `json:"min_split"`
	MaxDepth int `json:"max_depth"` // 0 = unlimited
	// Sample: "bootstrap" (with replacement) or "subsample" (without).
	Sample string `json:"sample"`
	// SampleFraction of n drawn per tree (default 1 for bootstrap, 0.632
	// for subsample).
	SampleFraction float64 `json:"sample_fraction"`
	// Split: "binned" (histogram, default) or "exact" (sorted).
	Split string `json:"split"`
	// Bins is the number of quantile bins per feature in binned mode (≤ 255).
	Bins int `json:"bins"`
	// Permutation requests OOB permutation importance.
	Permutation bool `json:"permutation_importance"`
	// Tune chooses the kind's hyperparameters out of bag before training
	// (rf, sporf, morf; tune.go): the forest is trained with the winning
	// candidate and records the search in Forest.Tuning.
	Tune bool `json:"tune,omitempty"`

	// SPORF: non-zeros per atom ~ Poisson(Lambda) (≥ 1); MeanDiff adds
	// RerF(δ) class-mean-difference atoms; Rank trains on marginal ranks
	// (RerF(r)) and applies the same map when scoring.
	Lambda   float64 `json:"lambda,omitempty"`
	MeanDiff bool    `json:"mean_diff,omitempty"`
	Rank     bool    `json:"rank,omitempty"`

	// MORF: the feature layout and the patch size range (rows × columns).
	Layout      string `json:"layout,omitempty"` // "grid", "series" or "cyclic"
	Height      int    `json:"height,omitempty"`
	Width       int    `json:"width,omitempty"`
	Channels    int    `json:"channels,omitempty"`
	Interleaved bool   `json:"interleaved,omitempty"`
	PatchHMin   int    `json:"patch_h_min,omitempty"`
	PatchHMax   int    `json:"patch_h_max,omitempty"`
	PatchWMin   int    `json:"patch_w_min,omitempty"`
	PatchWMax   int    `json:"patch_w_max,omitempty"`

	// Honest, in (0, 1), is the share of each tree's in-bag rows held out
	// of structure learning and used only to estimate the leaves (MORF
	// paper §4.2); 0 turns honesty off.
	Honest float64 `json:"honest,omitempty"`

	// LFS (forest "lfs", dissertation ch. 4; local.go): each tree's local
	// feature subset is a patch on the layout with sides LFSMin..LFSSize
	// or, without a layout, a feature and its nearest features
	// (LFSMin..LFSSize of them) under LFSDistance (corr, euclidean, pca,
	// geodesic) with LFSK graph neighbours or LFSComponents components;
	// LFSDistance "subspace" is the random-subspace baseline.
	LFSSize       int    `json:"lfs_size,omitempty"`
	LFSMin        int    `json:"lfs_min,omitempty"`
	LFSDistance   string `json:"lfs_distance,omitempty"`
	LFSK          int    `json:"lfs_k,omitempty"`
	LFSComponents int    `json:"lfs_components,omitempty"`

	// FDM (forest "fdm", RF_FDM, dissertation §6.4; fdm.go): per tree,
	// each feature group maps to its best random projections (FDMMap
	// "rp", best |G| of FDMCandidates by gCor_n, eq. 6.2; by dCor_n for a
	// regression forest). FDMGroups ("0,1;2,3,4") and FDMMarginal ("5,6")
	// hold feature indices; when both are empty Train finds them with the
	// FDMSearch method (default mdc-bottomup) under FDMAdjust (default
	// holm: at most FDMAlpha, default 0.05, chance of any false feature or
	// group; "none": every test at FDMAlpha alone, where 0 means b = 0
	// after the most permutations, the dissertation's FDM setting,
	// §6.5.2) with up to FDMMaxPerms permutations per test (default
	// dependence.DefaultMaxPermsAdjusted, or 5000 with "none") and records
	// them here.
	FDMMap        string  `json:"fdm_map,omitempty"`
	FDMCandidates int     `json:"fdm_candidates,omitempty"`
	FDMGroups     string  `json:"fdm_groups,omitempty"`
	FDMMarginal   string  `json:"fdm_marginal,omitempty"`
	FDMSearch     string  `json:"fdm_search,omitempty"`
	FDMAdjust     string  `json:"fdm_adjust,omitempty"`
	FDMAlpha      float64 `json:"fdm_alpha,omitempty"`
	FDMMaxPerms   int     `json:"fdm_max_perms,omitempty"`
}

// DefaultParams returns the defaults for a task: 100 trees, bootstrap,
// binned split search with 255 bins, min leaf 1, nodes split down to 2 rows
// (classification, Gini) or 5 rows (regression, MSE; Breiman's node size),
// max features sqrt(p) or p/3 (Breiman 2001).
func DefaultParams(task frame.Task) Params {
	p := Params{
		Forest:    KindRF,
		Trees:     100,
		Seed:      1,
		Threads:   runtime.NumCPU(),
		Criterion: "gini",
		MinLeaf:   1,
		MinSplit:  2,
		Sample:    "bootstrap",
		Split:     "binned",
		Bins:      255,
	}
	if task == frame.TaskRegression {
		p.Criterion = "mse"
		p.MinSplit = 5
	}
	return p
}

// resolved are validated, typed parameters for one training run.
type resolved struct {
	mtry      int
	sampler   func() (projection.Sampler, error)
	criterion tree.Criterion
	bootstrap bool
	fraction  float64
	binned    bool
}

// ParamError is an invalid training parameter. Param names it as its
// Params field's JSON key does ("trees", "max_features", "min_leaf", …), so
// that a command line or a config file can name its own flag or key; the
// message is Err's.
type ParamError struct {
	Param string
	Err   error
}

func (e *ParamError) Error() string { return e.Err.Error() }
func (e *ParamError) Unwrap() error { return e.Err }

// paramErrorf returns a *ParamError for param.
func paramErrorf(param, format string, args ...any) error {
	return &ParamError{Param: param, Err: fmt.Errorf(format, args...)}
}

// Check validates the parameters that do not depend on the training data —
// all but max features' bound (the feature count), the criterion's fit to
// the task and the kind's atoms — so that a caller can refuse bad settings
// before it reads any data. Train checks everything again. Errors are
// *ParamError.
func (p Params) Check() error {
	_, err := p.resolveFixed()
	return err
}

// resolve validates p against a frame with nFeatures features and task.
func (p *Params) resolve(nFeatures int, task frame.Task) (resolved, error) {
	r, err := p.resolveFixed()
	if err != nil {
		return r, err
	}
	m, err := mtry(p.MaxFeatures, nFeatures, task, p.Forest != KindRF)
	if err != nil {
		return r, err
	}
	r.mtry = m
	p.MTry = m
	if r.sampler, err = p.samplerFactory(nFeatures, m); err != nil {
		return r, err
	}
	if (task == frame.TaskRegression) != (r.criterion == tree.MSE) {
		return r, paramErrorf("criterion", "criterion %s does not fit a %s task", p.Criterion, task)
	}
	return r, nil
}

// resolveFixed validates and fills in the parameters that do not depend
// on the training data (Check).
func (p *Params) resolveFixed() (resolved, error) {
	var r resolved
	if p.Trees < 1 {
		return r, paramErrorf("trees", "trees must be at least 1, got %d", p.Trees)
	}
	if p.Threads < 1 {
		p.Threads = 1
	}
	if p.MinLeaf < 1 {
		return r, paramErrorf("min_leaf", "min leaf must be at least 1, got %d", p.MinLeaf)
	}
	if p.MinSplit < 0 {
		return r, paramErrorf("min_split", "min split must not be negative, got %d", p.MinSplit)
	}
	if p.MaxDepth < 0 {
		return r, paramErrorf("max_depth", "max depth must be 0 (unlimited) or positive, got %d", p.MaxDepth)
	}
	if p.Forest == "" {
		p.Forest = KindRF
	}
	// max features' form (a count's upper bound is the features')
	if n, err := strconv.Atoi(p.MaxFeatures); err == nil && n < 1 {
		return r, paramErrorf("max_features", "max features %d must be at least 1", n)
	} else if err != nil {
		if _, err := mtry(p.MaxFeatures, 1, frame.TaskClassification, p.Forest != KindRF); err != nil {
			return r, err
		}
	}
	if !(p.Honest >= 0 && p.Honest < 1) {
		return r, paramErrorf("honest", "honest fraction %v must be in [0, 1)", p.Honest)
	}
	var err error
	if r.criterion, err = tree.ParseCriterion(p.Criterion); err != nil {
		return r, &ParamError{Param: "criterion", Err: err}
	}
	switch p.Sample {
	case "bootstrap", "":
		p.Sample = "bootstrap"
		r.bootstrap = true
		if p.SampleFraction == 0 {
			p.SampleFraction = 1
		}
	case "subsample":
		if p.SampleFraction == 0 {
			p.SampleFraction = 0.632
		}
		if p.SampleFraction > 1 {
			return r, paramErrorf("sample_fraction", "subsample fraction %v must be at most 1", p.SampleFraction)
		}
	default:
		return r, paramErrorf("sample", "unknown sample scheme %q (want bootstrap or subsample)", p.Sample)
	}
	if !(p.SampleFraction > 0) || p.SampleFraction > 10 {
		return r, paramErrorf("sample_fraction", "sample fraction %v must be in (0, 10]", p.SampleFraction)
	}
	r.fraction = p.SampleFraction
	switch p.Split {
	case "binned", "":
		p.Split = "binned"
		r.binned = true
		if p.Bins == 0 {
			p.Bins = tree.MaxBins
		}
		if p.Bins < 2 || p.Bins > tree.MaxBins {
			return r, paramErrorf("bins", "bins %d outside 2..%d", p.Bins, tree.MaxBins)
		}
	case "exact":
		p.Bins = 0
	default:
		return r, paramErrorf("split", "unknown split search %q (want binned or exact)", p.Split)
	}
	return r, nil
}

// MTry resolves a max-features setting — "sqrt" (alias "auto"), "log2",
// "all", a count ("12") or a fraction in (0, 1] ("0.3") — to a count in
// 1..p. Empty means sqrt(p) for classification and p/3 for regression.
func MTry(s string, p int, task frame.Task) (int, error) { return mtry(s, p, task, false) }

// mtry is MTry; for oblique forests the count of candidate atoms may exceed
// p, and so may a fraction ("2" atoms per feature is "2.0").
func mtry(s string, p int, task frame.Task, oblique bool) (int, error) {
	if p < 1 {
		return 0, fmt.Errorf("no feature columns")
	}
	clamp := func(m int) int { return min(max(m, 1), p) }
	switch s {
	case "":
		if task == frame.TaskRegression {
			return clamp(p / 3), nil
		}
		return clamp(int(math.Sqrt(float64(p)))), nil
	case "sqrt", "auto":
		return clamp(int(math.Sqrt(float64(p)))), nil
	case "log2":
		return clamp(int(math.Log2(float64(p)))), nil
	case "all":
		return p, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || (n > p && !oblique) || n > 1<<20 {
			return 0, paramErrorf("max_features", "max features %d outside 1..%d", n, p)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	limit := 1.0
	if oblique {
		limit = 64
	}
	if err != nil || !(f > 0) || f > limit {
		return 0, paramErrorf("max_features", "max features %q: want sqrt, log2, all, a count or a fraction in (0, %g]", s, limit)
	}
	if oblique {
		return max(int(math.Ceil(f*float64(p))), 1), nil
	}
	return clamp(int(math.Ceil(f * float64(p)))), nil
}

package forest

import (
	"fmt"
	"strconv"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/locality"
	"github.com/forestd/forestd/arrowforest/projection"
)

// lfsMaxRows bounds the rows on which an lfs forest learns its feature
// locality (a seeded subsample beyond it; dissertation §2.2 suggests a
// random subset of samples for large n).
const lfsMaxRows = 10000

// lfsSubspace is the LFSDistance of the random-subspace baseline
// (dissertation §4.1, §4.4.1): each tree's features drawn at random.
const lfsSubspace = "subspace"

// checkLocal rejects LFS and FDM settings on the other kinds.
func (p *Params) checkLocal() error {
	if p.Forest != KindLFS && (p.LFSSize != 0 || p.LFSMin != 0 || p.LFSDistance != "" || p.LFSK != 0 || p.LFSComponents != 0) {
		return fmt.Errorf("lfs window and distance settings apply to --forest lfs only")
	}
	if p.Forest != KindFDM && (p.FDMMap != "" || p.FDMCandidates != 0 || p.FDMGroups != "" || p.FDMMarginal != "" ||
		p.FDMSearch != "" || p.FDMAdjust != "" || p.FDMAlpha != 0 || p.FDMMaxPerms != 0) {
		return fmt.Errorf("fdm settings apply to --forest fdm only")
	}
	return nil
}

// dataSampler returns the per-worker sampler constructor of the kinds whose
// atoms depend on the training data: lfs (a locality learnt from cols
// unless a layout gives it) and fdm (mappings chosen by gCor_n or dCor_n
// on the training labels), and the derived input columns the atoms split on
// (fdm with landmark mappings; nil otherwise, see derived.go).
func (p *Params) dataSampler(fr *frame.Frame, cols [][]float32, opts TrainOptions) (func() (projection.Sampler, error), *Derived, error) {
	switch p.Forest {
	case KindLFS:
		f, err := p.lfsSampler(cols, fr.Task)
		return f, nil, err
	case KindFDM:
		return p.fdmSampler(fr, cols, opts)
	}
	return nil, nil, fmt.Errorf("forest %q has no data-dependent sampler", p.Forest)
}

// mtryRule resolves MaxFeatures on a tree's own feature count: a count is
// capped at the size, every other form is applied to the size.
func (p *Params) mtryRule(task frame.Task) func(size int) int {
	return func(size int) int {
		if n, err := strconv.Atoi(p.MaxFeatures); err == nil {
			return min(max(n, 1), size)
		}
		m, err := mtry(p.MaxFeatures, size, task, false)
		if err != nil {
			return size
		}
		return m
	}
}

// lfsSampler is RF-LFS (dissertation ch. 4): per tree, a random patch on
// the layout (§4.1, image data) or a random feature and its nearest
// features on the learnt locality (§4.1 and §3.3, non-image data), of a
// fixed size (LFSMin = LFSSize) or a size drawn per tree from
// LFSMin..LFSSize (§4.2). Defaults: the largest window is everything (all
// features, or the longer side of the layout), the smallest a quarter of
// it; geodesic distance on the 8-nearest-neighbour graph (§4.4.2–4.4.3).
func (p *Params) lfsSampler(cols [][]float32, task frame.Task) (func() (projection.Sampler, error), error) {
	nf := len(cols)
	if p.LFSSize < 0 || p.LFSMin < 0 {
		return nil, fmt.Errorf("lfs window sizes %d..%d must not be negative", p.LFSMin, p.LFSSize)
	}
	full := nf
	var top projection.Topology
	if p.Layout != "" {
		if p.LFSDistance != "" || p.LFSK != 0 || p.LFSComponents != 0 {
			return nil, fmt.Errorf("lfs on a layout samples patches: --lfs-distance, --lfs-k and --lfs-components do not apply")
		}
		var err error
		if top, err = p.Topology(nf); err != nil {
			return nil, err
		}
		full = max(top.H, top.W)
	}
	if p.LFSSize == 0 {
		p.LFSSize = full
	}
	if p.LFSMin == 0 {
		p.LFSMin = min(max((p.LFSSize+3)/4, 1), p.LFSSize)
	}
	if p.LFSSize > full || p.LFSMin > p.LFSSize {
		return nil, fmt.Errorf("lfs window %d..%d outside 1..%d", p.LFSMin, p.LFSSize, full)
	}
	rule := p.mtryRule(task)
	if p.Layout != "" {
		lo, hi := p.LFSMin, p.LFSSize
		if _, err := projection.NewPatchWindow(top, nf, lo, hi); err != nil {
			return nil, err
		}
		return func() (projection.Sampler, error) {
			w, err := projection.NewPatchWindow(top, nf, lo, hi)
			if err != nil {
				return nil, err
			}
			return projection.NewLocal(w, rule)
		}, nil
	}
	if p.LFSDistance == lfsSubspace {
		if p.LFSK != 0 || p.LFSComponents != 0 {
			return nil, fmt.Errorf("lfs subspace draws features at random: --lfs-k and --lfs-components do not apply")
		}
		lo, hi := p.LFSMin, p.LFSSize
		return func() (projection.Sampler, error) {
			w, err := projection.NewRandomWindow(nf, lo, hi)
			if err != nil {
				return nil, err
			}
			return projection.NewLocal(w, rule)
		}, nil
	}
	d, err := LFSLocality(cols, *p)
	if err != nil {
		return nil, err
	}
	p.LFSDistance = d.Metric
	switch {
	case d.Metric == locality.Geodesic && p.LFSK == 0:
		p.LFSK = locality.DefaultK
	case d.Metric == locality.PCA && p.LFSComponents == 0:
		p.LFSComponents = locality.DefaultComponents
	}
	lo, hi := p.LFSMin, p.LFSSize
	return func() (projection.Sampler, error) {
		w, err := locality.NewWindow(d, lo, hi)
		if err != nil {
			return nil, err
		}
		return projection.NewLocal(w, rule)
	}, nil
}

// LFSLocality returns the feature locality an lfs forest with params p
// learns from the training columns cols (dissertation §3.3): the distance
// p.LFSDistance (default geodesic) with p.LFSK neighbours (default 8) or
// p.LFSComponents components (default 20), on at most 10,000 rows drawn
// with p.Seed. Train calls it; so can a caller that wants to publish the
// locality graph of a trained forest (same params, same distances).
func LFSLocality(cols [][]float32, p Params) (*locality.Distances, error) {
	return locality.Compute(cols, locality.Options{Metric: p.LFSDistance, K: p.LFSK, Components: p.LFSComponents,
		MaxRows: lfsMaxRows, Seed: p.Seed, Threads: p.Threads})
}

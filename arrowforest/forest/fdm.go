package forest

import (
	"fmt"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
)

// fdmSampler is RF_FDM (dissertation §6.4): every tree maps each feature
// group to the best |G| of FDMCandidates random mappings by gCor_n on its
// in-bag rows (eq. 6.2; by dCor_n for a regression forest, see package
// fdm) and splits on those and on the marginally dependent features
// (fdm.NewTreeSamplerLabel). FDMMap "rp" draws random projections (§6.1.1),
// linear atoms over the features; "drl" draws distances to a random
// in-bag landmark (§6.1.2), linear atoms over the features and one derived
// input per group (fdm.Norm), which it returns for Train to append to the
// data (derived.go). The groups are FDMGroups and FDMMarginal or, when
// both are empty, those the MDS/SDS search finds on the training data
// (dissertation ch. 5; no ground truth), recorded in the params so the
// model says what its trees were built on. The search reports to
// run.SearchProgress and stops with run.Context.
func (p *Params) fdmSampler(fr *frame.Frame, cols [][]float32, run TrainOptions) (func() (projection.Sampler, error), *Derived, error) {
	lab, err := fdm.LabelOf(fr)
	if err != nil {
		return nil, nil, err
	}
	if p.FDMMap == "" {
		p.FDMMap = fdm.MapRP
	}
	if p.FDMCandidates == 0 {
		p.FDMCandidates = fdm.DefaultCandidates
	}
	if p.FDMAlpha < 0 || p.FDMAlpha > 1 || p.FDMMaxPerms < 0 {
		return nil, nil, fmt.Errorf("fdm search alpha %v must be in [0, 1] and max perms %d not negative", p.FDMAlpha, p.FDMMaxPerms)
	}
	var plan fdm.Plan
	if p.FDMGroups == "" && p.FDMMarginal == "" {
		opt := dependence.DefaultSearchOptions()
		if p.FDMSearch != "" {
			opt.Method = dependence.Method(p.FDMSearch)
		}
		if lab.IsNumeric() {
			opt.Stat = dependence.StatDCor
		}
		if p.FDMAdjust != "" {
			opt.Adjust = dependence.Adjust(p.FDMAdjust)
		}
		// Under holm (the default) α bounds the chance of any false
		// feature or group (0 means 0.05). With "none" α = 0 keeps the
		// level the dissertation applies FDM with (§5.7 and §6.5.2: "By
		// setting α = 0, we let FDM approaches work on the remaining
		// features"): a set is dependent only when no permutation reaches
		// it; at 0.05 per test a marginally independent XOR member is
		// declared marginal by chance often enough to break its group.
		opt.Alpha = p.FDMAlpha
		if opt.Alpha == 0 && opt.Adjust != dependence.AdjustNone {
			opt.Alpha = dependence.DefaultAlpha
		}
		opt.Test.MaxPerms, opt.Test.Seed, opt.Test.Threads = p.FDMMaxPerms, p.Seed, p.Threads
		opt.Context, opt.Progress = run.Context, run.SearchProgress
		var res *dependence.SearchResult
		if plan, res, err = fdm.DiscoverLabel(cols, lab, opt); err != nil {
			return nil, nil, err
		}
		p.FDMSearch, p.FDMAdjust, p.FDMAlpha = string(res.Method), string(res.Adjust), res.Alpha
		p.FDMMaxPerms = res.MaxPerms
		p.FDMGroups, p.FDMMarginal = fdm.FormatSets(plan.Groups), fdm.FormatSets([][]int{plan.Marginal})
		if len(plan.Marginal) == 0 {
			p.FDMMarginal = ""
		}
	} else {
		if p.FDMSearch != "" || p.FDMAdjust != "" || p.FDMAlpha != 0 || p.FDMMaxPerms != 0 {
			return nil, nil, fmt.Errorf("fdm search settings apply only when the groups are not given")
		}
		groups, err := fdm.ParseSets(p.FDMGroups)
		if err != nil {
			return nil, nil, err
		}
		marg, err := fdm.ParseSets(p.FDMMarginal)
		if err != nil {
			return nil, nil, err
		}
		if len(marg) > 1 {
			return nil, nil, fmt.Errorf("fdm marginal features %q: one comma-separated list, not sets", p.FDMMarginal)
		}
		plan.Groups = groups
		if len(marg) == 1 {
			plan.Marginal = marg[0]
		}
	}
	if err := plan.Validate(len(cols)); err != nil {
		return nil, nil, err
	}
	opts := fdm.Options{Map: p.FDMMap, Candidates: p.FDMCandidates}
	rule := p.mtryRule(fr.Task)
	_, norms, err := fdm.NewTreeSamplerLabel(cols, lab, plan, opts, rule)
	if err != nil {
		return nil, nil, err
	}
	var derived *Derived
	if len(norms) > 0 {
		derived = &Derived{Norms: norms}
	}
	return func() (projection.Sampler, error) {
		s, _, err := fdm.NewTreeSamplerLabel(cols, lab, plan, opts, rule)
		return s, err
	}, derived, nil
}

package forest

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/forestd/forestd/arrowforest/frame"
)

// Tuning records the out-of-bag hyperparameter search of a forest trained
// with Params.Tune: every candidate it tried, its scores at every tree
// count it reached, and the winner, whose setting the forest's Params hold.
//
// The search has two stages, each a successive halving over trees
// (Jamieson and Talwalkar, "Non-stochastic best arm identification and
// hyperparameter optimization", AISTATS 2016): every candidate of the stage
// grows the first round's trees and is scored; the best third (rounded up)
// grow on to the next round's tree count, three times as many, and so on
// until one is left. Stage 1 chooses the atoms — MORF's patch sizes and
// twins, SPORF's λ and RerF(δ) atoms — at the default mtry and min-leaf.
// Stage 2 chooses mtry and min-leaf for the atoms stage 1 chose (its
// winner competes again, with the trees it has); these trade the strength
// of the trees against their correlation (dissertation §1.6), which shows
// in the error only with more trees per row, so stage 2 starts at three
// times stage 1's trees. A kind with nothing to choose in a stage (rf in
// stage 1) has that stage's one candidate.
//
// Stage 2's last round does not take the least score blindly: it takes
// the earliest-listed candidate whose score is within one standard error
// of the least (the "one standard error rule" of Breiman, Friedman, Olshen
// and Stone, "Classification and Regression Trees", §3.4.3, as in Hastie,
// Tibshirani and Friedman, "The Elements of Statistical Learning", §7.10).
// The standard error is that of the mean of the paired per-row
// differences of the two candidates' out-of-bag terms (tuneScore.PerRow;
// both forests' trees share bootstrap samples, so the rows are the same).
// Stage 2 lists the stage-1 winner at the default mtry and min-leaf
// first — the incumbent, which stays in every round of the halving — and
// then the default mtry before the others (fewer to more candidates per
// node), larger leaves first, so a difference
// the out-of-bag rows cannot tell from noise keeps the default (or the
// cheaper forest) instead of a draw's lucky setting. Measured
// (e2e/bench/results/morf-2026-11-25-tune.md, peers-2026-11-25-cv-tune.md):
// the rule in stage 2 kept or improved every MORF and SPORF --tune test
// error and cut the cost of the chosen forests; in stage 1 (the atoms) it
// chose 3x3 patches on hvbars n = 50, whose 50 rows give wide errors,
// and missed that target (0.0088 against 0.0011), so stage 1 keeps the
// least score. Tuning.OneSE records that the rule was applied.
//
// The search has a cost bound: it and the final forest together take at
// most tuneBudget (4) times the work of the untuned forest, in the
// deterministic work units of tree.Builder.Work (Tuning.Work). After
// stage 1's first round the untuned setting's trees give that forest's
// work; each stage decides among the candidates whose forest, grown on to
// the forest's trees, keeps the run within the budget (affordable); and
// stage 2 leaves out, untried, the settings of most candidates per node
// until its successive halving and a final forest fit (budgeted; listed
// in TuneWork.OverBudget). A budget no candidate can meet — with few
// trees the first round alone can exceed it — does not bind. Measured:
// the costliest --tune runs of the MORF and SPORF targets took 3.2× the
// untuned training's wall clock with the budget, up to 5.1× without it,
// and met the same accuracy targets
// (e2e/bench/results/morf-2026-11-26-budget.md).
//
// Every candidate's tree t is drawn from the stream of (seed, t), as in an
// untuned forest, so all candidates see the same bootstrap samples (their
// scores are paired), a candidate's trees of one round are the first trees
// of its next, and the winner's search trees are the first trees of the
// final forest: the tuned forest is, tree for tree, the forest Train grows
// untuned with the winner's params. oobScore defines the scores,
// tuneSpaceOf the candidate sets.
type Tuning struct {
	// Metric names the score: "error" (classification: the out-of-bag
	// misclassification rate, ties broken by the Brier score) or "mse"
	// (regression: the out-of-bag mean squared error), each extrapolated
	// to an infinite forest (oobScore). Lower is better.
	Metric string `json:"metric"`
	// Rounds lists, for stage 1 and stage 2, the trees per candidate in
	// each round.
	Rounds [][]int `json:"rounds"`
	// Candidates are the settings tried, stage 1 first, each stage in the
	// order ties are broken in (tuneSpaceOf).
	Candidates []TuneCandidate `json:"candidates"`
	// Winner indexes Candidates.
	Winner int `json:"winner"`
	// SearchTrees is the number of trees grown for the search over all
	// candidates, the winner's included (the forest reuses them).
	SearchTrees int `json:"search_trees"`
	// OneSE is set when stage 2's winner was chosen by the one standard
	// error rule (see Tuning), which may leave a candidate with a lower
	// score unchosen; models tuned before the rule lack it.
	OneSE bool `json:"one_se,omitempty"`
	// Work accounts for the search's cost against its budget (tuneBudget);
	// models tuned before the budget lack it.
	Work *TuneWork `json:"work,omitempty"`
}

// TuneWork is the cost account of a search, in the split-search work of
// tree.Builder.Work: deterministic, so the same seed makes the same
// choices at any thread count.
type TuneWork struct {
	// Untuned is the work the untuned forest (the given params at the
	// forest's tree count) would take, estimated from the search trees of
	// the stage-1 candidate with those params.
	Untuned float64 `json:"untuned"`
	// Budget is tuneBudget times Untuned: the search and the final forest
	// together stay within it, unless no choice can (then Used exceeds
	// it: the budget did not bind).
	Budget float64 `json:"budget"`
	// Used is the work of every tree grown: all candidates' search trees
	// and the final forest's trees beyond the winner's.
	Used float64 `json:"used"`
	// OverBudget lists the stage-2 settings left out before they were
	// tried because the estimated cost of trying them and of a final
	// forest with them would exceed Budget (their Trees and scores are
	// empty; MTry and MinLeaf say which).
	OverBudget []TuneCandidate `json:"over_budget,omitempty"`
}

// TuneCandidate is one setting of the search and its scores.
type TuneCandidate struct {
	// Stage is 1 or 2; stage 1's winner also competes in stage 2.
	Stage       int     `json:"stage"`
	MaxFeatures string  `json:"max_features"`
	MTry        int     `json:"mtry"`
	MinLeaf     int     `json:"min_leaf"`
	Lambda      float64 `json:"lambda,omitempty"`
	MeanDiff    bool    `json:"mean_diff,omitempty"`
	// Patch is the MORF patch range "HminxWmin-HmaxxWmax", e.g. "1x1-1x12".
	Patch string `json:"patch,omitempty"`
	// Trees lists the tree counts the candidate was scored at (the rounds
	// it reached), increasing. Scores, Briers and Errors hold, for each:
	// the score (the out-of-bag error extrapolated to an infinite forest;
	// lower is better), the tie-break (the out-of-bag Brier score
	// extrapolated likewise; for regression the score again) and the
	// plain out-of-bag error of those trees (misclassification rate, or
	// mean squared error); see oobScore.
	Trees  []int     `json:"trees"`
	Scores []float64 `json:"scores"`
	Briers []float64 `json:"briers"`
	Errors []float64 `json:"oob_errors"`
	Winner bool      `json:"winner,omitempty"`
}

// at returns the index in c.Trees of the tree count trees, or -1.
func (c *TuneCandidate) at(trees int) int {
	i, ok := slices.BinarySearch(c.Trees, trees)
	if !ok {
		return -1
	}
	return i
}

// Search constants: the search and the final forest together take at most
// tuneBudget times the work of the untuned forest (tree.Builder.Work; see
// budgeted: the work model tracks CPU time to about ±25%, and a budget of
// 4 in its units kept every measured --tune within 5× the untuned
// training's wall clock, the bound); stage 1's first round has at
// least tuneMinTrees trees, tuneFirstFraction of the forest's trees and
// enough for
// tuneOOBPairs out-of-bag predictions (a row is out of bag of a tree with
// probability about e⁻¹), but no more than a quarter of the forest's
// trees; each round keeps the best 1/tuneEta of its candidates on tuneEta
// times as many trees, and stage 2 starts at tuneEta times stage 1's
// first round, again within a quarter of the forest (or at stage 1's
// first round, if that is more).
const (
	tuneBudget        = 4
	tuneEta           = 3
	tuneMinTrees      = 8
	tuneFirstFraction = 1.0 / 64
	tuneOOBPairs      = 3000
)

// tuneFirst returns stage 1's first-round trees for a forest of trees
// trees on rows rows: max(tuneMinTrees, ⌈trees/64⌉, ⌈e·3000/rows⌉), at
// most max(tuneMinTrees, ⌊trees/4⌋). The cap binds below about 65 rows at
// 500 trees: there the 3,000 out-of-bag predictions would need more trees
// per candidate than the forest has, and every candidate of both stages
// grew most of a forest (hvbars n = 50, 500 trees: tuning took 10.5×
// untuned training's wall time before the cap, 5.1× with it, at the same
// test error; e2e/bench/results/morf-2026-11-25-tune.md).
func tuneFirst(trees, rows int) int {
	t := max(tuneMinTrees, int(math.Ceil(float64(trees)*tuneFirstFraction)),
		int(math.Ceil(math.E*tuneOOBPairs/float64(max(rows, 1)))))
	return min(t, max(tuneMinTrees, trees/4))
}

// tuneSecond returns stage 2's first-round trees after a stage 1 that
// began at first: tuneEta·first, at most max(first, ⌊trees/4⌋).
func tuneSecond(first, trees int) int {
	return min(first*tuneEta, max(first, trees/4))
}

// tuneRounds returns the trees per candidate of every round that
// successive halving over n candidates can reach, starting at first trees
// and growing tuneEta-fold while the rounds stay within a quarter of the
// forest's trees (the first round may exceed it), all capped at trees.
// The last round picks the best of those it holds.
func tuneRounds(n, first, trees int) []int {
	t := min(first, trees)
	limit := max(trees/4, t)
	var out []int
	for {
		out = append(out, t)
		if n <= 1 || t*tuneEta > limit {
			return out
		}
		if n = (n + tuneEta - 1) / tuneEta; n <= 1 {
			return out
		}
		t *= tuneEta
	}
}

// tuneSetting is one candidate's values of the tuned dimensions.
type tuneSetting struct {
	maxFeatures string
	minLeaf     int
	lambda      float64
	meanDiff    bool
	patch       tunePatch
}

// tunePatch is a MORF patch range (zero: the forest's own).
type tunePatch struct{ h0, w0, h1, w1 int }

// apply returns base with s's values.
func (s tuneSetting) apply(base Params) Params {
	p := base
	p.Tune = false
	p.MaxFeatures, p.MinLeaf = s.maxFeatures, s.minLeaf
	p.Lambda, p.MeanDiff = s.lambda, s.meanDiff
	p.PatchHMin, p.PatchWMin, p.PatchHMax, p.PatchWMax = s.patch.h0, s.patch.w0, s.patch.h1, s.patch.w1
	return p
}

// record describes s as resolved into p (its mtry, and a MORF forest's
// patch range with the defaults filled in).
func (s tuneSetting) record(stage int, p Params) TuneCandidate {
	c := TuneCandidate{Stage: stage, MaxFeatures: s.maxFeatures, MTry: p.MTry, MinLeaf: s.minLeaf, Lambda: s.lambda, MeanDiff: s.meanDiff}
	if p.Forest == KindMORF {
		c.Patch = fmt.Sprintf("%dx%d-%dx%d", p.PatchHMin, p.PatchWMin, p.PatchHMax, p.PatchWMax)
	}
	return c
}

// tuneSpace holds the values each tuned dimension takes; the first value
// of mtrys and the last of leaves are the defaults stage 1 runs at.
type tuneSpace struct {
	mtrys   []string
	leaves  []int
	mds     []bool
	lambdas []float64
	patches []tunePatch
}

// tuneSpaceOf returns the candidate values of each dimension. m0 is the
// kind's default candidate count per node (⌊√p⌋ for classification, ⌊p/3⌋
// for regression) and n the training rows.
//
//   - rf: mtry ∈ {m0/2, m0, 2·m0, 4·m0} (rounded, within 1..p) ×
//     min-leaf ∈ {10, 3, 1}: tuneRanger's dimensions without the sample
//     fraction. Stage 1 has one candidate.
//   - sporf (Randomer paper §2): stage 1 RerF(δ) mean-difference atoms
//     off/on (classification only) × λ ∈ {1.5, 3, 6} (mean non-zeros per
//     atom); stage 2 mtry ∈ {m0, 2·m0, 4·m0}.
//   - morf (MORF paper §3.1, Appendix C): stage 1 patch twins (--mean-diff)
//     off/on (classification only) × patch ranges on the layout — series
//     and cycles of length W widths 1..w for w ∈ {3, 6, 12, 24, 48} up to
//     W, grids of H×W patches 1..s × 1..s for s ∈ {3, 6, 12} up to
//     min(H, W) (the MORF paper's Appendix C picks lie in these ranges);
//     stage 2 mtry ∈ {m0, 3·m0} × min-leaf ∈ {⌈n/10⌉, ⌈n/100⌉, 1}.
//
// A dimension whose value the caller set (MaxFeatures non-empty, MinLeaf
// other than 1, Lambda non-zero, MeanDiff on, any patch bound) is held at
// that value. Each stage lists its candidates simpler and cheaper first —
// mean difference off before on, smaller patches and sparser atoms first,
// fewer candidates per node first, larger leaves first — and a tie of the
// score goes to the earlier candidate.
func tuneSpaceOf(base Params, fr *frame.Frame) (tuneSpace, error) {
	var sp tuneSpace
	p := fr.P()
	m0, err := MTry("", p, fr.Task)
	if err != nil {
		return sp, err
	}
	classif := fr.Task == frame.TaskClassification
	if base.MaxFeatures != "" {
		sp.mtrys = []string{base.MaxFeatures}
	} else {
		var fs []float64
		switch base.Forest {
		case KindRF:
			fs = []float64{1, 0.5, 2, 4} // the default (factor 1) first
		case KindSPORF:
			fs = []float64{1, 2, 4}
		case KindMORF:
			fs = []float64{1, 3}
		}
		seen := map[int]bool{}
		for _, f := range fs {
			m := max(int(math.Round(float64(m0)*f)), 1)
			if base.Forest == KindRF {
				m = min(m, p)
			}
			if !seen[m] {
				seen[m] = true
				sp.mtrys = append(sp.mtrys, strconv.Itoa(m))
			}
		}
	}
	sp.leaves = []int{base.MinLeaf}
	if base.MinLeaf == 1 {
		switch base.Forest {
		case KindRF:
			sp.leaves = []int{10, 3, 1}
		case KindMORF:
			sp.leaves = slices.Compact([]int{(fr.NRows + 9) / 10, (fr.NRows + 99) / 100, 1})
		}
	}
	sp.mds = []bool{base.MeanDiff}
	if !base.MeanDiff && classif && (base.Forest == KindSPORF || base.Forest == KindMORF) {
		sp.mds = []bool{false, true}
	}
	sp.lambdas = []float64{base.Lambda}
	if base.Forest == KindSPORF && base.Lambda == 0 {
		sp.lambdas = []float64{1.5, 3, 6}
	}
	sp.patches = []tunePatch{{base.PatchHMin, base.PatchWMin, base.PatchHMax, base.PatchWMax}}
	if base.Forest == KindMORF && sp.patches[0] == (tunePatch{}) {
		top, err := base.Topology(p)
		if err != nil {
			return sp, err
		}
		sp.patches = sp.patches[:0]
		if top.H == 1 {
			for _, w := range []int{3, 6, 12, 24, 48} {
				if w <= top.W {
					sp.patches = append(sp.patches, tunePatch{1, 1, 1, w})
				}
			}
		} else {
			for _, s := range []int{3, 6, 12} {
				if s <= min(top.H, top.W) {
					sp.patches = append(sp.patches, tunePatch{1, 1, s, s})
				}
			}
		}
		if len(sp.patches) == 0 { // a layout narrower than 3
			sp.patches = append(sp.patches, tunePatch{1, 1, min(top.H, 3), min(top.W, 3)})
		}
	}
	return sp, nil
}

// stage1 lists the atom settings at the default mtry and min-leaf.
func (sp tuneSpace) stage1() []tuneSetting {
	var out []tuneSetting
	for _, md := range sp.mds {
		for _, pt := range sp.patches {
			for _, l := range sp.lambdas {
				out = append(out, tuneSetting{maxFeatures: sp.mtrys[0], minLeaf: sp.leaves[len(sp.leaves)-1], lambda: l, meanDiff: md, patch: pt})
			}
		}
	}
	return out
}

// stage2 lists mtry × min-leaf for the atoms of w, w excluded.
func (sp tuneSpace) stage2(w tuneSetting) []tuneSetting {
	var out []tuneSetting
	for _, m := range sp.mtrys {
		for _, leaf := range sp.leaves {
			s := w
			s.maxFeatures, s.minLeaf = m, leaf
			if s != w {
				out = append(out, s)
			}
		}
	}
	return out
}

// tuner runs the search of one training run.
type tuner struct {
	s        *session
	base     Params
	opts     TrainOptions
	tu       *Tuning
	settings []tuneSetting
	grow     []*growing
	perRow   map[[2]int][]float64 // (candidate, trees) → tuneScore.PerRow
	spent    float64              // work of every search tree grown (TuneWork.Used)
	done     int                  // trees grown so far, for progress
	total    int                  // trees planned
	last     [2]int               // the last progress report: done, total
}

// progress reports the trees of one grow call, counted after those grown
// before it, against the current plan; nil without TrainOptions.Progress.
func (t *tuner) progress() func(done int) {
	if t.opts.Progress == nil {
		return nil
	}
	offset, total := t.done, t.total
	return func(done int) {
		t.last = [2]int{offset + done, total}
		t.opts.Progress(offset+done, total)
	}
}

// add appends a candidate of the stage and returns its index.
func (t *tuner) add(stage int, st tuneSetting) (int, error) {
	p := st.apply(t.base)
	r, err := p.resolve(t.s.fr.P(), t.s.fr.Task)
	if err != nil {
		return 0, fmt.Errorf("forest: tuning candidate %d: %w", len(t.settings), err)
	}
	t.settings = append(t.settings, st)
	t.grow = append(t.grow, t.s.start(p, r, r.sampler))
	t.tu.Candidates = append(t.tu.Candidates, st.record(stage, p))
	return len(t.settings) - 1, nil
}

// score grows candidate i to trees trees and scores its first trees trees,
// unless it was scored there before.
func (t *tuner) score(i, trees int) error {
	c := &t.tu.Candidates[i]
	if c.at(trees) >= 0 {
		return nil
	}
	g := t.grow[i]
	before := len(g.trees)
	if err := t.s.grow(t.opts, g, trees, t.progress()); err != nil {
		return err
	}
	t.done += len(g.trees) - before
	t.tu.SearchTrees += len(g.trees) - before
	for _, w := range g.work[before:] {
		t.spent += float64(w)
	}
	sub := *g
	sub.trees, sub.inbag = g.trees[:trees], g.inbag[:trees]
	comp, err := Compile(t.s.forest(&sub))
	if err != nil {
		return err
	}
	sc := oobScore(comp, t.s.fr, sub.inbag, t.base.Seed, t.s.threads)
	if sc.Rows == 0 {
		return fmt.Errorf("forest: tuning needs out-of-bag rows: no training row is out of bag of two of the first %d trees and of a tree in every half of them", trees)
	}
	if t.perRow == nil {
		t.perRow = map[[2]int][]float64{}
	}
	t.perRow[[2]int{i, trees}] = sc.PerRow
	k, _ := slices.BinarySearch(c.Trees, trees)
	c.Trees = slices.Insert(c.Trees, k, trees)
	c.Scores = slices.Insert(c.Scores, k, sc.Error)
	c.Briers = slices.Insert(c.Briers, k, sc.Brier)
	c.Errors = slices.Insert(c.Errors, k, sc.OOBError)
	return nil
}

// compare orders candidates a and b by their scores at trees trees: the
// extrapolated error, then the extrapolated Brier score, then the index.
func (tu *Tuning) compare(a, b, trees int) int {
	ca, cb := &tu.Candidates[a], &tu.Candidates[b]
	ia, ib := ca.at(trees), cb.at(trees)
	return cmp.Or(cmp.Compare(ca.Scores[ia], cb.Scores[ib]), cmp.Compare(ca.Briers[ia], cb.Briers[ib]), cmp.Compare(a, b))
}

// withinSE reports whether candidate a's score at trees trees is within
// one standard error of candidate b's: the mean of their paired per-row
// differences (a − b) is at most its standard error.
func (t *tuner) withinSE(a, b, trees int) bool {
	ra, rb := t.perRow[[2]int{a, trees}], t.perRow[[2]int{b, trees}]
	var n, sum, sq float64
	for r := range ra {
		if ra[r] != ra[r] || rb[r] != rb[r] {
			continue
		}
		d := ra[r] - rb[r]
		n++
		sum += d
		sq += d * d
	}
	if n < 2 {
		return false
	}
	mean := sum / n
	v := (sq - n*mean*mean) / (n - 1)
	return mean <= math.Sqrt(max(v, 0)/n)
}

// oneSE returns the earliest-listed of the candidates alive (sorted best
// first) whose score at trees trees is within one standard error of the
// best's.
func (t *tuner) oneSE(alive []int, trees int) int {
	best := alive[0]
	for _, i := range slices.Sorted(slices.Values(alive)) {
		if i >= best || t.withinSE(i, best, trees) {
			return i
		}
	}
	return best
}

// perTree returns the mean work (tree.Builder.Work) of candidate i's
// trees grown so far.
func (t *tuner) perTree(i int) float64 {
	var sum float64
	for _, w := range t.grow[i].work {
		sum += float64(w)
	}
	return sum / float64(max(len(t.grow[i].work), 1))
}

// runWork estimates the work of the whole run if candidate i won now: the
// search so far and i's forest grown on to the forest's trees.
func (t *tuner) runWork(i int) float64 {
	return t.spent + float64(t.base.Trees-len(t.grow[i].trees))*t.perTree(i)
}

// affordable returns the candidates of alive, in order, whose runWork is
// within the budget. When none is, the budget does not bind: a budget the
// search cannot meet (its first round alone can exceed it when the forest
// has few trees: 10 candidates of 14 trees against a forest of 60) leaves
// the choice to the score, among all of alive or, when ceiling is given
// (stage 2: its incumbent), among those no costlier than it.
func (t *tuner) affordable(alive []int, ceiling int) []int {
	if t.tu.Work == nil {
		return alive
	}
	var out []int
	for _, i := range alive {
		if t.runWork(i) <= t.tu.Work.Budget {
			out = append(out, i)
		}
	}
	if len(out) > 0 {
		return out
	}
	if ceiling < 0 {
		return alive
	}
	limit := t.runWork(ceiling)
	for _, i := range alive {
		if t.runWork(i) <= limit {
			out = append(out, i)
		}
	}
	return out
}

// setBudget finds, among the stage-1 candidates ids (all grown), the one
// with the untuned params g0 — stage 1 runs at the default mtry and
// min-leaf and its atom settings include the defaults — and sets the
// budget to tuneBudget times its per-tree work at the forest's trees.
// Without such a candidate (none is known) the search is unbounded and
// the tuning record has no work account.
func (t *tuner) setBudget(ids []int, g0 *growing) {
	for _, i := range ids {
		g := t.grow[i]
		if g.r.mtry == g0.r.mtry && g.p.MinLeaf == g0.p.MinLeaf && g.p.Lambda == g0.p.Lambda && g.p.MeanDiff == g0.p.MeanDiff &&
			g.p.PatchHMin == g0.p.PatchHMin && g.p.PatchWMin == g0.p.PatchWMin && g.p.PatchHMax == g0.p.PatchHMax && g.p.PatchWMax == g0.p.PatchWMax {
			u := t.perTree(i) * float64(t.base.Trees)
			if u > 0 { // trees that searched no split (one class) leave it unbounded
				t.tu.Work = &TuneWork{Untuned: u, Budget: tuneBudget * u}
			}
			return
		}
	}
}

// budgeted returns stage 2's candidates (settings) for the incumbent w
// that the budget affords, and their rounds: it leaves out the settings
// of most work per tree first (estimated as w's work per tree in
// proportion to their mtry: the work is per candidate atom, and w's
// min-leaf is the least of the stage) until the work of stage 2's
// successive halving — bounded by letting the costliest candidates
// survive every round — and a final forest with the incumbent, and with
// the costliest candidate left, both fit. A budget the incumbent already
// exceeds does not bind (affordable). It returns the left-out settings'
// records.
func (t *tuner) budgeted(w int, sts []tuneSetting, first int) ([]tuneSetting, []int, []TuneCandidate, error) {
	trees := t.base.Trees
	if t.tu.Work == nil || t.runWork(w) > t.tu.Work.Budget { // unbounded, or past it already (it does not bind)
		return sts, tuneRounds(len(sts)+1, first, trees), nil, nil
	}
	budget := t.tu.Work.Budget
	uw := t.perTree(w)
	mw := t.grow[w].r.mtry
	est := make([]float64, len(sts))
	recs := make([]TuneCandidate, len(sts))
	var over []TuneCandidate
	for k, st := range sts {
		p := st.apply(t.base)
		r, err := p.resolve(t.s.fr.P(), t.s.fr.Task)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("forest: tuning candidate %d: %w", len(t.settings)+k, err)
		}
		est[k] = uw * float64(r.mtry) / float64(max(mw, 1))
		recs[k] = st.record(2, p)
	}
	for {
		rounds := tuneRounds(len(sts)+1, first, trees)
		if len(sts) == 0 {
			return sts, rounds, over, nil
		}
		us := append(slices.Clone(est), uw)
		slices.SortFunc(us, func(a, b float64) int { return cmp.Compare(b, a) })
		var plan float64
		n, prev := len(us), 0
		for _, r := range rounds {
			for _, u := range us[:n] {
				plan += u * float64(r-prev)
			}
			prev = r
			n = min(len(us), (n+tuneEta-1)/tuneEta+1) // the incumbent stays too
		}
		worst := 0
		for k := range est {
			if est[k] >= est[worst] {
				worst = k
			}
		}
		rest := float64(trees - rounds[len(rounds)-1])
		if t.spent+plan+rest*max(uw, est[worst]) <= budget {
			return sts, rounds, over, nil
		}
		over = append(over, recs[worst])
		sts = slices.Delete(sts, worst, worst+1)
		est = slices.Delete(est, worst, worst+1)
		recs = slices.Delete(recs, worst, worst+1)
	}
}

// halve runs successive halving with the given rounds over the candidates
// alive and returns the winner, which the budget affords (affordable);
// the losers' trees are dropped. With
// oneSE, the first candidate listed (stage 2's incumbent: stage 1's
// winner at the default mtry and min-leaf) stays in every round, and the
// deciding round's winner is the earliest-listed candidate whose score is
// within one standard error of the best (withinSE).
func (t *tuner) halve(alive []int, rounds []int, oneSE bool) (int, error) {
	alive = slices.Clone(alive)
	incumbent := alive[0]
	for ri, trees := range rounds {
		for _, i := range alive {
			if err := t.score(i, trees); err != nil {
				return 0, err
			}
		}
		slices.SortFunc(alive, func(a, b int) int { return t.tu.compare(a, b, trees) })
		keep := (len(alive) + tuneEta - 1) / tuneEta
		if ri == len(rounds)-1 {
			keep = 1
		}
		switch {
		case keep == 1:
			// the decision: the best (or, with oneSE, the one standard
			// error choice) of those the budget affords
			ceiling := -1
			if oneSE {
				ceiling = incumbent
			}
			cands := t.affordable(alive, ceiling)
			w := cands[0]
			if oneSE {
				w = t.oneSE(cands, trees)
			}
			k := slices.Index(alive, w)
			alive[0], alive[k] = alive[k], alive[0]
		case oneSE && !slices.Contains(alive[:keep], incumbent):
			k := slices.Index(alive, incumbent)
			alive[keep], alive[k] = alive[k], alive[keep]
			keep++
		}
		for _, i := range alive[keep:] {
			t.grow[i] = nil // its trees and per-row terms are no longer needed
			for _, tr := range t.tu.Candidates[i].Trees {
				delete(t.perRow, [2]int{i, tr})
			}
		}
		alive = alive[:keep]
		if keep == 1 {
			break
		}
	}
	return alive[0], nil
}

// planned estimates the trees successive halving with rounds grows for n
// candidates, one of which already has carried trees.
func planned(n, carried int, rounds []int) int {
	total, prev := -min(carried, rounds[0]), 0
	for _, r := range rounds {
		total += n * (r - prev)
		prev = r
		if n = (n + tuneEta - 1) / tuneEta; n <= 1 {
			break
		}
	}
	return max(total, 0)
}

// tune trains the forest of base with the hyperparameters chosen out of
// bag (Tuning): the two stages of the search, then the winner grown on to
// base.Trees trees.
func tune(fr *frame.Frame, base Params, opts TrainOptions) (*Forest, error) {
	if base.Forest != "" && !base.Forest.Tunable() {
		return nil, fmt.Errorf("forest: tuning supports rf, sporf and morf, not %s", base.Forest)
	}
	base.Tune = false
	// begin checks the data and base params once; the rank map and bins it
	// prepares serve every candidate.
	s, g0, err := begin(fr, base, opts)
	if err != nil {
		return nil, err
	}
	if !g0.r.bootstrap && g0.r.fraction >= 1 {
		return nil, errors.New("forest: tuning chooses by out-of-bag error: subsampling all rows leaves none out of bag")
	}
	base.Forest = g0.p.Forest
	sp, err := tuneSpaceOf(base, fr)
	if err != nil {
		return nil, fmt.Errorf("forest: tuning: %w", err)
	}
	metric := "error"
	if fr.Task == frame.TaskRegression {
		metric = "mse"
	}
	first := sp.stage1()
	n2 := len(sp.mtrys) * len(sp.leaves)
	t0 := tuneFirst(base.Trees, fr.NRows)
	rounds := [][]int{tuneRounds(len(first), t0, base.Trees), tuneRounds(n2, tuneSecond(t0, base.Trees), base.Trees)}
	t := &tuner{s: s, base: base, opts: opts, tu: &Tuning{Metric: metric, Rounds: rounds, OneSE: true}}
	// progress: both stages as planned, then the rest of the final forest
	// (an estimate, made exact as the stages end)
	last := func(r []int) int { return r[len(r)-1] }
	t.total = planned(len(first), 0, rounds[0]) + planned(n2, last(rounds[0]), rounds[1]) + base.Trees - last(rounds[1])
	var ids []int
	for _, st := range first {
		i, err := t.add(1, st)
		if err != nil {
			return nil, err
		}
		ids = append(ids, i)
	}
	// the first round (halve's first, which it then finds scored) gives
	// every candidate's work per tree, the untuned one's included
	for _, i := range ids {
		if err := t.score(i, rounds[0][0]); err != nil {
			return nil, err
		}
	}
	t.setBudget(ids, g0)
	w, err := t.halve(ids, rounds[0], false)
	if err != nil {
		return nil, err
	}
	second, secondRounds, over, err := t.budgeted(w, sp.stage2(t.settings[w]), tuneSecond(t0, base.Trees))
	if err != nil {
		return nil, err
	}
	t.tu.Rounds[1] = secondRounds
	if t.tu.Work != nil {
		t.tu.Work.OverBudget = over
	}
	t.total = t.done + planned(len(second)+1, len(t.grow[w].trees), secondRounds) + base.Trees - last(secondRounds)
	ids = []int{w}
	for _, st := range second {
		i, err := t.add(2, st)
		if err != nil {
			return nil, err
		}
		ids = append(ids, i)
	}
	if w, err = t.halve(ids, secondRounds, true); err != nil {
		return nil, err
	}
	t.tu.Winner = w
	t.tu.Candidates[w].Winner = true
	g := t.grow[w]
	t.total = t.done + base.Trees - len(g.trees) // exact from here on
	searched := len(g.trees)
	if err := s.grow(opts, g, base.Trees, t.progress()); err != nil {
		return nil, err
	}
	if t.tu.Work != nil {
		t.tu.Work.Used = t.spent
		for _, w := range g.work[searched:] {
			t.tu.Work.Used += float64(w)
		}
	}
	if t.last[0] != t.last[1] && opts.Progress != nil { // the estimate missed: close at the count
		opts.Progress(t.last[0], t.last[0])
	}
	g.p.Tune = true
	f, err := s.finish(g)
	if err != nil {
		return nil, err
	}
	f.Tuning = t.tu
	return f, nil
}

// validateTuning checks the tuning record against a forest of trees
// trees: present exactly when Params.Tune is set, the metric of the task, two stages of
// rounds of increasing positive tree counts within the forest's, a work
// account (when present) of positive work with untried over-budget
// settings, every candidate of stage 1 or 2 scored at increasing tree
// counts (one finite score, Brier score and OOB error each), and one
// winner, marked and indexed.
func (f *Forest) validateTuning(trees int) error {
	tu := f.Tuning
	if tu == nil {
		if f.Params.Tune {
			return errors.New("forest: params say tuned but there is no tuning record")
		}
		return nil
	}
	if !f.Params.Tune {
		return errors.New("forest: tuning record of a forest whose params are not tuned")
	}
	want := "error"
	if f.Task == frame.TaskRegression {
		want = "mse"
	}
	if tu.Metric != want {
		return fmt.Errorf("forest: tuning metric %q, want %q for %s", tu.Metric, want, f.Task)
	}
	if len(tu.Rounds) != 2 {
		return fmt.Errorf("forest: tuning has %d stages of rounds, want 2", len(tu.Rounds))
	}
	for _, rs := range tu.Rounds {
		if err := increasing(rs, trees); err != nil {
			return fmt.Errorf("forest: tuning rounds %v: %w", rs, err)
		}
	}
	if tu.Winner < 0 || tu.Winner >= len(tu.Candidates) {
		return fmt.Errorf("forest: tuning winner %d outside the %d candidates", tu.Winner, len(tu.Candidates))
	}
	if tu.SearchTrees < 0 {
		return fmt.Errorf("forest: tuning search trees %d", tu.SearchTrees)
	}
	if w := tu.Work; w != nil {
		for _, v := range []float64{w.Untuned, w.Budget, w.Used} {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("forest: tuning work account: untuned %v, budget %v, used %v: want positive finite work", w.Untuned, w.Budget, w.Used)
			}
		}
		if w.Budget < w.Untuned {
			return fmt.Errorf("forest: tuning work budget %v below the untuned forest's work %v", w.Budget, w.Untuned)
		}
		for i, c := range w.OverBudget {
			if c.Stage != 2 || len(c.Trees)+len(c.Scores)+len(c.Briers)+len(c.Errors) != 0 || c.Winner {
				return fmt.Errorf("forest: tuning over-budget setting %d: want an untried stage-2 setting", i)
			}
		}
	}
	for i, c := range tu.Candidates {
		if c.Stage != 1 && c.Stage != 2 {
			return fmt.Errorf("forest: tuning candidate %d has stage %d", i, c.Stage)
		}
		n := len(c.Trees)
		if n == 0 || len(c.Scores) != n || len(c.Briers) != n || len(c.Errors) != n {
			return fmt.Errorf("forest: tuning candidate %d has %d tree counts, %d scores, %d Brier scores and %d errors",
				i, n, len(c.Scores), len(c.Briers), len(c.Errors))
		}
		if err := increasing(c.Trees, trees); err != nil {
			return fmt.Errorf("forest: tuning candidate %d trees %v: %w", i, c.Trees, err)
		}
		for _, v := range slices.Concat(c.Scores, c.Briers, c.Errors) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("forest: tuning candidate %d has a non-finite score", i)
			}
		}
		if c.Winner != (i == tu.Winner) {
			return fmt.Errorf("forest: tuning candidate %d is marked winner=%v, the winner is %d", i, c.Winner, tu.Winner)
		}
	}
	return nil
}

// increasing checks that v holds increasing tree counts in 1..max.
func increasing(v []int, limit int) error {
	if len(v) == 0 {
		return errors.New("empty")
	}
	for i, t := range v {
		if t < 1 || t > limit || (i > 0 && t <= v[i-1]) {
			return fmt.Errorf("not increasing tree counts within 1..%d", limit)
		}
	}
	return nil
}

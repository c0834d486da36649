package manifold

import (
	"context"
	"fmt"
	"slices"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/tree"
)

// Choosing the embedding dimension m out of bag (Options.EmbedDim 0).
//
// The paper fixes m per data set (§3.2.1: 25 for its digits) and names
// "automatic estimation of the Euclidean embedding's dimensionality" as
// future work (§4). Too small an m folds
// the manifold onto itself, so that responses far apart along it are
// averaged (the weighted prediction) or compared (Algorithm 1) as if they
// were close; too large an m adds coordinates of small eigenvalues —
// noise across the manifold — to the out-of-sample points and to the
// backscoring kernel's distances (eq. (9)). The out-of-bag error that
// chooses σ_G and γ_G (select.go) measures the whole pipeline on rows the
// trees did not see, so it can compare dimensions too: for every
// candidate m the training rows' out-of-bag predictions are taken to the
// m-dimensional embedding, σ_G and γ_G are chosen for it as Options.Select
// says, and the error of the map so chosen (refitted without each row) at
// those points is m's error. The candidate of least error is kept, the
// smaller one on a tie.
//
// The trees do not depend on m (they split on D, eq. (1)), and neither do
// the leading MDS coordinates: the eigenpairs are computed once for the
// largest candidate and truncated, and since each coordinate of an
// out-of-sample point (eqs. (2)–(3)) and of their weighted mean involves
// that coordinate alone, the out-of-bag points of m are the first m
// coordinates of the largest candidate's. Only the σ_G/γ_G search is
// repeated per m.

// embedDimGrid are the dimensions Train compares when
// Options.EmbedDim is 0; those of at least N or above the number of
// positive MDS eigenvalues are dropped (when none is left, the number of
// positive eigenvalues is the only candidate).
var embedDimGrid = [...]int{2, 3, 4, 6, 8, 12, 16, 24, 32, 48}

// EmbedDimCandidates lists the dimensions Train compares when
// Options.EmbedDim is 0 (a new slice; see embedDimGrid).
func EmbedDimCandidates() []int { return slices.Clone(embedDimGrid[:]) }

// embedDimCandidates are the candidates for n rows whose MDS has at most
// avail positive eigenvalues (avail ≤ n − 1), ascending.
func embedDimCandidates(n, avail int) []int {
	var c []int
	for _, m := range embedDimGrid {
		if m < n && m <= avail {
			c = append(c, m)
		}
	}
	if len(c) == 0 {
		c = []int{avail}
	}
	return c
}

// largestEmbedDim is the dimension whose MDS embedding Train computes when
// it chooses m: the largest candidate below n.
func largestEmbedDim(n int) int {
	m := 1
	for _, c := range embedDimGrid {
		if c < n {
			m = max(m, c)
		}
	}
	return m
}

// truncate is the embedding's first m coordinates: the MDS embedding in
// m dimensions (§2.3.2) from the same eigenpairs.
func (e *Embedding) truncate(m int) *Embedding {
	out := &Embedding{N: e.N, M: m, Lambda: e.Lambda[:m:m], Z: make([]float64, e.N*m)}
	for i := 0; i < e.N; i++ {
		copy(out.Z[i*m:i*m+m], e.Z[i*e.M:i*e.M+m])
	}
	return out
}

// truncate is the out-of-bag points' first m of their from coordinates.
func (p *oobPointSet) truncate(from, m int) *oobPointSet {
	out := &oobPointSet{Rows: p.Rows, Z: make([]float64, len(p.Rows)*m)}
	for k := range p.Rows {
		copy(out.Z[k*m:k*m+m], p.Z[k*from:k*from+m])
	}
	return out
}

// embedDimTrial is one candidate m: its embedding, the backscoring map's
// σ_G and γ_G (chosen or given) and its out-of-bag error.
type embedDimTrial struct {
	emb    *Embedding
	fit    *backscoreFit
	oobMSE float64
}

// chooseEmbedDim chooses m out of bag (see the top of this file) from the
// grown trees, the squared distances d2 and the responses y (N×q), and
// fits the backscoring map for it: the chosen embedding, its fitted map,
// and every candidate's error. The result does not depend on o.Threads.
func chooseEmbedDim(ctx context.Context, trees []*tree.Tree, leaves [][]int32, cols [][]float32, d2, y []float64, n, q int, o *Options) (*Embedding, *backscoreFit, []forest.EmbedDimError, error) {
	full, err := ClassicalMDS(d2, n, largestEmbedDim(n), o.Threads)
	if err != nil {
		return nil, nil, nil, err
	}
	oob := oobPoints(trees, leaves, cols, d2, full, o.Predict, maxOOBPoints, o.Threads)
	if len(oob.Rows) < 3 {
		return nil, nil, nil, fmt.Errorf("manifold: embedding dimension 0 (chosen out of bag) needs at least 3 training rows out of bag in some tree, have %d; give a positive embedding dimension (EmbedDim)", len(oob.Rows))
	}
	yc, offset := centred(y, n, q, o.Center)
	var (
		best   *embedDimTrial
		scores []forest.EmbedDimError
	)
	for _, m := range embedDimCandidates(n, full.M) {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, fmt.Errorf("manifold: training cancelled: %w", err)
		}
		t := &embedDimTrial{emb: full.truncate(m)}
		om := oob.truncate(full.M, m)
		if t.fit, err = chooseSigmaGamma(t.emb, yc, n, q, om, o); err != nil {
			return nil, nil, nil, fmt.Errorf("manifold: embedding dimension %d: %w", m, err)
		}
		if t.fit.selectedBy == SelectOOB {
			t.oobMSE = t.fit.selectMSE
		} else {
			// σ_G and γ_G given or chosen by leave-one-out: the out-of-bag
			// error of that one map
			sel, err := selectBackscoreOOB(t.emb.Z, n, m, yc, q, *om, t.fit.sigma, t.fit.gamma, o.Threads)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("manifold: embedding dimension %d: %w", m, err)
			}
			t.oobMSE = sel.MSE
		}
		scores = append(scores, forest.EmbedDimError{Dim: m, OOBMSE: t.oobMSE})
		if best == nil || t.oobMSE < best.oobMSE {
			best = t
		}
	}
	if err := best.fit.solve(best.emb, yc, n, q, offset); err != nil {
		return nil, nil, nil, err
	}
	return best.emb, best.fit, scores, nil
}

package forest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unicode/utf8"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// Distance kinds of a DRF.
const (
	DistanceEuclidean = "euclidean"
	DistanceIsomap    = "isomap"
)

// Prediction modes of a DRF (how the similarity vector a becomes the
// distances to the training responses).
const (
	// PredictAlgorithm1 is the dRF paper's Algorithm 1 (§2.3.1). As
	// printed it depends on a only through l = argmax a (see package
	// manifold), so a prediction is the backscored embedding of one
	// training response.
	PredictAlgorithm1 = "algorithm1"
	// PredictWeighted uses every training response that shares a leaf:
	// d̂²(y_new, y_i) = Σ_j w_j D²_ji with w = a/Σa. Eqs. (2)–(3) are affine
	// in d̂², so the embedded point is the a-weighted mean of the training
	// responses' out-of-sample points — the forest's averaging carried
	// out on the embedding of the manifold, then backscored (eq. 7).
	PredictWeighted = "weighted"
)

// DRF.SelectedBy values when package manifold chose σ_G and γ_G:
// SelectedByLOO by leave-one-out cross-validation of the backscoring map
// on the training pairs (z_i, y_i), SelectedByOOB by its error at the
// training rows' out-of-bag predictions on the embedding.
const (
	SelectedByLOO = "loo"
	SelectedByOOB = "oob"
)

// EmbedDimError is a candidate embedding dimension m and the out-of-bag
// mean squared error (per response coordinate) of the dRF pipeline with
// it: the training rows' out-of-bag predictions on the m-dimensional
// embedding, backscored by the map refitted without them.
type EmbedDimError struct {
	Dim    int     `json:"dim"`
	OOBMSE float64 `json:"oob_mse"`
}

// Projection kinds of a DRF's split atoms.
const (
	ProjectionAxis   = "axis"
	ProjectionSparse = "sparse"
)

// DRF is the part of a distance random forest (Tsagkrasoulis & Montana,
// "Random Forest regression for manifold-valued responses",
// distance-rf-manifold-responses.txt §2) that prediction needs besides the
// trees: the training responses y_i (from which the distance matrix D is
// recomputed), their classical MDS embedding z_i and eigenvalues λ_l
// (§2.3.2), the backscoring coefficients C of eq. (8) with the kernel
// bandwidth σ_G and weight γ_G of eq. (9) (§2.3.3), and which leaf each
// training row fell in per tree (the similarity vector a of §2.3.1).
// The trees of a DRF forest are regression trees grown with
// tree.Distance; their leaf values are the leaves' P(S)/(2N_w²).
//
// N is the number of training rows, q = len(Targets) the response
// dimension and m = len(Eigenvalues) the embedding dimension.
type DRF struct {
	// Targets names the response coordinates (the label columns).
	Targets []string
	// Distance is DistanceEuclidean or DistanceIsomap; IsomapK is the
	// neighbour count of the Isomap graph (0 for Euclidean).
	Distance string
	IsomapK  int
	// Projection is ProjectionAxis or ProjectionSparse (SPORF atoms).
	Projection string
	// SigmaG and GammaG are σ_G and γ_G of eqs. (8)–(9).
	SigmaG, GammaG float64
	// Predict is PredictAlgorithm1 or PredictWeighted.
	Predict string
	// InputRows is the number of labelled rows before the training rows
	// were subsampled to bound the N×N distance matrix (= N when not).
	InputRows int
	// Responses is N×q row-major: Responses[i*q+r] = y_ir.
	Responses []float64
	// Embedding is N×m row-major: the MDS coordinates z_il = √λ_l·u_li.
	Embedding []float64
	// Eigenvalues are λ_1 ≥ … ≥ λ_m > 0.
	Eigenvalues []float64
	// Coef is N×q row-major: the backscoring coefficients C of eq. (8).
	Coef []float64
	// Offset (q values, or nil for none as in the paper) is added to
	// eq. (7): the training responses' mean when the backscoring map was
	// fitted to centred responses (package manifold, Options.Center).
	Offset []float64
	// SelectedBy is "" when SigmaG and GammaG were given, or
	// SelectedByLOO or SelectedByOOB when package manifold chose them;
	// SelectMSE is then that choice's cross-validated mean squared error
	// per response coordinate (0 otherwise).
	SelectedBy string
	SelectMSE  float64
	// EmbedDims, when package manifold chose m out of bag (its
	// Options.EmbedDim 0), are the candidate dimensions with their
	// out-of-bag errors, in increasing m. Model files do not store them
	// (the chosen m is len(Eigenvalues)): a model read back has none.
	EmbedDims []EmbedDimError
	// Leaves[t][i] is the node index of the leaf of tree t that training
	// row i was grown into, or -1 when row i was out of bag for tree t.
	Leaves [][]int32
}

// Rows is N, the number of training rows.
func (d *DRF) Rows() int {
	if len(d.Targets) == 0 {
		return 0
	}
	return len(d.Responses) / len(d.Targets)
}

// Dim is m, the embedding dimension.
func (d *DRF) Dim() int { return len(d.Eigenvalues) }

// ValidateDRF checks that f.DRF is consistent with itself and with f: set
// exactly when f.Kind is KindDRF, a regression forest, finite values of
// the right shapes, positive eigenvalues, and leaf memberships that name
// leaves of the right trees with every leaf holding at least one training
// row. It never panics.
func (f *Forest) ValidateDRF() error {
	d := f.DRF
	if (f.Kind == KindDRF) != (d != nil) {
		if d == nil {
			return fmt.Errorf("drf forest without its dRF part")
		}
		return fmt.Errorf("%q forest with a dRF part", f.Kind)
	}
	if d == nil {
		return nil
	}
	if f.Task != frame.TaskRegression {
		return fmt.Errorf("drf forest with task %s", f.Task)
	}
	q := len(d.Targets)
	if q == 0 {
		return fmt.Errorf("drf: no targets")
	}
	seen := map[string]bool{}
	for _, t := range d.Targets {
		if t == "" || !utf8.ValidString(t) || seen[t] {
			return fmt.Errorf("drf: target name %q is empty, repeated or not UTF-8", t)
		}
		seen[t] = true
	}
	if d.Predict != PredictAlgorithm1 && d.Predict != PredictWeighted {
		return fmt.Errorf("drf: prediction mode %q is neither %s nor %s", d.Predict, PredictAlgorithm1, PredictWeighted)
	}
	switch d.Distance {
	case DistanceEuclidean:
		if d.IsomapK != 0 {
			return fmt.Errorf("drf: euclidean distance with isomap k %d", d.IsomapK)
		}
	case DistanceIsomap:
	default:
		return fmt.Errorf("drf: unknown distance %q", d.Distance)
	}
	if d.Projection != ProjectionAxis && d.Projection != ProjectionSparse {
		return fmt.Errorf("drf: unknown projection %q", d.Projection)
	}
	if !(d.SigmaG > 0) || math.IsInf(d.SigmaG, 0) || !(d.GammaG > 0) || math.IsInf(d.GammaG, 0) {
		return fmt.Errorf("drf: sigma_g %v and gamma_g %v must be positive and finite", d.SigmaG, d.GammaG)
	}
	if len(d.Responses)%q != 0 {
		return fmt.Errorf("drf: %d response values for %d targets", len(d.Responses), q)
	}
	n := len(d.Responses) / q
	if n < 2 {
		return fmt.Errorf("drf: %d training rows, need at least 2", n)
	}
	if d.InputRows < n {
		return fmt.Errorf("drf: %d input rows for %d training rows", d.InputRows, n)
	}
	if d.Distance == DistanceIsomap && (d.IsomapK < 1 || d.IsomapK >= n) {
		return fmt.Errorf("drf: isomap k %d outside 1..%d", d.IsomapK, n-1)
	}
	m := len(d.Eigenvalues)
	if m < 1 || m >= n {
		return fmt.Errorf("drf: embedding dimension %d outside 1..%d", m, n-1)
	}
	if len(d.Embedding) != n*m || len(d.Coef) != n*q {
		return fmt.Errorf("drf: embedding has %d values, coefficients %d; want %d×%d and %d×%d",
			len(d.Embedding), len(d.Coef), n, m, n, q)
	}
	if d.Offset != nil && len(d.Offset) != q {
		return fmt.Errorf("drf: %d offset values for %d targets", len(d.Offset), q)
	}
	switch {
	case d.SelectedBy != "" && d.SelectedBy != SelectedByLOO && d.SelectedBy != SelectedByOOB:
		return fmt.Errorf("drf: selected_by %q is neither empty, %s nor %s", d.SelectedBy, SelectedByLOO, SelectedByOOB)
	case d.SelectedBy == "" && d.SelectMSE != 0, !(d.SelectMSE >= 0) || math.IsInf(d.SelectMSE, 0):
		return fmt.Errorf("drf: selection error %v (selected by %q)", d.SelectMSE, d.SelectedBy)
	}
	for k, v := range [][]float64{d.Responses, d.Embedding, d.Coef, d.Offset} {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("drf: %s value %d is %v", [...]string{"response", "embedding", "coefficient", "offset"}[k], i, x)
			}
		}
	}
	for l, x := range d.Eigenvalues {
		if !(x > 0) || math.IsInf(x, 0) || (l > 0 && x > d.Eigenvalues[l-1]) {
			return fmt.Errorf("drf: eigenvalue %d is %v; want positive, finite, non-increasing", l, x)
		}
	}
	if len(d.Leaves) != len(f.Trees) {
		return fmt.Errorf("drf: leaf memberships for %d trees, the forest has %d", len(d.Leaves), len(f.Trees))
	}
	for t, leaves := range d.Leaves {
		tr := f.Trees[t]
		if tr == nil {
			return fmt.Errorf("drf: tree %d is nil", t)
		}
		if len(leaves) != n {
			return fmt.Errorf("drf: tree %d has memberships for %d rows, want %d", t, len(leaves), n)
		}
		nn := tr.NumNodes()
		used := make([]bool, nn)
		for i, l := range leaves {
			if l == -1 {
				continue
			}
			if l < 0 || int(l) >= nn || !tr.IsLeaf(int(l)) {
				return fmt.Errorf("drf: tree %d puts row %d in node %d, not a leaf", t, i, l)
			}
			used[l] = true
		}
		for i := 0; i < nn; i++ {
			if tr.IsLeaf(i) && !used[i] {
				return fmt.Errorf("drf: leaf %d of tree %d holds no training row", i, t)
			}
		}
	}
	return nil
}

// ImpurityImportance is the mean decrease in impurity from the per-tree
// decreases that tree.Builder.Grow returns, normalised as the forests of
// this package normalise it (each tree to sum 1, averaged, renormalised).
func ImpurityImportance(perTree [][]float64, p int) []float64 {
	return impurityImportance(perTree, p)
}

// DrawSample is the in-bag draw of one tree of a forest of this package
// (a bootstrap of round(fraction·n) draws, or a subsample): the distinct
// rows in increasing order and their weights, from rng (counts: n
// scratch). The distance forests of package manifold draw the same way.
func DrawSample(rng *rand.Rand, n int, bootstrap bool, fraction float64, counts []uint32) ([]int32, []float64) {
	rows, w, _ := drawSample(rng, n, bootstrap, fraction, counts)
	return rows, w
}

// ProjectionCounts is the projection-count importance π_k (MORF paper
// §3.2) of the trees, normalised to sum 1.
func ProjectionCounts(trees []*tree.Tree, p int) []float64 {
	return projectionCounts(trees, p)
}

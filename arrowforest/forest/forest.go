// Package forest owns ensembles of trees: training with bagging over a
// worker pool (deterministic for any thread count), out-of-bag error,
// strength and correlation, feature importances, and scoring through a
// compiled, cache-friendly layout.
package forest

import (
	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// Importance kinds, as named in reports and in the model encoding.
const (
	ImportanceImpurity        = "impurity"
	ImportanceProjectionCount = "projection-count"
	ImportancePermutation     = "permutation"
)

// OOB holds the out-of-bag estimates of a forest trained with bootstrap or
// subsampling. Rows is the number of training rows that were out of bag
// for at least one tree; only those rows enter the estimates.
type OOB struct {
	Rows int `json:"rows"`
	// Classification: Error is the misclassification rate of the OOB
	// posterior (mean of leaf class frequencies over the trees for which
	// the row was out of bag). Strength and Correlation are Breiman's
	// estimates, dissertation §1.6 eqs 1.25–1.28.
	Error       float64 `json:"error"`
	Strength    float64 `json:"strength,omitempty"`
	Correlation float64 `json:"correlation,omitempty"`
	// Regression: Error is the OOB mean squared error; R2 = 1 − MSE/Var(y).
	R2 float64 `json:"r2,omitempty"`
}

// Forest is a trained ensemble together with everything scoring needs to
// map named input columns onto it.
type Forest struct {
	Kind      Kind       // KindRF, KindSPORF, … (kind.go)
	Task      frame.Task // TaskClassification or TaskRegression
	Features  []string   // feature names in the order trees index them
	Levels    [][]string // category levels per feature (nil entries for numeric)
	LabelName string
	Classes   []string // class names (classification)
	// Targets names the q ≥ 2 outputs of a multi-output regression forest
	// (one label column each, in order; LabelName joins them with ","):
	// its leaves hold q means and Prediction.Value q values per row. Nil
	// for one label. A drf forest names its targets in DRF.Targets.
	Targets []string
	Trees   []*tree.Tree

	// Params records the training options (encoded as JSON in models).
	Params Params
	// OOB is nil when the forest was trained without bootstrap or subsampling.
	OOB *OOB
	// Importances maps an importance kind to one value per feature.
	Importances map[string][]float64
	// Rank, when set (RerF(r)), maps inputs to marginal ranks before the
	// trees see them, in training and in scoring.
	Rank *RankMap
	// Derived, when set (RF_FDM with landmark mappings), lists the input
	// columns computed from the features before the trees see them; they
	// are the last Derived.Len() entries of Features (derived.go).
	Derived *Derived
	// DRF, set exactly when Kind is "drf", holds what a distance random
	// forest predicts with besides its trees (see DRF and package manifold).
	DRF *DRF
	// Mapping, when set, is the FDM_RF feature mapping the trees were
	// trained behind (dissertation §6.3): Features are its output columns,
	// and scoring reads its input columns and maps them first
	// (SourceColumns, FromSource in mapping.go).
	Mapping *fdm.Transform
	// Tuning, when set, records the out-of-bag hyperparameter search that
	// chose Params (Params.Tune; tune.go).
	Tuning *Tuning
}

// NumClasses is len(Classes); 0 for regression.
func (f *Forest) NumClasses() int { return len(f.Classes) }

// NumOutputs is the number of regression outputs q: len(Targets) for a
// multi-output forest, 1 otherwise.
func (f *Forest) NumOutputs() int { return max(len(f.Targets), 1) }

package forest

import (
	"fmt"
)

// Kind names a forest kind: the --forest value of forestd train and the
// "forestd.kind" key of a model file (arrowforest/model/doc.go).
type Kind string

// The forest kinds.
const (
	// KindRF is Breiman's random forest: axis-aligned atoms (MORF paper §2.2).
	KindRF Kind = "rf"
	// KindSPORF is the sparse oblique forest (Randomer paper §2).
	KindSPORF Kind = "sporf"
	// KindMORF is the manifold oblique forest with patch atoms on a
	// feature layout (MORF paper §3.1).
	KindMORF Kind = "morf"
	// KindLFS is local feature sampling (dissertation ch. 4).
	KindLFS Kind = "lfs"
	// KindFDM is RF_FDM, a fresh feature dependence mapping per tree
	// (dissertation §6.4).
	KindFDM Kind = "fdm"
	// KindDRF is the distance random forest for manifold-valued responses
	// (dRF paper §2; package manifold).
	KindDRF Kind = "drf"
)

// kinds lists every kind, in the order help texts name them.
var kinds = [...]Kind{KindRF, KindSPORF, KindMORF, KindLFS, KindFDM, KindDRF}

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, error) {
	for _, k := range kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown forest %q (want rf, sporf, morf, lfs, fdm or drf)", s)
}

// multiOutputKind reports whether k learns several labels as one
// multi-output regression forest.
func (k Kind) multiOutputKind() bool {
	return k == KindRF || k == KindSPORF || k == KindMORF || k == KindLFS
}

// Tunable reports whether Params.Tune can choose k's hyperparameters out of
// bag (tune.go): rf, sporf and morf.
func (k Kind) Tunable() bool { return k == KindRF || k == KindSPORF || k == KindMORF }

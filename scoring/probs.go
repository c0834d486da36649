package scoring

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/forestd/forestd/schemas"
)

// Probs chooses which class probabilities the prediction records of a
// classification model carry (Options.Probs). Its text is the same on
// every surface — forestd score --probs, the daemon's score.probs,
// forestd_score's probs:
//
//	auto   the default (also ""): all for a model with at most
//	       MaxAllProbs classes, the top DefaultTopK for more
//	all    prob_<class> float32 per class, in class order
//	top<k> the k most probable classes of each row, most probable first
//	       (top1, top5, top20): columns top1_class utf8, top1_prob
//	       float32, …, top<k>_class, top<k>_prob; a k above the model's
//	       number of classes is that number (every class, ranked)
//	none   no probability: prediction alone
//
// Equal probabilities rank the predicted class first, then in class order,
// so top1_class is the prediction and the output is deterministic
// (schemas.Predictions). A record without a probability per class says so
// in its schema's metadata (schemas.MetaProbs, MetaClasses; MetaProbsNote
// when auto chose the top classes).
//
// Scoring holds what the choice writes: all the rows × classes matrix,
// top<k> and none each row's ranked classes or its class, taken from the
// forest block by block (Model.PredictionBytes; the package
// documentation's Memory).
//
// Regression and models with several outputs have no class probabilities:
// Probs does not change their records, whatever its (valid) value, so that
// one setting serves every model a daemon or a processor may swap in.
type Probs string

// The probability choices other than top<k> (ProbsTop).
const (
	ProbsAuto Probs = ""
	ProbsAll  Probs = "all"
	ProbsNone Probs = "none"
)

const (
	// MaxAllProbs is the most classes for which ProbsAuto writes every
	// class's probability: past it a prediction record of prob_<class>
	// columns grows with the classes (10,000 classes: 10,000 columns,
	// 40 kB per row), too wide for Parquet, Kafka and their readers.
	MaxAllProbs = 256
	// DefaultTopK is the classes ProbsAuto writes for a model with more
	// than MaxAllProbs classes.
	DefaultTopK = 5
)

// ProbsTop is top<k>: the k most probable classes of each row.
func ProbsTop(k int) Probs { return Probs("top" + strconv.Itoa(k)) }

// TopK is k for top<k>, and 0 for any other choice (or an invalid one).
func (p Probs) TopK() int {
	cols, k, err := p.parse()
	if err != nil || cols != schemas.ProbsTop {
		return 0
	}
	return k
}

// Validate checks p's text; its error starts with the value, so that a
// caller prefixes the flag or key ("--probs: …").
func (p Probs) Validate() error {
	_, _, err := p.parse()
	return err
}

// parse returns the probability columns p names, auto as ProbsAll (which
// probColumns resolves for a model).
func (p Probs) parse() (cols schemas.ProbColumns, k int, err error) {
	switch p {
	case ProbsAuto, "auto", ProbsAll:
		return schemas.ProbsAll, 0, nil
	case ProbsNone:
		return schemas.ProbsNone, 0, nil
	}
	num, ok := strings.CutPrefix(string(p), "top")
	if ok && num != "" && num[0] >= '1' && num[0] <= '9' && strings.Trim(num, "0123456789") == "" {
		if k, err := strconv.Atoi(num); err == nil {
			return schemas.ProbsTop, k, nil
		}
	}
	return 0, 0, fmt.Errorf("%q is not auto, all, none or top<k> with k from 1 (e.g. top5)", string(p))
}

// auto reports whether p is the default choice.
func (p Probs) auto() bool { return p == ProbsAuto || p == "auto" }

// ResolveProbs returns what m's prediction records carry under p:
// ProbsAll, ProbsNone or ProbsTop(k) with k at most m's classes, auto
// decided by m's number of classes; a model without classes (regression,
// several outputs) carries no probability: ProbsNone for any valid p. An
// invalid p is an error starting with its value.
func (m *Model) ResolveProbs(p Probs) (Probs, error) {
	cols, k, _, err := m.probColumns(p)
	switch {
	case err != nil:
		return "", err
	case m.Classes() == nil || cols == schemas.ProbsNone:
		return ProbsNone, nil
	case cols == schemas.ProbsTop:
		return ProbsTop(k), nil
	}
	return ProbsAll, nil
}

// probColumns resolves p for m into the spec's probability columns, the
// top k and the note that explains a choice made by auto. A model without
// classes gets the zero values.
func (m *Model) probColumns(p Probs) (schemas.ProbColumns, int, string, error) {
	cols, k, err := p.parse()
	if err != nil {
		return 0, 0, "", err
	}
	n := len(m.Classes())
	switch {
	case m.Classes() == nil || m.Targets() != nil:
		return schemas.ProbsAll, 0, "", nil
	case p.auto() && n > MaxAllProbs:
		k = min(DefaultTopK, n)
		return schemas.ProbsTop, k, fmt.Sprintf("probs auto: the model has %d classes, more than %d: the top %d (probs all writes a prob_<class> column per class)", n, MaxAllProbs, k), nil
	case cols == schemas.ProbsTop:
		return cols, min(k, n), "", nil
	}
	return cols, 0, "", nil
}

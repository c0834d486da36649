package tree

import (
	"fmt"
	"math"
)

// Criterion is a node impurity measure (MORF paper §2.2; Breiman 2001).
type Criterion int

const (
	// Gini impurity 1 − Σ p_k² (classification).
	Gini Criterion = iota
	// Entropy −Σ p_k log p_k (classification).
	Entropy
	// MSE, the within-node variance of the target (regression).
	MSE
	// Distance is the dRF criterion G of eq. (1) of the dRF paper
	// (distance-rf-manifold-responses.txt §2.2), computed from squared
	// response distances alone (Data.Dist).
	Distance
)

func (c Criterion) String() string {
	switch c {
	case Gini:
		return "gini"
	case Entropy:
		return "entropy"
	case MSE:
		return "mse"
	case Distance:
		return "distance"
	}
	return fmt.Sprintf("criterion(%d)", int(c))
}

// ParseCriterion parses "gini", "entropy" or "mse".
func ParseCriterion(s string) (Criterion, error) {
	switch s {
	case "gini":
		return Gini, nil
	case "entropy":
		return Entropy, nil
	case "mse", "squared_error", "variance":
		return MSE, nil
	case "distance":
		return Distance, nil
	}
	return 0, fmt.Errorf("unknown criterion %q (want gini, entropy, mse or distance)", s)
}

func xlogx(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return x * math.Log(x)
}

// classAcc tracks the weighted class counts left (L), right (R) and missing
// (M) of a moving split point, with the sums the criterion needs kept up to
// date in O(1) per change so a scan costs O(rows) (sorted mode) or
// O(bins·classes) (binned mode).
//
// Every split candidate is scored by a proxy where larger is better; the
// weighted impurity decrease of the split is proxy − base, where base is the
// proxy of the unsplit node (see gain):
//
//	Gini:    n·G = n − Σ n_k²/n, so proxy = Σ_s (Σ_k n_sk²)/n_s
//	Entropy: n·H = n log n − Σ n_k log n_k, so proxy = −Σ_s (n_s log n_s − Σ_k n_sk log n_sk)
type classAcc struct {
	crit    Criterion
	L, R, M []float64
	nL, nR  float64
	nM      float64
	// gini: sums of squares; entropy: sums of x log x. The *M variants
	// include the missing counts on that side.
	sL, sR, sLM, sRM float64
}

func (a *classAcc) init(crit Criterion, k int) {
	a.crit = crit
	if cap(a.L) < k {
		a.L, a.R, a.M = make([]float64, k), make([]float64, k), make([]float64, k)
	}
	a.L, a.R, a.M = a.L[:k], a.R[:k], a.M[:k]
}

func (a *classAcc) term(x float64) float64 {
	if a.crit == Gini {
		return x * x
	}
	return xlogx(x)
}

// reset puts every non-missing count on the right: total is the node's
// class counts including missing, miss the missing part.
func (a *classAcc) reset(total, miss []float64) {
	a.nL, a.nR, a.nM = 0, 0, 0
	a.sL, a.sR, a.sLM, a.sRM = 0, 0, 0, 0
	for k := range a.L {
		a.set(k, total, miss)
	}
}

// resetOn is reset for a node whose rows have only the classes listed
// (ascending; the other entries of total and miss are 0), in time
// proportional to those classes instead of to all: a class absent from
// the node adds exactly 0 to every sum, so the sums are reset's to the
// bit. The entries of the other classes keep stale values, which nothing
// reads: move is called only for the node's classes. The builder uses it
// for labels of many classes (Builder.node).
func (a *classAcc) resetOn(total, miss []float64, classes []int32) {
	a.nL, a.nR, a.nM = 0, 0, 0
	a.sL, a.sR, a.sLM, a.sRM = 0, 0, 0, 0
	for _, k := range classes {
		a.set(int(k), total, miss)
	}
}

// set puts class k's non-missing count on the right and its missing count
// apart, adding them to the sums.
func (a *classAcc) set(k int, total, miss []float64) {
	a.L[k] = 0
	a.M[k] = miss[k]
	a.R[k] = total[k] - miss[k]
	a.nR += a.R[k]
	a.nM += a.M[k]
	a.sR += a.term(a.R[k])
	a.sLM += a.term(a.M[k])
	a.sRM += a.term(a.R[k] + a.M[k])
}

// move shifts weight c of class k from right to left.
func (a *classAcc) move(k int32, c float64) {
	l, r := a.L[k], a.R[k]
	a.L[k], a.R[k] = l+c, r-c
	a.nL += c
	a.nR -= c
	if a.crit == Gini {
		a.sL += c * (2*l + c)
		a.sR += c * (c - 2*r)
		if a.nM > 0 {
			m := a.M[k]
			a.sLM += c * (2*(l+m) + c)
			a.sRM += c * (c - 2*(r+m))
		}
		return
	}
	a.sL += xlogx(l+c) - xlogx(l)
	a.sR += xlogx(r-c) - xlogx(r)
	if a.nM > 0 {
		m := a.M[k]
		a.sLM += xlogx(l+m+c) - xlogx(l+m)
		a.sRM += xlogx(r+m-c) - xlogx(r+m)
	}
}

func (a *classAcc) proxy(nl, sl, nr, sr float64) float64 {
	if a.crit == Gini {
		return sl/nl + sr/nr
	}
	return -(xlogx(nl) - sl + xlogx(nr) - sr)
}

// best returns the proxy of the current split point and whether missing
// values should go left, honouring the minimum leaf weight on both sides.
// ok is false when no placement of the missing rows satisfies minLeaf.
func (a *classAcc) best(minLeaf float64) (proxy float64, missLeft, ok bool) {
	proxy = math.Inf(-1)
	if a.nM == 0 {
		if a.nL < minLeaf || a.nR < minLeaf {
			return proxy, false, false
		}
		return a.proxy(a.nL, a.sL, a.nR, a.sR), false, true
	}
	// missing right
	if a.nL >= minLeaf && a.nR+a.nM >= minLeaf && a.nL > 0 {
		proxy, ok = a.proxy(a.nL, a.sL, a.nR+a.nM, a.sRM), true
	}
	if a.nL+a.nM >= minLeaf && a.nR >= minLeaf && a.nR > 0 {
		if p := a.proxy(a.nL+a.nM, a.sLM, a.nR, a.sR); !ok || p > proxy {
			proxy, missLeft, ok = p, true, true
		}
	}
	return proxy, missLeft, ok
}

// classBase is the proxy of the unsplit node with class counts total;
// with classes (ascending) only those counts are read, the others being 0
// (see classAcc.resetOn).
func classBase(crit Criterion, total []float64, classes []int32) float64 {
	n, s := 0.0, 0.0
	add := func(c float64) {
		n += c
		if crit == Gini {
			s += c * c
		} else {
			s += xlogx(c)
		}
	}
	if classes != nil {
		for _, k := range classes {
			add(total[k])
		}
	} else {
		for _, c := range total {
			add(c)
		}
	}
	if n == 0 {
		return 0
	}
	if crit == Gini {
		return s / n
	}
	return -(xlogx(n) - s)
}

// regAcc is classAcc for regression (MSE): n·Var = Σy² − (Σy)²/n, so
// proxy = Σ_s (Σ_{i∈s} y_i)²/n_s.
type regAcc struct {
	nL, nR, nM float64
	sL, sR, sM float64
}

func (a *regAcc) reset(n, sum, nMiss, sumMiss float64) {
	a.nL, a.sL = 0, 0
	a.nM, a.sM = nMiss, sumMiss
	a.nR, a.sR = n-nMiss, sum-sumMiss
}

func (a *regAcc) move(w, wy float64) {
	a.nL += w
	a.sL += wy
	a.nR -= w
	a.sR -= wy
}

func (a *regAcc) best(minLeaf float64) (proxy float64, missLeft, ok bool) {
	proxy = math.Inf(-1)
	if a.nM == 0 {
		if a.nL < minLeaf || a.nR < minLeaf || a.nL <= 0 || a.nR <= 0 {
			return proxy, false, false
		}
		return a.sL*a.sL/a.nL + a.sR*a.sR/a.nR, false, true
	}
	if a.nL >= minLeaf && a.nR+a.nM >= minLeaf && a.nL > 0 {
		r := a.sR + a.sM
		proxy, ok = a.sL*a.sL/a.nL+r*r/(a.nR+a.nM), true
	}
	if a.nL+a.nM >= minLeaf && a.nR >= minLeaf && a.nR > 0 {
		l := a.sL + a.sM
		if p := l*l/(a.nL+a.nM) + a.sR*a.sR/a.nR; !ok || p > proxy {
			proxy, missLeft, ok = p, true, true
		}
	}
	return proxy, missLeft, ok
}

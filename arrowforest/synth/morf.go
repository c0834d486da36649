package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/frame"
)

const (
	circleLen    = 100 // features of the discretized circle
	barsSide     = 28  // hvbars images are barsSide × barsSide
	barsLambda   = 10  // k ~ Poisson(barsLambda) bars per image
	impulseLen   = 100 // time steps of impulse
	impulseOnset = 20  // the step starts at t = 20
	impulseDecay = 10  // exp(−(t−20)/10)
)

// circleSegments returns the segment lengths of circle's class c:
// {5, 5} for class "0" and {4, 6} for class "1".
func circleSegments(c int) (int, int) {
	if c == 1 {
		return 4, 6
	}
	return 5, 5
}

// Circle is the discretized-circle experiment.
//
// Source: MORF paper §5.1 Experiment (A) (also Manifold Forests 2019
// §4.1): "Each observation is a discretization of a circle into 100
// features with two non-adjacent segments of 1's in two differing
// patterns: class 1 features two segments of length five while class 2
// features one segment of length four and one of length six."
//
// Definition: class c ∈ {0, 1} with probability 1/2 each (class "0" is the
// paper's class 1: two segments of length 5; class "1" is the paper's
// class 2: segments of lengths 4 and 6). The features x0..x99 are the
// positions on the circle (x99 is adjacent to x0). The first
// segment (length l₁ = 5, or 4 for class "1") starts at s₁ ~ U{0..99}; the
// second (length l₂ = 5, or 6) starts at s₂ = s₁ + l₁ + 1 + U{0..88}
// (mod 100), i.e. uniformly among the 89 starts that leave at least one 0
// between the two segments on both sides of the circle. The segments
// cover positions s..s+l−1 mod 100 (they wrap around); all other features
// are 0. Every row therefore has exactly two maximal runs of 1's on the
// cycle, with lengths {5, 5} or {4, 6}.
//
// The paper does not spell out "non-adjacent" or the position law; this
// is the reading of its text that the authors' published generator
// (neurodata/SPORF, Python/paper_figures_v2/utils/load_Xy.py,
// load_circle_Xy) also implements: uniform start, second start uniform
// over the positions that neither overlap nor touch the first segment.
const Circle = "circle"

// genCircle draws Circle; see Circle for the definition.
func genCircle(rng *rand.Rand, n int) *frame.Frame {
	f := newClassFrame(seqNames("x", 0, circleLen), n, binaryClasses())
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		l1, l2 := circleSegments(c)
		s1 := rng.IntN(circleLen)
		s2 := s1 + l1 + 1 + rng.IntN(circleLen-l1-l2-1)
		for k := range l1 {
			f.Cols[(s1+k)%circleLen][i] = 1
		}
		for k := range l2 {
			f.Cols[(s2+k)%circleLen][i] = 1
		}
		f.Y[i] = int32(c)
	}
	return f
}

// hvbarsPixel returns the feature name of pixel (row r, column c) of
// hvbars, "pixel_r_c"; features are stored row-major, so this is feature
// r·28 + c.
func hvbarsPixel(r, c int) string { return fmt.Sprintf("pixel_%d_%d", r, c) }

// HVBars is the horizontal/vertical bars experiment.
//
// Source: MORF paper §5.1 Experiment (B) (also Manifold Forests 2019
// §4.1): "a simple 28 × 28 binary image classification problem. Images in
// class 0 contain randomly sized and spaced horizontal bars while those in
// class 1 contain randomly sized and spaced vertical bars. For each sampled
// image, k ~ Poisson(λ = 10) bars were distributed among the rows or
// columns, depending on the class. The distributions of the two classes
// are identical if a 90 degree rotation is applied to one of the classes."
//
// Definition: class c ∈ {0, 1} with probability 1/2 each; k ~ Poisson(10);
// each of the k bars is one full row (class "0") or one full column
// (class "1") whose index is drawn uniformly from 0..27, independently and
// with replacement; every pixel of a drawn row (column) is 1, all others 0.
// Features are the pixels row-major, named pixel_R_C (R row, C column).
//
// Resolved details: the paper does not define bar size or spacing beyond
// "k bars were distributed among the rows or columns". Each bar occupies
// one line, so "randomly sized and spaced" arises from where the k lines
// fall: bars that land on adjacent lines form one wider bar, bars that
// land on the same line coincide, and the gaps between them are random.
// This is also what the authors' generator does (neurodata/SPORF,
// load_hvbar_Xy: np.random.randint(0, 28, k) rows, transposed for class
// 1). Consequently the number of lines lit in one image is not k: by
// Poisson thinning every line is lit independently with probability
// 1 − e^{−10/28} ≈ 0.300. k = 0 (probability e^{−10} ≈ 4.5·10⁻⁵) gives a
// blank image that keeps its drawn class; it is indistinguishable between
// the classes, which (with the full image) makes the Bayes error
// (e^{−10} + 0.300²⁸)/2 ≈ 2.3·10⁻⁵ rather than 0.
const HVBars = "hvbars"

// genHVBars draws HVBars; see HVBars for the definition.
func genHVBars(rng *rand.Rand, n int) *frame.Frame {
	featNames := make([]string, 0, barsSide*barsSide)
	for r := range barsSide {
		for c := range barsSide {
			featNames = append(featNames, hvbarsPixel(r, c))
		}
	}
	f := newClassFrame(featNames, n, binaryClasses())
	var lit [barsSide]bool
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		k := poisson(rng, barsLambda)
		lit = [barsSide]bool{}
		for range k {
			lit[rng.IntN(barsSide)] = true
		}
		for line, on := range lit {
			if !on {
				continue
			}
			for m := range barsSide {
				if c == 0 { // horizontal: row `line`
					f.Cols[line*barsSide+m][i] = 1
				} else { // vertical: column `line`
					f.Cols[m*barsSide+line][i] = 1
				}
			}
		}
		f.Y[i] = int32(c)
	}
	return f
}

// poisson draws from Poisson(lambda) by Knuth's multiplication method,
// exact and fast for the small lambda used here.
func poisson(rng *rand.Rand, lambda float64) int {
	limit := math.Exp(-lambda)
	k := 0
	for p := rng.Float64(); p > limit; p *= rng.Float64() {
		k++
	}
	return k
}

// impulseSignal is the class-"1" signal of impulse at time t:
// u(t−20)·exp(−(t−20)/10).
func impulseSignal(t int) float64 {
	if t < impulseOnset {
		return 0
	}
	return math.Exp(-float64(t-impulseOnset) / impulseDecay)
}

// Impulse is the exponentially decaying impulse experiment.
//
// Source: MORF paper §5.1 Experiment (C) (also Manifold Forests 2019
// §4.1): "One class consists of 100 values of Gaussian noise while the
// second class has an added exponentially decaying unit step beginning at
// time 20": X_t⁽⁰⁾ = ε_t, X_t⁽¹⁾ = u(t−20)·e^{(t−20)} + ε_t, ε_t ~ N(0, 1).
//
// Definition: class c ∈ {0, 1} with probability 1/2 each; for
// t = 0..99, x_t = ε_t for class "0" and x_t = ε_t + u(t−20)·exp(−(t−20)/10)
// for class "1", with ε_t ~ N(0, 1) i.i.d. and u the unit step
// (u(0) = 1, so x_20 carries the full unit step). Features are t0..t99.
//
// Resolved detail: the printed exponent e^{(t−20)} grows without bound and
// contradicts the text ("exponentially decaying"); the decay rate 1/10 is
// the one of the authors' generator (neurodata/SPORF, load_impulse_Xy:
// np.exp(-0.1*(j-20)) for j ≥ 20).
const Impulse = "impulse"

// genImpulse draws Impulse; see Impulse for the definition.
func genImpulse(rng *rand.Rand, n int) *frame.Frame {
	f := newClassFrame(seqNames("t", 0, impulseLen), n, binaryClasses())
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		for t := range impulseLen {
			x := rng.NormFloat64()
			if c == 1 {
				x += impulseSignal(t)
			}
			f.Cols[t][i] = float32(x)
		}
		f.Y[i] = int32(c)
	}
	return f
}

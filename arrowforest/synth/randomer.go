package synth

import (
	"math"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/frame"
)

// paritySD is the per-coordinate standard deviation of parity: Σ = I/32.
var paritySD = math.Sqrt(1.0 / 32)

// trunkMean returns the mean μ of trunk's class "0" in p dimensions,
// μ_j = 1/√j for j = 1..p (class "1" has mean −μ). trunkMean(p)[j-1] is
// the mean of feature "xj".
func trunkMean(p int) []float64 {
	mu := make([]float64, p)
	for j := range mu {
		mu[j] = 1 / math.Sqrt(float64(j+1))
	}
	return mu
}

// Trunk is the Trunk simulation.
//
// Source: Randomer Forests (Tomita and Vogelstein), §3.1 "Simulated Data":
// "each class is distributed as a p-dimensional multivariate gaussian with
// identity covariance matrices. The means of the two classes are
// μ₁ = (1, 1/√2, 1/√3, …, 1/√p) and μ₂ = −μ₁."
//
// Definition: class c ∈ {0, 1} with probability 1/2 each; x ~ N(μ, I_p)
// for class "0" (the paper's class one) and x ~ N(−μ, I_p) for class "1",
// μ_j = 1/√j. Features are named x1..xp so that xj has mean ±1/√j.
// Default p = 10 (the paper sweeps p from 2 to 1000).
const Trunk = "trunk"

// genTrunk draws Trunk; see Trunk for the definition.
func genTrunk(rng *rand.Rand, n, p int) *frame.Frame {
	f := newClassFrame(seqNames("x", 1, p), n, binaryClasses())
	mu := trunkMean(p)
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		s := 1.0
		if c == 1 {
			s = -1
		}
		f.Y[i] = int32(c)
		for j, m := range mu {
			f.Cols[j][i] = float32(s*m + rng.NormFloat64())
		}
	}
	return f
}

// Parity is the Parity simulation.
//
// Source: Randomer Forests, §3.1 "Simulated Data": "each of the two
// classes is distributed as a mixture of 2^{p−1} multivariate gaussians
// with covariance matrices Σ = I/32. The means of class one are the subset
// of [0,1]^p for which the number of zeros in a mean is even. The means of
// class two are the subset of [0,1]^p for which the number of zeros in a
// mean is odd."
//
// Definition: class c ∈ {0, 1} with probability 1/2 each; a vertex v of
// {0,1}^p drawn uniformly among those whose number of zeros is even (class
// "0", the paper's class one) or odd (class "1") — the mixture weights are
// equal, which the paper implies but does not state; x = v + ε with
// ε ~ N(0, I_p/32). Features are named x1..xp. Default p = 10, the value
// of the paper's Fig. A1 (panel B); the paper sweeps p from 2 to 10.
const Parity = "parity"

// genParity draws Parity; see Parity for the definition.
func genParity(rng *rand.Rand, n, p int) *frame.Frame {
	f := newClassFrame(seqNames("x", 1, p), n, binaryClasses())
	v := make([]float64, p)
	for i := range n {
		c := i % 2 // classes alternate: exactly balanced, as the papers' generators
		zeros := 0
		for j := range v {
			v[j] = float64(rng.IntN(2))
			if v[j] == 0 {
				zeros++
			}
		}
		// Flipping one coordinate maps the 2^p vertices two-to-one and
		// uniformly onto the 2^{p-1} vertices of the drawn class.
		if zeros%2 != c {
			v[p-1] = 1 - v[p-1]
		}
		f.Y[i] = int32(c)
		for j, vj := range v {
			f.Cols[j][i] = float32(vj + paritySD*rng.NormFloat64())
		}
	}
	return f
}

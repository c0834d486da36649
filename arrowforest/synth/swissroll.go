package synth

import (
	"math"
	"math/rand/v2"

	"github.com/forestd/forestd/arrowforest/frame"
)

const (
	swissInputs  = 6 // x1..x6
	swissTargets = 3 // y0, y1, y2
	swissUMax    = 21
)

// swissRollSurface returns the point of the swiss-roll surface with
// parameters (t, u): (t·cos t, u, t·sin t).
func swissRollSurface(t, u float64) (y0, y1, y2 float64) {
	return t * math.Cos(t), u, t * math.Sin(t)
}

// SwissRoll is the swiss-roll regression of the dRF paper.
//
// Source: Tsagkrasoulis and Montana, "Random Forest regression for
// manifold-valued responses"
// (distance-rf-manifold-responses.txt), §3.1 "Simulation Study — Prediction
// on a Swiss-roll Manifold": t_i ~ U(π, 3π), u_i ~ U(0, 21); responses
// y_{i1} = t_i cos t_i, y_{i2} = u_i, y_{i3} = t_i sin t_i; inputs x_{i1},
// x_{i2} "computed by mapping u_i and t_i in the unit circle":
//
//	x_{i1} = (t_i − t̄)/max t · √(1 − ½((u_i − ū)/max u)²)
//	x_{i2} = (u_i − ū)/max u · √(1 − ½((t_i − t̄)/max t)²)
//
// "the remaining input coordinate variables were drawn from the standard
// normal Gaussian distribution. Gaussian Noise, with Σ = 0.5·I₃, was added
// on the response points." The paper uses N = 900 (600 train, 300 test).
//
// Definition: per row, t ~ U(π, 3π), u ~ U(0, 21), x3..x6 ~ N(0, 1)
// i.i.d.; the response is (y0, y1, y2) = (t cos t, u, t sin t) + e with
// e ~ N(0, NoiseVar·I₃), NoiseVar = 0.5 by default (Σ is a covariance, so
// each coordinate has standard deviation √0.5 ≈ 0.707). The paper's
// y_{·1}, y_{·2}, y_{·3} are named y0, y1, y2; its x_{·1}..x_{·6} are
// x1..x6. With clean, the noise-free point (t cos t, u, t sin t) follows as
// y0_true, y1_true, y2_true.
//
// Resolved detail: t̄, ū, max t and max u are read literally as the sample
// mean and sample maximum of the N generated values (the paper writes
// t̄_i and max t_i over the simulated points), so x1 and x2 of a row
// depend on the whole sample. To reproduce the paper's train/test
// protocol generate one set of N rows and split it, rather than two sets
// with different seeds. (With population values t̄ = 2π, max t = 3π,
// ū = 10.5, max u = 21 the inputs would differ by O(1/√N).)
const SwissRoll = "swissroll"

// genSwissRoll draws SwissRoll; see SwissRoll for the definition.
func genSwissRoll(rng *rand.Rand, n int, noiseVar float64, clean bool) (*frame.Frame, [][]float64, []string) {
	f := newFrame(seqNames("x", 1, swissInputs), n)
	noisy, noiseFree := Responses(SwissRoll, clean)
	tnames := append(noisy, noiseFree...)
	ntar := len(tnames)
	targets := make([][]float64, ntar)
	for k := range targets {
		targets[k] = make([]float64, n)
	}
	t := make([]float64, n)
	u := make([]float64, n)
	sd := math.Sqrt(noiseVar)
	for i := range n {
		t[i] = math.Pi + 2*math.Pi*rng.Float64()
		u[i] = swissUMax * rng.Float64()
		for j := 2; j < swissInputs; j++ {
			f.Cols[j][i] = float32(rng.NormFloat64())
		}
		y0, y1, y2 := swissRollSurface(t[i], u[i])
		for k, v := range [swissTargets]float64{y0, y1, y2} {
			targets[k][i] = v + sd*rng.NormFloat64()
			if clean {
				targets[swissTargets+k][i] = v
			}
		}
	}
	tbar, tmax := meanMax(t)
	ubar, umax := meanMax(u)
	if umax == 0 { // every u drawn was exactly 0 (probability ~2^-53·N): b = 0
		umax = 1
	}
	for i := range n {
		x1, x2 := swissRollInputs(t[i], u[i], tbar, tmax, ubar, umax)
		f.Cols[0][i] = float32(x1)
		f.Cols[1][i] = float32(x2)
	}
	return f, targets, tnames
}

// swissRollInputs is the paper's "unit circle" mapping of (t, u) to the
// inputs (x1, x2) given the sample mean and maximum of t and u (dRF paper
// §3.1): with a = (t − t̄)/max t and b = (u − ū)/max u,
// x1 = a·√(1 − b²/2), x2 = b·√(1 − a²/2).
func swissRollInputs(t, u, tbar, tmax, ubar, umax float64) (x1, x2 float64) {
	a := (t - tbar) / tmax
	b := (u - ubar) / umax
	return a * math.Sqrt(1-b*b/2), b * math.Sqrt(1-a*a/2)
}

func meanMax(v []float64) (mean, max float64) {
	max = math.Inf(-1)
	for _, x := range v {
		mean += x
		if x > max {
			max = x
		}
	}
	return mean / float64(len(v)), max
}

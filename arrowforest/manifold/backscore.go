package manifold

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/forestd/forestd/arrowforest/forest"
)

// gaussian is the kernel of eq. (9): exp(−‖v − w‖²/σ_G) on the diagonal
// blocks r = t (and 0 between different outputs).
func gaussian(v, w []float64, sigma float64) float64 {
	return math.Exp(-sqDist(v, w) / sigma)
}

// backscoreCoef solves eq. (8), vec(C) = (K^G + (N/γ_G)·I)⁻¹·vec(Y), for
// the N×q coefficient matrix C (row-major) of the backscoring map of
// §2.3.3, given the N×m embedding z of the training responses and the
// responses y (N×q row-major). With the kernel of eq. (9) K^G is block
// diagonal with q equal N×N blocks, so the Nq×Nq system is one N×N
// system with q right-hand sides, solved by a Cholesky factorisation
// (K^G is positive semi-definite, so K^G + (N/γ)·I is positive definite).
func backscoreCoef(z []float64, n, m int, y []float64, q int, sigma, gamma float64) ([]float64, error) {
	if n < 1 || m < 1 || q < 1 || len(z) != n*m || len(y) != n*q {
		return nil, fmt.Errorf("manifold: backscoring shapes: %d embedding values, %d responses for n=%d, m=%d, q=%d", len(z), len(y), n, m, q)
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) || !(gamma > 0) || math.IsInf(gamma, 0) {
		return nil, fmt.Errorf("manifold: sigma_g %v and gamma_g %v must be positive and finite", sigma, gamma)
	}
	k := mat.NewSymDense(n, nil)
	ridge := float64(n) / gamma
	for i := 0; i < n; i++ {
		zi := z[i*m : i*m+m]
		k.SetSym(i, i, 1+ridge)
		for j := i + 1; j < n; j++ {
			k.SetSym(i, j, gaussian(zi, z[j*m:j*m+m], sigma))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(k) {
		return nil, fmt.Errorf("manifold: backscoring system is not positive definite (sigma_g %v, gamma_g %v); raise gamma_g's regularisation by lowering it", sigma, gamma)
	}
	var c mat.Dense
	if err := ch.SolveTo(&c, mat.NewDense(n, q, slices.Clone(y))); err != nil {
		return nil, fmt.Errorf("manifold: backscoring solve: %w", err)
	}
	out := make([]float64, n*q)
	for i := 0; i < n; i++ {
		for r := 0; r < q; r++ {
			out[i*q+r] = c.At(i, r)
		}
	}
	for _, x := range out {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("manifold: backscoring coefficients are not finite (sigma_g %v, gamma_g %v)", sigma, gamma)
		}
	}
	return out, nil
}

// backscore evaluates eq. (7) at the embedded point zn, plus the offset
// (nil: none): ŷ_r = offset_r + Σ_i C_ir·k_G(z_i, ẑ). out receives the q
// outputs.
func backscore(z []float64, m int, coef []float64, q int, sigma float64, offset, zn, out []float64) {
	if offset != nil {
		copy(out, offset)
	} else {
		clear(out)
	}
	n := len(z) / m
	for i := 0; i < n; i++ {
		w := gaussian(z[i*m:i*m+m], zn, sigma)
		ci := coef[i*q : i*q+q]
		for r, c := range ci {
			out[r] += c * w
		}
	}
}

// backscoreRows is eq. (7) for one embedded point zn: the response-space
// prediction from the training embedding z (n×m), coefficients coef (n×q)
// and bandwidth σ_G.
func backscoreRows(z []float64, m int, coef []float64, q int, sigma float64, zn []float64) ([]float64, error) {
	if m < 1 || q < 1 || len(z)%m != 0 || len(coef) != len(z)/m*q || len(zn) != m {
		return nil, fmt.Errorf("manifold: backscore: shapes do not match")
	}
	out := make([]float64, q)
	backscore(z, m, coef, q, sigma, nil, zn, out)
	return out, nil
}

// Ways of choosing σ_G and γ_G (Options.Select); each is also the
// forest.DRF.SelectedBy of a model whose σ_G and/or γ_G were chosen so.
const (
	SelectLOO = forest.SelectedByLOO // selectBackscoreRef
	SelectOOB = forest.SelectedByOOB // selectBackscoreOOB
)

// backscoreFit is the fitted backscoring map of a forest.
type backscoreFit struct {
	sigma, gamma float64
	coef, offset []float64
	selectedBy   string
	selectMSE    float64
}

// fitBackscore fits the backscoring map g of §2.3.3 to the training
// embedding and responses: with o.Center the responses minus their mean
// (the offset, added back by eq. (7)); σ_G and γ_G as chooseSigmaGamma
// gives them; then eq. (8).
func fitBackscore(emb *Embedding, y []float64, n, q int, oob *oobPointSet, o *Options) (*backscoreFit, error) {
	yc, offset := centred(y, n, q, o.Center)
	fit, err := chooseSigmaGamma(emb, yc, n, q, oob, o)
	if err != nil {
		return nil, err
	}
	return fit, fit.solve(emb, yc, n, q, offset)
}

// centred returns, with center, the responses (N×q) minus their mean and
// the mean; without, y itself and a nil offset.
func centred(y []float64, n, q int, center bool) (yc, offset []float64) {
	if !center {
		return y, nil
	}
	offset = make([]float64, q)
	for i := 0; i < n; i++ {
		for r := 0; r < q; r++ {
			offset[r] += y[i*q+r]
		}
	}
	for r := range offset {
		offset[r] /= float64(n)
	}
	yc = make([]float64, n*q)
	for i := range yc {
		yc[i] = y[i] - offset[i%q]
	}
	return yc, offset
}

// chooseSigmaGamma returns σ_G and γ_G of the map from emb to the
// (centred) responses yc: as o gives them, or chosen when either is 0 —
// by selectBackscoreOOB at the out-of-bag points oob when there are at
// least 3 of them and o.Select is SelectOOB, else by selectBackscoreRef.
// The result has no coefficients yet (solve).
func chooseSigmaGamma(emb *Embedding, yc []float64, n, q int, oob *oobPointSet, o *Options) (*backscoreFit, error) {
	fit := &backscoreFit{sigma: o.SigmaG, gamma: o.GammaG}
	if fit.sigma != 0 && fit.gamma != 0 {
		return fit, nil
	}
	var sel Selection
	var err error
	if oob != nil && len(oob.Rows) >= 3 && o.Select == SelectOOB {
		sel, err = selectBackscoreOOB(emb.Z, n, emb.M, yc, q, *oob, fit.sigma, fit.gamma, o.Threads)
		fit.selectedBy = SelectOOB
	} else {
		sel, err = selectBackscoreRef(emb.Z, n, emb.M, yc, q, fit.sigma, fit.gamma, o.Threads)
		fit.selectedBy = SelectLOO
	}
	if err != nil {
		return nil, err
	}
	fit.sigma, fit.gamma, fit.selectMSE = sel.Sigma, sel.Gamma, sel.MSE
	return fit, nil
}

// solve sets the coefficients of eq. (8) for the chosen σ_G, γ_G and the
// offset the responses yc were centred by.
func (fit *backscoreFit) solve(emb *Embedding, yc []float64, n, q int, offset []float64) error {
	coef, err := backscoreCoef(emb.Z, n, emb.M, yc, q, fit.sigma, fit.gamma)
	if err != nil {
		return err
	}
	fit.coef, fit.offset = coef, offset
	return nil
}

// medianSquaredDistance is the median of ‖z_i − z_j‖² over pairs i < j of
// at most 2000 evenly spaced rows: the scale of the σ_G grid of
// selectBackscoreRef (the paper tunes σ_G per data set).
func medianSquaredDistance(z []float64, n, m int) float64 {
	step := max(1, n/2000)
	var v []float64
	for i := 0; i < n; i += step {
		for j := i + step; j < n; j += step {
			v = append(v, sqDist(z[i*m:i*m+m], z[j*m:j*m+m]))
		}
	}
	if len(v) == 0 {
		return 1
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if !(med > 0) {
		return 1
	}
	return med
}

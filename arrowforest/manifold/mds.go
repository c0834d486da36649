package manifold

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Embedding is the classical (metric) MDS embedding of N training
// responses (dRF paper §2.3.2): Z is N×m row-major with z_il = √λ_l·u_li,
// where λ_1 ≥ … ≥ λ_m > 0 are the largest eigenvalues of
// K = −½·H·D⁽²⁾·H and u_l their unit eigenvectors (Mardia 1978).
type Embedding struct {
	N, M   int
	Z      []float64
	Lambda []float64
}

// ClassicalMDS embeds the n responses whose squared distances are d2 (n×n
// row-major) in m dimensions (dRF paper §2.3.2; Mardia 1978). Fewer
// dimensions are returned when K has fewer than m eigenvalues above
// 1e-10·λ_1 (a distance that is not Euclidean-embeddable has negative
// ones; they are dropped). Each eigenvector's sign is fixed so that its
// largest-magnitude entry is positive, so the result does not depend on
// the eigen-solver's sign choice.
//
// Only the m largest eigenpairs of K are computed, by block Lanczos with
// full reorthogonalisation (eigen.go: Lanczos 1950; Golub & Van Loan,
// Matrix Computations, 4th ed., §10.1–10.3) on up to threads goroutines
// (threads < 1: one per CPU); the result is bit-identical at any thread
// count. The full dense decomposition (gonum mat.EigenSym) is used when
// n ≤ 64, when m is too large a share of n for a Krylov space to pay off
// (m > n/4 − 4), when Lanczos does not converge within its step budget,
// or when four or more wanted eigenvalues coincide ahead of a smaller
// wanted one (eigen.go: topEigenSym, eigBudget, clusterRisk).
func ClassicalMDS(d2 []float64, n, m, threads int) (*Embedding, error) {
	return classicalMDS(d2, n, m, threads, false)
}

// classicalMDS is ClassicalMDS; full forces the dense decomposition of
// all n eigenpairs (the reference the tests compare the partial solver
// with).
func classicalMDS(d2 []float64, n, m, threads int, full bool) (*Embedding, error) {
	if n < 2 || len(d2) != n*n {
		return nil, fmt.Errorf("manifold: MDS needs an n×n distance matrix with n ≥ 2, got %d values for n = %d", len(d2), n)
	}
	if m < 1 {
		return nil, fmt.Errorf("manifold: embedding dimension %d must be at least 1", m)
	}
	m = min(m, n-1)
	k := centredKernel(d2, n)
	var (
		vals, vecs []float64 // descending; vecs[l*n:(l+1)*n] belongs to vals[l]
		ok         bool
	)
	if !full {
		vals, vecs, ok = topEigenSym(k, n, m, threads)
	}
	if !ok {
		var err error
		if vals, vecs, err = fullTopEigenSym(k, n, m); err != nil {
			return nil, err
		}
	}
	top := vals[0]
	if !(top > 0) {
		return nil, fmt.Errorf("manifold: MDS found no positive eigenvalue (all responses at distance 0?)")
	}
	e := &Embedding{N: n}
	for l := 0; l < m; l++ {
		lam := vals[l]
		if !(lam > 1e-10*top) {
			break
		}
		e.Lambda = append(e.Lambda, lam)
	}
	e.M = len(e.Lambda)
	e.Z = make([]float64, n*e.M)
	for l := 0; l < e.M; l++ {
		u := vecs[l*n : (l+1)*n]
		big, sign := 0.0, 1.0
		for _, v := range u {
			if math.Abs(v) > big {
				big = math.Abs(v)
				sign = math.Copysign(1, v)
			}
		}
		s := sign * math.Sqrt(e.Lambda[l])
		for i, v := range u {
			e.Z[i*e.M+l] = s * v
		}
	}
	return e, nil
}

// centredKernel is K = −½·H·D⁽²⁾·H as a full n×n row-major matrix:
// K_ij = −½(D²_ij − S_i/N − S_j/N + S/N²) (§2.3.2), with D² symmetrised.
func centredKernel(d2 []float64, n int) []float64 {
	rowMean := make([]float64, n)
	var total float64
	for i := 0; i < n; i++ {
		var s float64
		for _, x := range d2[i*n : i*n+n] {
			s += x
		}
		rowMean[i] = s / float64(n)
		total += s
	}
	grand := total / float64(n*n)
	k := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			// average the two halves so an asymmetric rounding cannot matter
			x := 0.5 * (d2[i*n+j] + d2[j*n+i])
			v := -0.5 * (x - rowMean[i] - rowMean[j] + grand)
			k[i*n+j], k[j*n+i] = v, v
		}
	}
	return k
}

// fullTopEigenSym is the m largest eigenpairs of the symmetric n×n
// row-major matrix a from gonum's dense decomposition of all n
// (mat.EigenSym), in topEigenSym's layout.
func fullTopEigenSym(a []float64, n, m int) (vals, vecs []float64, err error) {
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(n, a), true) {
		return nil, nil, fmt.Errorf("manifold: MDS eigendecomposition of the %d×%d matrix did not converge", n, n)
	}
	all := es.Values(nil) // ascending
	var u mat.Dense
	es.VectorsTo(&u)
	vals = make([]float64, m)
	vecs = make([]float64, m*n)
	for l := 0; l < m; l++ {
		col := n - 1 - l
		vals[l] = all[col]
		for i := 0; i < n; i++ {
			vecs[l*n+i] = u.At(i, col)
		}
	}
	return vals, vecs, nil
}

// oos holds what the out-of-sample extension needs of the training set.
type oos struct {
	n, m   int
	z      []float64 // n×m
	lambda []float64
	colSum []float64 // S_i = Σ_j d²(y_j, y_i)
	total  float64   // Σ_{j,l} d²(y_j, y_l)
}

func newOOS(d2 []float64, n int, z, lambda []float64) *oos {
	o := &oos{n: n, m: len(lambda), z: z, lambda: lambda, colSum: make([]float64, n)}
	for i := 0; i < n; i++ {
		var s float64
		for _, x := range d2[i*n : i*n+n] {
			s += x
		}
		o.colSum[i] = s
		o.total += s
	}
	return o
}

// embed maps a new response, known only by its squared distances dn
// (len n) to the training responses, into the embedding: eq. (2) with
// the kernel estimate of eq. (3) over the augmented set of N+1 responses,
//
//	k̂_i = −½d²_ni + (Σ_j d²_jn)/(2(N+1)) + (S_i + d²_ni)/(2(N+1))
//	      − (S + 2Σ_j d²_nj)/(2(N+1)²)
//	ẑ_l = (1/√λ_l)·Σ_i u_il·k̂_i = (1/λ_l)·Σ_i z_il·k̂_i.
//
// out receives the m coordinates.
func (o *oos) embed(dn []float64, out []float64) {
	n := o.n
	n1 := float64(n + 1)
	var sn float64
	for _, x := range dn {
		sn += x
	}
	c := sn/(2*n1) - (o.total+2*sn)/(2*n1*n1)
	clear(out)
	for i := 0; i < n; i++ {
		ki := -0.5*dn[i] + c + (o.colSum[i]+dn[i])/(2*n1)
		zi := o.z[i*o.m : i*o.m+o.m]
		for l, zl := range zi {
			out[l] += zl * ki
		}
	}
	for l := range out {
		out[l] /= o.lambda[l]
	}
}

// embedOOS is the out-of-sample point of eqs. (2)–(3) for one new response
// given its squared distances dn to the n training responses whose
// squared distance matrix is d2 and embedding e.
func embedOOS(d2 []float64, e *Embedding, dn []float64) ([]float64, error) {
	if len(d2) != e.N*e.N || len(dn) != e.N || len(e.Z) != e.N*e.M || len(e.Lambda) != e.M {
		return nil, fmt.Errorf("manifold: embed: shapes do not match %d training responses", e.N)
	}
	out := make([]float64, e.M)
	newOOS(d2, e.N, e.Z, e.Lambda).embed(dn, out)
	return out, nil
}

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
// row-major) in m dimensions. Fewer dimensions are returned when K has
// fewer than m eigenvalues above 1e-10·λ_1 (a distance that is not
// Euclidean-embeddable has negative ones; they are dropped). Each
// eigenvector's sign is fixed so that its largest-magnitude entry is
// positive, so the result does not depend on the eigen-solver's sign
// choice.
func ClassicalMDS(d2 []float64, n, m int) (*Embedding, error) {
	if n < 2 || len(d2) != n*n {
		return nil, fmt.Errorf("manifold: MDS needs an n×n distance matrix with n ≥ 2, got %d values for n = %d", len(d2), n)
	}
	if m < 1 {
		return nil, fmt.Errorf("manifold: embedding dimension %d must be at least 1", m)
	}
	m = min(m, n-1)
	// K_ij = −½(D²_ij − S_i/N − S_j/N + S/N²)   (§2.3.2)
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
	k := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			// average the two halves so an asymmetric rounding cannot matter
			x := 0.5 * (d2[i*n+j] + d2[j*n+i])
			k.SetSym(i, j, -0.5*(x-rowMean[i]-rowMean[j]+grand))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(k, true) {
		return nil, fmt.Errorf("manifold: MDS eigendecomposition of the %d×%d matrix did not converge", n, n)
	}
	vals := es.Values(nil) // ascending
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	top := vals[n-1]
	if !(top > 0) {
		return nil, fmt.Errorf("manifold: MDS found no positive eigenvalue (all responses at distance 0?)")
	}
	e := &Embedding{N: n}
	for l := 0; l < m; l++ {
		lam := vals[n-1-l]
		if !(lam > 1e-10*top) {
			break
		}
		e.Lambda = append(e.Lambda, lam)
	}
	e.M = len(e.Lambda)
	e.Z = make([]float64, n*e.M)
	for l := 0; l < e.M; l++ {
		col := n - 1 - l
		big, sign := 0.0, 1.0
		for i := 0; i < n; i++ {
			if v := vecs.At(i, col); math.Abs(v) > big {
				big = math.Abs(v)
				sign = math.Copysign(1, v)
			}
		}
		s := sign * math.Sqrt(e.Lambda[l])
		for i := 0; i < n; i++ {
			e.Z[i*e.M+l] = s * vecs.At(i, col)
		}
	}
	return e, nil
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

// Embed is the out-of-sample point of eqs. (2)–(3) for one new response
// given its squared distances dn to the n training responses whose
// squared distance matrix is d2 and embedding e.
func Embed(d2 []float64, e *Embedding, dn []float64) ([]float64, error) {
	if len(d2) != e.N*e.N || len(dn) != e.N || len(e.Z) != e.N*e.M || len(e.Lambda) != e.M {
		return nil, fmt.Errorf("manifold: Embed: shapes do not match %d training responses", e.N)
	}
	out := make([]float64, e.M)
	newOOS(d2, e.N, e.Z, e.Lambda).embed(dn, out)
	return out, nil
}

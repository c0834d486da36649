package dependence

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// Random-projection energy statistic (Huang and Huo, "A statistically and
// numerically efficient independence test based on random projections
// and distance covariance", 2017, §2–3, applied to the two-sample energy
// distance of Székely and Rizzo): for u uniform on the sphere S^{p−1},
// E_u|uᵀz| = |z|/C_p with C_p = √π·Γ((p+1)/2)/Γ(p/2), so
//
//	Ẽ = C_p/K · Σ_k E(uₖᵀX, uₖᵀY)
//
// over K seeded directions (in orthonormal blocks, sphereDirs) is an
// unbiased estimate of eqdist.e's E, and
// each term is a one-dimensional energy statistic: O(n log n) to sort the
// projected pooled sample once, O(n) per permutation. A permutation test
// of Ẽ (the directions fixed, the labels permuted) is exact whatever K,
// and costs O(K·n) per permutation instead of the O(n²) of the Euclidean
// statistic, so it can use every row where EnergyTestJoint subsamples.

// projConst is C_p of the identity above: |z| = C_p·E_u|uᵀz|.
func projConst(p int) float64 {
	a, _ := math.Lgamma(float64(p+1) / 2)
	b, _ := math.Lgamma(float64(p) / 2)
	return math.Sqrt(math.Pi) * math.Exp(a-b)
}

// jointRows returns the complete rows of ref and cur (no NaN in any
// column), subsampled in proportion to maxRows pooled rows when positive
// and exceeded (seeded by stream), and checks the columns.
func jointRows(ref, cur [][]float64, maxRows int, stream uint64) ([]int, []int, error) {
	if len(ref) == 0 || len(ref) != len(cur) {
		return nil, nil, fmt.Errorf("dependence: energy test: %d reference and %d current columns", len(ref), len(cur))
	}
	r0, r1 := energyRows(ref), energyRows(cur)
	if r0 == nil || r1 == nil {
		return nil, nil, errors.New("dependence: energy test: columns of unequal length")
	}
	if len(r0) == 0 || len(r1) == 0 {
		return nil, nil, errEnergyEmpty
	}
	if n := len(r0) + len(r1); maxRows > 0 && n > maxRows {
		m0 := max(1, min(maxRows-1, int(math.Round(float64(maxRows)*float64(len(r0))/float64(n)))))
		r0 = subsampleRows(r0, m0, stream^1)
		r1 = subsampleRows(r1, maxRows-m0, stream^2)
	}
	return r0, r1, nil
}

// pooledMatrix returns the rows r0 of ref then r1 of cur, row-major
// (d values per row), refusing infinite values.
func pooledMatrix(ref, cur [][]float64, r0, r1 []int) ([]float64, error) {
	d := len(ref)
	m := make([]float64, 0, (len(r0)+len(r1))*d)
	for s, rows := range [2][]int{r0, r1} {
		cols := [2][][]float64{ref, cur}[s]
		for _, i := range rows {
			for f := range d {
				v := cols[f][i]
				if math.IsInf(v, 0) {
					return nil, fmt.Errorf("dependence: energy test: infinite value in column %d", f)
				}
				m = append(m, v)
			}
		}
	}
	return m, nil
}

// EnergyStatJoint returns energy::eqdist.e of the joint samples (the
// Euclidean distance over the columns, rows with a NaN left out) and the
// pooled rows it used: every complete row, or the seeded subsample of
// opt.Test.MaxRows rows that EnergyTestJoint without Directions tests
// (same Seed and ID, same rows). It costs O(n²·d), split over
// opt.Test.Threads; the value does not depend on the thread count.
func EnergyStatJoint(ref, cur [][]float64, opt EnergyOptions) (float64, int, error) {
	o, err := opt.Test.resolve()
	if err != nil {
		return 0, 0, err
	}
	r0, r1, err := jointRows(ref, cur, o.MaxRows, streamKey(o.Seed, opt.ID))
	if err != nil {
		return 0, 0, err
	}
	m, err := pooledMatrix(ref, cur, r0, r1)
	if err != nil {
		return 0, 0, err
	}
	n0, n1 := len(r0), len(r1)
	tot, w0, w1 := euclidSums(m, len(ref), n0, n0+n1, o.Threads, opt.stop())
	if err := opt.stopped(); err != nil {
		return 0, 0, err
	}
	return energyFromSums(n0, n1, tot, w0, w1), n0 + n1, nil
}

// euclidSums returns Σ_{i<j} |x_i − x_j| over the n rows of m (d values
// each) and its parts within rows [0, n0) and [n0, n). Rows are summed in
// fixed blocks whose partial sums add in block order, so the threads do
// not change the value. A block does not start once stop (when not nil)
// reports true.
func euclidSums(m []float64, d, n0, n, threads int, stop func() bool) (tot, w0, w1 float64) {
	const block = 32
	nb := (n + block - 1) / block
	part := make([][3]float64, nb) // pooled, within 0, within 1
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(threads, nb)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1) - 1)
				if b >= nb || (stop != nil && stop()) {
					return
				}
				var s [3]float64
				for i := b * block; i < min(n, (b+1)*block); i++ {
					xi := m[i*d : i*d+d]
					for j := i + 1; j < n; j++ {
						xj := m[j*d : j*d+d]
						var q float64
						for f, v := range xi {
							t := v - xj[f]
							q += t * t
						}
						e := math.Sqrt(q)
						s[0] += e
						switch {
						case j < n0:
							s[1] += e
						case i >= n0:
							s[2] += e
						}
					}
				}
				part[b] = s
			}
		}()
	}
	wg.Wait()
	for _, s := range part {
		tot += s[0]
		w0 += s[1]
		w1 += s[2]
	}
	return tot, w0, w1
}

// energyProjTest is EnergyTestJoint with opt.Directions > 0: the
// permutation test of Ẽ over every complete row, or over a subsample of
// opt.MaxProjectedRows.
func energyProjTest(ref, cur [][]float64, opt EnergyOptions, o TestOptions, pl permPlan) (TestResult, error) {
	stream := streamKey(o.Seed, opt.ID)
	r0, r1, err := jointRows(ref, cur, opt.MaxProjectedRows, stream)
	if err != nil {
		return TestResult{}, err
	}
	m, err := pooledMatrix(ref, cur, r0, r1)
	if err != nil {
		return TestResult{}, err
	}
	pr := newEnergyProj(m, len(ref), len(r0), len(r1), opt.Directions, stream, opt.stop())
	if err := opt.stopped(); err != nil {
		return TestResult{}, err
	}
	res, _ := runPerm(pr, stream, pl, o.Threads, opt.stop())
	if err := opt.stopped(); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

// energyProj holds the K projections of the pooled sample, each sorted,
// with the pooled row of each sorted position.
type energyProj struct {
	n0, n1 int
	v      [][]float64 // per direction: projected values, sorted
	row    [][]int32   // per direction: the pooled row of v[k][j]
	tot    []float64   // per direction: Σ_{i<j} |v_i − v_j|
	totSum float64
	cp     float64 // C_p/K
	lab    []int32 // observed labels by pooled row: n0 zeros, n1 ones
	exact  float64
}

// newEnergyProj projects m (n0 + n1 rows of d values) on k seeded
// directions; it returns early, unfinished, once stop (when not nil)
// reports true.
func newEnergyProj(m []float64, d, n0, n1, k int, stream uint64, stop func() bool) *energyProj {
	n := n0 + n1
	p := &energyProj{n0: n0, n1: n1, v: make([][]float64, k), row: make([][]int32, k), tot: make([]float64, k),
		cp: projConst(d) / float64(k), lab: make([]int32, n)}
	for i := n0; i < n; i++ {
		p.lab[i] = 1
	}
	dirs := sphereDirs{rng: rand.New(rand.NewPCG(stream, stream^0x5eed)), d: d}
	type pos struct {
		v float64
		r int32
	}
	ps := make([]pos, n)
	for k := range p.v {
		if stop != nil && stop() {
			return p
		}
		u := dirs.next()
		// projected relative to the first row (the statistic is
		// translation invariant): equal rows project to exactly 0
		for i := range n {
			var s float64
			for f, x := range m[i*d : i*d+d] {
				s += (x - m[f]) * u[f]
			}
			ps[i] = pos{s, int32(i)}
		}
		slices.SortFunc(ps, func(a, b pos) int { return cmp.Compare(a.v, b.v) })
		v, r := make([]float64, n), make([]int32, n)
		for j, q := range ps {
			v[j], r[j] = q.v, q.r
		}
		p.v[k], p.row[k] = v, r
		var t float64
		for j, x := range v {
			t += float64(2*(j+1)-n-1) * x
		}
		p.tot[k] = t
		p.totSum += t
	}
	_, p.exact = p.eval(p.lab)
	return p
}

// sphereDirs draws directions uniform on the sphere S^{d−1} in
// orthonormal blocks of d (Gram–Schmidt of d standard normal vectors, a
// Haar-random frame): each direction is marginally uniform, so Ẽ stays
// unbiased, and a frame's directions are spread rather than independent,
// which lowers the variance of Ẽ over the directions (orthogonal random
// features: Yu et al., "Orthogonal Random Features", NeurIPS 2016).
type sphereDirs struct {
	rng   *rand.Rand
	d     int
	block [][]float64
}

func (g *sphereDirs) next() []float64 {
	if len(g.block) == 0 {
		for len(g.block) < g.d {
			u := make([]float64, g.d)
			for f := range u {
				u[f] = g.rng.NormFloat64()
			}
			for _, b := range g.block {
				var dot float64
				for f, x := range b {
					dot += x * u[f]
				}
				for f, x := range b {
					u[f] -= dot * x
				}
			}
			var norm float64
			for _, x := range u {
				norm += x * x
			}
			if norm < 1e-12 {
				continue // (almost) dependent on the block: draw again
			}
			norm = math.Sqrt(norm)
			for f := range u {
				u[f] /= norm
			}
			g.block = append(g.block, u)
		}
	}
	u := g.block[0]
	g.block = g.block[1:]
	return u
}

// eval returns the comparison value (Σ_k E_k over the mean pooled pair
// distance, dimensionless as energyCmp) and Ẽ for the labels lab by
// pooled row.
func (p *energyProj) eval(lab []int32) (float64, float64) {
	n0, n1 := p.n0, p.n1
	a, b := float64(n0), float64(n1)
	// E_k = 2T_k/(n₀n₁) − c₀·W₀ − c₁·W₁ with B = T − W₀ − W₁, so one pass
	// accumulates c₀W₀ + c₁W₁: position j of class f adds
	// c_f·(2m_f − 1 − n_f)·x_j, m_f its rank within the class
	c0, c1 := 2/(a*b)+2/(a*a), 2/(a*b)+2/(b*b)
	var e float64
	for k, v := range p.v {
		rows := p.row[k]
		v = v[:len(rows)]
		var m1 int
		var sa, sb float64
		j := 0
		for ; j+1 < len(rows); j += 2 {
			f := int(lab[rows[j]])
			m1 += f
			w := c0*float64(2*(j+1-m1)-1-n0) + float64(f)*(c1*float64(2*m1-1-n1)-c0*float64(2*(j+1-m1)-1-n0))
			sa += w * v[j]
			f = int(lab[rows[j+1]])
			m1 += f
			w = c0*float64(2*(j+2-m1)-1-n0) + float64(f)*(c1*float64(2*m1-1-n1)-c0*float64(2*(j+2-m1)-1-n0))
			sb += w * v[j+1]
		}
		for ; j < len(rows); j++ {
			f := int(lab[rows[j]])
			m1 += f
			w := c0*float64(2*(j+1-m1)-1-n0) + float64(f)*(c1*float64(2*m1-1-n1)-c0*float64(2*(j+1-m1)-1-n0))
			sa += w * v[j]
		}
		e += 2*p.tot[k]/(a*b) - sa - sb
	}
	e *= a * b / (a + b)
	if !(p.totSum > 0) {
		return math.NaN(), 0
	}
	n := a + b
	return e * n / (a * b) / (p.totSum / (n * (n - 1) / 2)), e * p.cp
}

func (p *energyProj) rows() int { return p.n0 + p.n1 }

func (p *energyProj) observed() (float64, float64) {
	c, _ := p.eval(p.lab)
	return c, p.exact
}

func (p *energyProj) exactStat() float64 { return p.exact }

func (p *energyProj) newWorker() permWorker {
	return &energyProjWorker{p: p, lab: make([]int32, len(p.lab))}
}

type energyProjWorker struct {
	p   *energyProj
	lab []int32
}

func (w *energyProjWorker) perm(stream uint64, idx int) float64 {
	copy(w.lab, w.p.lab)
	shuffle(w.lab, stream, idx)
	c, _ := w.p.eval(w.lab)
	return c
}

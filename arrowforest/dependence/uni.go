package dependence

import "math/bits"

// uniCol is one numeric column sorted once, with what every permutation of
// the label reuses: Δ̂ and the class sizes are invariant under a label
// permutation (§2.4), so only the per-class order-statistics sums change,
// and each permutation is one O(n) pass.
type uniCol struct {
	v     []float64 // x_(1) ≤ … ≤ x_(n), centred
	lab   []int32   // class of x_(i) under the observed labels
	cnt   []int     // n_k
	pairs float64   // Σ_{i<j} |x_i − x_j|, eq. (2.1)
	// for dCor only:
	dcor bool
	row  []float64 // r_(i) = Σ_j |x_(i) − x_j|
	rtot float64   // Σ_i r_i
	a2   float64   // Σ_kl a_kl²
	r2   float64   // Σ_k r_k²
}

func newUniCol(x []float64, y []int32, k int, forDCor bool) *uniCol {
	return newUniColSorted(sortByValue(rescaled([][]float64{x})[0], y), classCounts(y, k), forDCor)
}

// newUniColSorted is newUniCol of values already sorted (and centred) with
// their classes, and the class sizes cnt.
func newUniColSorted(ps []sortedPair, cnt []int, forDCor bool) *uniCol {
	u := &uniCol{
		v:    make([]float64, len(ps)),
		lab:  make([]int32, len(ps)),
		cnt:  cnt,
		dcor: forDCor,
	}
	for i, p := range ps {
		u.v[i], u.lab[i] = p.v, p.c
	}
	u.pairs = giniMeanDiffSorted(ps)
	if forDCor {
		n := len(u.v)
		u.row = make([]float64, n)
		var total, sq float64
		for _, v := range u.v {
			total += v
			sq += v * v
		}
		// r_(i) = Σ_{j<i}(x_i − x_j) + Σ_{j>i}(x_j − x_i) with prefix sums.
		var pre float64
		for i, v := range u.v {
			after := total - pre - v
			u.row[i] = v*float64(i) - pre + after - v*float64(n-1-i)
			pre += v
		}
		for _, r := range u.row {
			u.r2 += r * r
			u.rtot += r
		}
		// Σ_kl (x_k − x_l)² = 2nΣx² − 2(Σx)².
		u.a2 = 2*float64(n)*sq - 2*total*total
	}
	return u
}

// uniScratch holds one worker's per-class accumulators.
type uniScratch struct {
	m    []int
	p, r []float64
}

func newUniScratch(k int) *uniScratch {
	return &uniScratch{m: make([]int, k), p: make([]float64, k), r: make([]float64, k)}
}

// The per-class pair sums follow eq. (2.1) within each class: if x_(j) is
// the m-th smallest of the n_c values of class c, it enters
// P_c = Σ_{i<j∈I_c} |x_i − x_j| with weight 2m − 1 − n_c. Every pass below
// accumulates P_c (and, for dCor, R_c = Σ_{i∈c} r_i) in sorted order.

// sumsGiven accumulates P_c (and R_c) for the labels lab in sorted order
// into s.p (and s.r).
func (u *uniCol) sumsGiven(lab []int32, s *uniScratch) {
	if len(u.cnt) == 2 {
		// the arithmetic of sumsRandom2, with the labels given
		var m1 int
		var p0a, p1a, r1a, p0b, p1b, r1b float64
		n0, n1 := u.cnt[0], u.cnt[1]
		v := u.v[:len(lab)]
		for j, c := range lab {
			f := int(c)
			m1 += f
			x := v[j]
			fx := float64(f) * x
			if j&1 == 0 {
				p1a += float64(2*m1-1-n1) * fx
				p0a += float64(2*(j+1-m1)-1-n0) * (x - fx)
				if u.dcor {
					r1a += float64(f) * u.row[j]
				}
			} else {
				p1b += float64(2*m1-1-n1) * fx
				p0b += float64(2*(j+1-m1)-1-n0) * (x - fx)
				if u.dcor {
					r1b += float64(f) * u.row[j]
				}
			}
		}
		s.p[0], s.p[1] = p0a+p0b, p1a+p1b
		r1 := r1a + r1b
		s.r[0], s.r[1] = u.rtot-r1, r1
		return
	}
	clear(s.m)
	clear(s.p)
	clear(s.r)
	for j, c := range lab {
		s.m[c]++
		s.p[c] += float64(2*s.m[c]-1-u.cnt[c]) * u.v[j]
		if u.dcor {
			s.r[c] += u.row[j]
		}
	}
}

// sumsRandom is sumsGiven for a uniformly random arrangement of the class
// sizes n_c over the sorted positions, drawn on the fly by sequential
// selection sampling (Knuth, TAOCP vol. 2, Algorithm 3.4.2 S, extended to
// K classes): position j gets class c with probability
// (n_c − used_c)/(n − j), through an unbiased integer draw in [0, n − j).
// This is the law of a uniformly random permutation of the labels, with no
// label array and no shuffle.
func (u *uniCol) sumsRandom(b *below, s *uniScratch) {
	n := len(u.v)
	if len(u.cnt) == 2 {
		u.sumsRandom2(b, s)
		return
	}
	clear(s.m)
	clear(s.p)
	clear(s.r)
	k := len(u.cnt)
	for j := range u.v {
		r := int(b.n(uint32(n - j)))
		c := 0
		for acc := u.cnt[0] - s.m[0]; r >= acc && c < k-1; {
			c++
			acc += u.cnt[c] - s.m[c]
		}
		s.m[c]++
		s.p[c] += float64(2*s.m[c]-1-u.cnt[c]) * u.v[j]
		if u.dcor {
			s.r[c] += u.row[j]
		}
	}
}

// sumsRandom2 is sumsRandom for two classes, with the generator held in
// registers and two 32-bit draws per 64-bit output.
func (u *uniCol) sumsRandom2(b *below, s *uniScratch) {
	n := len(u.v)
	var m1 int
	// even and odd positions accumulate apart (two dependency chains)
	var p0a, p1a, r1a, p0b, p1b, r1b float64
	n0, n1 := u.cnt[0], u.cnt[1]
	rem1 := n1
	v := u.v
	row := u.row
	dc := u.dcor
	st := b.r.s
	j := 0
	for ; j+1 < n; j += 2 {
		st += 0x9e3779b97f4a7c15
		z := st
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		bd := uint32(n - j)
		d, lo := bits.Mul32(uint32(z), bd)
		if lo < bd {
			d = boundedSlow(d, lo, bd, &st)
		}
		f := 0
		if int(d) < rem1 {
			f = 1
		}
		rem1 -= f
		m1 += f
		x := v[j]
		fx := float64(f) * x
		p1a += float64(2*m1-1-n1) * fx
		p0a += float64(2*(j+1-m1)-1-n0) * (x - fx)
		if dc {
			r1a += float64(f) * row[j]
		}
		bd--
		d, lo = bits.Mul32(uint32(z>>32), bd)
		if lo < bd {
			d = boundedSlow(d, lo, bd, &st)
		}
		f = 0
		if int(d) < rem1 {
			f = 1
		}
		rem1 -= f
		m1 += f
		x = v[j+1]
		fx = float64(f) * x
		p1b += float64(2*m1-1-n1) * fx
		p0b += float64(2*(j+2-m1)-1-n0) * (x - fx)
		if dc {
			r1b += float64(f) * row[j+1]
		}
	}
	if j < n { // the last position takes what is left
		f := 0
		if rem1 > 0 {
			f = 1
		}
		m1 += f
		x := v[j]
		fx := float64(f) * x
		p1a += float64(2*m1-1-n1) * fx
		p0a += float64(2*(j+1-m1)-1-n0) * (x - fx)
		if dc {
			r1a += float64(f) * row[j]
		}
	}
	b.r.s = st
	s.p[0], s.p[1] = p0a+p0b, p1a+p1b
	r1 := r1a + r1b
	s.r[0], s.r[1] = u.rtot-r1, r1
}

// stat turns the sums in s into gCor_n or dCor_n.
func (u *uniCol) stat(s *uniScratch) float64 {
	n := len(u.v)
	if u.dcor {
		S := s.p
		for c := range S {
			S[c] *= 2 // ordered pairs
		}
		return dcorCatFromSums(n, u.cnt, 2*u.pairs, u.a2, u.r2, S, s.r)
	}
	_, g := giniFromSums(n, u.cnt, u.pairs, s.p)
	return g
}

// gini returns gCov_n and gCor_n for labels lab (sorted order).
func (u *uniCol) gini(lab []int32, s *uniScratch) (float64, float64) {
	u.sumsGiven(lab, s)
	return giniFromSums(len(u.v), u.cnt, u.pairs, s.p)
}

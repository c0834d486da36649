package tree

import (
	"math"
	"math/bits"
)

// The scans of a two-class Gini node (the default classifier on a binary
// label, as Trunk's) keep classAcc's counts and sums in local variables,
// so that a step costs no slice bounds, criterion branch or call: they
// perform the float64 operations of classAcc.move and classAcc.best in the
// same order, so every proxy, and so every split, is the same to the bit
// (TestGini2SameTrees). The sums with the missing counts (sLM, sRM) are
// updated even when the node has none, where classAcc skips them: best
// reads them only when it has some.

// useGini2 reports whether the node scans take the two-class Gini path.
func (b *Builder) useGini2() bool {
	return b.d.K == 2 && b.cfg.Criterion == Gini && !b.sparse && !b.plainScan
}

// gini2Best is classAcc.best with the Gini proxy, for the missing rows'
// case (nM > 0); the scans inline the case without them.
func gini2Best(nL, nR, nM, sL, sR, sLM, sRM, minLeaf float64) (proxy float64, missLeft, ok bool) {
	proxy = math.Inf(-1)
	if nL >= minLeaf && nR+nM >= minLeaf && nL > 0 {
		proxy, ok = sL/nL+sRM/(nR+nM), true
	}
	if nL+nM >= minLeaf && nR >= minLeaf && nR > 0 {
		if p := sLM/(nL+nM) + sR/nR; !ok || p > proxy {
			proxy, missLeft, ok = p, true, true
		}
	}
	return proxy, missLeft, ok
}

// allBins marks every bin for scanGini2 when the node has no occupancy
// words.
var allBins = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// scanGini2 is scanClasses for useGini2: h holds nb bins of two counts.
func (b *Builder) scanGini2(j int, h []float64, occ []uint64) split {
	var best split
	nb := len(h) / 2
	upper := b.d.Bins.Upper[j]
	minLeaf := b.cfg.MinLeaf
	b.resetAcc()
	a := &b.acc
	l0, l1, r0, r1, m0, m1 := a.L[0], a.L[1], a.R[0], a.R[1], a.M[0], a.M[1]
	nL, nR, nM := a.nL, a.nR, a.nM
	sL, sR, sLM, sRM := a.sL, a.sR, a.sLM, a.sRM
	if occ == nil {
		occ = allBins[:]
	}
	for wi, word := range occ {
		for word != 0 {
			bin := wi*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if bin >= nb-1 {
				return best
			}
			c0, c1 := h[2*bin], h[2*bin+1]
			if c0 == 0 && c1 == 0 {
				continue
			}
			if c := c0; c != 0 { // classAcc.move(0, c)
				l, r := l0, r0
				l0, r0 = l+c, r-c
				nL += c
				nR -= c
				sL += c * (2*l + c)
				sR += c * (c - 2*r)
				sLM += c * (2*(l+m0) + c)
				sRM += c * (c - 2*(r+m0))
			}
			if c := c1; c != 0 { // classAcc.move(1, c)
				l, r := l1, r1
				l1, r1 = l+c, r-c
				nL += c
				nR -= c
				sL += c * (2*l + c)
				sR += c * (c - 2*r)
				sLM += c * (2*(l+m1) + c)
				sRM += c * (c - 2*(r+m1))
			}
			if nR == 0 {
				return best
			}
			var p float64
			var ml bool
			if nM == 0 {
				if nL < minLeaf || nR < minLeaf {
					continue
				}
				p = sL/nL + sR/nR
			} else {
				var ok bool
				if p, ml, ok = gini2Best(nL, nR, nM, sL, sR, sLM, sRM, minLeaf); !ok {
					continue
				}
			}
			if !best.ok || p > best.proxy {
				best = split{ok: true, thr: upper[bin], missLeft: ml, proxy: p, binned: true, bin: uint8(bin)}
			}
		}
	}
	return best
}

// sortedGini2 is searchSorted's class scan for useGini2 over the node's
// sorted keys.
func (b *Builder) sortedGini2(idx []int32, keys []uint64) split {
	var best split
	minLeaf := b.cfg.MinLeaf
	b.resetAcc()
	a := &b.acc
	var lr, m [2][2]float64 // [class]{L, R}; [class]{M}
	lr[0], lr[1] = [2]float64{a.L[0], a.R[0]}, [2]float64{a.L[1], a.R[1]}
	m[0][0], m[1][0] = a.M[0], a.M[1]
	nL, nR, nM := a.nL, a.nR, a.nM
	sL, sR, sLM, sRM := a.sL, a.sR, a.sLM, a.sRM
	for q := 0; q < len(keys)-1; q++ {
		k := keyPos(keys[q])
		y, c := b.y[k]&1, b.w[k]
		{ // classAcc.move(y, c)
			l, r, mm := lr[y][0], lr[y][1], m[y][0]
			lr[y] = [2]float64{l + c, r - c}
			nL += c
			nR -= c
			sL += c * (2*l + c)
			sR += c * (c - 2*r)
			sLM += c * (2*(l+mm) + c)
			sRM += c * (c - 2*(r+mm))
		}
		v, next := keyValue(keys[q]), keyValue(keys[q+1])
		if v == next {
			continue
		}
		var p float64
		var ml bool
		if nM == 0 {
			if nL < minLeaf || nR < minLeaf {
				continue
			}
			p = sL/nL + sR/nR
		} else {
			var ok bool
			if p, ml, ok = gini2Best(nL, nR, nM, sL, sR, sLM, sRM, minLeaf); !ok {
				continue
			}
		}
		if !best.ok || p > best.proxy {
			best = split{ok: true, thr: b.cut(idx, v, next), missLeft: ml, proxy: p}
		}
	}
	return best
}

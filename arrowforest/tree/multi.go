package tree

import "math"

// Multi-output regression (Data.Outputs = q ≥ 2): one tree predicts q
// targets at once, as scikit-learn's DecisionTreeRegressor does with a
// 2-D y (Breiman et al., CART, and the multi-output trees of Segal 1992).
// The impurity of a node is the sum over the outputs of the within-node
// variance, so the weighted impurity decrease of a split is again
// proxy − base with
//
//	proxy = Σ_s Σ_o (Σ_{i∈s} w_i y_io)² / n_s
//
// — regAcc summed over the outputs (scikit-learn's MSE criterion for
// n_outputs > 1 averages the same sums over q, which ranks splits alike).
// Every leaf stores q means, in output order.

// multiAcc is regAcc with one running sum per output.
type multiAcc struct {
	nL, nR, nM float64
	sL, sR, sM []float64
}

func (a *multiAcc) init(q int) {
	if cap(a.sL) < q {
		a.sL, a.sR, a.sM = make([]float64, q), make([]float64, q), make([]float64, q)
	}
	a.sL, a.sR, a.sM = a.sL[:q], a.sR[:q], a.sM[:q]
}

// reset puts every non-missing row on the right: n and sum are the node's
// weight and per-output weighted sums, nMiss and sumMiss their missing part.
func (a *multiAcc) reset(n float64, sum []float64, nMiss float64, sumMiss []float64) {
	a.nL, a.nM, a.nR = 0, nMiss, n-nMiss
	for o := range a.sL {
		a.sL[o] = 0
		a.sM[o] = sumMiss[o]
		a.sR[o] = sum[o] - sumMiss[o]
	}
}

// move shifts weight w with per-output weighted sums wy from right to left.
func (a *multiAcc) move(w float64, wy []float64) {
	a.nL += w
	a.nR -= w
	for o, v := range wy {
		a.sL[o] += v
		a.sR[o] -= v
	}
}

// sq is Σ_o (x_o + y_o)²/n, with y nil for none.
func sq(x, y []float64, n float64) float64 {
	var s float64
	if y == nil {
		for _, v := range x {
			s += v * v
		}
	} else {
		for o, v := range x {
			v += y[o]
			s += v * v
		}
	}
	return s / n
}

func (a *multiAcc) best(minLeaf float64) (proxy float64, missLeft, ok bool) {
	proxy = math.Inf(-1)
	if a.nM == 0 {
		if a.nL < minLeaf || a.nR < minLeaf || a.nL <= 0 || a.nR <= 0 {
			return proxy, false, false
		}
		return sq(a.sL, nil, a.nL) + sq(a.sR, nil, a.nR), false, true
	}
	if a.nL >= minLeaf && a.nR+a.nM >= minLeaf && a.nL > 0 {
		proxy, ok = sq(a.sL, nil, a.nL)+sq(a.sR, a.sM, a.nR+a.nM), true
	}
	if a.nL+a.nM >= minLeaf && a.nR >= minLeaf && a.nR > 0 {
		if p := sq(a.sL, a.sM, a.nL+a.nM) + sq(a.sR, nil, a.nR); !ok || p > proxy {
			proxy, missLeft, ok = p, true, true
		}
	}
	return proxy, missLeft, ok
}

// multiNode computes the statistics of node rows [s, e): the node weight,
// the proxy of the unsplit node, whether every row has the same targets,
// and the per-output weighted sums (in b.msum) and means (in b.leaf).
func (b *Builder) multiNode(s, e int) (wsum, base float64, pure bool) {
	q := b.q
	sum := b.msum[:q]
	clear(sum)
	first := b.yr[s*q : s*q+q]
	pure = true
	for k := s; k < e; k++ {
		w := b.w[k]
		wsum += w
		y := b.yr[k*q : k*q+q]
		for o, v := range y {
			sum[o] += w * v
			if v != first[o] {
				pure = false
			}
		}
	}
	for o := range sum {
		b.leaf[o] = sum[o] / wsum
	}
	return wsum, sq(sum, nil, wsum), pure
}

// searchBinnedMulti is searchBinned for q outputs: each bin holds the
// weight and the q weighted sums (stride q+1).
func (b *Builder) searchBinnedMulti(j, s, e int) split {
	codes := b.d.Bins.Codes[j]
	nb := b.d.Bins.NBins(j)
	upper := b.d.Bins.Upper[j]
	var best split
	if nb < 2 {
		return best
	}
	q := b.q
	st := q + 1
	h := b.hist[:nb*st]
	clear(h)
	mm := b.mmiss[:st]
	clear(mm)
	tot := b.mtot[:q]
	clear(tot)
	var n float64
	for k := s; k < e; k++ {
		w := b.w[k]
		n += w
		slot := mm
		if c := codes[b.idx[k]]; c != MissingCode {
			slot = h[int(c)*st : int(c)*st+st]
		}
		slot[0] += w
		for o, v := range b.yr[k*q : k*q+q] {
			tot[o] += w * v
			slot[1+o] += w * v
		}
	}
	a := &b.macc
	a.reset(n, tot, mm[0], mm[1:])
	for bin := 0; bin < nb-1; bin++ {
		slot := h[bin*st : bin*st+st]
		if slot[0] == 0 {
			continue
		}
		a.move(slot[0], slot[1:])
		if a.nR <= 0 {
			break
		}
		if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
			best = split{ok: true, thr: upper[bin], missLeft: ml, proxy: p}
		}
	}
	return best
}

// searchSortedMulti is searchSorted for q outputs (exact search).
func (b *Builder) searchSortedMulti(idx []int32, wts []float32, s, e int) split {
	vals := b.projectNode(idx, wts, s, e)
	q := b.q
	keys := b.keys[:0]
	var best split
	var n, nm float64
	tot, miss := b.mtot[:q], b.mmiss[:q]
	clear(tot)
	clear(miss)
	for k := s; k < e; k++ {
		w := b.w[k]
		y := b.yr[k*q : k*q+q]
		n += w
		for o, v := range y {
			tot[o] += w * v
		}
		v := vals[k-s]
		if v != v {
			nm += w
			for o, yv := range y {
				miss[o] += w * yv
			}
			continue
		}
		keys = append(keys, packKey(v, int32(k)))
	}
	keys = b.sortKeys(keys)
	if len(keys) < 2 || keyValue(keys[0]) == keyValue(keys[len(keys)-1]) {
		return best
	}
	a := &b.macc
	a.reset(n, tot, nm, miss)
	wy := b.leafTmp[:q]
	for p := 0; p < len(keys)-1; p++ {
		k := int(keyPos(keys[p]))
		w := b.w[k]
		for o, v := range b.yr[k*q : k*q+q] {
			wy[o] = w * v
		}
		a.move(w, wy)
		v, next := keyValue(keys[p]), keyValue(keys[p+1])
		if v == next {
			continue
		}
		if pr, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || pr > best.proxy) {
			best = split{ok: true, thr: b.cut(idx, v, next), missLeft: ml, proxy: pr}
		}
	}
	return best
}

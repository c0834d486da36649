package tree

import (
	"fmt"
	"math"
)

// Distances are the squared response distances between training rows that
// the distance criterion (Criterion Distance) splits on: the split
// criterion of distance random forests, Tsagkrasoulis & Montana,
// "Random Forest regression for manifold-valued responses" §2.2 eq. (1).
// Row i of Data is training response i.
type Distances struct {
	// N is the number of training rows.
	N int
	// D2 is the N×N row-major matrix of squared distances,
	// D2[i*N+j] = d²(y_i, y_j); symmetric with a zero diagonal.
	D2 []float64
}

// Validate checks the shape against the number of data rows.
func (d *Distances) Validate(rows int) error {
	if d.N != rows {
		return fmt.Errorf("tree: %d distance rows for %d data rows", d.N, rows)
	}
	if len(d.D2) != d.N*d.N {
		return fmt.Errorf("tree: distance matrix has %d entries, want %d×%d", len(d.D2), d.N, d.N)
	}
	return nil
}

// distNode computes the statistics of node rows [s, e) under the distance
// criterion. With bootstrap weights w the node is the multiset S_w and its
// pair sum is P(S) = Σ_{i,j∈S} w_i w_j d²(y_i, y_j) (ordered pairs). It
// stores Σ_{j∈S} w_j d²(y_r, y_j) for every node row r in b.dtot (reused by
// every candidate atom of the node) and returns the node weight N_w, the
// proxy of the unsplit node −P(S)/(2N_w) (the first term of eq. 1 with its
// sign flipped, so that proxy − base = G) and P(S).
func (b *Builder) distNode(s, e int) (wsum, base, pairs float64) {
	dd := b.d.Dist
	n := dd.N
	if cap(b.dtot) < len(b.idx) {
		b.dtot = make([]float64, len(b.idx))
	}
	b.dtot = b.dtot[:len(b.idx)]
	idx, w := b.idx[s:e], b.w[s:e]
	for k, r := range idx {
		row := dd.D2[int(r)*n : int(r)*n+n]
		var t float64
		for j, c := range idx {
			t += w[j] * row[c]
		}
		b.dtot[s+k] = t
		pairs += w[k] * t
		wsum += w[k]
	}
	return wsum, -pairs / (2 * wsum), pairs
}

// distAcc tracks eq. (1) as the split point moves along the sorted
// projection: the weights and pair sums P(L), P(R) of the non-missing rows
// left and right of it, and the cross sum X_L = Σ_{i∈L, m∈M} w_i w_m d²
// between the left rows and the rows M whose projection is missing.
type distAcc struct {
	nL, nR, nM float64
	pL, pR, pM float64
	xL, xAll   float64
}

// score is the proxy −(P(A)/N_A + P(B)/N_B)/2 of a split into A and B;
// proxy − base is G of eq. (1).
func distScore(nA, pA, nB, pB float64) float64 { return -(pA/nA + pB/nB) / 2 }

// best returns the proxy of the current split point and whether the
// missing rows go left, honouring the minimum leaf weight (as regAcc).
func (a *distAcc) best(minLeaf float64) (proxy float64, missLeft, ok bool) {
	proxy = math.Inf(-1)
	if a.nM == 0 {
		if a.nL < minLeaf || a.nR < minLeaf || a.nL <= 0 || a.nR <= 0 {
			return proxy, false, false
		}
		return distScore(a.nL, a.pL, a.nR, a.pR), false, true
	}
	xR := a.xAll - a.xL
	if a.nL >= minLeaf && a.nR+a.nM >= minLeaf && a.nL > 0 {
		proxy, ok = distScore(a.nL, a.pL, a.nR+a.nM, a.pR+a.pM+2*xR), true
	}
	if a.nL+a.nM >= minLeaf && a.nR >= minLeaf && a.nR > 0 {
		if p := distScore(a.nL+a.nM, a.pL+a.pM+2*a.xL, a.nR, a.pR); !ok || p > proxy {
			proxy, missLeft, ok = p, true, true
		}
	}
	return proxy, missLeft, ok
}

// searchDistance is the exact split search under the distance criterion
// (dRF paper §2.2 eq. 1). The node's rows are sorted by their projection on
// the atom and the split point moves left to right; moving row r (weight
// w) from R to L changes the pair sums by the new pairs only:
//
//	P(L) += 2·w·Σ_{j∈L} w_j d²(r, j)
//	P(R) −= 2·w·(Σ_{j∈R} w_j d²(r, j))   with Σ_{j∈R} = total(r) − Σ_{j∈L}
//
// where total(r) = Σ_{j∈S} w_j d²(r, j) was computed once per node, so a
// scan costs O(n²/2) distance lookups instead of O(n²) per split point.
// Rows with a NaN projection take the side that scores better, as in the
// other criteria.
func (b *Builder) searchDistance(idx []int32, wts []float32, s, e int) split {
	dd := b.d.Dist
	n := dd.N
	keys := b.keys[:0]
	miss := b.dmiss[:0]
	var best split
	vals := b.projectNode(idx, wts, s, e)
	for k := s; k < e; k++ {
		v := vals[k-s]
		if v != v {
			miss = append(miss, int32(k))
			continue
		}
		keys = append(keys, packKey(v, int32(k)))
	}
	b.dmiss = miss
	keys = b.sortKeys(keys)
	if len(keys) < 2 || keyValue(keys[0]) == keyValue(keys[len(keys)-1]) {
		return best
	}
	var a distAcc
	// tot[k]: the pair sum of node position k with the non-missing rows.
	tot := b.dtot
	if len(miss) > 0 {
		if cap(b.dmr) < len(b.idx) {
			b.dmr = make([]float64, len(b.idx))
			b.dtotNM = make([]float64, len(b.idx))
		}
		b.dmr, b.dtotNM = b.dmr[:len(b.idx)], b.dtotNM[:len(b.idx)]
		for _, m := range miss {
			row := dd.D2[int(b.idx[m])*n : int(b.idx[m])*n+n]
			var t float64
			for _, m2 := range miss {
				t += b.w[m2] * row[b.idx[m2]]
			}
			a.pM += b.w[m] * t
			a.nM += b.w[m]
		}
		for _, key := range keys {
			k := keyPos(key)
			row := dd.D2[int(b.idx[k])*n : int(b.idx[k])*n+n]
			var t float64
			for _, m := range miss {
				t += b.w[m] * row[b.idx[m]]
			}
			b.dmr[k] = t
			b.dtotNM[k] = b.dtot[k] - t
			a.xAll += b.w[k] * t
		}
		tot = b.dtotNM
	}
	for _, key := range keys {
		k := keyPos(key)
		a.nR += b.w[k]
		a.pR += b.w[k] * tot[k]
	}
	lr, lw := b.dlr[:0], b.dlw[:0]
	for q := 0; q < len(keys)-1; q++ {
		k := keyPos(keys[q])
		r, w := b.idx[k], b.w[k]
		row := dd.D2[int(r)*n : int(r)*n+n]
		var sl float64
		for i, c := range lr {
			sl += lw[i] * row[c]
		}
		a.pL += 2 * w * sl
		a.pR -= 2 * w * (tot[k] - sl)
		a.nL += w
		a.nR -= w
		if len(miss) > 0 {
			a.xL += w * b.dmr[k]
		}
		lr, lw = append(lr, r), append(lw, w)
		v, next := keyValue(keys[q]), keyValue(keys[q+1])
		if v == next {
			continue
		}
		if p, ml, ok := a.best(b.cfg.MinLeaf); ok && (!best.ok || p > best.proxy) {
			best = split{ok: true, thr: Midpoint(v, next), missLeft: ml, proxy: p}
		}
	}
	b.dlr, b.dlw = lr, lw
	return best
}

// Leaf returns the index of the leaf that row r of the column-major
// columns cols reaches, evaluating atoms with the arithmetic that training
// used (so a training row reaches the leaf it was partitioned into).
func (t *Tree) Leaf(cols [][]float32, r int) int32 {
	i := int32(0)
	for t.Left[i] >= 0 {
		a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
		v := project(cols, t.AtomFeature[a0:a1], t.AtomWeight[a0:a1], int32(r))
		left := v <= t.Threshold[i]
		if v != v {
			left = t.MissingLeft[i]
		}
		if left {
			i = t.Left[i]
		} else {
			i = t.Right[i]
		}
	}
	return i
}

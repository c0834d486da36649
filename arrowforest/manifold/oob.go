package manifold

import (
	"slices"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/tree"
)

// leafMembers indexes the in-bag training rows of every leaf of tr from
// its memberships leaves (DRF.Leaves[t]): the members of node l are
// rows[start[l]:start[l+1]], in increasing row order.
func leafMembers(tr *tree.Tree, leaves []int32) (start, rows []int32) {
	nn := tr.NumNodes()
	start = make([]int32, nn+1)
	for _, l := range leaves {
		if l >= 0 {
			start[l+1]++
		}
	}
	for i := 0; i < nn; i++ {
		start[i+1] += start[i]
	}
	rows = make([]int32, start[nn])
	fill := slices.Clone(start[:nn])
	for i, l := range leaves {
		if l >= 0 {
			rows[fill[l]] = int32(i)
			fill[l]++
		}
	}
	return start, rows
}

// trainEmbedding is N×m: the out-of-sample point (eqs. 2–3) of each
// training response from its own squared distances, the points the
// weighted prediction averages.
func trainEmbedding(o *oos, d2 []float64, n, m, threads int) []float64 {
	out := make([]float64, n*m)
	parallelRows(n, threads, func(j int) {
		o.embed(d2[j*n:j*n+n], out[j*m:j*m+m])
	})
	return out
}

// oobPoints returns the out-of-bag predictions on the embedding of the
// training rows: for row i, the similarity vector a (§2.3.1) counted over
// the trees for which i was out of bag only, turned into ẑ_i as the
// prediction mode does it (the a-weighted mean of the training rows'
// out-of-sample points, or the out-of-sample point of Algorithm 1's
// distances from argmax a). Rows that were in bag for every tree are left
// out. The result does not depend on threads.
func oobPoints(trees []*tree.Tree, leaves [][]int32, cols [][]float32, d2 []float64, emb *Embedding, mode string, limit, threads int) *oobPointSet {
	n, m := emb.N, emb.M
	o := newOOS(d2, n, emb.Z, emb.Lambda)
	var te []float64
	var d2min float64
	if mode == forest.PredictWeighted {
		te = trainEmbedding(o, d2, n, m, threads)
	} else {
		d2min = minDistance2(d2, n)
	}
	starts := make([][]int32, len(trees))
	members := make([][]int32, len(trees))
	for t, tr := range trees {
		starts[t], members[t] = leafMembers(tr, leaves[t])
	}
	z := make([]float64, n*m)
	has := make([]bool, n)
	const block = 64
	parallelRows((n+block-1)/block, threads, func(b int) {
		cnt := make([]int32, n)
		var touched []int32
		dn := make([]float64, n)
		for i := b * block; i < min(n, (b+1)*block); i++ {
			touched = touched[:0]
			for t, tr := range trees {
				if leaves[t][i] >= 0 {
					continue
				}
				l := tr.Leaf(cols, i)
				for _, j := range members[t][starts[t][l]:starts[t][l+1]] {
					if cnt[j] == 0 {
						touched = append(touched, j)
					}
					cnt[j]++
				}
			}
			if len(touched) == 0 {
				continue
			}
			has[i] = true
			zi := z[i*m : i*m+m]
			if mode == forest.PredictWeighted {
				slices.Sort(touched)
				var total float64
				for _, j := range touched {
					c := float64(cnt[j])
					total += c
					for k, v := range te[int(j)*m : int(j)*m+m] {
						zi[k] += c * v
					}
				}
				for k := range zi {
					zi[k] /= total
				}
			} else {
				alg1ClosedForm(d2, n, int(argmax(cnt, touched)), d2min, dn)
				o.embed(dn, zi)
			}
			for _, j := range touched {
				cnt[j] = 0
			}
		}
	})
	var rows []int32
	for i, ok := range has {
		if ok {
			rows = append(rows, int32(i))
		}
	}
	if len(rows) > limit {
		keep := make([]int32, limit)
		for k := range keep {
			keep[k] = rows[k*len(rows)/limit]
		}
		rows = keep
	}
	p := &oobPointSet{Rows: rows}
	for _, i := range rows {
		p.Z = append(p.Z, z[int(i)*m:int(i)*m+m]...)
	}
	return p
}

// maxOOBPoints bounds the out-of-bag points that score the σ_G/γ_G grid.
const maxOOBPoints = 1000

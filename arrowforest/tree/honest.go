package tree

// Reestimate replaces the leaf values with estimates from the given rows
// and weights, which must not have been used to grow the tree: the honest
// trees of the MORF paper §4.2 (structure from one part of the sample,
// posteriors from the other). A leaf that no estimation row reaches takes
// the estimate of its nearest ancestor that some row reached; if none did
// (no rows at all), the tree is left unchanged.
func (t *Tree) Reestimate(d *Data, rows []int32, w []float64) {
	n := t.NumNodes()
	if n == 0 || len(rows) == 0 {
		return
	}
	k := max(d.K, 1)
	q := d.outputs()
	if d.K == 0 {
		k = q
	}
	acc := make([]float64, n*k)
	cnt := make([]float64, n)
	for e, r := range rows {
		wt := w[e]
		i := 0
		for {
			cnt[i] += wt
			if d.K > 0 {
				acc[i*k+int(d.Y[r])] += wt
			} else {
				for o, y := range d.YReg[int(r)*q : int(r)*q+q] {
					acc[i*q+o] += wt * y
				}
			}
			if t.Left[i] < 0 {
				break
			}
			a0, a1 := t.AtomStart[i], t.AtomStart[i+1]
			v := d.value(t.AtomFeature[a0:a1], t.AtomWeight[a0:a1], r)
			left := v <= t.Threshold[i]
			if v != v {
				left = t.MissingLeft[i]
			}
			if left {
				i = int(t.Left[i])
			} else {
				i = int(t.Right[i])
			}
		}
	}
	if cnt[0] == 0 {
		return
	}
	parent := make([]int32, n)
	parent[0] = -1
	for i := 0; i < n; i++ {
		if t.Left[i] >= 0 {
			parent[t.Left[i]], parent[t.Right[i]] = int32(i), int32(i)
		}
	}
	var cls []int32
	var val []float64
	start := make([]int32, 0, n+1)
	start = append(start, 0)
	for i := 0; i < n; i++ {
		if t.Left[i] < 0 {
			j := i
			for cnt[j] == 0 {
				j = int(parent[j])
			}
			if d.K > 0 {
				for c := 0; c < k; c++ {
					if x := acc[j*k+c]; x > 0 {
						cls = append(cls, int32(c))
						val = append(val, x/cnt[j])
					}
				}
			} else {
				for o := 0; o < q; o++ {
					val = append(val, acc[j*q+o]/cnt[j])
				}
			}
		}
		start = append(start, int32(len(val)))
	}
	if d.K > 0 {
		t.LeafClass = cls
	}
	t.LeafValue, t.LeafStart = val, start
}

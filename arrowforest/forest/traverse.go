package forest

// leaves finds the leaf slot of every row of a row-major block x (m rows of
// c.p features) in the tree rooted at root, writing them to out[:m].
//
// Rows advance one level per pass over the still-active rows instead of
// one row at a time to its leaf: each pass issues m independent node loads,
// so cache misses overlap and the data-dependent branch of one row no
// longer stalls the next. active lists the rows not yet at a leaf
// (swap-removed as they finish).
func (c *Compiled) leaves(root int32, x []float32, m int, pos, active, out []int32) {
	nodes := c.nodes
	p := c.p
	for i := 0; i < m; i++ {
		pos[i] = root
		active[i] = int32(i)
	}
	na := m
	for na > 0 {
		for a := 0; a < na; {
			i := active[a]
			nd := &nodes[pos[i]]
			if nd.right < 0 {
				out[i] = -1 - nd.right
				na--
				active[a] = active[na]
				continue
			}
			var v float32
			if nd.feat >= 0 {
				v = x[int(i)*p+int(nd.feat)]
			} else {
				v = c.project(-1-nd.feat, x[int(i)*p:int(i+1)*p])
			}
			next := nd.right
			if v <= nd.thr || (v != v && nd.miss != 0) {
				next = pos[i] + 1
			}
			pos[i] = next
			a++
		}
	}
}

// project evaluates oblique atom slot s on row x in float32, in atom order
// (the arithmetic training used).
func (c *Compiled) project(s int32, x []float32) float32 {
	var v float32
	for q := c.atomOff[s]; q < c.atomOff[s+1]; q++ {
		v += x[c.atomIdx[q]] * c.atomW[q]
	}
	return v
}

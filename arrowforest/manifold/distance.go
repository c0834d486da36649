package manifold

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/forestd/forestd/arrowforest/forest"
)

// defaultIsomapK is the neighbour count of the Isomap graph (dRF paper
// §3.1: "connected to its k = 7 nearest neighbors").
const defaultIsomapK = 7

// SquaredDistances returns the N×N row-major matrix of squared distances
// d²(y_i, y_j) between the n responses y (n×q row-major) under the named
// distance (forest.DistanceEuclidean or forest.DistanceIsomap with k
// neighbours), using up to threads goroutines. The result is symmetric
// with a zero diagonal and does not depend on threads.
func SquaredDistances(y []float64, n, q int, distance string, k, threads int) ([]float64, error) {
	if n < 2 || q < 1 || len(y) != n*q {
		return nil, fmt.Errorf("manifold: %d response values for %d rows × %d coordinates (need at least 2 rows)", len(y), n, q)
	}
	switch distance {
	case forest.DistanceEuclidean:
		d2 := make([]float64, n*n)
		parallelRows(n, threads, func(i int) {
			yi := y[i*q : i*q+q]
			for j := 0; j < n; j++ {
				d2[i*n+j] = sqDist(yi, y[j*q:j*q+q])
			}
		})
		return d2, nil
	case forest.DistanceIsomap:
		d, err := isomap(y, n, q, k, threads)
		if err != nil {
			return nil, err
		}
		for i, x := range d {
			d[i] = x * x
		}
		return d, nil
	}
	return nil, fmt.Errorf("manifold: unknown distance %q (want %s or %s)", distance, forest.DistanceEuclidean, forest.DistanceIsomap)
}

func sqDist(a, b []float64) float64 {
	var s float64
	for c, x := range a {
		d := x - b[c]
		s += d * d
	}
	return s
}

// parallelRows calls fn(i) for i in 0..n-1 on up to threads goroutines.
func parallelRows(n, threads int, fn func(i int)) {
	if threads < 1 {
		threads = runtime.NumCPU()
	}
	threads = min(threads, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// graph is an undirected weighted graph in compressed sparse rows.
type graph struct {
	off []int32
	nbr []int32
	w   []float64
}

// knnOrder returns, for every row, its k nearest other rows by Euclidean
// distance, nearest first (ties by index).
func knnOrder(y []float64, n, q, k, threads int) [][]int32 {
	type cand struct {
		d float64
		j int32
	}
	less := func(a, b cand) bool { return a.d < b.d || (a.d == b.d && a.j < b.j) }
	out := make([][]int32, n)
	parallelRows(n, threads, func(i int) {
		yi := y[i*q : i*q+q]
		if k > 64 { // a full sort beats insertion
			all := make([]cand, 0, n-1)
			for j := 0; j < n; j++ {
				if j != i {
					all = append(all, cand{sqDist(yi, y[j*q:j*q+q]), int32(j)})
				}
			}
			slices.SortFunc(all, func(a, b cand) int {
				if less(a, b) {
					return -1
				}
				return 1
			})
			nb := make([]int32, min(k, len(all)))
			for t := range nb {
				nb[t] = all[t].j
			}
			out[i] = nb
			return
		}
		// insertion into a sorted list of the k best: O(n·k)
		best := make([]cand, 0, k+1)
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			c := cand{sqDist(yi, y[j*q:j*q+q]), int32(j)}
			if len(best) == k && !less(c, best[k-1]) {
				continue
			}
			pos := len(best)
			for pos > 0 && less(c, best[pos-1]) {
				pos--
			}
			best = slices.Insert(best, pos, c)
			if len(best) > k {
				best = best[:k]
			}
		}
		nb := make([]int32, len(best))
		for t, x := range best {
			nb[t] = x.j
		}
		out[i] = nb
	})
	return out
}

// knnGraph is the symmetric k-nearest-neighbour graph of the responses:
// an edge i–j, weighted by the Euclidean distance, when j is among the k
// nearest neighbours of i or i among those of j (the undirected graph on
// which scikit-learn's Isomap runs its shortest paths).
func knnGraph(y []float64, n, q int, nbrs [][]int32) graph {
	adj := make([][]int32, n)
	for i, nb := range nbrs {
		for _, j := range nb {
			adj[i] = append(adj[i], j)
			adj[j] = append(adj[j], int32(i))
		}
	}
	g := graph{off: make([]int32, n+1)}
	for i := range adj {
		slices.Sort(adj[i])
		adj[i] = slices.Compact(adj[i])
		g.off[i+1] = g.off[i] + int32(len(adj[i]))
	}
	g.nbr = make([]int32, 0, g.off[n])
	g.w = make([]float64, 0, g.off[n])
	for i, a := range adj {
		for _, j := range a {
			g.nbr = append(g.nbr, j)
			g.w = append(g.w, math.Sqrt(sqDist(y[i*q:i*q+q], y[int(j)*q:int(j)*q+q])))
		}
	}
	return g
}

// components counts the connected components of the kNN graph made of
// the first k neighbours of every row.
func components(nbrs [][]int32, k int) int {
	n := len(nbrs)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	comps := n
	for i, nb := range nbrs {
		for _, j := range nb[:min(k, len(nb))] {
			a, b := find(int32(i)), find(j)
			if a != b {
				parent[a] = b
				comps--
			}
		}
	}
	return comps
}

// isomap returns the N×N row-major matrix of Isomap geodesic distances
// (Tenenbaum et al. 2000, as the dRF paper §3.1 uses it): the length of
// the shortest path between two responses in the undirected graph that
// links every response to its k nearest neighbours with edges weighted by
// their Euclidean distance. Shortest paths run by Dijkstra's algorithm
// from every source over the sparse graph (a binary heap, O(N·E log N)).
// A graph in more than one piece is an error that names the smallest k
// that connects it.
func isomap(y []float64, n, q, k, threads int) ([]float64, error) {
	if k < 1 || k >= n {
		return nil, fmt.Errorf("manifold: isomap k %d outside 1..%d (n = %d responses)", k, n-1, n)
	}
	nbrs := knnOrder(y, n, q, k, threads)
	if c := components(nbrs, k); c > 1 {
		full := knnOrder(y, n, q, n-1, threads)
		need := k + 1
		for ; need < n && components(full, need) > 1; need++ {
		}
		return nil, fmt.Errorf("manifold: the isomap graph with k = %d has %d disconnected pieces; k = %d connects it (--isomap-k %d)", k, c, need, need)
	}
	g := knnGraph(y, n, q, nbrs)
	d := make([]float64, n*n)
	parallelRows(n, threads, func(s int) {
		var h heap
		dijkstra(&g, s, d[s*n:(s+1)*n], &h)
	})
	// paths found from either end may differ in the last bit: take the
	// smaller, so the matrix is exactly symmetric
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			m := min(d[i*n+j], d[j*n+i])
			d[i*n+j], d[j*n+i] = m, m
		}
	}
	return d, nil
}

// heap is a binary min-heap of (distance, node) with lazy deletion.
type heap struct{ it []heapItem }

type heapItem struct {
	d float64
	v int32
}

func (h *heap) push(x heapItem) {
	h.it = append(h.it, x)
	i := len(h.it) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.it[i].less(h.it[p]) {
			break
		}
		h.it[i], h.it[p] = h.it[p], h.it[i]
		i = p
	}
}

func (h *heap) pop() heapItem {
	top := h.it[0]
	last := len(h.it) - 1
	h.it[0] = h.it[last]
	h.it = h.it[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.it[l].less(h.it[m]) {
			m = l
		}
		if r < last && h.it[r].less(h.it[m]) {
			m = r
		}
		if m == i {
			return top
		}
		h.it[i], h.it[m] = h.it[m], h.it[i]
		i = m
	}
}

func (a heapItem) less(b heapItem) bool { return a.d < b.d || (a.d == b.d && a.v < b.v) }

// dijkstra fills dist with the shortest-path lengths from s.
func dijkstra(g *graph, s int, dist []float64, h *heap) {
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	dist[s] = 0
	h.it = h.it[:0]
	h.push(heapItem{0, int32(s)})
	for len(h.it) > 0 {
		x := h.pop()
		if x.d > dist[x.v] {
			continue
		}
		for e := g.off[x.v]; e < g.off[x.v+1]; e++ {
			v := g.nbr[e]
			if nd := x.d + g.w[e]; nd < dist[v] {
				dist[v] = nd
				h.push(heapItem{nd, v})
			}
		}
	}
}

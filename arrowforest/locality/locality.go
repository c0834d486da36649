// Package locality owns feature locality (dissertation ch. 3): pairwise
// distances between features that stand in for their dependence, the
// k-nearest-neighbour graph of features with its geodesic (shortest-path)
// distances, and neighbourhood lookups — a feature together with its m−1
// nearest features — from which local feature sampling (dissertation ch. 4,
// package projection's Local sampler) draws each tree's features.
//
// Each feature is a point in R^n, its n sample values (dissertation §3.3).
// Four distances are offered (§3.3, items 1–4):
//
//   - Correlation: 1 − ρ², ρ the Pearson correlation (§2.1);
//   - Euclidean: the Euclidean distance between the two value vectors;
//   - PCA: the Euclidean distance after projecting the p feature points on
//     their first c principal components (scikit-learn's PCA of the
//     feature points; the dissertation used c = 20 for ISOLET, §4.4.2);
//   - Geodesic: the shortest-path distance on the undirected graph that
//     joins every feature to its k nearest features under the Euclidean
//     distance, edges weighted by that distance (Isomap's graph; k = 8 is
//     the dissertation's default, §4.4.2–4.4.3).
//
// Missing values (NaN) are replaced by their column's mean before any
// distance is computed (the dissertation imputes the mice protein data by
// column means, §5.7). A constant feature has no defined correlation; it is
// treated as uncorrelated with every other feature (distance 1). Features
// in different components of the neighbour graph are +Inf apart.
package locality

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/mat"
)

// Metric names, as used on the command line and in the edge table.
const (
	Correlation = "corr"
	Euclidean   = "euclidean"
	PCA         = "pca"
	Geodesic    = "geodesic"
)

// Defaults of Options.
const (
	DefaultK          = 8
	DefaultComponents = 20
)

// Options select the distance and its parameters. The zero value is the
// dissertation's default: geodesic distance on the 8-nearest-neighbour graph.
type Options struct {
	// Metric is Correlation, Euclidean, PCA or Geodesic ("" = Geodesic).
	Metric string
	// K is the number of nearest neighbours per feature in the graph
	// (Geodesic; default 8, capped at p−1).
	K int
	// Components is the number of principal components (PCA; default 20,
	// capped at min(p, n)).
	Components int
	// MaxRows, when positive and smaller than n, computes the distances on
	// that many rows drawn without replacement with Seed (dissertation
	// §2.2: a random subset of samples for large n).
	MaxRows int
	Seed    uint64
	// Threads bounds the workers (default: all CPUs); results do not
	// depend on it.
	Threads int
}

func (o *Options) resolve(p, n int) error {
	switch o.Metric {
	case "":
		o.Metric = Geodesic
	case Correlation, Euclidean, PCA, Geodesic:
	default:
		return fmt.Errorf("locality: unknown distance %q (want corr, euclidean, pca or geodesic)", o.Metric)
	}
	if o.K < 0 || o.Components < 0 || o.MaxRows < 0 {
		return fmt.Errorf("locality: k %d, components %d and max rows %d must not be negative", o.K, o.Components, o.MaxRows)
	}
	if o.K == 0 {
		o.K = DefaultK
	}
	o.K = min(o.K, p-1)
	if o.Components == 0 {
		o.Components = DefaultComponents
	}
	o.Components = max(min(o.Components, p, n), 1)
	if o.Threads < 1 {
		o.Threads = runtime.NumCPU()
	}
	return nil
}

// Distances is a symmetric p×p matrix of feature distances with a zero
// diagonal.
type Distances struct {
	P      int
	Metric string
	// D holds the matrix row-major: D[i·P+j] is the distance of i and j.
	D []float64
}

// At returns the distance between features i and j.
func (d *Distances) At(i, j int) float64 { return d.D[i*d.P+j] }

// Compute returns the feature distances of the columns cols (cols[j][i] is
// feature j of row i) under opts.
func Compute(cols [][]float32, opts Options) (*Distances, error) {
	p := len(cols)
	if p == 0 {
		return nil, fmt.Errorf("locality: no features")
	}
	n := len(cols[0])
	for j, c := range cols {
		if len(c) != n {
			return nil, fmt.Errorf("locality: column %d has %d rows, want %d", j, len(c), n)
		}
	}
	if n < 2 {
		return nil, fmt.Errorf("locality: need at least 2 rows, have %d", n)
	}
	if err := opts.resolve(p, n); err != nil {
		return nil, err
	}
	x := prepare(cols, opts.MaxRows, opts.Seed)
	d := &Distances{P: p, Metric: opts.Metric, D: make([]float64, p*p)}
	switch opts.Metric {
	case Correlation:
		corrDist(x, d.D, opts.Threads)
	case Euclidean:
		euclid(x, d.D, opts.Threads)
	case PCA:
		if err := pcaDist(x, d.D, opts.Components, opts.Threads); err != nil {
			return nil, err
		}
	case Geodesic:
		euclid(x, d.D, opts.Threads)
		if p > 1 {
			geodesic(d, opts.K, opts.Threads)
		}
	}
	return d, nil
}

// prepare copies the (optionally subsampled) columns to float64 and
// replaces NaN by the column mean.
func prepare(cols [][]float32, maxRows int, seed uint64) [][]float64 {
	n := len(cols[0])
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	if maxRows > 0 && maxRows < n {
		rng := rand.New(rand.NewPCG(seed, 0x10ca1))
		for i := 0; i < maxRows; i++ {
			j := i + rng.IntN(n-i)
			rows[i], rows[j] = rows[j], rows[i]
		}
		rows = rows[:maxRows]
		slices.Sort(rows)
	}
	x := make([][]float64, len(cols))
	for j, c := range cols {
		v := make([]float64, len(rows))
		var s float64
		cnt := 0
		for q, i := range rows {
			f := float64(c[i])
			v[q] = f
			if !math.IsNaN(f) {
				s += f
				cnt++
			}
		}
		if cnt < len(rows) {
			mean := 0.0
			if cnt > 0 {
				mean = s / float64(cnt)
			}
			for q := range v {
				if math.IsNaN(v[q]) {
					v[q] = mean
				}
			}
		}
		x[j] = v
	}
	return x
}

// pairs runs fn(i) for every row i of the upper triangle on a worker pool.
// fn writes only entries (i, j) and (j, i) for j > i, so the result does
// not depend on the number of workers.
func pairs(p, threads int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int, p)
	for i := 0; i < p; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < min(threads, p); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// euclid fills d with the Euclidean distances of the columns, summing the
// squared differences directly (no Gram-matrix cancellation).
func euclid(x [][]float64, d []float64, threads int) {
	p := len(x)
	pairs(p, threads, func(i int) {
		xi := x[i]
		for j := i + 1; j < p; j++ {
			xj := x[j][:len(xi)]
			var s float64
			for q, v := range xi {
				t := v - xj[q]
				s += t * t
			}
			s = math.Sqrt(s)
			d[i*p+j], d[j*p+i] = s, s
		}
	})
}

// corrDist fills d with 1 − ρ² (dissertation §3.3, item 1).
func corrDist(x [][]float64, d []float64, threads int) {
	p := len(x)
	z := make([][]float64, p)
	for j, c := range x {
		var mean float64
		for _, v := range c {
			mean += v
		}
		mean /= float64(len(c))
		v := make([]float64, len(c))
		var ss float64
		for q, f := range c {
			v[q] = f - mean
			ss += v[q] * v[q]
		}
		if ss > 0 {
			s := 1 / math.Sqrt(ss)
			for q := range v {
				v[q] *= s
			}
		} else {
			v = nil // constant: uncorrelated with everything
		}
		z[j] = v
	}
	pairs(p, threads, func(i int) {
		for j := i + 1; j < p; j++ {
			r := 0.0
			if z[i] != nil && z[j] != nil {
				zj := z[j][:len(z[i])]
				for q, v := range z[i] {
					r += v * zj[q]
				}
				r = max(min(r, 1), -1)
			}
			v := 1 - r*r
			d[i*p+j], d[j*p+i] = v, v
		}
	})
}

// pcaDist fills d with Euclidean distances between the feature points
// projected on their first c principal components (dissertation §3.3,
// item 3). The p points are centred (each of the n coordinates loses its
// mean over the features, as scikit-learn's PCA does); with G = F_c F_cᵀ =
// U Λ Uᵀ the scores are U_c Λ_c^{1/2}, so the distance of i and j is
// sqrt(Σ_{l<c} λ_l (u_il − u_jl)²).
func pcaDist(x [][]float64, d []float64, c, threads int) error {
	p, n := len(x), len(x[0])
	mean := make([]float64, n)
	for _, col := range x {
		for q, v := range col {
			mean[q] += v
		}
	}
	for q := range mean {
		mean[q] /= float64(p)
	}
	fc := make([][]float64, p)
	for j, col := range x {
		v := make([]float64, n)
		for q, f := range col {
			v[q] = f - mean[q]
		}
		fc[j] = v
	}
	g := mat.NewSymDense(p, nil)
	pairs(p, threads, func(i int) {
		for j := i; j < p; j++ {
			var s float64
			fj := fc[j][:len(fc[i])]
			for q, v := range fc[i] {
				s += v * fj[q]
			}
			g.SetSym(i, j, s)
		}
	})
	var eig mat.EigenSym
	if !eig.Factorize(g, true) {
		return fmt.Errorf("locality: PCA eigendecomposition did not converge")
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	// scores of the c largest components
	z := make([][]float64, p)
	for i := range z {
		z[i] = make([]float64, c)
		for l := 0; l < c; l++ {
			col := p - 1 - l
			z[i][l] = vecs.At(i, col) * math.Sqrt(max(vals[col], 0))
		}
	}
	pairs(p, threads, func(i int) {
		for j := i + 1; j < p; j++ {
			var s float64
			for l := 0; l < c; l++ {
				t := z[i][l] - z[j][l]
				s += t * t
			}
			s = math.Sqrt(s)
			d[i*p+j], d[j*p+i] = s, s
		}
	})
	return nil
}

// knnGraph returns the undirected k-nearest-neighbour graph of the features
// under the distances eu (dissertation §3.3, item 4): node j is feature j,
// joined to each of its k nearest features (ties broken by lower index)
// with the distance as the edge weight. An edge chosen from both ends is
// one edge.
func knnGraph(eu *Distances, k int) *simple.WeightedUndirectedGraph {
	p := eu.P
	g := simple.NewWeightedUndirectedGraph(0, math.Inf(1))
	for j := 0; j < p; j++ {
		g.AddNode(simple.Node(j))
	}
	order := make([]int32, 0, p)
	for i := 0; i < p; i++ {
		order = eu.orderFrom(i, order)
		for _, j := range order[1:min(k+1, p)] {
			if i == int(j) || g.HasEdgeBetween(int64(i), int64(j)) {
				continue
			}
			g.SetWeightedEdge(g.NewWeightedEdge(simple.Node(i), simple.Node(j), eu.At(i, int(j))))
		}
	}
	return g
}

// geodesic replaces the Euclidean distances in d by shortest-path
// distances on the k-nearest-neighbour graph (Dijkstra from every feature).
func geodesic(d *Distances, k, threads int) {
	g := knnGraph(d, k)
	p := d.P
	out := make([]float64, p*p)
	pairs(p, threads, func(i int) {
		sp := path.DijkstraFrom(simple.Node(i), g)
		for j := 0; j < p; j++ {
			out[i*p+j] = sp.WeightTo(int64(j))
		}
		out[i*p+i] = 0
	})
	// Dijkstra's sums may differ in the last bit between the two
	// directions; keep the matrix exactly symmetric.
	for i := 0; i < p; i++ {
		for j := i + 1; j < p; j++ {
			v := min(out[i*p+j], out[j*p+i])
			out[i*p+j], out[j*p+i] = v, v
		}
	}
	d.D = out
	d.Metric = Geodesic
}

// order writes every feature to dst ordered by its distance from feature j:
// j itself first, then by increasing distance, ties (and +Inf) by lower
// index. It returns dst.
func (d *Distances) orderFrom(j int, dst []int32) []int32 {
	dst = dst[:0]
	dst = append(dst, int32(j))
	for q := 0; q < d.P; q++ {
		if q != j {
			dst = append(dst, int32(q))
		}
	}
	row := d.D[j*d.P : (j+1)*d.P]
	rest := dst[1:]
	slices.SortStableFunc(rest, func(a, b int32) int {
		da, db := row[a], row[b]
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return int(a) - int(b)
	})
	return dst
}

// Neighbourhood returns feature j and its m−1 nearest features (dissertation
// §3.3 and §4.1: "a random set of local features of size m can be selected
// by randomly choosing a feature and its (m − 1) nearest neighbors").
func (d *Distances) Neighbourhood(j, m int) ([]int32, error) {
	if j < 0 || j >= d.P {
		return nil, fmt.Errorf("locality: feature %d outside 0..%d", j, d.P-1)
	}
	if m < 1 || m > d.P {
		return nil, fmt.Errorf("locality: neighbourhood size %d outside 1..%d", m, d.P)
	}
	return d.orderFrom(j, make([]int32, 0, d.P))[:m], nil
}

// Edge is one directed neighbour relation of the edge table: Target is the
// Rank-th nearest feature of Source.
type Edge struct {
	Source, Target int32
	Rank           int32
	Distance       float64
}

// Edges lists, for every feature, its m nearest features (rank 1..m, ties
// by lower index) with their distances — the locality graph as an edge
// list (schemas.LocalityEdges). Pairs at +Inf are left out.
func (d *Distances) Edges(m int) []Edge {
	m = max(min(m, d.P-1), 0)
	out := make([]Edge, 0, d.P*m)
	order := make([]int32, 0, d.P)
	for i := 0; i < d.P; i++ {
		order = d.orderFrom(i, order)
		for r, j := range order[1 : m+1] {
			v := d.At(i, int(j))
			if math.IsInf(v, 1) {
				break
			}
			out = append(out, Edge{Source: int32(i), Target: j, Rank: int32(r + 1), Distance: v})
		}
	}
	return out
}

package manifold

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/forestd/forestd/arrowforest/forest"
)

// benchResponses are n noisy swiss-roll responses (dRF paper §3.1).
func benchResponses(b *testing.B, n int) []float64 {
	_, _, y, _, _ := swissSplit(b, n, n, 1)
	return y
}

// BenchmarkIsomapOwn: all-pairs geodesics by this package's Dijkstra over
// the CSR kNN graph (n = 1000, k = 7, one thread), the path Train takes.
func BenchmarkIsomapOwn(b *testing.B) {
	y := benchResponses(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := isomap(y, 1000, 3, 7, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIsomapGonum: the same all-pairs geodesics with gonum's
// graph/path.DijkstraFrom over a simple.WeightedUndirectedGraph (one
// thread), the alternative the issue names. BenchmarkIsomapOwn and this
// one decided which Train uses.
func BenchmarkIsomapGonum(b *testing.B) {
	n := 1000
	y := benchResponses(b, n)
	nbrs := knnOrder(y, n, 3, 7, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g := simple.NewWeightedUndirectedGraph(0, math.Inf(1))
		for v := 0; v < n; v++ {
			g.AddNode(simple.Node(v))
		}
		for v, nb := range nbrs {
			for _, u := range nb {
				if v != int(u) && g.Edge(int64(v), int64(u)) == nil {
					g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(v), T: simple.Node(u),
						W: math.Sqrt(sqDist(y[v*3:v*3+3], y[int(u)*3:int(u)*3+3]))})
				}
			}
		}
		d := make([]float64, n*n)
		for s := 0; s < n; s++ {
			sh := path.DijkstraFrom(simple.Node(s), g)
			for t := 0; t < n; t++ {
				d[s*n+t] = sh.WeightTo(int64(t))
			}
		}
	}
}

// BenchmarkTrainSwiss: a 150-tree dRF on 1000 swiss-roll rows with the
// paper's §3.1 settings, 2 threads (distances, trees, MDS, backscoring).
func BenchmarkTrainSwiss(b *testing.B) {
	tr, _, y, _, _ := swissSplit(b, 1000, 1000, 1)
	o := DefaultOptions()
	o.Trees, o.MaxFeatures, o.Threads, o.EmbedDim, o.SigmaG, o.GammaG = 150, "3", 2, 2, 100, 200
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Train(tr, y, swissTargets, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSquaredDistancesEuclidean is the Euclidean counterpart.
func BenchmarkSquaredDistancesEuclidean(b *testing.B) {
	y := benchResponses(b, 1000)
	for i := 0; i < b.N; i++ {
		if _, err := SquaredDistances(y, 1000, 3, forest.DistanceEuclidean, 0, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectBackscore: choosing σ_G and γ_G by leave-one-out for the
// 2-D MDS embedding of 1000 swiss-roll responses, 2 threads (the part of
// Train that DefaultOptions add to BenchmarkTrainSwiss).
func BenchmarkSelectBackscore(b *testing.B) {
	y := benchResponses(b, 1000)
	d2, err := SquaredDistances(y, 1000, 3, forest.DistanceIsomap, 7, 2)
	if err != nil {
		b.Fatal(err)
	}
	e, err := ClassicalMDS(d2, 1000, 2, 2)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := selectBackscoreRef(e.Z, 1000, e.M, y, 3, 0, 0, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassicalMDS: the MDS embedding of N swiss-roll responses
// (Isomap distances, k = 7) in m = 2 and m = 25 dimensions, by gonum's
// full decomposition of all N eigenpairs ("full", the former path) and by
// the partial block Lanczos solver of eigen.go ("lanczos"), one thread.
// Run once: go test ./arrowforest/manifold -run '^$' -bench ClassicalMDS -benchtime 1x
func BenchmarkClassicalMDS(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		y := benchResponses(b, n)
		d2, err := SquaredDistances(y, n, 3, forest.DistanceIsomap, 7, 2)
		if err != nil {
			b.Fatal(err)
		}
		for _, solver := range []string{"full", "lanczos"} {
			for _, m := range []int{2, 25} {
				b.Run(fmt.Sprintf("N=%d/%s/m=%d", n, solver, m), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if _, err := classicalMDS(d2, n, m, 1, solver == "full"); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkSelectBackscoreOOB: choosing σ_G and γ_G out of bag (the
// default of Train) for the 10-D embedding of 1000 swiss-roll responses,
// 2 threads.
// Run: go test ./arrowforest/manifold -run '^$' -bench selectBackscoreOOB -benchtime 3x
func BenchmarkSelectBackscoreOOB(b *testing.B) {
	emb, y, oob := oobSetup(b, 1000, 150)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := selectBackscoreOOB(emb.Z, emb.N, emb.M, y, 3, oob, 0, 0, 2); err != nil {
			b.Fatal(err)
		}
	}
}

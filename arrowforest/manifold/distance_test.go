package manifold

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
)

// TestIsomapMatchesSklearn compares every geodesic distance with
// scikit-learn 1.2.1's Isomap(n_neighbors=k).dist_matrix_ on the same
// points (testdata/make_isomap_ref.py), for k = 7 and k = 4.
func TestIsomapMatchesSklearn(t *testing.T) {
	ref := readIsomapRef(t)
	for _, c := range ref.Cases {
		for _, threads := range []int{1, 3} {
			d, err := isomap(ref.Points, ref.N, ref.Q, c.K, threads)
			if err != nil {
				t.Fatal(err)
			}
			if len(d) != len(c.Dist) {
				t.Fatalf("k=%d: %d distances, reference has %d", c.K, len(d), len(c.Dist))
			}
			worst := 0.0
			for i, want := range c.Dist {
				got := d[i]
				if e := math.Abs(got-want) / math.Max(1, want); e > worst {
					worst = e
				}
				if math.Abs(got-want) > 1e-9*math.Max(1, want) {
					t.Fatalf("k=%d entry (%d, %d): %.15g, scikit-learn %.15g", c.K, i/ref.N, i%ref.N, got, want)
				}
			}
			t.Logf("k=%d threads=%d: worst relative difference %.3g against %s", c.K, threads, worst, ref.Tool)
		}
	}
}

// TestIsomapDisconnected: two tight clusters of 5 points far apart. With
// k ≤ 4 every neighbour of a point is in its own cluster, so the graph has
// two pieces; k = 5 adds an edge to the other cluster.
func TestIsomapDisconnected(t *testing.T) {
	var y []float64
	for c := 0; c < 2; c++ {
		for i := 0; i < 5; i++ {
			y = append(y, float64(c)*100+float64(i)*0.1, float64(i%2)*0.05)
		}
	}
	for k := 1; k <= 4; k++ {
		_, err := isomap(y, 10, 2, k, 1)
		if err == nil {
			t.Fatalf("k=%d: disconnected graph accepted", k)
		}
		if !strings.Contains(err.Error(), "k = 5 connects it") {
			t.Fatalf("k=%d: error %q does not name k = 5", k, err)
		}
		if k == 4 && !strings.Contains(err.Error(), "2 disconnected pieces") {
			t.Fatalf("k=4: error %q does not count 2 pieces", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error has several lines: %q", err)
		}
	}
	d, err := isomap(y, 10, 2, 5, 1)
	if err != nil {
		t.Fatalf("k=5: %v", err)
	}
	for _, x := range d {
		if math.IsInf(x, 0) {
			t.Fatal("k=5: infinite distance in a connected graph")
		}
	}
	for _, k := range []int{0, -1, 10} {
		if _, err := isomap(y, 10, 2, k, 1); err == nil {
			t.Fatalf("k=%d accepted", k)
		}
	}
}

// TestDistancesProperties: Euclidean matches the definition, both kinds
// are symmetric with a zero diagonal, geodesics are never shorter than
// the straight line, and the thread count changes nothing.
func TestDistancesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n, q := 80, 3
	y := make([]float64, n*q)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	eu, err := SquaredDistances(y, n, q, forest.DistanceEuclidean, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for c := 0; c < q; c++ {
				d := y[i*q+c] - y[j*q+c]
				s += d * d
			}
			if eu[i*n+j] != s {
				t.Fatalf("euclidean (%d,%d) = %v, want %v", i, j, eu[i*n+j], s)
			}
		}
	}
	iso, err := SquaredDistances(y, n, q, forest.DistanceIsomap, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{2, 5} {
		again, err := SquaredDistances(y, n, q, forest.DistanceIsomap, 7, threads)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again, iso) {
			t.Fatalf("isomap distances differ at %d threads", threads)
		}
	}
	for i := 0; i < n; i++ {
		if iso[i*n+i] != 0 {
			t.Fatalf("diagonal %d is %v", i, iso[i*n+i])
		}
		for j := 0; j < n; j++ {
			if iso[i*n+j] != iso[j*n+i] {
				t.Fatalf("isomap not symmetric at (%d,%d)", i, j)
			}
			if iso[i*n+j] < eu[i*n+j]*(1-1e-12) {
				t.Fatalf("geodesic (%d,%d) shorter than the chord: %v < %v", i, j, iso[i*n+j], eu[i*n+j])
			}
		}
	}
	if _, err := SquaredDistances(y, n, q, "cosine", 0, 1); err == nil {
		t.Fatal("unknown distance accepted")
	}
	if _, err := SquaredDistances(y[:5], n, q, forest.DistanceEuclidean, 0, 1); err == nil {
		t.Fatal("short response slice accepted")
	}
}

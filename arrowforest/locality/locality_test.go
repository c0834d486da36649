package locality

import (
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

const dataDir = "../../testdata"

// readCSV reads a shared data set's feature columns (all but the last).
func readCSV(t testing.TB, name string) ([]string, [][]float32) {
	t.Helper()
	f, err := os.Open(dataDir + "/" + name + ".csv.gz")
	if err != nil {
		t.Fatalf("test data missing (testdata/ of the repository): %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	p := len(recs[0]) - 1
	cols := make([][]float32, p)
	for _, r := range recs[1:] {
		for j := 0; j < p; j++ {
			v, err := strconv.ParseFloat(r[j], 64)
			if err != nil {
				t.Fatal(err)
			}
			cols[j] = append(cols[j], float32(v))
		}
	}
	return recs[0][:p], cols
}

type reference struct {
	Dataset    string      `json:"dataset"`
	Rows       int         `json:"rows"`
	Features   []string    `json:"features"`
	K          int         `json:"k"`
	Components int         `json:"components"`
	Corr       [][]float64 `json:"corr"`
	Euclidean  [][]float64 `json:"euclidean"`
	PCA        [][]float64 `json:"pca"`
	Geodesic   [][]float64 `json:"geodesic"`
}

// TestReferenceDistances compares the four distances with numpy, scipy and
// scikit-learn (testdata/make_refs.py: corrcoef, cdist, PCA, Isomap).
func TestReferenceDistances(t *testing.T) {
	for _, name := range []string{"wine", "sonar"} {
		b, err := os.ReadFile("testdata/ref_" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var ref reference
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		names, cols := readCSV(t, name)
		if !slices.Equal(names, ref.Features) || len(cols[0]) != ref.Rows {
			t.Fatalf("%s: data does not match the reference's features/rows", name)
		}
		for _, c := range []struct {
			metric string
			want   [][]float64
			tol    float64 // relative to the largest reference distance
		}{
			{Correlation, ref.Corr, 1e-12},
			{Euclidean, ref.Euclidean, 1e-12},
			{PCA, ref.PCA, 1e-9},
			{Geodesic, ref.Geodesic, 1e-12},
		} {
			d, err := Compute(cols, Options{Metric: c.metric, K: ref.K, Components: ref.Components})
			if err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, row := range c.want {
				for _, v := range row {
					scale = max(scale, v)
				}
			}
			worst := 0.0
			for i, row := range c.want {
				for j, v := range row {
					worst = max(worst, math.Abs(d.At(i, j)-v))
				}
			}
			t.Logf("%s %s: max abs difference %.3g (largest distance %.4g)", name, c.metric, worst, scale)
			if worst > c.tol*scale {
				t.Errorf("%s %s: max abs difference %g > %g", name, c.metric, worst, c.tol*scale)
			}
			// neighbourhoods must follow the reference order exactly
			for j := 0; j < d.P; j++ {
				nb, err := d.Neighbourhood(j, 5)
				if err != nil {
					t.Fatal(err)
				}
				if nb[0] != int32(j) {
					t.Fatalf("neighbourhood of %d starts with %d", j, nb[0])
				}
				for q := 1; q < len(nb); q++ {
					a, b := c.want[j][nb[q-1]], c.want[j][nb[q]]
					if q > 1 && a > b+c.tol*scale {
						t.Errorf("%s %s: neighbourhood of %d not ordered by the reference distance", name, c.metric, j)
					}
				}
			}
		}
	}
}

func synthCols(n, p int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	cols := make([][]float32, p)
	// a smooth 1-D layout: feature j is a noisy shift of a latent walk
	lat := make([]float64, n)
	for i := range lat {
		lat[i] = rng.NormFloat64()
	}
	for j := range cols {
		cols[j] = make([]float32, n)
		for i := range cols[j] {
			cols[j][i] = float32(math.Sin(float64(j)/4+lat[i]) + 0.1*rng.NormFloat64())
		}
	}
	return cols
}

// TestThreadsIndependent: the same distances for 1 and 3 workers.
func TestThreadsIndependent(t *testing.T) {
	cols := synthCols(300, 40, 1)
	for _, m := range []string{Correlation, Euclidean, PCA, Geodesic} {
		a, err := Compute(cols, Options{Metric: m, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Compute(cols, Options{Metric: m, Threads: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.D, b.D) {
			t.Errorf("%s: distances depend on the thread count", m)
		}
		for i := 0; i < a.P; i++ {
			if a.At(i, i) != 0 {
				t.Errorf("%s: diagonal %d is %v", m, i, a.At(i, i))
			}
			for j := 0; j < a.P; j++ {
				if a.At(i, j) != a.At(j, i) || a.At(i, j) < 0 {
					t.Fatalf("%s: not a symmetric non-negative matrix at %d,%d", m, i, j)
				}
			}
		}
	}
}

// TestGeodesicProperties: geodesic distances dominate Euclidean ones (the
// triangle inequality), equal them on graph edges, and are +Inf across
// components.
func TestGeodesicProperties(t *testing.T) {
	cols := synthCols(200, 30, 2)
	eu, _ := Compute(cols, Options{Metric: Euclidean})
	geo, _ := Compute(cols, Options{Metric: Geodesic, K: 4})
	g := knnGraph(eu, 4)
	for i := 0; i < eu.P; i++ {
		for j := 0; j < eu.P; j++ {
			if geo.At(i, j) < eu.At(i, j)*(1-1e-12) {
				t.Fatalf("geodesic %v < euclidean %v at %d,%d", geo.At(i, j), eu.At(i, j), i, j)
			}
			if g.HasEdgeBetween(int64(i), int64(j)) && math.Abs(geo.At(i, j)-eu.At(i, j)) > 1e-12*eu.At(i, j) {
				t.Fatalf("edge %d-%d: geodesic %v, euclidean %v", i, j, geo.At(i, j), eu.At(i, j))
			}
		}
	}
	// two far-apart clusters with k = 1 cannot connect
	two := make([][]float32, 4)
	for j := range two {
		two[j] = []float32{0, 1, 0}
		if j >= 2 {
			two[j] = []float32{1000, 1001, 1000}
		}
		two[j][2] += float32(j)
	}
	d, err := Compute(two, Options{Metric: Geodesic, K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(d.At(0, 3), 1) || math.IsInf(d.At(0, 1), 1) {
		t.Fatalf("components: d(0,3)=%v d(0,1)=%v", d.At(0, 3), d.At(0, 1))
	}
	if e := d.Edges(3); len(e) != 4 {
		t.Fatalf("edges across components kept: %v", e)
	}
}

// TestMissingAndConstant: NaN becomes the column mean; a constant column
// is at correlation distance 1 from everything.
func TestMissingAndConstant(t *testing.T) {
	nan := float32(math.NaN())
	cols := [][]float32{{1, 2, nan, 4}, {1, 2, 2.3333333, 4}, {5, 5, 5, 5}}
	d, err := Compute(cols, Options{Metric: Euclidean})
	if err != nil {
		t.Fatal(err)
	}
	if d.At(0, 1) > 1e-6 {
		t.Fatalf("NaN not replaced by the mean: %v", d.At(0, 1))
	}
	c, err := Compute(cols, Options{Metric: Correlation})
	if err != nil {
		t.Fatal(err)
	}
	if c.At(0, 2) != 1 || c.At(2, 1) != 1 || math.IsNaN(c.At(0, 1)) {
		t.Fatalf("constant column: %v %v %v", c.At(0, 2), c.At(2, 1), c.At(0, 1))
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		cols [][]float32
		opts Options
	}{
		{nil, Options{}},
		{[][]float32{{1, 2}, {1}}, Options{}},
		{[][]float32{{1}}, Options{}},
		{[][]float32{{1, 2}}, Options{Metric: "manhattan"}},
		{[][]float32{{1, 2}}, Options{K: -1}},
	} {
		if _, err := Compute(c.cols, c.opts); err == nil {
			t.Errorf("accepted %v %+v", c.cols, c.opts)
		}
	}
	d, _ := Compute(synthCols(10, 5, 1), Options{})
	if _, err := d.Neighbourhood(5, 1); err == nil {
		t.Error("feature out of range accepted")
	}
	if _, err := d.Neighbourhood(0, 6); err == nil {
		t.Error("neighbourhood larger than p accepted")
	}
	if _, err := NewWindow(d, 3, 2); err == nil {
		t.Error("window 3..2 accepted")
	}
}

// TestMaxRows: a subsample is drawn by seed and changes nothing when it
// covers every row.
func TestMaxRows(t *testing.T) {
	cols := synthCols(500, 12, 4)
	all, _ := Compute(cols, Options{Metric: Euclidean})
	same, _ := Compute(cols, Options{Metric: Euclidean, MaxRows: 500})
	if !slices.Equal(all.D, same.D) {
		t.Fatal("MaxRows = n changed the distances")
	}
	a, _ := Compute(cols, Options{Metric: Euclidean, MaxRows: 100, Seed: 7})
	b, _ := Compute(cols, Options{Metric: Euclidean, MaxRows: 100, Seed: 7})
	c, _ := Compute(cols, Options{Metric: Euclidean, MaxRows: 100, Seed: 8})
	if !slices.Equal(a.D, b.D) || slices.Equal(a.D, c.D) || slices.Equal(a.D, all.D) {
		t.Fatal("subsample not determined by the seed")
	}
}

// TestWindow: every draw is a feature plus its nearest features; the size
// is fixed or spans Min..Max.
func TestWindow(t *testing.T) {
	d, _ := Compute(synthCols(200, 20, 5), Options{Metric: Correlation})
	w, err := NewWindow(d, 3, 6)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int]bool{}
	var dst []int32
	for r := 0; r < 500; r++ {
		dst = w.Draw(rng, dst)
		seen[len(dst)] = true
		if len(dst) < 3 || len(dst) > 6 || !slices.IsSorted(dst) {
			t.Fatalf("draw %v", dst)
		}
		// some member c is the centre: the others are its nearest
		ok := false
		for _, c := range dst {
			nb, _ := d.Neighbourhood(int(c), len(dst))
			slices.Sort(nb)
			if slices.Equal(nb, dst) {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("draw %v is no neighbourhood", dst)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("sizes drawn: %v", seen)
	}
}

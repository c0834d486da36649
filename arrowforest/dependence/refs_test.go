package dependence

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// refCase is one input of testdata/make_refs.R: numeric columns x1.., an
// optional integer label y and optional numeric columns z1...
type refCase struct {
	x, z [][]float64
	y    []int32
	k    int
}

func readRefCase(t *testing.T, name string) refCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".csv"))
	if err != nil {
		t.Fatalf("reference input: %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	head := rows[0]
	var rc refCase
	for c, h := range head {
		switch {
		case h == "y":
			rc.y = make([]int32, len(rows)-1)
			for i, r := range rows[1:] {
				v, err := strconv.Atoi(r[c])
				if err != nil {
					t.Fatalf("%s row %d: %v", name, i, err)
				}
				rc.y[i] = int32(v)
				rc.k = max(rc.k, v+1)
			}
		case strings.HasPrefix(h, "x"), strings.HasPrefix(h, "z"):
			col := make([]float64, len(rows)-1)
			for i, r := range rows[1:] {
				v, err := strconv.ParseFloat(r[c], 64)
				if err != nil {
					t.Fatalf("%s row %d: %v", name, i, err)
				}
				col[i] = v
			}
			if h[0] == 'x' {
				rc.x = append(rc.x, col)
			} else {
				rc.z = append(rc.z, col)
			}
		}
	}
	return rc
}

func readRefs(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "refs.json"))
	if err != nil {
		t.Fatalf("reference values: %v", err)
	}
	var refs map[string]map[string]float64
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatalf("refs.json: %v", err)
	}
	return refs
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.15g, want %.15g (|Δ| = %.3g)", what, got, want, math.Abs(got-want))
	}
}

// TestAgainstR checks every statistic against R: energy::dcor and
// energy::dcor2d, stats::cor, and a direct R implementation of Definition
// 12 (testdata/make_refs.R), to 1e-9.
func TestAgainstR(t *testing.T) {
	refs := readRefs(t)
	if len(refs) < 10 {
		t.Fatalf("refs.json has %d cases, want 10", len(refs))
	}
	for name, want := range refs {
		t.Run(name, func(t *testing.T) {
			rc := readRefCase(t, name)
			if n := len(rc.x[0]); n != int(want["n"]) {
				t.Fatalf("n = %d, want %v", n, want["n"])
			}
			if rc.y != nil {
				near(t, "GCov", GCov(rc.x, rc.y, rc.k), want["gcov"], 1e-9)
				near(t, "GCor", GCor(rc.x, rc.y, rc.k), want["gcor"], 1e-9)
				near(t, "DCor", DCor(rc.x, rc.y, rc.k), want["dcor"], 1e-9)
				// the O(n²) paths on the same data, for one-column cases
				if len(rc.x) == 1 {
					two := [][]float64{rc.x[0], make([]float64, len(rc.y))}
					near(t, "GCor (pairwise path)", GCor(two, rc.y, rc.k), want["gcor"], 1e-9)
					near(t, "DCor (pairwise path)", DCor(two, rc.y, rc.k), want["dcor"], 1e-9)
				}
				yf := make([]float64, len(rc.y))
				for i, v := range rc.y {
					yf[i] = float64(v)
				}
				if w, ok := want["dcor_numeric_label"]; ok {
					near(t, "DCorNum(x, y as number)", DCorNum(rc.x, [][]float64{yf}), w, 1e-9)
				}
				if w, ok := want["dcor2d"]; ok {
					d := DCor1(rc.x[0], yf)
					near(t, "DCor1² (dcor2d)", d*d, w, 1e-9)
				}
				if w, ok := want["pearson"]; ok {
					near(t, "Pearson", Pearson(rc.x[0], yf), w, 1e-9)
				}
				return
			}
			near(t, "DCorNum", DCorNum(rc.x, rc.z), want["dcor"], 1e-9)
			if w, ok := want["dcor2d"]; ok {
				d := DCor1(rc.x[0], rc.z[0])
				near(t, "DCor1² (dcor2d)", d*d, w, 1e-9)
				// the pairwise path on the same data
				d2 := DCorNum([][]float64{rc.x[0], make([]float64, len(rc.x[0]))}, rc.z)
				near(t, "DCorNum pairwise", d2, want["dcor"], 1e-9)
				near(t, "Pearson", Pearson(rc.x[0], rc.z[0]), w2p(want), 1e-9)
			}
		})
	}
}

func w2p(m map[string]float64) float64 { return m["pearson"] }

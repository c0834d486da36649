package dependence

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzStatistics decodes arbitrary bytes into a small labelled column
// (values may be NaN, tiny or huge magnitudes or ties; labels may be out of
// range) and checks that no statistic panics, that the univariate and
// pairwise paths agree, that gCor_n ≤ 1 and dCor_n ∈ [0, 1], and that a
// permutation test returns a p-value in (0, 1].
func FuzzStatistics(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 240, 63, 1}, uint8(2))
	f.Add(make([]byte, 90), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, kb uint8) {
		k := int(kb%12) + 1 // up to 12 classes: both ways of summing within classes (byClassMin)
		var x []float64
		var y []int32
		for len(b) >= 9 && len(x) < 64 {
			v := math.Float64frombits(binary.LittleEndian.Uint64(b))
			if math.IsInf(v, 0) || math.Abs(v) > 1e300 {
				v = math.NaN()
			}
			x = append(x, v)
			y = append(y, int32(int8(b[8]))%int32(k+1))
			b = b[9:]
		}
		cols := [][]float64{x}
		two := [][]float64{x, make([]float64, len(x))}
		g1, g2 := GCor(cols, y, k), GCor(two, y, k)
		d1, d2 := DCor(cols, y, k), DCor(two, y, k)
		if math.IsNaN(g1) != math.IsNaN(g2) || math.IsNaN(d1) != math.IsNaN(d2) {
			t.Fatalf("NaN mismatch: gcor %v %v dcor %v %v", g1, g2, d1, d2)
		}
		if !math.IsNaN(g1) {
			if math.Abs(g1-g2) > 1e-6 || g1 > 1+1e-9 {
				t.Fatalf("gcor univariate %v pairwise %v", g1, g2)
			}
			if math.Abs(d1-d2) > 1e-6 || d1 < 0 || d1 > 1+1e-9 {
				t.Fatalf("dcor univariate %v pairwise %v", d1, d2)
			}
		}
		if len(x) >= 2 {
			z := make([]float64, len(x))
			for i := range z {
				z[i] = float64(i % 3)
			}
			if v := DCor1(x, z); !math.IsNaN(v) && (v < 0 || v > 1+1e-9) {
				t.Fatalf("DCor1 = %v", v)
			}
			_ = Pearson(x, z)
		}
		r, err := GCorTest(two, y, k, TestOptions{Perms: 20, Threads: 1})
		if err == nil && !(r.PValue > 0 && r.PValue <= 1) {
			t.Fatalf("p-value %v", r.PValue)
		}
	})
}

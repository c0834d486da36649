package dependence

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randCase(seed uint64, n, p, k int, shift float64) ([][]float64, []int32) {
	r := rand.New(rand.NewPCG(seed, 7))
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(r.IntN(k))
	}
	x := make([][]float64, p)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = r.NormFloat64() + shift*float64(y[i])
		}
	}
	return x, y
}

// The O(n log n) and O(n²) paths are two separate implementations of the
// same definitions; they must agree on random data, with ties and with
// classes of one row.
func TestUnivariateMatchesPairwise(t *testing.T) {
	for seed := range uint64(20) {
		n := 2 + int(seed)*13
		k := 2 + int(seed%4)
		x, y := randCase(seed, n, 1, k, 0.3)
		if seed%3 == 0 { // ties
			for i := range x[0] {
				x[0][i] = math.Round(x[0][i] * 2)
			}
		}
		two := [][]float64{x[0], make([]float64, n)}
		for _, c := range []struct {
			name string
			f    func([][]float64, []int32, int) float64
		}{{"GCor", GCor}, {"GCov", GCov}, {"DCor", DCor}} {
			a, b := c.f(x, y, k), c.f(two, y, k)
			if math.Abs(a-b) > 1e-10*math.Max(1, math.Abs(b)) {
				t.Errorf("seed %d n=%d k=%d %s: univariate %.15g, pairwise %.15g", seed, n, k, c.name, a, b)
			}
		}
		z := make([]float64, n)
		r := rand.New(rand.NewPCG(seed, 9))
		for i := range z {
			z[i] = x[0][i]*x[0][i] + r.NormFloat64()
			if seed%3 == 0 {
				z[i] = math.Round(z[i])
			}
		}
		a := DCor1(x[0], z)
		b := DCorNum([][]float64{x[0], make([]float64, n)}, [][]float64{z})
		if math.Abs(a-b) > 1e-10 {
			t.Errorf("seed %d: DCor1 %.15g, pairwise DCorNum %.15g", seed, a, b)
		}
	}
}

func TestStatisticProperties(t *testing.T) {
	x, y := randCase(3, 300, 3, 3, 0.8)
	g := GCor(x, y, 3)
	d := DCor(x, y, 3)
	if !(g > 0.05 && g <= 1) || !(d > 0.1 && d <= 1) {
		t.Fatalf("dependent data: gCor %v, dCor %v", g, d)
	}
	// invariant to a common scale and shift of x and to renaming classes
	xs := make([][]float64, len(x))
	for j := range x {
		xs[j] = make([]float64, len(x[j]))
		for i, v := range x[j] {
			xs[j][i] = 3*v - 7
		}
	}
	yr := make([]int32, len(y))
	for i, c := range y {
		yr[i] = (c + 1) % 3
	}
	if v := GCor(xs, yr, 3); math.Abs(v-g) > 1e-12 {
		t.Errorf("gCor not invariant: %v vs %v", v, g)
	}
	if v := DCor(xs, yr, 3); math.Abs(v-d) > 1e-12 {
		t.Errorf("dCor not invariant: %v vs %v", v, d)
	}
	// a feature that determines the class exactly (point masses): gCor = 1
	one := make([]float64, len(y))
	for i, c := range y {
		one[i] = float64(c)
	}
	if v := GCor([][]float64{one}, y, 3); math.Abs(v-1) > 1e-12 {
		t.Errorf("gCor of a class-determined feature = %v, want 1 (Def. 11 property 3)", v)
	}
	// constant x: 0 by definition
	if v := GCor([][]float64{make([]float64, len(y))}, y, 3); v != 0 {
		t.Errorf("gCor(constant) = %v", v)
	}
	if v := DCor([][]float64{make([]float64, len(y))}, y, 3); v != 0 {
		t.Errorf("dCor(constant) = %v", v)
	}
	if v := Pearson(one, one); math.Abs(v-1) > 1e-15 {
		t.Errorf("Pearson(x, x) = %v", v)
	}
}

// A row with a NaN is left out: the statistic equals that of the complete
// rows.
func TestMissingValuesAreCompleteCases(t *testing.T) {
	x, y := randCase(5, 80, 2, 2, 0.5)
	var keep []int
	for i := range y {
		if i%7 == 3 {
			x[i%2][i] = math.NaN()
		} else {
			keep = append(keep, i)
		}
	}
	xc, yc := pickCols(x, keep), pickLabels(y, keep)
	for _, c := range []struct {
		name string
		f    func([][]float64, []int32, int) float64
	}{{"GCor", GCor}, {"DCor", DCor}} {
		if a, b := c.f(x, y, 2), c.f(xc, yc, 2); a != b || math.IsNaN(a) {
			t.Errorf("%s with NaN rows %v, on complete rows %v", c.name, a, b)
		}
		if a, b := c.f(x[:1], y, 2), c.f(pickCols(x[:1], completeRows(80, x[:1])), pickLabels(y, completeRows(80, x[:1])), 2); a != b || math.IsNaN(a) {
			t.Errorf("%s univariate with NaN rows %v, on complete rows %v", c.name, a, b)
		}
	}
	if a, b := DCorNum(x[:1], x[1:]), DCorNum(xc[:1], xc[1:]); a != b {
		t.Errorf("DCorNum with NaN rows %v, complete %v", a, b)
	}
	if a, b := Pearson(x[0], x[1]), Pearson(xc[0], xc[1]); math.Abs(a-b) > 1e-15 {
		t.Errorf("Pearson with NaN rows %v, complete %v", a, b)
	}
}

func TestMalformedInputGivesNaN(t *testing.T) {
	good := [][]float64{{1, 2, 3}}
	cases := []struct {
		name string
		v    float64
	}{
		{"no columns", GCor(nil, []int32{0, 1}, 2)},
		{"unequal lengths", GCor([][]float64{{1, 2, 3}, {1, 2}}, []int32{0, 1, 0}, 2)},
		{"label out of range", GCor(good, []int32{0, 2, 1}, 2)},
		{"negative label", DCor(good, []int32{0, -1, 1}, 2)},
		{"k = 0", GCov(good, []int32{0, 0, 0}, 0)},
		{"one row", GCor([][]float64{{1}}, []int32{0}, 1)},
		{"all NaN", DCor([][]float64{{math.NaN(), math.NaN()}}, []int32{0, 1}, 2)},
		{"DCorNum lengths", DCorNum(good, [][]float64{{1, 2}})},
		{"DCorNum empty", DCorNum(nil, good)},
		{"DCor1 one row", DCor1([]float64{1}, []float64{2})},
		{"Pearson lengths", Pearson([]float64{1, 2}, []float64{1})},
	}
	for _, c := range cases {
		if !math.IsNaN(c.v) {
			t.Errorf("%s: got %v, want NaN", c.name, c.v)
		}
	}
}

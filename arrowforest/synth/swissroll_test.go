package synth

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestSwissRollShapes(t *testing.T) {
	f := gen(t, "swissroll", Options{N: 50, Seed: 1})
	want := []string{"x1", "x2", "x3", "x4", "x5", "x6", "y0", "y1", "y2"}
	if !slices.Equal(f.Names, want) || f.HasLabel() {
		t.Fatalf("names %v (label %v), want %v and no label", f.Names, f.HasLabel(), want)
	}
	fc := gen(t, "swissroll", Options{N: 50, Seed: 1, Clean: true})
	want = append(want, "y0_true", "y1_true", "y2_true")
	if !slices.Equal(fc.Names, want) {
		t.Fatalf("Clean names %v, want %v", fc.Names, want)
	}
	for j := range f.Cols {
		if !slices.Equal(f.Cols[j], fc.Cols[j]) {
			t.Fatalf("Clean changed column %s", f.Names[j])
		}
	}

	in, targets, tnames, err := GenerateMulti("swissroll", Options{N: 50, Seed: 1, Clean: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.Names, want[:6]) || in.HasLabel() {
		t.Fatalf("GenerateMulti inputs %v, want %v", in.Names, want[:6])
	}
	if !slices.Equal(tnames, want[6:]) || len(targets) != 6 {
		t.Fatalf("GenerateMulti targets %v (%d columns), want %v", tnames, len(targets), want[6:])
	}
	for k, col := range targets {
		if len(col) != 50 {
			t.Fatalf("target %s has %d rows", tnames[k], len(col))
		}
		for i, v := range col {
			if float32(v) != fc.Cols[6+k][i] {
				t.Fatalf("target %s row %d: GenerateMulti %v, Generate %v", tnames[k], i, v, fc.Cols[6+k][i])
			}
		}
	}
	for j := range in.Cols {
		if !slices.Equal(in.Cols[j], fc.Cols[j]) {
			t.Fatalf("input %s differs between Generate and GenerateMulti", in.Names[j])
		}
	}
	_, targets, tnames, _ = GenerateMulti("swissroll", Options{N: 5, Seed: 1})
	if len(targets) != 3 || !slices.Equal(tnames, []string{"y0", "y1", "y2"}) {
		t.Fatalf("without Clean: %v", tnames)
	}
}

// TestSwissRollSurface checks the noise-free responses lie on the swiss
// roll with t ∈ [π, 3π], u ∈ [0, 21] uniform, that x1 and x2 are the
// paper's mapping of (t, u), that x3..x6 are standard normal and that the
// noise is N(0, 0.5·I₃).
func TestSwissRollSurface(t *testing.T) {
	const n = 20000
	f, y, _, err := GenerateMulti("swissroll", Options{N: n, Seed: 17, Clean: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]float64, n)
	us := y[4]
	for i := range n {
		tt := math.Hypot(y[3][i], y[5][i])
		if tt < math.Pi || tt > 3*math.Pi {
			t.Fatalf("row %d: t = %v outside [π, 3π]", i, tt)
		}
		a, b, c := swissRollSurface(tt, us[i])
		if math.Abs(a-y[3][i]) > 1e-9 || b != y[4][i] || math.Abs(c-y[5][i]) > 1e-9 {
			t.Fatalf("row %d: true response (%v, %v, %v) is not on the surface at t=%v", i, y[3][i], y[4][i], y[5][i], tt)
		}
		if us[i] < 0 || us[i] > 21 {
			t.Fatalf("row %d: u = %v outside [0, 21]", i, us[i])
		}
		ts[i] = tt
	}
	tbar, tmax := meanMax(ts)
	ubar, umax := meanMax(us)
	within(t, "mean of t", tbar, 2*math.Pi, 2*math.Pi/math.Sqrt(12*n), 4)
	within(t, "mean of u", ubar, 10.5, 21/math.Sqrt(12*n), 4)
	for i := range n {
		// The paper's formula, written out independently of swissRollInputs.
		a := (ts[i] - tbar) / tmax
		b := (us[i] - ubar) / umax
		x1 := a * math.Sqrt(1-0.5*b*b)
		x2 := b * math.Sqrt(1-0.5*a*a)
		if math.Abs(x1-float64(f.Cols[0][i])) > 1e-6 || math.Abs(x2-float64(f.Cols[1][i])) > 1e-6 {
			t.Fatalf("row %d: inputs (%v, %v), want the mapping of (t, u) = (%v, %v)", i, f.Cols[0][i], f.Cols[1][i], x1, x2)
		}
		if x1*x1+x2*x2 > 1 {
			t.Fatalf("row %d: (x1, x2) outside the unit disc", i)
		}
	}
	for j := 2; j < 6; j++ {
		m, v, _ := moments(f.Cols[j], nil)
		within(t, "mean of "+f.Names[j], m, 0, 1/math.Sqrt(n), 4)
		within(t, "variance of "+f.Names[j], v, 1, math.Sqrt(2.0/n), 4)
	}
	checkSwissNoise(t, y, 0.5)
}

// checkSwissNoise checks y[k] − y[k+3] ~ N(0, noiseVar) independently
// per coordinate, and the mean squared distance to the surface point.
func checkSwissNoise(t *testing.T, y [][]float64, noiseVar float64) {
	t.Helper()
	n := len(y[0])
	res := make([][]float32, 3)
	d2 := make([]float32, n)
	for k := range 3 {
		res[k] = make([]float32, n)
		for i := range n {
			e := y[k][i] - y[3+k][i]
			res[k][i] = float32(e)
			d2[i] += float32(e * e)
		}
		m, v, _ := moments(res[k], nil)
		within(t, fmt.Sprintf("mean noise on y%d", k), m, 0, math.Sqrt(noiseVar/float64(n)), 4)
		within(t, fmt.Sprintf("noise variance on y%d", k), v, noiseVar, noiseVar*math.Sqrt(2/float64(n)), 4)
	}
	for k := range 3 {
		l := (k + 1) % 3
		c := 0.0
		for i := range n {
			c += float64(res[k][i]) * float64(res[l][i])
		}
		within(t, fmt.Sprintf("noise covariance y%d,y%d", k, l), c/float64(n), 0, noiseVar/math.Sqrt(float64(n)), 4)
	}
	// ‖e‖² ~ noiseVar·χ²₃: mean 3·noiseVar, variance 6·noiseVar².
	m, _, _ := moments(d2, nil)
	within(t, "mean squared distance to the surface", m, 3*noiseVar, noiseVar*math.Sqrt(6/float64(n)), 4)
}

func TestSwissRollNoiseVar(t *testing.T) {
	_, y, _, err := GenerateMulti("swissroll", Options{N: 20000, Seed: 19, Clean: true, NoiseVar: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkSwissNoise(t, y, 2)
}

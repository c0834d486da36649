package dependence

import (
	"math"
	"math/rand/v2"
	"testing"
)

// energyCols draws n rows of d standard normal columns, NaN at every
// 37th value of column 0.
func energyCols(r *rand.Rand, n, d int, shift float64) [][]float64 {
	x := make([][]float64, d)
	for f := range x {
		x[f] = make([]float64, n)
		for i := range x[f] {
			x[f][i] = r.NormFloat64() + shift
			if f == 0 && i%37 == 5 {
				x[f][i] = math.NaN()
			}
		}
	}
	return x
}

// TestEnergyStatJoint: the direct O(n²·d) statistic is the exact joint
// test's to 1e-12 on every row and on the same MaxRows subsample, at 1
// and 3 threads bit for bit.
func TestEnergyStatJoint(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ref, cur := energyCols(r, 300, 4, 0), energyCols(r, 250, 4, 0.1)
	for _, maxRows := range []int{0, 200} {
		opt := EnergyOptions{Test: TestOptions{Perms: 9, Seed: 4, MaxRows: maxRows, Threads: 1}, ID: 7}
		res, err := EnergyTestJoint(ref, cur, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, rows, err := EnergyStatJoint(ref, cur, opt)
		if err != nil {
			t.Fatal(err)
		}
		if rows != res.Rows || math.Abs(got-res.Statistic) > 1e-12*math.Abs(res.Statistic) {
			t.Errorf("max rows %d: EnergyStatJoint %.17g on %d rows, EnergyTestJoint %.17g on %d", maxRows, got, rows, res.Statistic, res.Rows)
		}
		opt.Test.Threads = 3
		got3, _, err := EnergyStatJoint(ref, cur, opt)
		if err != nil || got3 != got {
			t.Errorf("max rows %d: 3 threads %.17g (%v), 1 thread %.17g", maxRows, got3, err, got)
		}
	}
}

// TestEnergyProjected: over many directions the projected statistic
// estimates eqdist.e's (C_p makes E_u|uᵀz| = |z|/C_p exact in
// expectation; within 3% at K = 2000), and the permutation test of the
// projected statistic finds a mean shift and not its absence.
func TestEnergyProjected(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ref, cur := energyCols(r, 400, 5, 0), energyCols(r, 400, 5, 0.3)
	exact, _, err := EnergyStatJoint(ref, cur, EnergyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := EnergyTestJoint(ref, cur, EnergyOptions{Test: TestOptions{Perms: 19, Seed: 1}, Directions: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(res.Statistic-exact) / exact; rel > 0.03 || res.PValue > 0.05 {
		t.Errorf("projected %.6g (p %.3g), eqdist.e %.6g: relative %.3g, want ≤ 0.03 and p = 0.05", res.Statistic, res.PValue, exact, rel)
	}
	null, err := EnergyTestJoint(ref, energyCols(r, 400, 5, 0), EnergyOptions{Test: TestOptions{Perms: 99, Seed: 1}, Directions: 64})
	if err != nil {
		t.Fatal(err)
	}
	if null.PValue < 0.05 {
		t.Errorf("same distribution: p = %.3g", null.PValue)
	}
	if _, err := EnergyTestJoint(ref, cur, EnergyOptions{Directions: -1}); err == nil {
		t.Error("−1 directions: no error")
	}
	if math.Abs(projConst(1)-1) > 1e-15 || math.Abs(projConst(2)-math.Pi/2) > 1e-15 {
		t.Errorf("C_1 = %v, C_2 = %v, want 1 and π/2", projConst(1), projConst(2))
	}
}

// TestEnergyProjectedConstant: samples of one repeated row give a
// projected statistic of exactly 0 and p = 1, with no permutation needed
// to say so.
func TestEnergyProjectedConstant(t *testing.T) {
	ref := [][]float64{{1e6 + 0.1, 1e6 + 0.1, 1e6 + 0.1}, {-3.3, -3.3, -3.3}}
	cur := [][]float64{{1e6 + 0.1, 1e6 + 0.1}, {-3.3, -3.3}}
	res, err := EnergyTestJoint(ref, cur, EnergyOptions{Test: TestOptions{Seed: 1}, Directions: 16})
	if err != nil {
		t.Fatal(err)
	}
	if res.Statistic != 0 || res.PValue != 1 {
		t.Errorf("constant samples: statistic %v, p %v; want 0 and 1", res.Statistic, res.PValue)
	}
}

// TestSphereDirs: the directions come in orthonormal blocks of d.
func TestSphereDirs(t *testing.T) {
	g := sphereDirs{rng: rand.New(rand.NewPCG(1, 2)), d: 4}
	for range 3 {
		var block [][]float64
		for range 4 {
			block = append(block, g.next())
		}
		for i, a := range block {
			for j, b := range block {
				var dot float64
				for f := range a {
					dot += a[f] * b[f]
				}
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(dot-want) > 1e-12 {
					t.Fatalf("u%d·u%d = %v, want %v", i, j, dot, want)
				}
			}
		}
	}
}

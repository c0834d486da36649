package dependence

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteU returns the U-centred Ã of the distance matrix a (approx.go).
func bruteU(a [][]float64) [][]float64 {
	n := len(a)
	row := make([]float64, n)
	var tot float64
	for i := range a {
		for j := range a {
			row[i] += a[i][j]
			tot += a[i][j]
		}
	}
	fn := float64(n)
	u := make([][]float64, n)
	for i := range a {
		u[i] = make([]float64, n)
		for j := range a {
			if i != j {
				u[i][j] = a[i][j] - row[i]/(fn-2) - row[j]/(fn-2) + tot/((fn-1)*(fn-2))
			}
		}
	}
	return u
}

// permutations calls f with every permutation of 0..n−1 (Heap's algorithm).
func permutations(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	c := make([]int, n)
	f(p)
	for i := 0; i < n; {
		if c[i] < i {
			if i%2 == 0 {
				p[0], p[i] = p[i], p[0]
			} else {
				p[c[i]], p[i] = p[i], p[c[i]]
			}
			f(p)
			c[i]++
			i = 0
		} else {
			c[i] = 0
			i++
		}
	}
}

// TestUCentredMomentsExact enumerates every permutation of the label for
// small n and checks that the U-centred statistic has mean 0 and variance
// 2 S_A S_B/(n(n−3)), and that each problem's approxP is the χ²₁ tail of
// the enumerated z: one column and sets, classes (2 and 3) and numbers.
func TestUCentredMomentsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 30))
	const n = 7
	for trial := range 8 {
		d := 1 + trial%2 // columns
		k := 2 + trial%3 // classes; trial%3 == 2: numeric
		x := make([][]float64, d)
		for j := range x {
			x[j] = make([]float64, n)
			for i := range x[j] {
				x[j][i] = r.NormFloat64()
			}
		}
		y := make([]int32, n)
		yv := make([]float64, n)
		for i := range y {
			y[i] = int32(i % k)
			yv[i] = x[0][i] + 0.3*r.NormFloat64()
		}
		numeric := trial%3 == 2
		a := make([][]float64, n)
		b := make([][]float64, n)
		for i := range a {
			a[i], b[i] = make([]float64, n), make([]float64, n)
			for j := range a {
				a[i][j] = dist(rescaled(x), i, j)
				switch {
				case numeric:
					b[i][j] = math.Abs(yv[i] - yv[j])
				case y[i] != y[j]:
					b[i][j] = 1
				}
			}
		}
		ua, ub := bruteU(a), bruteU(b)
		var sa, sb float64
		for i := range ua {
			for j := range ua {
				sa += ua[i][j] * ua[i][j]
				sb += ub[i][j] * ub[i][j]
			}
		}
		var m1, m2, obs float64
		cnt := 0
		permutations(n, func(p []int) {
			var s float64
			for i := range ua {
				for j := range ua {
					s += ua[i][j] * b[p[i]][p[j]]
				}
			}
			if cnt == 0 {
				obs = s
			}
			m1 += s
			m2 += s * s
			cnt++
		})
		m1 /= float64(cnt)
		v := m2/float64(cnt) - m1*m1
		want := 2 * sa * sb / (n * (n - 3))
		if math.Abs(m1) > 1e-9*math.Sqrt(want) || math.Abs(v-want) > 1e-9*want {
			t.Fatalf("trial %d: permutation mean %g variance %g, want 0 and %g", trial, m1, v, want)
		}
		var pr permProblem
		switch {
		case numeric && d == 1:
			pr = newUniNumProblem(x[0], yv)
		case numeric:
			pr = newSetNumProblem(x, yv, defaultMaxCacheBytes, nil)
		case d == 1:
			pr = &uniProblem{u: newUniCol(x[0], y, k, trial%4 == 0), stat: StatGCor, k: k}
		default:
			pr = newSetProblem(x, y, k, StatGCor, defaultMaxCacheBytes, nil)
		}
		got := chi2TailP(zOf(pr.(approxProblem)))
		wantP := chi2TailP(obs / math.Sqrt(want))
		if math.Abs(got-wantP) > 1e-5*wantP { // float32 triangles
			t.Fatalf("trial %d (d=%d k=%d numeric=%v): approxP %g, want %g", trial, d, k, numeric, got, wantP)
		}
	}
}

// TestApproxConservativeUnderIndependence draws independent columns and
// labels and checks that P(p_χ² ≤ q) ≤ q (within sampling error) for q
// from 0.05 down to 10⁻³: the approximation is valid in the tail the
// search uses it in. It also checks that p_χ² is above (or near) the
// 10⁵-permutation p-value of the same data for small p (the QQ check
// against a large-permutation reference).
func TestApproxConservativeUnderIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 30))
	const draws = 8000
	qs := []float64{0.05, 0.01, 0.001}
	for _, tc := range []struct {
		name    string
		n       int
		numeric bool
		skew    bool
	}{{"classes n=50", 50, false, false}, {"classes n=200 skewed", 200, false, true}, {"numbers n=200", 200, true, true}} {
		hits := make([]int, len(qs))
		x := make([]float64, tc.n)
		y := make([]int32, tc.n)
		yv := make([]float64, tc.n)
		for range draws {
			for i := range x {
				x[i] = r.NormFloat64()
				if tc.skew {
					x[i] = math.Exp(x[i]) // heavy right tail
				}
				y[i] = int32(r.IntN(2))
				yv[i] = r.NormFloat64()
			}
			var p float64
			if tc.numeric {
				p = approxP(newUniNumProblem(x, yv))
			} else {
				p = approxP(&uniProblem{u: newUniCol(x, y, 2, false), stat: StatGCor, k: 2})
			}
			for i, q := range qs {
				if p <= q {
					hits[i]++
				}
			}
		}
		for i, q := range qs {
			rate := float64(hits[i]) / draws
			if lim := q + 3*math.Sqrt(q/draws); rate > lim {
				t.Errorf("%s: P(p ≤ %g) = %g under independence, above %g", tc.name, q, rate, lim)
			}
			t.Logf("%s: P(p ≤ %g) = %.5f", tc.name, q, rate)
		}
	}
}

// TestApproxAgainstPermutations compares p_χ² with a 10⁵-permutation
// p-value on data with a weak dependence (p around 10⁻²…10⁻⁴): the
// approximation must not be smaller than the permutation p-value by more
// than its Monte Carlo error (it is conservative).
func TestApproxAgainstPermutations(t *testing.T) {
	if testing.Short() {
		t.Skip("10⁵ permutations per case")
	}
	r := rand.New(rand.NewPCG(7, 30))
	const n, perms = 300, 100000
	for trial := range 4 {
		x := make([]float64, n)
		y := make([]int32, n)
		for i := range x {
			y[i] = int32(r.IntN(2))
			x[i] = r.NormFloat64() * (1 + 0.25*float64(y[i])*float64(trial+1)/2)
		}
		pr := &uniProblem{u: newUniCol(x, y, 2, false), stat: StatGCor, k: 2}
		pa := approxP(pr)
		res, _ := runExact(pr, streamKey(1, uint64(trial)), permPlan{fixed: perms}, 2, nil)
		se := math.Sqrt(res.PValue/perms) + 1.0/perms
		t.Logf("trial %d: p_perm %.2e (b=%d) p_χ² %.2e", trial, res.PValue, res.B, pa)
		if pa < res.PValue-3*se {
			t.Errorf("trial %d: p_χ² %g below the permutation p-value %g", trial, pa, res.PValue)
		}
	}
}

// zOf is the z of an approximated problem.
func zOf(ap approxProblem) float64 {
	return ap.approxZ()
}

// TestApproxFarSettles checks hybridP's step 2 futility rule (approxFar):
// a set test whose p_ν is at least approxFar times its threshold runs no
// permutation and is not dependent — as the sequential permutations alone
// also find — while one between c·t and approxFar·t still runs them.
func TestApproxFarSettles(t *testing.T) {
	o, err := TestOptions{MaxPerms: DefaultMaxPermsAdjusted}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	const thr = 2e-4
	pl := seqPlan(thr, o)
	oe := o
	oe.Exact = true
	ple := seqPlan(thr, oe)
	zones := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 31))
		const n = 200
		shift := 0.12 * float64(seed%12) // none to a clear XOR
		x := [][]float64{make([]float64, n), make([]float64, n)}
		y := make([]int32, n)
		for i := range n {
			y[i] = int32(r.IntN(2))
			a, b := r.NormFloat64(), r.NormFloat64()
			if y[i] == 1 {
				a += shift * math.Copysign(1, b)
			}
			x[0][i], x[1][i] = a, b
		}
		pr := newSetProblemLazy(x, y, 2, StatGCor, defaultMaxCacheBytes, nil, true)
		z := pr.approxZ()
		pc, pv := chi2TailP(z), effTailP(z, pr.ratio())
		if pc >= max(approxFutile, 10*thr) || pv <= ApproxShare*thr {
			continue // settled by step 1 or taken
		}
		got, _ := runPerm(pr, 9, pl, 1, nil)
		switch {
		case pv >= approxFar*thr:
			zones["far"]++
			if got.N != 0 || !got.Approx || got.PValue <= thr {
				t.Errorf("seed %d: p_ν = %g ≥ %g·t, yet N = %d, p = %g", seed, pv, float64(approxFar), got.N, got.PValue)
			}
			ex, _ := runExact(newSetProblem(x, y, 2, StatGCor, defaultMaxCacheBytes, nil), 9, ple, 1, nil)
			if ex.PValue <= thr {
				t.Errorf("seed %d: permutations alone call p_ν = %g dependent (p = %g)", seed, pv, ex.PValue)
			}
		default:
			zones["near"]++
			if got.N == 0 {
				t.Errorf("seed %d: p_ν = %g near t = %g, yet no permutation ran", seed, pv, thr)
			}
		}
	}
	for _, z := range []string{"far", "near"} {
		if zones[z] == 0 {
			t.Errorf("no case %s: %v", z, zones)
		}
	}
	t.Logf("cases: %v", zones)
}

package dependence

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/forestd/forestd/internal/benchcpu"
)

// projDist returns the explicit a_K distances of p's directions (projset.go).
func projDist(p *projSetProblem) [][]float64 {
	n := p.n
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n)
		for j := range a[i] {
			for _, u := range p.dirs {
				var v float64
				for f, c := range p.x {
					v += (c[i] - c[j]) * u[f]
				}
				a[i][j] += math.Abs(v)
			}
		}
	}
	return a
}

// uCentre returns approx.go's Ã of the matrix a.
func uCentre(a [][]float64) [][]float64 {
	n := len(a)
	fn := float64(n)
	row := make([]float64, n)
	var tot float64
	for i := range a {
		for j := range a {
			row[i] += a[i][j]
		}
		tot += row[i]
	}
	out := make([][]float64, n)
	for i := range a {
		out[i] = make([]float64, n)
		for j := range a {
			if i != j {
				out[i][j] = a[i][j] - row[i]/(fn-2) - row[j]/(fn-2) + tot/((fn-1)*(fn-2))
			}
		}
	}
	return out
}

func projData(n, d int, seed uint64) ([][]float64, []int32, []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([][]float64, d)
	for j := range x {
		x[j] = make([]float64, n)
		for i := range x[j] {
			x[j][i] = r.NormFloat64()
		}
	}
	y := make([]int32, n)
	v := make([]float64, n)
	for i := range y {
		if x[0][i]*x[1][i]+0.5*r.NormFloat64() > 0 {
			y[i] = 1
		}
		v[i] = x[0][i]*x[1][i] + r.NormFloat64()
	}
	return x, y, v
}

// TestProjSetExplicit checks the projected statistics and z against the
// same sums over the explicit a_K matrix: the comparison value is
// Σ_{i≠j} Ã B̃-type sums of a_K over the normaliser, and z is the exact
// moments' z times Σ‖Ã_k‖ ≥ ‖ΣÃ_k‖ (never above it).
func TestProjSetExplicit(t *testing.T) {
	x, y, v := projData(60, 3, 1)
	for _, lab := range []Label{Classes(y, 2), Numeric(v)} {
		for _, stat := range []Stat{StatGCor, StatDCor} {
			if lab.IsNumeric() && stat == StatGCor {
				continue
			}
			p := newProjSetProblem(x, lab, stat, 5, 99)
			a := projDist(p)
			n := p.n
			b := func(i, j int) float64 {
				if lab.IsNumeric() {
					return math.Abs(v[i] - v[j])
				}
				if y[i] != y[j] {
					return 1
				}
				return 0
			}
			// gCov of a_K: Δ̂ − Σ p_k Δ̂_k (Definition 12) over Δ̂
			var cmpWant float64
			if stat == StatGCor {
				var tot float64
				within := make([]float64, 2)
				for i := range n {
					for j := range i {
						tot += a[i][j]
						if y[i] == y[j] {
							within[y[i]] += a[i][j]
						}
					}
				}
				_, cmpWant = giniFromSums(n, classCounts(y, 2), tot, within)
			} else {
				// V-centred Σ A_ij b_ij over Σ_k √(AA_k·BB)
				A := vCentre(a)
				var ab float64
				for i := range n {
					for j := range n {
						ab += A[i][j] * b(i, j)
					}
				}
				cmpWant = ab / p.norm
			}
			got, exact := p.observed()
			if want := p.reported(cmpWant); math.Abs(exact-want) > 1e-9*math.Max(1, want) {
				t.Errorf("%v %s: reported statistic %.12g, explicit a_K %.12g", lab.IsNumeric(), stat, exact, want)
			}
			if math.Abs(got-cmpWant) > 1e-9*math.Max(1, math.Abs(cmpWant)) {
				t.Errorf("%v %s: comparison value %.12g, explicit a_K %.12g", lab.IsNumeric(), stat, got, cmpWant)
			}
			// z: T over the exact moments of a_K, and the bound's z
			At := uCentre(a)
			bm := make([][]float64, n)
			for i := range bm {
				bm[i] = make([]float64, n)
				for j := range bm[i] {
					bm[i][j] = b(i, j)
				}
			}
			Bt := uCentre(bm)
			var T, SA, SB float64
			for i := range n {
				for j := range n {
					T += At[i][j] * Bt[i][j]
					SA += At[i][j] * At[i][j]
					SB += Bt[i][j] * Bt[i][j]
				}
			}
			zExact := T / math.Sqrt(2*SA*SB/float64(n*(n-3)))
			z := p.approxZ()
			if r := z / zExact; !(r > 0.3 && r <= 1+1e-9) {
				t.Errorf("%v %s: z %.6g, exact moments %.6g: want 0.3 < z/z_exact ≤ 1", lab.IsNumeric(), stat, z, zExact)
			}
		}
	}
}

func vCentre(a [][]float64) [][]float64 {
	n := len(a)
	fn := float64(n)
	row := make([]float64, n)
	var tot float64
	for i := range a {
		for j := range a {
			row[i] += a[i][j]
		}
		tot += row[i]
	}
	out := make([][]float64, n)
	for i := range a {
		out[i] = make([]float64, n)
		for j := range a {
			out[i][j] = a[i][j] - row[i]/fn - row[j]/fn + tot/(fn*fn)
		}
	}
	return out
}

// TestProjSetCalibration draws independent sets and labels and checks
// that the approximate p-value of the projected test (p_ν of the bounded
// z, the value a search's hybridP takes) and its permutation p-value are
// at most their level: P(p ≤ q) ≤ q plus three binomial standard errors.
func TestProjSetCalibration(t *testing.T) {
	const draws, n = 200, 300
	r := rand.New(rand.NewPCG(30, 2))
	levels := []float64{0.05, 0.01}
	for _, c := range []struct {
		name    string
		d       int
		numeric bool
		stat    Stat
		k       int
	}{
		{"2 columns, 2 classes, gCor", 2, false, StatGCor, 2},
		{"3 columns, 3 classes, dCor", 3, false, StatDCor, 3},
		{"2 columns, numeric, heavy tail", 2, true, StatDCor, 0},
	} {
		approx := make([]int, len(levels))
		perm := make([]int, len(levels))
		for range draws {
			x := make([][]float64, c.d)
			for j := range x {
				x[j] = make([]float64, n)
				for i := range x[j] {
					x[j][i] = r.NormFloat64()
				}
			}
			var lab Label
			if c.numeric {
				v := make([]float64, n)
				for i := range v {
					v[i] = math.Exp(r.NormFloat64())
				}
				lab = Numeric(v)
			} else {
				y := make([]int32, n)
				for i := range y {
					y[i] = int32(r.IntN(c.k))
				}
				lab = Classes(y, c.k)
			}
			p := newProjSetProblem(x, lab, c.stat, 8, r.Uint64())
			pa := effTailP(p.approxZ(), p.ratio())
			res, _ := runExact(p, r.Uint64(), permPlan{fixed: 99}, 1, nil)
			for l, q := range levels {
				if pa <= q {
					approx[l]++
				}
				if res.PValue <= q {
					perm[l]++
				}
			}
		}
		for l, q := range levels {
			lim := q + 3*math.Sqrt(q*(1-q)/draws)
			fa, fp := float64(approx[l])/draws, float64(perm[l])/draws
			t.Logf("%s: P(p_ν ≤ %g) = %.4f, P(p_perm ≤ %g) = %.4f (limit %.4f)", c.name, q, fa, q, fp, lim)
			if fa > lim || fp > lim {
				t.Errorf("%s at %g: approximation %.4f, permutations %.4f over %.4f", c.name, q, fa, fp, lim)
			}
		}
	}
}

// TestProjSetPower is the case projections are for: a weak XOR pair at
// n = 50,000 (the label flipped on 40% of the rows) that the exact
// statistic on a search's default 2,000-row subsample cannot show at a
// bottom-up family's threshold (0.0125/C(20, 2) ≈ 6.6·10⁻⁵) and the
// projected statistic over every row shows far below it.
func TestProjSetPower(t *testing.T) {
	const n = 50000
	r := rand.New(rand.NewPCG(5, 5))
	x := [][]float64{make([]float64, n), make([]float64, n)}
	y := make([]int32, n)
	for i := range y {
		x[0][i], x[1][i] = r.NormFloat64(), r.NormFloat64()
		if x[0][i]*x[1][i] > 0 {
			y[i] = 1
		}
		if r.Float64() < 0.4 {
			y[i] = 1 - y[i]
		}
	}
	const thr = 0.0125 / 190
	p := newProjSetProblem(x, Classes(y, 2), StatGCor, projDirs(2, n, defaultMaxCacheBytes), 1)
	pProj := effTailP(p.approxZ(), p.ratio())
	sub := [][]float64{x[0][:DefaultSetRows], x[1][:DefaultSetRows]}
	e := newSetProblem(sub, y[:DefaultSetRows], 2, StatGCor, 1<<30, nil)
	pSub := effTailP(e.approxZ(), e.ratio())
	t.Logf("projected, %d rows: p_ν %.3g (z %.2f); exact, %d rows: p_ν %.3g (z %.2f)", n, pProj, p.approxZ(), DefaultSetRows, pSub, e.approxZ())
	if !(pProj < thr*ApproxShare/100) {
		t.Errorf("projected test on %d rows: p_ν %.3g, want below %.3g", n, pProj, thr*ApproxShare/100)
	}
	if pSub < thr*ApproxShare {
		t.Errorf("the exact test on %d rows already shows the pair (p_ν %.3g): the case does not tell the two apart", DefaultSetRows, pSub)
	}
}

// BenchmarkProjSetCrossover is the measurement behind projSetMinRows: one
// 3-column set test as a search runs it when the approximation settles it
// (the statistic, z and ρ; no permutation), exact (setProblem, lazy:
// the pair pass) against projected (K = 24), at m rows.
//
//	go test -run '^$' -bench ProjSetCrossover -benchtime 3x ./arrowforest/dependence
func BenchmarkProjSetCrossover(b *testing.B) {
	for _, m := range []int{1000, 2000, 4000, 8000, 16000} {
		x, y, _ := projData(m, 3, 3)
		b.Run("exact/"+itoa(m), func(b *testing.B) {
			defer benchcpu.PerRow(b, m)()
			for b.Loop() {
				p := newSetProblemLazy(x, y, 2, StatGCor, 1<<30, nil, true)
				effTailP(p.approxZ(), p.ratio())
			}
		})
		b.Run("proj/"+itoa(m), func(b *testing.B) {
			defer benchcpu.PerRow(b, m)()
			for b.Loop() {
				p := newProjSetProblem(x, Classes(y, 2), StatGCor, projDirs(3, m, defaultMaxCacheBytes), 1)
				effTailP(p.approxZ(), p.ratio())
			}
		})
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// A search whose set tests have projSetMinRows rows or more (MaxRows 0
// on 10,000 rows) tests them by projections: issue 30's structure is
// found exactly, the XOR pair's statistic is the projected one, and the
// result is the same at any thread count.
func TestSearchProjectedSets(t *testing.T) {
	const n = 10000
	x, y := issueCase(n, 6, 3)
	first := searchPruned(t, x, y, false, 1, 0)
	if !reflect.DeepEqual(first.Marginal, []int{0, 1}) || !reflect.DeepEqual(found(first), [][]int{{2, 3}}) {
		t.Fatalf("S_m %v, groups %v: want [0 1] and [[2 3]]", first.Marginal, found(first))
	}
	key := setKey(StatGCor, []int{2, 3})
	p := newProjSetProblem([][]float64{x[2], x[3]}, Classes(y, 2), StatGCor, projDirs(2, n, defaultMaxCacheBytes), streamKey(0, keyHash(key))^0x70726f6a)
	if g := first.Groups[0]; g.Statistic != p.exact {
		t.Errorf("pair statistic %.12g, projected %.12g: the set test did not use projections", g.Statistic, p.exact)
	}
	if r := searchPruned(t, x, y, false, 2, 0); !reflect.DeepEqual(r, first) {
		t.Errorf("2 threads: %+v\nwant (1 thread) %+v", r, first)
	}
}

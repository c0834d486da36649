package dependence

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestApproxPowerTable prints, for set tests at a threshold t, the
// share of draws each p-value calls dependent (false findings on the
// null draws, power on the others) and the permutations and time each
// spends: the χ²₁ hybrid the search used before (old rule), the hybrid of
// hybridP (p_ν), sequential permutations alone (--exact), and the
// approximations alone (χ²₁, p_ν, the normal tail of the Székely–Rizzo
// t-test, the Pearson type III fit). It runs only when
// FORESTD_APPROX_TABLE is set (e2e/bench/analysis_scale.sh sets it to the
// number of draws); it asserts nothing a unit test could not.
func TestApproxPowerTable(t *testing.T) {
	env := os.Getenv("FORESTD_APPROX_TABLE")
	if env == "" {
		t.Skip("set FORESTD_APPROX_TABLE=<draws> to print the power table")
	}
	draws, err := strconv.Atoi(env)
	if err != nil || draws < 1 {
		t.Fatalf("FORESTD_APPROX_TABLE=%q: want a number of draws", env)
	}
	const n = 400
	o, _ := TestOptions{MaxPerms: DefaultMaxPermsAdjusted}.resolve()
	o.Threads = 1
	type setting struct {
		name string
		d    int
		th   float64                                   // the threshold
		more int                                       // draws × more (null draws are cheap)
		gen  func(r *rand.Rand, x [][]float64) float64 // the latent score of row i (x[·][i] given)
	}
	settings := []setting{
		{"null, 3 columns", 3, 0.01, 10, func(r *rand.Rand, x [][]float64) float64 { return r.NormFloat64() }},
		{"XOR pair 0.9", 2, 1e-4, 1, func(r *rand.Rand, x [][]float64) float64 {
			return 0.9*math.Copysign(1, x[0][0]*x[1][0]) + r.NormFloat64()
		}},
		{"linear 3 columns 0.2", 3, 1e-4, 1, func(r *rand.Rand, x [][]float64) float64 {
			return 0.2*(x[0][0]+x[1][0]+x[2][0]) + r.NormFloat64()
		}},
	}
	fmt.Printf("| data (n = %d, 2 classes) | t | p-value | called dependent | permutations | ms per test |\n|---|---|---|---|---|---|\n", n)
	for si, st := range settings {
		th, draws := st.th, draws*st.more
		r := rand.New(rand.NewPCG(uint64(si), 3030))
		type acc struct {
			dep, perms int
			dur        time.Duration
		}
		names := []string{"hybrid p_ν (new default)", "hybrid χ²₁ (before)", "permutations alone", "χ²₁ alone", "p_ν alone", "normal (dcorT) alone", "Pearson III alone"}
		res := make([]acc, len(names))
		for dr := range draws {
			x := make([][]float64, st.d)
			for j := range x {
				x[j] = make([]float64, n)
			}
			y := make([]int32, n)
			row := make([][]float64, st.d)
			for i := range n {
				for j := range x {
					x[j][i] = r.NormFloat64()
					row[j] = x[j][i : i+1]
				}
				if st.gen(r, row) > 0 {
					y[i] = 1
				}
			}
			stream := streamKey(uint64(dr), uint64(si))
			// new hybrid
			t0 := time.Now()
			pr := newSetProblemLazy(x, y, 2, StatGCor, defaultMaxCacheBytes, nil, true)
			rn, _ := runPerm(pr, stream, seqPlan(th, o), 1, nil)
			res[0].dur += time.Since(t0)
			res[0].perms += rn.N
			if rn.PValue <= th {
				res[0].dep++
			}
			// old hybrid (χ²₁ only)
			t0 = time.Now()
			pr = newSetProblemLazy(x, y, 2, StatGCor, defaultMaxCacheBytes, nil, true)
			pc := chi2TailP(pr.approxZ())
			po := min(1, pc/ApproxShare)
			if po > th && pc < max(approxFutile, 10*th) {
				pr.preparePerms()
				re, _ := runExact(pr, stream, seqPlan(th, o), 1, nil)
				po = min(po, re.PValue/(1-ApproxShare))
				res[1].perms += re.N
			}
			res[1].dur += time.Since(t0)
			if po <= th {
				res[1].dep++
			}
			// permutations alone
			t0 = time.Now()
			pe := newSetProblem(x, y, 2, StatGCor, defaultMaxCacheBytes, nil)
			oe := o
			oe.Exact = true
			re, _ := runExact(pe, stream, seqPlan(th, oe), 1, nil)
			res[2].dur += time.Since(t0)
			res[2].perms += re.N
			if re.PValue <= th {
				res[2].dep++
			}
			// the approximations alone, each at t
			z, rho := pe.approxZ(), pe.ratio()
			gA := strideCube(x)
			for k, p := range []float64{chi2TailP(z), effTailP(z, rho), 0.5 * math.Erfc(z/math.Sqrt2), pearson3P(z, 2*math.Sqrt2*gA)} {
				if p <= th {
					res[3+k].dep++
				}
			}
		}
		for k, a := range res {
			ms := ""
			perms := ""
			if k < 3 {
				ms = fmt.Sprintf("%.1f", float64(a.dur.Microseconds())/1000/float64(draws))
				perms = fmt.Sprintf("%.0f", float64(a.perms)/float64(draws))
			}
			fmt.Printf("| %s | %g | %s | %d/%d | %s | %s |\n", st.name, th, names[k], a.dep, draws, perms, ms)
		}
	}
}

// strideCube returns g = tr(Ã³)/tr(Ã²)^{3/2} of the U-centred distances
// of x's stride sample (spectral.go's rows; the label side of two classes
// has g = −1 up to O(1/n), so the Pearson type III skewness is 2√2·|g|).
func strideCube(x [][]float64) float64 {
	idx := strideRows(len(x[0]))
	a := make([][]float64, len(idx))
	for i := range a {
		a[i] = make([]float64, len(idx))
		for j := range a {
			a[i][j] = dist(x, idx[i], idx[j])
		}
	}
	u := bruteU(a)
	var s2 float64
	for i := range u {
		for j := range u {
			s2 += u[i][j] * u[i][j]
		}
	}
	return math.Abs(cube(u, s2))
}

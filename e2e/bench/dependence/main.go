// Command dependence holds the Go pieces of e2e/bench/dependence.sh, the
// dependence-analysis benchmarks and the reproduction of the
// dissertation's Table 5.3 ("Improving random forests by feature
// dependence analysis", §5.7):
//
//	go run ./e2e/bench/dependence table53 [--n 200] [--seed 1] [--alpha 0.05] [--adjust none|holm|bh] [--max-perms 5000] [--seeds 10]
//	go run ./e2e/bench/dependence screen-data --out F.parquet [--n 10000] [--p 1000] [--informative 50] [--seed 1]
//	go run ./e2e/bench/dependence reg-data --out F.csv [--n 5000] [--seed 1]
//	go run ./e2e/bench/dependence xor5-screen [--n 1000] [--seeds 200] [--alpha 0.025]
//	go run ./e2e/bench/dependence stat [--n 20000] [--p 3] [--stat gcor|dcor]
//	go run ./e2e/bench/dependence scale-data --out F.csv [--n 5000] [--p 20] [--null] [--seed 1]
//
// table53 runs Algorithm 1 and the four MDC/SDC searches on xor5 (the 17
// features and 10 MDS's of §5.7) and prints our labels and p-values beside
// the dissertation's; with --seeds it also counts, over that many seeds,
// how often each method recovers the true groups exactly. screen-data
// writes the marginal-screening data set of the speed benchmark; reg-data
// the regression-label data of the dCor test benchmark (x ~ N(0, 1)
// rounded to float32, as forestd reads it, y = x² + N(0, 1)). xor5-screen
// counts, over fresh xor5 draws, how often the marginal screen of a set
// search (α/2 of the analysis' α) under Holm and under Benjamini–Hochberg
// takes anything but the five true marginal features. stat
// computes one multivariate statistic (the memory benchmark runs it under
// /usr/bin/time -v).
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/files"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dependence table53|screen-data|reg-data|xor5-screen|stat [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "table53":
		err = table53(os.Args[2:])
	case "screen-data":
		err = screenData(os.Args[2:])
	case "reg-data":
		err = regData(os.Args[2:])
	case "xor5-screen":
		err = xor5Screen(os.Args[2:])
	case "stat":
		err = stat(os.Args[2:])
	case "scale-data":
		err = scaleData(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dependence:", err)
		os.Exit(1)
	}
}

func float64Cols(f *frame.Frame) [][]float64 {
	x := make([][]float64, f.P())
	for j, c := range f.Cols {
		x[j] = make([]float64, len(c))
		for i, v := range c {
			x[j][i] = float64(v)
		}
	}
	return x
}

// --- Table 5.3 ---

// paper53 is Table 5.3 of the dissertation as printed: p_m, then label and
// p_joint for top-down MDC (the O(d log d) Algorithm 4), bottom-up MDC and
// bottom-up SDC ("" where the table leaves the cell empty).
var paper53 = [17][7]string{
	{"0", "-1", "NA", "-1", "NA", "-1", "NA"},
	{"0", "-1", "NA", "-1", "NA", "-1", "NA"},
	{"0", "-1", "NA", "-1", "NA", "-1", "NA"},
	{"0", "-1", "NA", "-1", "NA", "-1", "NA"},
	{"0", "-1", "NA", "-1", "NA", "-1", "NA"},
	{"0.94", "1", "0", "1", "0", "1", "0"},
	{"0.22", "1", "", "1", "0", "1", "0"},
	{"0.15", "1", "0", "2", "0", "2", "0"},
	{"1", "1", "", "2", "0", "2", "0"},
	{"0.92", "2", "0", "3", "0", "3", "0"},
	{"0.91", "2", "", "3", "0", "3", "0"},
	{"0.44", "0", "0.07", "4", "0.0033", "0", "0.73"},
	{"0.74", "0", "", "4", "", "0", ""},
	{"0.26", "0", "", "4", "0.0006", "4", "0.2"},
	{"0.31", "0", "", "5", "", "5", "0.26"},
	{"0.43", "0", "0.07", "5", "0.0006", "4", "0.2"},
	{"0.27", "0", "", "5", "", "5", "0.26"},
}

// relabel numbers the groups by their smallest member (the dissertation's
// order) and returns per-feature labels and joint p-values.
func relabel(r *dependence.SearchResult) ([]int, []string) {
	p := len(r.Label)
	gs := slices.Clone(r.Groups)
	slices.SortFunc(gs, func(a, b dependence.Group) int { return a.Features[0] - b.Features[0] })
	lab := make([]int, p)
	pj := make([]string, p)
	for j := range lab {
		if r.Label[j] == -1 {
			lab[j], pj[j] = -1, "NA"
		}
	}
	for g, gr := range gs {
		for _, j := range gr.Features {
			lab[j] = g + 1
			pj[j] = fmtP(gr.PValue)
		}
	}
	if r.Rest != nil {
		for j := range lab {
			if lab[j] == 0 {
				pj[j] = fmtP(r.Rest.PValue)
			}
		}
	}
	return lab, pj
}

func fmtP(p float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", p), "0"), ".")
}

func table53(args []string) error {
	fs := flag.NewFlagSet("table53", flag.ContinueOnError)
	n := fs.Int("n", 200, "rows (the dissertation: 200)")
	seed := fs.Uint64("seed", 1, "data and permutation seed of the printed table")
	alpha := fs.Float64("alpha", 0.05, "significance level (the dissertation: 0.05)")
	maxPerms := fs.Int("max-perms", 5000, "adaptive permutation cap (the dissertation: 5000; 0 = the procedure's default)")
	adjust := fs.String("adjust", "none", "false-discovery control: none (the dissertation's per-test rule), holm or bh")
	seeds := fs.Int("seeds", 10, "seeds for the exact-recovery count (0 = skip)")
	threads := fs.Int("threads", 2, "worker threads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	methods := []dependence.Method{dependence.MethodMDCTopDown, dependence.MethodMDCDivide, dependence.MethodMDCBottomUp, dependence.MethodSDCBottomUp}
	search := func(seed uint64, m dependence.Method) (*dependence.SearchResult, [][]int, error) {
		f, err := synth.Generate(synth.XOR5, synth.Options{N: *n, Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		var truth [][]int
		for _, g := range synth.Groups(synth.XOR5) {
			var idx []int
			for _, nm := range g {
				idx = append(idx, f.FeatureIndex(nm))
			}
			truth = append(truth, idx)
		}
		o := dependence.DefaultSearchOptions()
		o.Method, o.Alpha, o.Adjust = m, *alpha, dependence.Adjust(*adjust)
		o.Test = dependence.TestOptions{MaxPerms: *maxPerms, Seed: seed, Threads: *threads}
		r, err := dependence.Search(float64Cols(f), f.Y, 2, o)
		return r, truth, err
	}
	if *adjust == "none" {
		fmt.Printf("Table 5.3 (dissertation §5.7): xor5, n = %d, α = %g per test (--adjust none), gCor permutation tests (adaptive, 100..%d), seed %d\n", *n, *alpha, *maxPerms, *seed)
		fmt.Printf("Groups are numbered by their first feature; p = (b+1)/(N+1) here, b/N in the dissertation.\n\n")
	} else {
		fmt.Printf("Table 5.3 (dissertation §5.7): xor5, n = %d, --adjust %s at α = %g over each analysis, gCor sequential permutation tests, seed %d\n", *n, *adjust, *alpha, *seed)
		fmt.Printf("Groups are numbered by their first feature; p = (b+1)/(N+1), or b/N when a test stopped at its second exceedance; b/N in the dissertation.\n\n")
	}
	res := map[dependence.Method]*dependence.SearchResult{}
	t0 := time.Now()
	for _, m := range methods {
		r, _, err := search(*seed, m)
		if err != nil {
			return err
		}
		res[m] = r
	}
	secs := time.Since(t0).Seconds()
	fmt.Println("                 | dissertation                                   | forestd")
	fmt.Println("feature   truth  | p_m   TD-MDC(4)   BU-MDC(5)     BU-SDC(6)      | p_m     TD-MDC(4)    BU-MDC(5)    BU-SDC(6)    TD-MDC(3)")
	truthLab := []int{-1, -1, -1, -1, -1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5}
	for j := 0; j < 17; j++ {
		p := paper53[j]
		cell := func(l, pj string) string { return fmt.Sprintf("%3s %-7s", l, pj) }
		ours := func(m dependence.Method) string {
			lab, pj := relabel(res[m])
			return fmt.Sprintf("%3d %-8s", lab[j], pj[j])
		}
		fmt.Printf("X%-2d       %3d    | %-5s %s  %s  %s | %-7s %s %s %s %s\n", j, truthLab[j],
			p[0], cell(p[1], p[2]), cell(p[3], p[4]), cell(p[5], p[6]),
			fmtP(res[dependence.MethodMDCBottomUp].PValue[j]),
			ours(dependence.MethodMDCDivide), ours(dependence.MethodMDCBottomUp), ours(dependence.MethodSDCBottomUp), ours(dependence.MethodMDCTopDown))
	}
	fmt.Printf("\n(%.1f s for the four searches)\n", secs)
	if *seeds == 0 {
		return nil
	}
	fmt.Printf("\nExact recovery of the ten MDS's (S_m = X0..X4 and the five XOR groups) over seeds 1..%d:\n", *seeds)
	for _, m := range methods {
		exact := 0
		for s := 1; s <= *seeds; s++ {
			r, truth, err := search(uint64(s), m)
			if err != nil {
				return err
			}
			var got [][]int
			for _, j := range r.Marginal {
				got = append(got, []int{j})
			}
			for _, g := range r.Groups {
				got = append(got, g.Features)
			}
			slices.SortFunc(got, func(a, b []int) int { return a[0] - b[0] })
			if reflect.DeepEqual(got, truth) {
				exact++
			}
		}
		fmt.Printf("  %-13s %2d / %d\n", m, exact, *seeds)
	}
	return nil
}

// --- screening data ---

func screenData(args []string) error {
	fs := flag.NewFlagSet("screen-data", flag.ContinueOnError)
	out := fs.String("out", "", "output file (.parquet, .arrow, .csv)")
	n := fs.Int("n", 10000, "rows")
	p := fs.Int("p", 1000, "features")
	inf := fs.Int("informative", 50, "features whose mean depends on the class (the first ones)")
	seed := fs.Uint64("seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *n < 2 || *p < 1 || *inf < 0 || *inf > *p {
		return fmt.Errorf("screen-data: need --out, n ≥ 2, p ≥ 1 and 0 ≤ informative ≤ p")
	}
	r := rand.New(rand.NewPCG(*seed, 0x736372)) // "scr"
	f := &frame.Frame{NRows: *n, LabelName: "y", Task: frame.TaskClassification, Classes: []string{"0", "1"}, Y: make([]int32, *n)}
	for i := range f.Y {
		f.Y[i] = int32(i % 2)
	}
	for j := 0; j < *p; j++ {
		f.Names = append(f.Names, fmt.Sprintf("f%d", j))
		col := make([]float32, *n)
		// informative feature j: class means ±δ_j/2 with δ_j from 0.5 down
		// to 0.1 (all detectable at n = 10,000); the rest N(0, 1) noise.
		delta := 0.0
		if j < *inf {
			delta = 0.5 - 0.4*float64(j)/math.Max(1, float64(*inf-1))
		}
		for i := range col {
			col[i] = float32(r.NormFloat64() + delta*(float64(f.Y[i])-0.5))
		}
		f.Cols = append(f.Cols, col)
	}
	rec := f.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	return files.WriteFile(*out, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{})
}

// --- issue 30's scale case ---

// scaleData writes the case of e2e/bench/analysis_scale.sh: p features
// N(0, 1) and a binary label = [0.8·f0 + 0.8·f1 + 1.5·sign(f2·f3) + N(0, 1)
// > 0]: f0 and f1 matter alone, f2 and f3 only together (an XOR pair:
// each is independent of the label by itself), the rest are noise. With
// --null the label is a fair coin independent of every feature.
func scaleData(args []string) error {
	fs := flag.NewFlagSet("scale-data", flag.ContinueOnError)
	out := fs.String("out", "", "output file (.parquet, .arrow, .csv)")
	n := fs.Int("n", 5000, "rows")
	p := fs.Int("p", 20, "features (at least 4)")
	null := fs.Bool("null", false, "a label independent of every feature")
	seed := fs.Uint64("seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *n < 2 || *p < 4 {
		return fmt.Errorf("scale-data: need --out, n ≥ 2 and p ≥ 4")
	}
	r := rand.New(rand.NewPCG(*seed, 0x7363616c65)) // "scale"
	f := &frame.Frame{NRows: *n, LabelName: "label", Task: frame.TaskClassification, Classes: []string{"0", "1"}, Y: make([]int32, *n)}
	for j := 0; j < *p; j++ {
		f.Names = append(f.Names, fmt.Sprintf("f%d", j))
		f.Cols = append(f.Cols, make([]float32, *n))
	}
	for i := 0; i < *n; i++ {
		for j := range f.Cols {
			f.Cols[j][i] = float32(r.NormFloat64())
		}
		x := func(j int) float64 { return float64(f.Cols[j][i]) }
		s := 0.8*x(0) + 0.8*x(1) + 1.5*math.Copysign(1, x(2)*x(3)) + r.NormFloat64()
		if *null {
			s = r.Float64() - 0.5
		}
		if s > 0 {
			f.Y[i] = 1
		}
	}
	rec := f.ToRecord(memory.DefaultAllocator)
	defer rec.Release()
	return files.WriteFile(*out, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{})
}

// --- regression-label data ---

func regData(args []string) error {
	fs := flag.NewFlagSet("reg-data", flag.ContinueOnError)
	out := fs.String("out", "", "output CSV (columns x1, y)")
	n := fs.Int("n", 5000, "rows")
	seed := fs.Uint64("seed", 1, "seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *n < 2 {
		return fmt.Errorf("reg-data: need --out and n ≥ 2")
	}
	r := rand.New(rand.NewPCG(*seed, 0x726567)) // "reg"
	var b strings.Builder
	b.WriteString("x1,y\n")
	for range *n {
		x := float64(float32(r.NormFloat64()))
		y := x*x + r.NormFloat64()
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64) + "," + strconv.FormatFloat(y, 'g', -1, 64) + "\n")
	}
	return os.WriteFile(*out, []byte(b.String()), 0o644)
}

// --- the marginal screen on xor5 under Holm and BH ---

func xor5Screen(args []string) error {
	fs := flag.NewFlagSet("xor5-screen", flag.ContinueOnError)
	n := fs.Int("n", 1000, "rows")
	seeds := fs.Int("seeds", 200, "fresh draws (data seeds 101.., permutation seeds 1..)")
	alpha := fs.Float64("alpha", 0.025, "level of the screen (0.025: the marginal half of a set search at 0.05)")
	threads := fs.Int("threads", 2, "worker threads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Printf("xor5, n = %d: marginal screens at α = %g not exactly S_m = {m0..m4}, over %d draws\n", *n, *alpha, *seeds)
	for _, adj := range []dependence.Adjust{dependence.AdjustHolm, dependence.AdjustBH} {
		bad, extra := 0, 0
		for s := 1; s <= *seeds; s++ {
			f, err := synth.Generate(synth.XOR5, synth.Options{N: *n, Seed: uint64(100 + s)})
			if err != nil {
				return err
			}
			o := dependence.DefaultSearchOptions()
			o.Method, o.Adjust, o.Alpha = dependence.MethodMarginal, adj, *alpha
			o.Test.Seed, o.Test.Threads = uint64(s), *threads
			r, err := dependence.Search(float64Cols(f), f.Y, 2, o)
			if err != nil {
				return err
			}
			if !slices.Equal(r.Marginal, []int{0, 1, 2, 3, 4}) {
				bad++
			}
			for _, j := range r.Marginal {
				if j > 4 {
					extra++
				}
			}
		}
		fmt.Printf("  %-5s %3d / %d (noise features taken as marginal: %d)\n", adj, bad, *seeds, extra)
	}
	return nil
}

// --- one multivariate statistic ---

func stat(args []string) error {
	fs := flag.NewFlagSet("stat", flag.ContinueOnError)
	n := fs.Int("n", 20000, "rows")
	st := fs.String("stat", "gcor", "gcor or dcor")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := synth.Generate(synth.XOR2, synth.Options{N: *n, Seed: 1})
	if err != nil {
		return err
	}
	x := float64Cols(f)
	t0 := time.Now()
	var v float64
	switch *st {
	case "gcor":
		v = dependence.GCor(x, f.Y, 2)
	case "dcor":
		v = dependence.DCor(x, f.Y, 2)
	default:
		return fmt.Errorf("stat: --stat %q: want gcor or dcor", *st)
	}
	fmt.Printf("{\"stat\": %q, \"n\": %d, \"p\": %d, \"value\": %.12g, \"seconds\": %.3f}\n", *st, *n, len(x), v, time.Since(t0).Seconds())
	return nil
}

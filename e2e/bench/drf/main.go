// Command drf is the Go piece of e2e/bench/drf.sh, the reproduction of the
// dRF paper's experiments (distance-rf-manifold-responses.txt §3.1 and
// §3.2.1) with forestd beside scikit-learn:
//
//	go run ./e2e/bench/drf prepare -dir D [-data testdata] [-seed 1] [-ntrain 1000] [-ntest 10000]
//	go run ./e2e/bench/drf report  -dir D [-png DIR] [-threads 2] [-digits-folds 5]
//
// prepare writes the data sets as CSV into D: swiss_train.csv and
// swiss_test.csv (one swiss roll of ntrain + ntest rows from synth, split
// in order, as synth.SwissRoll advises; the test file carries the
// noise-free points y0_true..y2_true), and the digit-completion splits of
// §3.2.1: the first 100 digits of each class of testdata/digits
// (file order), 80 per class for training and 20 for testing, five times
// (fold k in D/digits-fk tests the ranks 20(k−1)…20k−1 of each class, so
// every one of the 1000 digits is tested once; digits_train.csv,
// digits_test.csv, 64 pixels + label), and every digit but the fold's
// test digits for its whole-digit classifier (digits_clf.csv).
//
// report reads the predictions drf.sh wrote into D and prints the
// comparison tables in Markdown: for the swiss roll the test MSE (mean
// over the three outputs, against the noisy and the noise-free
// responses), the mean distance from each prediction to the noise-free
// swiss-roll surface, and training and prediction times; for the digits
// the MSE of the completed lower halves and the share of completed digits
// that a random forest trained on whole digits (500 trees, digits_clf.csv)
// misclassifies — the stand-in for the paper's visual count of bad
// reconstructions —, pooled over the folds, with McNemar's paired test
// between methods. It draws the paper's Fig. 2 (error vectors projected on
// the y0–y2 plane) and the digit reconstructions as PNGs.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/files"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: drf prepare|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepare(os.Args[2:])
	case "report":
		err = report(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want prepare or report)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "drf:", err)
		os.Exit(1)
	}
}

// ---------------------------------------------------------------------------
// files

// writeCSV writes float64 columns (and, when labels is non-nil, an int64
// column "label") as CSV.
func writeCSV(path string, names []string, cols [][]float64, labels []int64) error {
	fields := make([]arrow.Field, 0, len(names)+1)
	for _, n := range names {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64})
	}
	if labels != nil {
		fields = append(fields, arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int64})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for j, c := range cols {
		b.Field(j).(*array.Float64Builder).AppendValues(c, nil)
	}
	if labels != nil {
		b.Field(len(cols)).(*array.Int64Builder).AppendValues(labels, nil)
	}
	rec := b.NewRecord()
	defer rec.Release()
	return files.WriteFile(path, schema, []arrow.Record{rec}, files.WriteOptions{})
}

// readCols reads every numeric column of a file as float64, by name.
func readCols(path string) (map[string][]float64, error) {
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	out := map[string][]float64{}
	for j, fl := range schema.Fields() {
		for _, r := range recs {
			switch a := r.Column(j).(type) {
			case *array.Float64:
				out[fl.Name] = append(out[fl.Name], a.Float64Values()...)
			case *array.Float32:
				for _, v := range a.Float32Values() {
					out[fl.Name] = append(out[fl.Name], float64(v))
				}
			case *array.Int64:
				for _, v := range a.Int64Values() {
					out[fl.Name] = append(out[fl.Name], float64(v))
				}
			}
		}
	}
	return out, nil
}

func pixel(r, c int) string { return fmt.Sprintf("pixel_%d_%d", r, c) }

// upper and lower are the pixel names of the two 8×4 halves (rows 0–3, 4–7).
// digitFolds is the number of digit-completion folds: the paper's one
// 800/200 split of 1000 digits, repeated so that every digit is tested once.
const digitFolds = 5

// foldDir is where prepare writes fold k's digit files (drf.sh writes the
// fold's predictions beside them).
func foldDir(dir string, k int) string { return filepath.Join(dir, fmt.Sprintf("digits-f%d", k)) }

func halves() (upper, lower []string) {
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			if r < 4 {
				upper = append(upper, pixel(r, c))
			} else {
				lower = append(lower, pixel(r, c))
			}
		}
	}
	return upper, lower
}

// ---------------------------------------------------------------------------
// prepare

func prepare(args []string) error {
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	dir := fs.String("dir", "", "output directory")
	data := fs.String("data", "testdata", "shared data directory")
	seed := fs.Uint64("seed", 1, "swiss roll seed")
	ntrain := fs.Int("ntrain", 1000, "swiss roll training rows")
	ntest := fs.Int("ntest", 10000, "swiss roll test rows")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("prepare: -dir is required")
	}
	x, tg, _, err := synth.GenerateMulti("swissroll", synth.Options{N: *ntrain + *ntest, Seed: *seed, Clean: true})
	if err != nil {
		return err
	}
	split := func(lo, hi int, clean bool) ([]string, [][]float64) {
		var names []string
		var cols [][]float64
		for j, c := range x.Cols {
			v := make([]float64, hi-lo)
			for i := range v {
				v[i] = float64(c[lo+i])
			}
			names, cols = append(names, x.Names[j]), append(cols, v)
		}
		nt := 3
		if clean {
			nt = 6
		}
		for k := 0; k < nt; k++ {
			names = append(names, [...]string{"y0", "y1", "y2", "y0_true", "y1_true", "y2_true"}[k])
			cols = append(cols, append([]float64(nil), tg[k][lo:hi]...))
		}
		return names, cols
	}
	n, c := split(0, *ntrain, false)
	if err := writeCSV(filepath.Join(*dir, "swiss_train.csv"), n, c, nil); err != nil {
		return err
	}
	if err := checkIsomap(filepath.Join(*dir, "isomap_check.json"), tg, *ntrain); err != nil {
		return err
	}
	n, c = split(*ntrain, *ntrain+*ntest, true)
	if err := writeCSV(filepath.Join(*dir, "swiss_test.csv"), n, c, nil); err != nil {
		return err
	}

	dg, err := readCols(filepath.Join(*data, "digits.parquet"))
	if err != nil {
		return err
	}
	labels := dg["label"]
	if len(labels) == 0 {
		return errors.New("digits: no label column")
	}
	// rank of each digit within its class, in file order
	rank := make([]int, len(labels))
	perClass := map[int]int{}
	for i, l := range labels {
		rank[i] = perClass[int(l)]
		perClass[int(l)]++
	}
	up, lo := halves()
	all := append(append([]string(nil), up...), lo...)
	write := func(name string, rows []int) error {
		cols := make([][]float64, len(all))
		lab := make([]int64, len(rows))
		for j, p := range all {
			for _, r := range rows {
				cols[j] = append(cols[j], dg[p][r])
			}
		}
		for i, r := range rows {
			lab[i] = int64(labels[r])
		}
		return writeCSV(name, all, cols, lab)
	}
	// fold k (1-based) tests the ranks 20(k−1)…20k−1 of each class and
	// trains on the other 80 of the first 100; its whole-digit classifier
	// learns every digit but its test digits
	var nTrain, nTest, nClf int
	for k := 1; k <= digitFolds; k++ {
		var trainRows, testRows, clfRows []int
		for i, r := range rank {
			switch {
			case r >= 20*(k-1) && r < 20*k:
				testRows = append(testRows, i)
				continue
			case r < 100:
				trainRows = append(trainRows, i)
			}
			clfRows = append(clfRows, i)
		}
		fd := foldDir(*dir, k)
		if err := os.MkdirAll(fd, 0o755); err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			rows []int
		}{{"digits_train.csv", trainRows}, {"digits_test.csv", testRows}, {"digits_clf.csv", clfRows}} {
			if err := write(filepath.Join(fd, f.name), f.rows); err != nil {
				return err
			}
		}
		nTrain, nTest, nClf = len(trainRows), len(testRows), len(clfRows)
	}
	fmt.Printf("prepared %s: swiss %d+%d rows, digits %d folds of %d train / %d test / %d classifier rows\n",
		*dir, *ntrain, *ntest, digitFolds, nTrain, nTest, nClf)
	return nil
}

// ---------------------------------------------------------------------------
// swiss roll geometry

// arcLength is the length of the spiral t ↦ (t cos t, t sin t) from 0 to t.
func arcLength(t float64) float64 { return 0.5 * (t*math.Sqrt(1+t*t) + math.Asinh(t)) }

// checkIsomap writes isomap_check.json: for k = 5, 7, 10, how the Isomap
// graph of the first n noisy responses (targets 0–2) relates to the
// noise-free surface (targets 3–5, whose radius is t): k-nearest-neighbour
// edges between points whose t differ by more than π (different layers of
// the roll), and the ratio of Isomap distance to the true geodesic
// distance √(Δs² + Δu²) (s the arc length) over pairs at least 5 apart.
func checkIsomap(path string, tg [][]float64, n int) error {
	y := make([]float64, 0, 3*n)
	t := make([]float64, n)
	for i := 0; i < n; i++ {
		y = append(y, tg[0][i], tg[1][i], tg[2][i])
		t[i] = math.Hypot(tg[3][i], tg[5][i])
	}
	var out []isomapCheck
	for _, k := range []int{5, 7, 10} {
		c := isomapCheck{K: k}
		for i := 0; i < n; i++ {
			type nb struct {
				j int
				d float64
			}
			v := make([]nb, 0, n-1)
			for j := 0; j < n; j++ {
				if j != i {
					var d float64
					for q := 0; q < 3; q++ {
						e := y[i*3+q] - y[j*3+q]
						d += e * e
					}
					v = append(v, nb{j, d})
				}
			}
			sort.Slice(v, func(a, b int) bool { return v[a].d < v[b].d || v[a].d == v[b].d && v[a].j < v[b].j })
			for _, e := range v[:k] {
				c.Edges++
				if math.Abs(t[i]-t[e.j]) > math.Pi {
					c.CrossLayer++
				}
			}
		}
		d2, err := manifold.SquaredDistances(y, n, 3, forest.DistanceIsomap, k, runtime.NumCPU())
		if err != nil {
			return fmt.Errorf("isomap k=%d: %w", k, err)
		}
		var ratios []float64
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				g := math.Hypot(arcLength(t[i])-arcLength(t[j]), tg[4][i]-tg[4][j])
				if g < 5 {
					continue
				}
				r := math.Sqrt(d2[i*n+j]) / g
				ratios = append(ratios, r)
				if r < 0.8 {
					c.ShortcutPairs++
				}
			}
		}
		sort.Float64s(ratios)
		c.Pairs = len(ratios)
		c.RatioP1, c.RatioMedian, c.RatioP99 = ratios[len(ratios)/100], ratios[len(ratios)/2], ratios[99*len(ratios)/100]
		out = append(out, c)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// surfaceDistance is the distance from p = (y0, y1, y2) to the noise-free
// swiss-roll surface {(t cos t, u, t sin t): t ∈ [π, 3π], u ∈ [0, 21]}
// (dRF paper §3.1).
func surfaceDistance(p [3]float64) float64 {
	q := nearestOnSurface(p)
	var s float64
	for k := range p {
		s += (p[k] - q[k]) * (p[k] - q[k])
	}
	return math.Sqrt(s)
}

// nearestOnSurface is the point of the noise-free swiss-roll surface
// nearest to p: u is clamped to its range and t found by a grid of 4001
// points refined by ternary search around the best one.
func nearestOnSurface(p [3]float64) [3]float64 {
	f := func(t float64) float64 {
		a, c := p[0]-t*math.Cos(t), p[2]-t*math.Sin(t)
		return a*a + c*c
	}
	best, bt := math.Inf(1), math.Pi
	for k := 0; k <= 4000; k++ {
		t := math.Pi + 2*math.Pi*float64(k)/4000
		if v := f(t); v < best {
			best, bt = v, t
		}
	}
	lo, hi := math.Max(math.Pi, bt-2*math.Pi/4000), math.Min(3*math.Pi, bt+2*math.Pi/4000)
	for it := 0; it < 80; it++ {
		m1, m2 := lo+(hi-lo)/3, hi-(hi-lo)/3
		if f(m1) < f(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	if t := (lo + hi) / 2; f(t) < best {
		bt = t
	}
	return [3]float64{bt * math.Cos(bt), math.Min(math.Max(p[1], 0), 21), bt * math.Sin(bt)}
}

// onSurface maps every prediction (n×3 row-major) to its nearest point on
// the true surface: an oracle backscoring that knows the manifold.
func onSurface(v []float64) []float64 {
	out := make([]float64, len(v))
	for i := 0; i+3 <= len(v); i += 3 {
		q := nearestOnSurface([3]float64(v[i : i+3]))
		copy(out[i:i+3], q[:])
	}
	return out
}

// ---------------------------------------------------------------------------
// report

// Forest sizes drf.sh used, for the report headers.
var swissTrees, digitTrees int

type timing struct {
	Task     string  `json:"task"`
	Tool     string  `json:"tool"`
	TrainS   float64 `json:"train_s"`
	PredictS float64 `json:"predict_s"`
	Version  string  `json:"version"`
}

func readTimings(path string) ([]timing, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []timing
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var t timing
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, t)
	}
	return out, sc.Err()
}

type method struct {
	name string
	vals []float64 // rows×q row-major
}

// loadMulti reads the named columns of a prediction file row-major.
func loadMulti(path string, cols []string) ([]float64, error) {
	m, err := readCols(path)
	if err != nil {
		return nil, err
	}
	n := -1
	for _, c := range cols {
		if _, ok := m[c]; !ok {
			return nil, fmt.Errorf("%s: no column %s", path, c)
		}
		if n >= 0 && len(m[c]) != n {
			return nil, fmt.Errorf("%s: ragged columns", path)
		}
		n = len(m[c])
	}
	out := make([]float64, n*len(cols))
	for k, c := range cols {
		for i, v := range m[c] {
			out[i*len(cols)+k] = v
		}
	}
	return out, nil
}

// loadPerOutput reads one single-output forestd prediction file per
// column (prefix + column + ".csv", column "prediction").
func loadPerOutput(dir, prefix string, cols []string) ([]float64, error) {
	var out []float64
	for k, c := range cols {
		m, err := readCols(filepath.Join(dir, prefix+c+".csv"))
		if err != nil {
			return nil, err
		}
		p := m["prediction"]
		if out == nil {
			out = make([]float64, len(p)*len(cols))
		}
		if len(p)*len(cols) != len(out) {
			return nil, fmt.Errorf("%s%s: %d rows", prefix, c, len(p))
		}
		for i, v := range p {
			out[i*len(cols)+k] = v
		}
	}
	return out, nil
}

func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory drf.sh wrote")
	pngDir := fs.String("png", "", "where to write the PNGs (default -dir)")
	threads := fs.Int("threads", runtime.NumCPU(), "threads for the whole-digit classifier")
	fs.IntVar(&swissTrees, "swiss-trees", 150, "trees of the swiss-roll forests (for the report header)")
	fs.IntVar(&digitTrees, "digits-trees", 300, "trees of the digit forests (for the report header)")
	folds := fs.Int("digits-folds", digitFolds, "digit folds drf.sh ran (1…5)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("report: -dir is required")
	}
	if *pngDir == "" {
		*pngDir = *dir
	}
	if *folds < 1 || *folds > digitFolds {
		return fmt.Errorf("report: -digits-folds %d: want 1…%d", *folds, digitFolds)
	}
	tim, err := readTimings(filepath.Join(*dir, "timings.jsonl"))
	if err != nil {
		return err
	}
	if err := reportSwiss(*dir, *pngDir, tim); err != nil {
		return err
	}
	return reportDigits(*dir, *pngDir, tim, *threads, *folds)
}

func reportSwiss(dir, pngDir string, tim []timing) error {
	ys := []string{"y0", "y1", "y2"}
	truth, err := loadMulti(filepath.Join(dir, "swiss_test.csv"), ys)
	if err != nil {
		return err
	}
	clean, err := loadMulti(filepath.Join(dir, "swiss_test.csv"), []string{"y0_true", "y1_true", "y2_true"})
	if err != nil {
		return err
	}
	var ms []method
	add := func(name string, v []float64, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(v) != len(truth) {
			return fmt.Errorf("%s: %d values for %d", name, len(v), len(truth))
		}
		ms = append(ms, method{name, v})
		return nil
	}
	for _, f := range []struct{ name, file string }{
		{"forestd drf", "drf_swiss.csv"}, {"forestd drf m oob", "drf_swiss_moob.csv"}, {"forestd drf loo", "drf_swiss_loo.csv"}, {"forestd drf algorithm1", "drf_swiss_alg1.csv"}, {"forestd drf paper", "drf_swiss_paper.csv"},
	} {
		v, err := loadMulti(filepath.Join(dir, f.file), ys)
		if err := add(f.name, v, err); err != nil {
			return err
		}
	}
	// the engine's plain RF regression: one multi-output forest (drf.sh
	// trains it with --label y0,y1,y2), and one forest per output
	v, err := loadMulti(filepath.Join(dir, "rf_swiss.csv"), ys)
	if err := add("forestd rf", v, err); err != nil {
		return err
	}
	v, err = loadPerOutput(dir, "rf_swiss_", ys)
	if err := add(perOutputSwiss, v, err); err != nil {
		return err
	}
	for _, f := range []struct{ name, file string }{
		{"sklearn rf mtry=3", "sk_swiss_m3.csv"}, {"sklearn rf mtry=6", "sk_swiss_m6.csv"},
		{"sklearn rf per-output mtry=3", "sk_swiss_per_output_m3.csv"}, {"sklearn 5-nn", "knn5_swiss.csv"},
	} {
		v, err := loadMulti(filepath.Join(dir, f.file), ys)
		if err := add(f.name, v, err); err != nil {
			return err
		}
	}
	// the default dRF model's own forest weights a, averaged in R³ (a
	// diagnostic: how good the forest's neighbourhoods are before any
	// embedding or backscoring)
	v, err = forestWeightsMean(filepath.Join(dir, "drf_swiss.arrows"), filepath.Join(dir, "swiss_test.csv"))
	if err := add(diagSwiss, v, err); err != nil {
		return err
	}
	// oracle diagnostics: the same neighbourhoods placed on the true
	// surface (what a perfect embedding and backscoring could do with them)
	for _, name := range []string{"forestd rf", perOutputSwiss, diagSwiss} {
		for _, m := range ms {
			if m.name == name {
				ms = append(ms, method{onSurfaceName(name), onSurface(m.vals)})
				break
			}
		}
	}
	n := len(truth) / 3
	fmt.Printf("## Swiss roll (dRF paper §3.1): 1000 training and %d test rows, %d trees, 3 candidate features, Isomap k = 7\n\n", n, swissTrees)
	if err := printParams(dir, "swiss"); err != nil {
		return err
	}
	if err := printIsomapCheck(dir); err != nil {
		return err
	}
	fmt.Println("| method | test MSE (mean of 3 outputs) | MSE vs noise-free | mean distance to the surface |")
	fmt.Println("|---|---:|---:|---:|")
	stats := map[string][3]float64{}
	for _, m := range ms {
		var se, sc, sd float64
		for i := 0; i < n; i++ {
			for k := 0; k < 3; k++ {
				d := m.vals[i*3+k] - truth[i*3+k]
				se += d * d
				e := m.vals[i*3+k] - clean[i*3+k]
				sc += e * e
			}
			sd += surfaceDistance([3]float64(m.vals[i*3 : i*3+3]))
		}
		s := [3]float64{se / float64(3*n), sc / float64(3*n), sd / float64(n)}
		stats[m.name] = s
		fmt.Printf("| %s | %.4f | %.4f | %.4f |\n", m.name, s[0], s[1], s[2])
	}
	var noisy float64
	for i := 0; i < n; i++ {
		noisy += surfaceDistance([3]float64(truth[i*3 : i*3+3]))
	}
	fmt.Printf("| (the noisy test responses themselves) | 0 | %.4f | %.4f |\n\n", 0.5, noisy/float64(n))
	d, r := stats["forestd drf"], stats["forestd rf"]
	fmt.Println("forestd rf is the engine's plain RF regression on the three outputs (`forestd train --label y0,y1,y2`: one multi-output forest, " +
		"as scikit-learn's RandomForestRegressor with a 2-D y). Paper / issue reference: scikit-learn RF MSE 0.98 (3 candidate features), 0.78 (all 6).")
	po := stats[perOutputSwiss]
	fmt.Printf("Target 1, dRF (default) test MSE ≤ forestd RF's: %.4f vs %.4f → %s\n", d[0], r[0], metStr(d[0] <= r[0]))
	fmt.Printf("Target 2, dRF (default) mean distance to the surface ≤ 0.5 × forestd RF's: %.4f vs %.4f (ratio %.3f) → %s\n",
		d[2], r[2], d[2]/r[2], metStr(d[2] <= 0.5*r[2]))
	fmt.Printf("Against one forest per output (three single-label models): MSE %.4f vs %.4f → %s; distance ratio %.3f → %s\n",
		d[0], po[0], metStr(d[0] <= po[0]), d[2]/po[2], metStr(d[2] <= 0.5*po[2]))
	for _, name := range []string{"forestd drf m oob", "forestd drf loo", "forestd drf algorithm1", "forestd drf paper"} {
		g := stats[name]
		fmt.Printf("%s: MSE %.4f, distance ratio %.3f → targets %s / %s\n", name, g[0], g[2]/r[2], metStr(g[0] <= r[0]), metStr(g[2] <= 0.5*r[2]))
	}
	m3, spo, dg := stats["sklearn rf mtry=3"], stats["sklearn rf per-output mtry=3"], stats[diagSwiss]
	ps, ds := stats[onSurfaceName(perOutputSwiss)], stats[onSurfaceName(diagSwiss)]
	fmt.Printf("\nWhy one forest per output is out of reach for any single forest: y0, y2 depend on t alone and y1 on u alone, "+
		"so each single-output forest solves a 1-D problem with its own neighbourhoods. scikit-learn with the same 3 candidate features: "+
		"one multi-output forest %.4f, one forest per output %.4f. The dRF forest's own weights a averaged in R³ give %.4f, the default dRF %.4f. "+
		"The per-output forests' predictions moved to the nearest point of the true surface score %.4f (from %.4f); "+
		"the dRF forest's neighbourhoods, averaged in R³ and moved onto the true surface the same way by an oracle that knows it, "+
		"score %.4f: most of that gap is in one forest's neighbourhoods, not in the embedding or backscoring.\n",
		m3[0], spo[0], dg[0], d[0], ps[0], po[0], ds[0])
	fmt.Println()
	printTimings("swiss", tim)
	png := filepath.Join(pngDir, "drf-fig2-swissroll.png")
	var panels []method
	for _, name := range []string{"sklearn 5-nn", "forestd rf", perOutputSwiss, "forestd drf paper", "forestd drf"} {
		for _, m := range ms {
			if m.name == name {
				panels = append(panels, m)
			}
		}
	}
	if err := drawFig2(png, panels, clean, 500); err != nil {
		return err
	}
	fmt.Printf("Fig. 2 (error vectors from the noise-free point to the prediction, first 500 test rows, projected on y0–y2): %s\n\n", png)
	return nil
}

func metStr(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// printTimings prints the training and prediction times of one task; a
// tool timed once per digit fold shows the mean over its folds.
func printTimings(task string, tim []timing) {
	var order []string
	sums := map[string]*timing{}
	count := map[string]int{}
	for _, t := range tim {
		if t.Task != task {
			continue
		}
		if sums[t.Tool] == nil {
			order = append(order, t.Tool)
			sums[t.Tool] = &timing{Task: t.Task, Tool: t.Tool}
		}
		sums[t.Tool].TrainS += t.TrainS
		sums[t.Tool].PredictS += t.PredictS
		count[t.Tool]++
	}
	folds := 1
	for _, tool := range order {
		sums[tool].TrainS /= float64(count[tool])
		sums[tool].PredictS /= float64(count[tool])
		folds = max(folds, count[tool])
	}
	if folds > 1 {
		fmt.Printf("Times are means over the %d folds.\n\n", folds)
	}
	fmt.Println("| tool | training, s | prediction, s | prediction rows/s |")
	fmt.Println("|---|---:|---:|---:|")
	var sk *timing
	rows := map[string]float64{"swiss": 10000, "digits": 200}[task]
	for _, tool := range order {
		t := sums[tool]
		if strings.HasPrefix(t.Tool, "sklearn rf") && sk == nil {
			sk = t
		}
		fmt.Printf("| %s | %.3f | %.3f | %.0f |\n", t.Tool, t.TrainS, t.PredictS, rows/math.Max(t.PredictS, 1e-9))
	}
	if sk != nil {
		for _, tool := range order {
			if t := sums[tool]; strings.HasPrefix(t.Tool, "forestd") {
				fmt.Printf("\n%s against %s: training %.2f×, prediction %.2f× the peer's time", t.Tool, sk.Tool, t.TrainS/sk.TrainS, t.PredictS/sk.PredictS)
			}
		}
		fmt.Println()
	}
	fmt.Println()
}

// diagSwiss names the diagnostic row of the swiss-roll table,
// perOutputSwiss the three single-output forests.
const (
	diagSwiss      = "(dRF forest weights a, mean in R³: diagnostic)"
	perOutputSwiss = "forestd rf, one forest per output"
)

// onSurfaceName names the oracle row of method name moved onto the true
// surface.
func onSurfaceName(name string) string {
	name = strings.TrimSuffix(strings.Trim(name, "()"), ": diagnostic")
	return "(" + name + ", moved to the nearest point of the true surface: oracle)"
}

// loadForTest reads a dRF model and the model's feature columns of the
// test file (float32, column-major) with its row count.
func loadForTest(modelPath, testPath string) (*forest.Forest, [][]float32, int, error) {
	f, _, err := model.ReadFile(modelPath)
	if err != nil {
		return nil, nil, 0, err
	}
	if f.DRF == nil {
		return nil, nil, 0, fmt.Errorf("%s: not a drf model", modelPath)
	}
	cols, err := readCols(testPath)
	if err != nil {
		return nil, nil, 0, err
	}
	n := len(cols[f.Features[0]])
	fr := make([][]float32, len(f.Features))
	for j, name := range f.Features {
		c, ok := cols[name]
		if !ok {
			return nil, nil, 0, fmt.Errorf("%s: no column %s", testPath, name)
		}
		fr[j] = make([]float32, n)
		for i, v := range c {
			fr[j][i] = float32(v)
		}
	}
	return f, fr, n, nil
}

// forestWeightsMean predicts every row of the test file by the a-weighted
// mean of the training responses of a dRF model (Σ_j a_j·y_j / Σ_j a_j,
// in the response space): the forest's neighbourhoods alone.
func forestWeightsMean(modelPath, testPath string) ([]float64, error) {
	f, fr, n, err := loadForTest(modelPath, testPath)
	if err != nil {
		return nil, err
	}
	p, err := manifold.NewPredictor(f, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	d := f.DRF
	q := len(d.Targets)
	out := make([]float64, n*q)
	for r := 0; r < n; r++ {
		a := p.Similarity(fr, r)
		var tot float64
		for i, w := range a {
			if w == 0 {
				continue
			}
			tot += w
			for k := 0; k < q; k++ {
				out[r*q+k] += w * d.Responses[i*q+k]
			}
		}
		for k := 0; k < q; k++ {
			out[r*q+k] /= tot
		}
	}
	return out, nil
}

// forestNearest predicts every row of the test file by the training
// response of l = argmax a of a dRF model (the training row sharing the
// most leaves with it; Algorithm 1 depends on a through l alone): the
// forest's nearest neighbour, as 1-NN is the Euclidean one.
func forestNearest(modelPath, testPath string) ([]float64, error) {
	f, cols, n, err := loadForTest(modelPath, testPath)
	if err != nil {
		return nil, err
	}
	p, err := manifold.NewPredictor(f, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	pr, err := p.Predict(&frame.Frame{Names: f.Features, NRows: n, Cols: cols}, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	d := f.DRF
	q := len(d.Targets)
	out := make([]float64, n*q)
	for r, l := range pr.Nearest {
		copy(out[r*q:r*q+q], d.Responses[int(l)*q:int(l)*q+q])
	}
	return out, nil
}

// drfParams is one line of drf_params.jsonl (drf.sh): the backscoring
// parameters of a dRF model as its train report gives them.
type drfParams struct {
	Tool       string  `json:"tool"`
	Fold       int     `json:"fold"`
	SigmaG     float64 `json:"sigma_g"`
	GammaG     float64 `json:"gamma_g"`
	SelectedBy string  `json:"selected_by"`
	SelectMSE  float64 `json:"select_mse"`
	Center     bool    `json:"center"`
	Predict    string  `json:"predict"`
	EmbedDim   int     `json:"embed_dim"`
}

// printParams prints the dRF models' prediction modes and backscoring
// parameters of one task.
func printParams(dir, task string) error {
	fh, err := os.Open(filepath.Join(dir, "drf_params.jsonl"))
	if err != nil {
		return err
	}
	defer fh.Close()
	var order []string
	byTool := map[string][]drfParams{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var p drfParams
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return err
		}
		tool, ok := strings.CutPrefix(p.Tool, task+" ")
		if !ok {
			continue
		}
		if byTool[tool] == nil {
			order = append(order, tool)
		}
		byTool[tool] = append(byTool[tool], p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	folds := 0
	for _, ps := range byTool {
		folds = max(folds, len(ps))
	}
	if folds > 1 {
		fmt.Printf("σ_G, γ_G and the cross-validated MSE are chosen per fold and listed fold by fold.\n\n")
	}
	fmt.Println("| dRF model | prediction | m | σ_G | γ_G | chosen by | its cross-validated MSE | centred map (offset) |")
	fmt.Println("|---|---|---:|---:|---:|---|---:|---|")
	by := map[string]string{
		"flags":         "the paper (flags)",
		"out-of-bag":    "out-of-bag error of the training rows' backscored predictions",
		"leave-one-out": "leave-one-out of the map on the training pairs (1-SE rule)",
	}
	for _, tool := range order {
		ps := byTool[tool]
		var sg, gg, cv []string
		for _, p := range ps {
			sg = append(sg, fmt.Sprintf("%.4g", p.SigmaG))
			gg = append(gg, fmt.Sprintf("%.4g", p.GammaG))
			if p.SelectedBy != "flags" {
				cv = append(cv, fmt.Sprintf("%.4f", p.SelectMSE))
			}
		}
		if len(cv) == 0 {
			cv = []string{"–"}
		}
		p := ps[0]
		fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %v |\n", tool, p.Predict, p.EmbedDim, strings.Join(compact(sg), " / "),
			strings.Join(compact(gg), " / "), by[p.SelectedBy], strings.Join(cv, " / "), p.Center)
	}
	fmt.Println()
	return nil
}

// compact collapses a list of equal values to one.
func compact(v []string) []string {
	for _, x := range v {
		if x != v[0] {
			return v
		}
	}
	return v[:1]
}

// isomapCheck is isomap_check.json (prepare): whether the Isomap graph of
// the noisy swiss-roll training responses short-circuits between layers.
type isomapCheck struct {
	K             int     `json:"k"`
	Edges         int     `json:"edges"`
	CrossLayer    int     `json:"cross_layer"`
	RatioP1       float64 `json:"ratio_p1"`
	RatioMedian   float64 `json:"ratio_median"`
	RatioP99      float64 `json:"ratio_p99"`
	Pairs         int     `json:"pairs"`
	ShortcutPairs int     `json:"shortcut_pairs"`
}

func printIsomapCheck(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "isomap_check.json"))
	if err != nil {
		return err
	}
	var cs []isomapCheck
	if err := json.Unmarshal(b, &cs); err != nil {
		return err
	}
	fmt.Println("Isomap on the noisy training responses (checked against the noise-free points, which training never sees): " +
		"k-nearest-neighbour edges joining different layers of the roll (|Δt| > π), and the ratio of the Isomap distance to the " +
		"true geodesic distance on the surface over pairs at least 5 apart (shortcuts: ratio < 0.8).")
	fmt.Println()
	fmt.Println("| k | edges across layers | Isomap / true geodesic: 1st percentile | median | 99th percentile | pairs with a shortcut |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		fmt.Printf("| %d | %d of %d | %.3f | %.3f | %.3f | %d of %d |\n", c.K, c.CrossLayer, c.Edges, c.RatioP1, c.RatioMedian, c.RatioP99, c.ShortcutPairs, c.Pairs)
	}
	fmt.Println()
	return nil
}

// ---------------------------------------------------------------------------
// digits

// digitFold is one fold's completions: the test digits, and per method the
// predicted lower halves and which completed digits the whole-digit
// classifier gets wrong.
type digitFold struct {
	test   map[string][]float64
	n      int
	ms     []method
	se     map[string]float64 // sum of squared errors over the fold's pixels
	wrongs map[string][]bool
	base   int // original test digits misclassified
}

// digitMethods lists the digit methods in report order with their
// prediction files (per-pixel forests are read by loadPerOutput).
var digitMethods = []struct{ name, file string }{
	{"1-NN (sklearn)", "knn1_digits.csv"}, {"forestd rf", "rf_digits.csv"}, {"forestd rf, one forest per pixel", ""},
	{"forestd sporf", "sporf_digits.csv"}, {"sklearn rf", "sk_rf_digits.csv"},
	{"forestd drf", "drf_digits.csv"}, {"forestd drf loo", "drf_digits_loo.csv"}, {"forestd drf algorithm1", "drf_digits_alg1.csv"},
	{"forestd drf paper", "drf_digits_paper.csv"}, {"forestd drf sparse", "drf_digits_sparse.csv"},
}

// Diagnostic rows of the digits table: the dRF forests' similarity vector
// a used directly in the response space.
const (
	diagDigitsMean          = "(dRF forest weights a, mean of the training lower halves: diagnostic)"
	diagDigitsNearest       = "(dRF forest's nearest training digit, argmax a: diagnostic)"
	diagDigitsNearestSparse = "(dRF sparse forest's nearest training digit, argmax a: diagnostic)"
)

// evalDigitFold reads fold directory fd: its predictions, and a 500-tree
// forest trained on its whole-digit classifier rows, which judges every
// completed digit.
func evalDigitFold(fd string, threads int) (*digitFold, error) {
	_, lo := halves()
	tcols, err := readCols(filepath.Join(fd, "digits_test.csv"))
	if err != nil {
		return nil, err
	}
	n := len(tcols["label"])
	out := &digitFold{test: tcols, n: n, se: map[string]float64{}, wrongs: map[string][]bool{}}
	for _, f := range digitMethods {
		var v []float64
		if f.file == "" {
			v, err = loadPerOutput(fd, "rf_digits_", lo)
		} else {
			v, err = loadMulti(filepath.Join(fd, f.file), lo)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if len(v) != n*len(lo) {
			return nil, fmt.Errorf("%s: %d values for %d digits", f.name, len(v), n)
		}
		out.ms = append(out.ms, method{f.name, v})
	}
	// diagnostics: the dRF forests' neighbourhoods without the embedding
	// and backscoring
	test := filepath.Join(fd, "digits_test.csv")
	for _, d := range []struct {
		name, model string
		pred        func(string, string) ([]float64, error)
	}{
		{diagDigitsMean, "drf_digits.arrows", forestWeightsMean},
		{diagDigitsNearest, "drf_digits.arrows", forestNearest},
		{diagDigitsNearestSparse, "drf_digits_sparse.arrows", forestNearest},
	} {
		v, err := d.pred(filepath.Join(fd, d.model), test)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		out.ms = append(out.ms, method{d.name, v})
	}
	schema, recs, err := files.ReadPaths([]string{filepath.Join(fd, "digits_clf.csv")}, files.ReadOptions{})
	if err != nil {
		return nil, err
	}
	fr, err := frame.FromRecords(schema, recs, frame.Options{Label: "label", Task: frame.TaskClassification})
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return nil, err
	}
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 500, 1, threads
	clf, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		return nil, err
	}
	cc, err := forest.Compile(clf)
	if err != nil {
		return nil, err
	}
	// classify judges the test digits with lower halves `lower` (nil: the
	// original digits)
	classify := func(lower []float64) ([]bool, int, error) {
		f := &frame.Frame{Names: clf.Features, NRows: n}
		for _, name := range clf.Features {
			col := make([]float32, n)
			if k := indexOf(lo, name); k >= 0 && lower != nil {
				for i := range col {
					col[i] = float32(lower[i*len(lo)+k])
				}
			} else {
				for i, x := range tcols[name] {
					col[i] = float32(x)
				}
			}
			f.Cols = append(f.Cols, col)
		}
		pr, err := cc.Predict(f, threads)
		if err != nil {
			return nil, 0, err
		}
		wrong := make([]bool, n)
		bad := 0
		for i := range wrong {
			if clf.Classes[pr.Class[i]] != fmt.Sprint(int(tcols["label"][i])) {
				wrong[i] = true
				bad++
			}
		}
		return wrong, bad, nil
	}
	if _, out.base, err = classify(nil); err != nil {
		return nil, err
	}
	for _, m := range out.ms {
		var se float64
		for k, c := range lo {
			for i, x := range tcols[c] {
				d := m.vals[i*len(lo)+k] - x
				se += d * d
			}
		}
		out.se[m.name] = se
		if out.wrongs[m.name], _, err = classify(m.vals); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func reportDigits(dir, pngDir string, tim []timing, threads, folds int) error {
	up, lo := halves()
	var fs []*digitFold
	total, base := 0, 0
	for k := 1; k <= folds; k++ {
		f, err := evalDigitFold(foldDir(dir, k), threads)
		if err != nil {
			return fmt.Errorf("digits fold %d: %w", k, err)
		}
		fs = append(fs, f)
		total += f.n
		base += f.base
	}
	fmt.Printf("## Digit completion (dRF paper §3.2.1): %d folds of 800 train / 200 test digits, lower 8×4 half from the upper half, %d trees, 5 candidate features, Isomap k = 5, m = 25\n\n", folds, digitTrees)
	fmt.Printf("The paper makes one 800/200 split of 1000 digits (100 per class). Here fold k tests the digits of rank 20(k−1)…20k−1 within their class (file order) and trains on the other 80 per class, so %d folds test %d digits, each once; a completed digit counts as bad when a 500-tree forest trained on whole digits (every digit but the fold's test digits) misclassifies it. Shares are pooled over the folds, MSE is the mean over them.\n\n", folds, total)
	if err := printParams(dir, "digits"); err != nil {
		return err
	}
	paper := map[string][2]string{"1-NN (sklearn)": {"3.3665", "20%"}, "forestd rf": {"2.7651", "27%"}, "forestd rf, one forest per pixel": {"2.7651", "27%"}, "sklearn rf": {"2.7651", "27%"},
		"forestd drf": {"3.3287", "18.5%"}, "forestd drf loo": {"3.3287", "18.5%"}, "forestd drf algorithm1": {"3.3287", "18.5%"}, "forestd drf paper": {"3.3287", "18.5%"}, "forestd drf sparse": {"3.3287", "18.5%"}}
	fmt.Print("| method | MSE (ours) | MSE (paper) | completed digits misclassified (ours, pooled) | per fold |")
	fmt.Println(" bad reconstructions (paper, visual) |")
	fmt.Println("|---|---:|---:|---:|---|---:|")
	bad := map[string]int{}
	perFold := func(name string) (int, string) {
		var cs []string
		sum := 0
		for _, f := range fs {
			c := 0
			for _, w := range f.wrongs[name] {
				if w {
					c++
				}
			}
			sum += c
			cs = append(cs, fmt.Sprint(c))
		}
		return sum, strings.Join(cs, " / ")
	}
	for _, m := range fs[0].ms {
		var mse float64
		for _, f := range fs {
			mse += f.se[m.name] / float64(f.n*len(lo)) / float64(len(fs))
		}
		b, cs := perFold(m.name)
		bad[m.name] = b
		pp, ok := paper[m.name]
		if !ok {
			pp = [2]string{"–", "–"}
		}
		fmt.Printf("| %s | %.4f | %s | %.1f%% (%d of %d) | %s | %s |\n", m.name, mse, pp[0], 100*float64(b)/float64(total), b, total, cs, pp[1])
	}
	var bs []string
	for _, f := range fs {
		bs = append(bs, fmt.Sprint(f.base))
	}
	fmt.Printf("| (original test digits) | 0 | – | %.1f%% (%d of %d) | %s | – |\n\n", 100*float64(base)/float64(total), base, total, strings.Join(bs, " / "))
	share := func(name string) float64 { return float64(bad[name]) / float64(total) }
	d := share("forestd drf")
	fmt.Printf("Target, dRF's (default) share lowest of 1-NN, RF and dRF: %.1f%% vs %.1f%% (1-NN) and %.1f%% (forestd RF) → %s\n",
		100*d, 100*share("1-NN (sklearn)"), 100*share("forestd rf"), metStr(bad["forestd drf"] <= bad["1-NN (sklearn)"] && bad["forestd drf"] <= bad["forestd rf"]))
	for _, name := range []string{"forestd drf loo", "forestd drf algorithm1", "forestd drf paper", "forestd drf sparse"} {
		fmt.Printf("%s: %.1f%% → %s\n", name, 100*share(name), metStr(bad[name] <= bad["1-NN (sklearn)"] && bad[name] <= bad["forestd rf"]))
	}
	// paired comparison on the same digits: the digits one method gets
	// wrong and the other right (McNemar's discordant pairs)
	fmt.Println()
	fmt.Println("Paired on the same test digits (digits the first gets wrong and the second right, and the reverse; McNemar's exact two-sided p):")
	fmt.Println()
	fmt.Println("| comparison | first wrong only | second wrong only | p |")
	fmt.Println("|---|---:|---:|---:|")
	for _, c := range [][2]string{{"forestd drf", "1-NN (sklearn)"}, {"forestd drf", "forestd rf"}, {"forestd drf algorithm1", "1-NN (sklearn)"}, {"forestd drf sparse", "1-NN (sklearn)"}, {"forestd drf sparse", "forestd sporf"}} {
		b01, b10 := 0, 0
		for _, f := range fs {
			for i := range f.wrongs[c[0]] {
				switch w0, w1 := f.wrongs[c[0]][i], f.wrongs[c[1]][i]; {
				case w0 && !w1:
					b01++
				case w1 && !w0:
					b10++
				}
			}
		}
		fmt.Printf("| %s vs %s | %d | %d | %.3g |\n", c[0], c[1], b01, b10, mcnemar(b01, b10))
	}
	fmt.Printf("\nA share near %.0f%% of %d digits has a binomial standard error of %.1f%%.\n\n", 100*d, total, 100*math.Sqrt(d*(1-d)/float64(total)))
	printTimings("digits", tim)
	// the picture shows the last fold: with 5 folds, the ranks 80…99 of
	// each class (the split of earlier single-split reports)
	last := fs[len(fs)-1]
	pngPath := filepath.Join(pngDir, "drf-fig3-digits.png")
	if err := drawDigits(pngPath, last.test, up, lo, last.ms, last.wrongs, last.n); err != nil {
		return err
	}
	fmt.Printf("Reconstructions of fold %d (as the paper's Fig. 3; red frame = misclassified by the whole-digit forest): %s\n", len(fs), pngPath)
	return nil
}

// mcnemar is the exact two-sided McNemar p-value of b and c discordant
// pairs: twice the smaller binomial(b+c, ½) tail, at most 1.
func mcnemar(b, c int) float64 {
	n, k := b+c, min(b, c)
	if n == 0 {
		return 1
	}
	var tail float64
	for i := 0; i <= k; i++ {
		lg, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(i + 1))
		l2, _ := math.Lgamma(float64(n - i + 1))
		tail += math.Exp(lg - l1 - l2 - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*tail)
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// ---------------------------------------------------------------------------
// pictures

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws a segment (Bresenham), clipped to the image.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		if (image.Point{x0, y0}).In(img.Bounds()) {
			img.SetRGBA(x0, y0, c)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func writePNG(path string, img image.Image) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(fh, img); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// drawFig2 draws one panel per method: for the first rows test rows the
// error vector from the noise-free point to the prediction (red) ending in
// a dot at the prediction, and the noise-free swiss-roll spiral in the
// y0–y2 plane (blue) on top.
func drawFig2(path string, ms []method, clean []float64, rows int) error {
	const size, margin, top = 360, 10, 24
	img := image.NewRGBA(image.Rect(0, 0, margin+len(ms)*(size+margin), top+size+margin))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	blue, red, dark := color.RGBA{40, 90, 220, 255}, color.RGBA{230, 90, 90, 255}, color.RGBA{20, 20, 20, 255}
	const span = 12.0 // |y| ≤ 3π ≈ 9.4 on the surface
	rows = min(rows, len(clean)/3)
	for p, m := range ms {
		x0 := margin + p*(size+margin)
		px := func(a, b float64) (int, int) {
			return x0 + int((a+span)/(2*span)*size), top + int((span-b)/(2*span)*size)
		}
		label(img, x0, top-8, m.name, dark)
		line(img, x0, top, x0+size, top, dark)
		line(img, x0, top+size, x0+size, top+size, dark)
		line(img, x0, top, x0, top+size, dark)
		line(img, x0+size, top, x0+size, top+size, dark)
		for i := 0; i < rows; i++ {
			ax, ay := px(clean[i*3], clean[i*3+2])
			bx, by := px(m.vals[i*3], m.vals[i*3+2])
			line(img, ax, ay, bx, by, red)
		}
		lx, ly := px(math.Pi*math.Cos(math.Pi), math.Pi*math.Sin(math.Pi))
		for k := 1; k <= 2000; k++ {
			t := math.Pi + 2*math.Pi*float64(k)/2000
			cx, cy := px(t*math.Cos(t), t*math.Sin(t))
			line(img, lx, ly, cx, cy, blue)
			lx, ly = cx, cy
		}
		for i := 0; i < rows; i++ {
			bx, by := px(m.vals[i*3], m.vals[i*3+2])
			fill(img, image.Rect(bx-1, by-1, bx+1, by+1).Intersect(img.Bounds()), dark)
		}
	}
	return writePNG(path, img)
}

// drawDigits draws one panel per method (the test digits first): 20×10
// digits, upper half from the test digit, lower half predicted; a red
// frame marks a digit the whole-digit classifier gets wrong.
func drawDigits(path string, test map[string][]float64, up, lo []string, ms []method, wrong map[string][]bool, n int) error {
	const scale, gap, per, top = 3, 4, 20, 18
	cell := 8*scale + gap
	rowsPer := (n + per - 1) / per
	pw, ph := per*cell+gap, rowsPer*cell+gap+top
	panels := append([]method{{"test digits", nil}}, ms...)
	img := image.NewRGBA(image.Rect(0, 0, pw, ph*len(panels)))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	red := color.RGBA{220, 20, 20, 255}
	for p, m := range panels {
		y0 := p * ph
		label(img, gap, y0+13, m.name, color.RGBA{20, 20, 20, 255})
		for i := 0; i < n; i++ {
			cx, cy := gap+(i%per)*cell, y0+top+(i/per)*cell
			for r := 0; r < 8; r++ {
				for c := 0; c < 8; c++ {
					var v float64
					if r < 4 || m.vals == nil {
						v = test[pixel(r, c)][i]
					} else {
						v = m.vals[i*len(lo)+indexOf(lo, pixel(r, c))]
					}
					g := uint8(255 * (1 - math.Max(0, math.Min(1, v/16))))
					fill(img, image.Rect(cx+c*scale, cy+r*scale, cx+(c+1)*scale, cy+(r+1)*scale), color.RGBA{g, g, g, 255})
				}
			}
			if m.vals != nil && wrong[m.name][i] {
				b := image.Rect(cx-2, cy-2, cx+8*scale+1, cy+8*scale+1)
				line(img, b.Min.X, b.Min.Y, b.Max.X, b.Min.Y, red)
				line(img, b.Min.X, b.Max.Y, b.Max.X, b.Max.Y, red)
				line(img, b.Min.X, b.Min.Y, b.Min.X, b.Max.Y, red)
				line(img, b.Max.X, b.Min.Y, b.Max.X, b.Max.Y, red)
			}
		}
	}
	_ = up
	return writePNG(path, img)
}

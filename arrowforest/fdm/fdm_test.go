package fdm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/projection"
	"github.com/forestd/forestd/arrowforest/synth"
)

func xorFrame(t testing.TB, name string, n int, seed uint64) *frame.Frame {
	t.Helper()
	fr, err := synth.Generate(name, synth.Options{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// TestEval: f_RP(x; r) = x·r and f_DRL(x; l) = |x − l| (§6.1), on all rows
// or a subset, with NaN passed on.
func TestEval(t *testing.T) {
	nan := float32(math.NaN())
	cols := [][]float32{{1, 2, 3}, {9, 9, 9}, {0, -1, nan}}
	rp := Mapping{Kind: MapRP, Inputs: []int{0, 2}, Theta: []float64{0.5, -2}}
	got := rp.Eval(cols, nil, nil)
	if got[0] != 0.5 || got[1] != 3 || !math.IsNaN(got[2]) {
		t.Fatalf("rp %v", got)
	}
	got = rp.Eval(cols, []int32{1}, got)
	if len(got) != 1 || got[0] != 3 {
		t.Fatalf("rp on row 1: %v", got)
	}
	drl := Mapping{Kind: MapDRL, Inputs: []int{0, 1}, Theta: []float64{1, 5}}
	got = drl.Eval(cols, []int32{0, 2}, nil)
	if got[0] != 4 || math.Abs(got[1]-math.Sqrt(20)) > 1e-15 {
		t.Fatalf("drl %v", got)
	}
}

// TestBestIsArgmax: the kept mappings are the |G| candidates of largest
// gCor_n among the m drawn (eq. 6.2), in decreasing order, each scored by
// dependence.GCor on its mapped values; r ~ U[−1, 1]; a landmark is a row.
func TestBestIsArgmax(t *testing.T) {
	fr := xorFrame(t, synth.XOR2, 400, 1)
	rows := make([]int32, fr.NRows)
	for i := range rows {
		rows[i] = int32(i)
	}
	g := []int{0, 1, 2}
	for _, kind := range []string{MapRP, MapDRL} {
		var s selector
		best := s.best(rand.New(rand.NewPCG(4, 5)), kind, fr.Cols, rows, labels{y: fr.Y, k: 2}, g, 10, 3)
		// replay the draws
		rng := rand.New(rand.NewPCG(4, 5))
		var all []float64
		for range 10 {
			mp := Mapping{Kind: kind, Inputs: g, Theta: draw(rng, kind, fr.Cols, rows, g)}
			all = append(all, dependence.GCor([][]float64{mp.Eval(fr.Cols, nil, nil)}, fr.Y, 2))
			for a, th := range mp.Theta {
				if kind == MapRP && (th < -1 || th > 1 || th != float64(float32(th))) {
					t.Fatalf("r = %v", mp.Theta)
				}
				if kind == MapDRL && !slices.Contains(fr.Cols[g[a]], float32(th)) {
					t.Fatalf("landmark %v is not a row", mp.Theta)
				}
			}
		}
		slices.Sort(all)
		slices.Reverse(all)
		if len(best) != 3 {
			t.Fatalf("%s: kept %d", kind, len(best))
		}
		for i, mp := range best {
			if mp.GCor != all[i] {
				t.Fatalf("%s: kept #%d has gCor %v, the %d-th largest is %v", kind, i, mp.GCor, i+1, all[i])
			}
			if v := dependence.GCor([][]float64{mp.Eval(fr.Cols, nil, nil)}, fr.Y, 2); v != mp.GCor {
				t.Fatalf("%s: recorded gCor %v, recomputed %v", kind, mp.GCor, v)
			}
		}
	}
}

// TestMappingMakesDependenceMarginal is FDM's premise (ch. 6 intro): on
// the 3-D XOR every single feature is (nearly) independent of the label,
// while the best mapping of the triple is clearly dependent.
func TestMappingMakesDependenceMarginal(t *testing.T) {
	fr := xorFrame(t, synth.XOR2, 1000, 2)
	single := 0.0
	for _, c := range fr.Cols {
		x := make([]float64, len(c))
		for i, v := range c {
			x[i] = float64(v)
		}
		single = max(single, dependence.GCor([][]float64{x}, fr.Y, 2))
	}
	tr, err := Fit(fr, Plan{Groups: [][]int{{0, 1, 2}}}, Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	best := tr.Groups[0].Outputs[0].GCor
	t.Logf("largest single-feature gCor %.4f, best mapped %.4f (rp)", single, best)
	if best < 5*single || best < 0.02 {
		t.Fatalf("mapping did not expose the joint dependence: single %.4f, mapped %.4f", single, best)
	}
}

func TestPlan(t *testing.T) {
	sets, err := ParseSets("0,1; 2,3,4")
	if err != nil || !reflect.DeepEqual(sets, [][]int{{0, 1}, {2, 3, 4}}) {
		t.Fatalf("%v %v", sets, err)
	}
	if FormatSets(sets) != "0,1;2,3,4" {
		t.Fatal(FormatSets(sets))
	}
	for _, bad := range []string{"0,,1", "a", "1;-2", ";"} {
		if _, err := ParseSets(bad); err == nil {
			t.Errorf("ParseSets(%q) accepted", bad)
		}
	}
	for _, pl := range []Plan{{}, {Marginal: []int{5}}, {Marginal: []int{1}, Groups: [][]int{{1, 2}}}, {Groups: [][]int{{}}}} {
		if err := pl.Validate(5); err == nil {
			t.Errorf("plan %+v accepted", pl)
		}
	}
}

// TestDiscover finds xor4's structure without ground truth: the marginal
// feature m0 and the triple (dissertation ch. 5 via dependence.Search).
func TestDiscover(t *testing.T) {
	fr := xorFrame(t, synth.XOR4, 1000, 3)
	opt := dependence.DefaultSearchOptions()
	opt.Test.Seed = 1
	pl, res, err := Discover(fr.Cols, fr.Y, 2, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pl, Plan{Marginal: []int{0}, Groups: [][]int{{1, 2, 3}}}) || res.Groups[0].Kind != "mds" {
		t.Fatalf("plan %+v", pl)
	}
}

// TestTreeSampler: a tree's candidates are the marginal axis atoms plus
// |G| projections per group whose weights are the selected mappings; nodes
// draw MTry distinct candidates; the same stream gives the same tree
// mappings, another tree other ones.
func TestTreeSampler(t *testing.T) {
	fr := xorFrame(t, synth.XOR3, 500, 4)
	pl := Plan{Marginal: []int{0}, Groups: [][]int{{2, 1}}}
	s, err := newTreeSampler(fr.Cols, fr.Y, 2, pl, Options{}, func(n int) int { return n - 1 })
	if err != nil {
		t.Fatal(err)
	}
	rows := []int32{}
	for i := 0; i < fr.NRows; i += 2 {
		rows = append(rows, int32(i))
	}
	if err := s.BeginTree(rand.New(rand.NewPCG(1, 1)), rows); err != nil {
		t.Fatal(err)
	}
	maps := slices.Clone(s.mappings())
	if len(maps) != 2 || !slices.Equal(maps[0].Inputs, []int{1, 2}) {
		t.Fatalf("mappings %+v", maps)
	}
	var c projection.Candidates
	seen := map[string]int{}
	for r := 0; r < 200; r++ {
		c.Reset()
		s.Sample(rand.New(rand.NewPCG(uint64(r), 9)), &c)
		if c.Len() != 2 {
			t.Fatalf("%d atoms, want 2", c.Len())
		}
		for i := 0; i < c.Len(); i++ {
			idx, w := c.Atom(i)
			switch {
			case len(idx) == 1 && idx[0] == 0 && w[0] == 1:
				seen["m0"]++
			case len(idx) == 2 && idx[0] == 1 && idx[1] == 2:
				for q, mp := range maps {
					if float64(w[0]) == mp.Theta[0] && float64(w[1]) == mp.Theta[1] {
						seen[[]string{"rp1", "rp2"}[q]]++
					}
				}
			default:
				t.Fatalf("unexpected atom %v %v", idx, w)
			}
		}
	}
	if len(seen) != 3 {
		t.Fatalf("candidates drawn: %v", seen)
	}
	// the same stream, the same mappings; another stream, others
	if err := s.BeginTree(rand.New(rand.NewPCG(1, 1)), rows); err != nil || !reflect.DeepEqual(s.mappings(), maps) {
		t.Fatal("mappings not determined by the tree's stream")
	}
	if err := s.BeginTree(rand.New(rand.NewPCG(2, 1)), rows); err != nil || reflect.DeepEqual(s.mappings(), maps) {
		t.Fatal("another stream gave the same mappings")
	}
	if _, err := newTreeSampler(fr.Cols, fr.Y, 2, pl, Options{Map: "pca"}, func(n int) int { return n }); err == nil {
		t.Fatal("unknown mapping accepted for per-tree mapping")
	}
	if err := s.BeginTree(rand.New(rand.NewPCG(2, 1)), rows[:1]); err == nil {
		t.Fatal("one in-bag row accepted")
	}
}

// TestTransform: Fit, Apply and the JSON mapping file agree; applying the
// decoded file to new data gives the same columns as the fitted one.
func TestTransform(t *testing.T) {
	fr := xorFrame(t, synth.XOR4, 600, 5)
	for _, kind := range []string{MapRP, MapDRL} {
		tr, err := Fit(fr, Plan{Marginal: []int{0}, Groups: [][]int{{1, 2, 3}}}, Options{Map: kind}, 7)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Names(); !slices.Equal(got, []string{"m0", "fdm_g1_1", "fdm_g1_2", "fdm_g1_3"}) {
			t.Fatalf("names %v", got)
		}
		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadTransform(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, tr) {
			t.Fatalf("%s: mapping file does not round-trip:\n%s", kind, buf.String())
		}
		test := xorFrame(t, synth.XOR4, 300, 6)
		a, err := tr.Apply(test)
		if err != nil {
			t.Fatal(err)
		}
		b, err := back.Apply(test)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) || !slices.Equal(a.Cols[0], test.Cols[0]) || a.P() != 4 || !slices.Equal(a.Y, test.Y) {
			t.Fatalf("%s: applying the decoded mapping differs", kind)
		}
		// the mapped column is the formula on the named inputs
		o := tr.Groups[0].Outputs[0]
		for i := 0; i < test.NRows; i += 37 {
			var v float64
			for q := 0; q < 3; q++ {
				x := float64(test.Cols[q+1][i])
				if kind == MapRP {
					v += o.Weights[q] * x
				} else {
					v += (x - o.Landmark[q]) * (x - o.Landmark[q])
				}
			}
			if kind == MapDRL {
				v = math.Sqrt(v)
			}
			if float32(v) != a.Cols[1][i] {
				t.Fatalf("%s row %d: %v, want %v", kind, i, a.Cols[1][i], v)
			}
		}
		// same seed, same mapping; the mapped features are more dependent
		again, _ := Fit(fr, Plan{Marginal: []int{0}, Groups: [][]int{{1, 2, 3}}}, Options{Map: kind}, 7)
		if !reflect.DeepEqual(again, tr) {
			t.Fatal("Fit is not determined by its seed")
		}
	}
	missing := &frame.Frame{Names: []string{"m0"}, Cols: [][]float32{{1}}, NRows: 1}
	tr, _ := Fit(fr, Plan{Marginal: []int{0}, Groups: [][]int{{1, 2, 3}}}, Options{}, 1)
	if _, err := tr.Apply(missing); err == nil || !strings.Contains(err.Error(), "x3a_0") {
		t.Fatalf("missing input column: %v", err)
	}
}

// TestReadTransformRejects: malformed mapping files are clear errors.
func TestReadTransformRejects(t *testing.T) {
	good := `{"format":"forestd-fdm/1","map":"rp","candidates":10,"seed":1,"marginal":["a"],
	"groups":[{"features":["b","c"],"outputs":[{"name":"o1","weights":[0.5,-0.25],"gcor":0.2}]}]}`
	if _, err := ReadTransform(strings.NewReader(good)); err != nil {
		t.Fatalf("good file rejected: %v", err)
	}
	for name, bad := range map[string]string{
		"empty":          ``,
		"not json":       `format: x`,
		"truncated":      good[:60],
		"trailing":       good + `{}`,
		"format":         strings.Replace(good, "forestd-fdm/1", "forestd-fdm/2", 1),
		"kind":           strings.Replace(good, `"rp"`, `"pca"`, 1),
		"unknown field":  strings.Replace(good, `"seed":1`, `"seed":1,"extra":2`, 1),
		"weights length": strings.Replace(good, `[0.5,-0.25]`, `[0.5]`, 1),
		"landmark on rp": strings.Replace(good, `"weights"`, `"landmark"`, 1),
		"dup output":     strings.Replace(good, `"o1"`, `"a"`, 1),
		"dup input":      strings.Replace(good, `["b","c"]`, `["a","c"]`, 1),
		"empty name":     strings.Replace(good, `"o1"`, `""`, 1),
		"no outputs":     strings.Replace(good, `[{"name":"o1","weights":[0.5,-0.25],"gcor":0.2}]`, `[]`, 1),
		"huge number":    strings.Replace(good, `0.5,`, `1e999,`, 1),
		"null weight":    strings.Replace(good, `0.5,`, `null,`, 1), // encoding/json would read 0
		"wrong type":     strings.Replace(good, `"seed":1`, `"seed":"x"`, 1),
		"nothing":        `{"format":"forestd-fdm/1","map":"rp"}`,
	} {
		if _, err := ReadTransform(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "fdm: ") {
			t.Errorf("%s: error without context: %v", name, err)
		}
	}
	// a mapped column named like an input it would replace in the output
	// (its own group's, or another group's), named in the error
	for bad, want := range map[string]string{
		strings.Replace(good, `"o1"`, `"b"`, 1): `fdm: group 1 output "b" is named like an input feature of the mapping (group 1)`,
		strings.Replace(good, `]}]}`, `]},{"features":["o1"],"outputs":[{"name":"o2","weights":[1],"gcor":0}]}]}`, 1): `fdm: group 1 output "o1" is named like an input feature of the mapping (group 2)`,
	} {
		if _, err := ReadTransform(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}

// FuzzReadTransform: the mapping decoder never panics, and whatever it
// accepts is valid and survives a write/read round trip.
func FuzzReadTransform(f *testing.F) {
	f.Add([]byte(`{"format":"forestd-fdm/1","map":"rp","candidates":10,"seed":1,"marginal":["a"],"groups":[{"features":["b","c"],"outputs":[{"name":"o1","weights":[0.5,-0.25],"gcor":0.2}]}]}`))
	f.Add([]byte(`{"format":"forestd-fdm/1","map":"drl","candidates":3,"seed":2,"marginal":[],"groups":[{"features":["b"],"kind":"mds","p_value":0.01,"outputs":[{"name":"o","landmark":[1],"gcor":0}]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadTransform(bytes.NewReader(b))
		if err != nil {
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("accepted an invalid mapping: %v", err)
		}
		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadTransform(&buf)
		if err != nil || !reflect.DeepEqual(back.Names(), tr.Names()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// numericFrame: y = 2·x0 + sign(x1·x2) + noise with a noise feature x3; a
// numeric label whose pair (x1, x2) is dependent only jointly.
func numericFrame(n int, seed uint64) *frame.Frame {
	r := rand.New(rand.NewPCG(seed, 77))
	fr := &frame.Frame{Names: []string{"x0", "x1", "x2", "x3"}, NRows: n, LabelName: "y", Task: frame.TaskRegression}
	for range fr.Names {
		c := make([]float32, n)
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		fr.Cols = append(fr.Cols, c)
	}
	fr.YReg = make([]float64, n)
	for i := range fr.YReg {
		s := 1.0
		if fr.Cols[1][i]*fr.Cols[2][i] < 0 {
			s = -1
		}
		fr.YReg[i] = 2*float64(fr.Cols[0][i]) + s + 0.1*r.NormFloat64()
	}
	return fr
}

// TestNumericLabel: a regression frame's groups come from the dCor search
// (DiscoverLabel), its mappings are ranked by dCor_n (eq. 6.2 with dCor_n
// in place of gCor_n): each kept mapping's DCor is dependence.DCor1 of its
// values and the largest of the candidates; the mapping file says
// "select": "dcor" and reads back; the mapped column is more dependent on
// y than either feature alone.
func TestNumericLabel(t *testing.T) {
	fr := numericFrame(500, 1)
	lab, err := LabelOf(fr)
	if err != nil || !lab.IsNumeric() {
		t.Fatalf("label %+v, %v", lab, err)
	}
	opt := dependence.DefaultSearchOptions()
	opt.Stat = ""
	pl, res, err := DiscoverLabel(fr.Cols, lab, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stat != dependence.StatDCor || !reflect.DeepEqual(pl, Plan{Marginal: []int{0}, Groups: [][]int{{1, 2}}}) {
		t.Fatalf("stat %s plan %+v", res.Stat, pl)
	}
	for _, kind := range []string{MapRP, MapDRL} {
		tr, err := Fit(fr, pl, Options{Map: kind}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Select != "dcor" || len(tr.Groups) != 1 || len(tr.Groups[0].Outputs) != 2 {
			t.Fatalf("%s: transform %+v", kind, tr)
		}
		cols, err := tr.Columns(fr)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range tr.Groups[0].Outputs {
			if o.GCor != 0 || o.DCor != dependence.DCor1(cols[i], fr.YReg) {
				t.Errorf("%s output %d: gcor %v dcor %v, recomputed %v", kind, i, o.GCor, o.DCor, dependence.DCor1(cols[i], fr.YReg))
			}
		}
		single := 0.0
		for _, j := range []int{1, 2} {
			x := make([]float64, fr.NRows)
			for i, v := range fr.Cols[j] {
				x[i] = float64(v)
			}
			single = max(single, dependence.DCor1(x, fr.YReg))
		}
		if best := tr.Groups[0].Outputs[0].DCor; !(best > 1.5*single) {
			t.Errorf("%s: the best mapping's dCor %v is not well above the features' %v", kind, best, single)
		}
		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadTransform(&buf)
		if err != nil || !reflect.DeepEqual(back, tr) {
			t.Errorf("%s: round trip %+v, %v", kind, back, err)
		}
	}
	// several targets are no FDM label
	multi := numericFrame(10, 2)
	if err := multi.SetTargets([]string{"a", "b"}, make([]float64, 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := LabelOf(multi); err == nil {
		t.Error("two targets accepted as an FDM label")
	}
}

// TestIsOutputName: every name OutputName gives, and only those, is an
// output name (the daemon refuses a label or key so named beside its
// select stage).
func TestIsOutputName(t *testing.T) {
	for _, gi := range [][2]int{{1, 1}, {2, 10}, {12, 3}, {100, 100}} {
		if n := OutputName(gi[0], gi[1]); !IsOutputName(n) {
			t.Errorf("IsOutputName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "fdm_g", "fdm_g1", "fdm_g1_", "fdm_g_1", "fdm_g0_1", "fdm_g1_0", "fdm_g01_1",
		"fdm_g1_1x", "fdm_g1_1_1", "fdm_g-1_1", "fdm_g+1_1", "FDM_G1_1", "xfdm_g1_1", "fdm_g1 _1"} {
		if IsOutputName(n) {
			t.Errorf("IsOutputName(%q) = true", n)
		}
	}
}

// TestFitNamesAroundInputs: a selection's mapped columns analysed again
// (a select stage downstream of another) get mapped columns of their own
// names — fdm2_…, then fdm3_… — never those of an input column, which the
// mapped data would then hold twice; a frame without such columns keeps
// fdm_….
func TestFitNamesAroundInputs(t *testing.T) {
	fr := xorFrame(t, synth.XOR4, 600, 5)
	plan := Plan{Marginal: []int{0}, Groups: [][]int{{1, 2, 3}}}
	first, err := Fit(fr, plan, Options{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	once, err := first.Apply(fr) // m0, fdm_g1_1, fdm_g1_2, fdm_g1_3
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"fdm2", "fdm3"} {
		// the marginal feature and two mapped columns pass on; the
		// third mapped column and the first are a group again
		next, err := Fit(once, Plan{Marginal: []int{0, 2}, Groups: [][]int{{1, 3}}}, Options{}, 7)
		if err != nil {
			t.Fatalf("pass %d: %v", i+2, err)
		}
		got := next.Names()
		if !slices.Equal(got, []string{once.Names[0], once.Names[2], want + "_g1_1", want + "_g1_2"}) {
			t.Fatalf("pass %d: names %v", i+2, got)
		}
		if once, err = next.Apply(once); err != nil {
			t.Fatalf("pass %d: %v", i+2, err)
		}
	}
	if got := first.Names(); got[1] != "fdm_g1_1" {
		t.Errorf("first pass names %v", got)
	}
}

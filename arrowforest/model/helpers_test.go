package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// classForest has 3 classes with sparse leaves, an oblique node with three
// atom entries, both missing-value directions, a stump tree, levels,
// importances and OOB estimates.
func classForest() *forest.Forest {
	t0 := &tree.Tree{
		Left:        []int32{1, -1, 3, -1, -1},
		Right:       []int32{2, -1, 4, -1, -1},
		Threshold:   []float32{0.5, 0, -0.25, 0, 0},
		MissingLeft: []bool{true, false, false, false, false},
		Count:       []float32{10, 4, 6, 2, 4},
		AtomStart:   []int32{0, 1, 1, 4, 4, 4},
		AtomFeature: []int32{0, 1, 2, 3},
		AtomWeight:  []float32{1, 1, -1, 0.5},
		LeafStart:   []int32{0, 0, 2, 2, 3, 6},
		LeafClass:   []int32{0, 2, 1, 0, 1, 2},
		LeafValue:   []float64{0.75, 0.25, 1, 0.2, 0.3, 0.5},
	}
	t1 := &tree.Tree{ // a stump
		Left: []int32{-1}, Right: []int32{-1}, Threshold: []float32{0},
		MissingLeft: []bool{false}, Count: []float32{10},
		AtomStart: []int32{0, 0},
		LeafStart: []int32{0, 1}, LeafClass: []int32{2}, LeafValue: []float64{1},
	}
	t2 := &tree.Tree{
		Left:        []int32{1, -1, -1},
		Right:       []int32{2, -1, -1},
		Threshold:   []float32{float32(math.Inf(1)), 0, 0},
		MissingLeft: []bool{false, true, false},
		Count:       []float32{9, 3, 6},
		AtomStart:   []int32{0, 1, 1, 1},
		AtomFeature: []int32{1},
		AtomWeight:  []float32{-1},
		LeafStart:   []int32{0, 0, 1, 3},
		LeafClass:   []int32{1, 0, 2},
		LeafValue:   []float64{1, 0.5, 0.5},
	}
	return &forest.Forest{
		Kind:      "rf",
		Task:      frame.TaskClassification,
		Features:  []string{"x0", "colour", "x2", "naïve \"x3\""},
		Levels:    [][]string{nil, {"red", "green"}, nil, nil},
		LabelName: "y",
		Classes:   []string{"a", "b", "c"},
		Trees:     []*tree.Tree{t0, t1, t2},
		Params: forest.Params{Trees: 3, Seed: 1<<63 + 12345, MaxFeatures: "sqrt", Criterion: "gini",
			MinLeaf: 1, MaxDepth: 0, Sample: "bootstrap", SampleFraction: 1, Split: "binned", Bins: 255,
			Permutation: true},
		OOB: &forest.OOB{Rows: 97, Error: 0.125, Strength: 0.4, Correlation: 0.0625},
		Importances: map[string][]float64{
			forest.ImportanceImpurity:        {0.5, 0.25, 0.125, 0.125},
			forest.ImportanceProjectionCount: {1, 2, 1, 1},
			forest.ImportancePermutation:     {0.01, -0.002, 0, 1e-9},
		},
	}
}

// regForest is a regression forest without levels, OOB or importances.
func regForest() *forest.Forest {
	t0 := &tree.Tree{
		Left:        []int32{1, -1, -1},
		Right:       []int32{2, -1, -1},
		Threshold:   []float32{1.5, 0, 0},
		MissingLeft: []bool{true, false, false},
		Count:       []float32{5, 2, 3},
		AtomStart:   []int32{0, 1, 1, 1},
		AtomFeature: []int32{1},
		AtomWeight:  []float32{1},
		LeafStart:   []int32{0, 0, 1, 2},
		LeafValue:   []float64{-3.5, 1 << 100},
	}
	t1 := &tree.Tree{
		Left: []int32{-1}, Right: []int32{-1}, Threshold: []float32{0},
		MissingLeft: []bool{false}, Count: []float32{5},
		AtomStart: []int32{0, 0}, LeafStart: []int32{0, 1}, LeafValue: []float64{0.1},
	}
	return &forest.Forest{
		Kind:      "rf",
		Task:      frame.TaskRegression,
		Features:  []string{"a", "b"},
		LabelName: "target",
		Trees:     []*tree.Tree{t0, t1},
		Params:    forest.Params{Trees: 2, Seed: 7, Criterion: "mse", Sample: "subsample", SampleFraction: 0.632},
	}
}

// randomForest builds a valid forest of nTrees random complete-ish trees
// with about nodesPerTree nodes each; atoms have 1..maxAtom entries.
func randomForest(seed uint64, nTrees, nodesPerTree, p, k, maxAtom int) *forest.Forest {
	rng := rand.New(rand.NewPCG(seed, 1))
	f := &forest.Forest{Kind: "sporf", Task: frame.TaskRegression, LabelName: "y"}
	if k > 0 {
		f.Task = frame.TaskClassification
		for c := 0; c < k; c++ {
			f.Classes = append(f.Classes, string(rune('A'+c%26))+string(rune('0'+c/26)))
		}
	}
	for j := 0; j < p; j++ {
		f.Features = append(f.Features, "f"+string(rune('0'+j%10))+string(rune('a'+j/10%26)))
	}
	for ti := 0; ti < nTrees; ti++ {
		// Internal nodes i have children 2i+1, 2i+2; n is odd.
		n := nodesPerTree | 1
		t := &tree.Tree{
			Left: make([]int32, n), Right: make([]int32, n), Threshold: make([]float32, n),
			MissingLeft: make([]bool, n), Count: make([]float32, n),
			AtomStart: make([]int32, n+1), LeafStart: make([]int32, n+1),
		}
		for i := 0; i < n; i++ {
			t.Count[i] = float32(rng.IntN(1000))
			if 2*i+2 < n {
				t.Left[i], t.Right[i] = int32(2*i+1), int32(2*i+2)
				t.Threshold[i] = rng.Float32()
				t.MissingLeft[i] = rng.IntN(2) == 0
				for a := 1 + rng.IntN(maxAtom); a > 0; a-- {
					t.AtomFeature = append(t.AtomFeature, int32(rng.IntN(p)))
					t.AtomWeight = append(t.AtomWeight, float32(rng.IntN(3)-1))
				}
			} else {
				t.Left[i], t.Right[i] = -1, -1
				if k == 0 {
					t.LeafValue = append(t.LeafValue, rng.NormFloat64())
				} else {
					e0, sum := len(t.LeafValue), 0.0
					for c := 0; c < k; c++ {
						if c == 0 || rng.IntN(3) == 0 {
							t.LeafClass = append(t.LeafClass, int32(c))
							t.LeafValue = append(t.LeafValue, rng.Float64())
							sum += t.LeafValue[len(t.LeafValue)-1]
						}
					}
					for e := e0; e < len(t.LeafValue); e++ { // frequencies
						t.LeafValue[e] /= sum
					}
				}
			}
			t.AtomStart[i+1] = int32(len(t.AtomFeature))
			t.LeafStart[i+1] = int32(len(t.LeafValue))
		}
		f.Trees = append(f.Trees, preorderTree(t))
	}
	f.Params = forest.Params{Trees: nTrees, Seed: seed}
	return f
}

// tableRows is the number of rows of f's format-5 node table.
func tableRows(t testing.TB, f *forest.Forest) int {
	t.Helper()
	cp, err := forest.ToCompact(f)
	if err != nil {
		t.Fatal(err)
	}
	return compactTable(cp).rows
}

func newChecked(t testing.TB) (*memory.CheckedAllocator, codec) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem, codec{Allocator: mem}
}

func mustEncode(t testing.TB, c codec, f *forest.Forest, m Meta) ([]byte, Meta) {
	t.Helper()
	b, got, err := c.EncodeBytes(f, m)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b, got
}

// sameForest compares two forests as a model file stores them
// (stored), treating NaNs as equal.
func sameForest(a, b *forest.Forest) bool {
	return reflect.DeepEqual(nanToSentinel(stored(a)), nanToSentinel(stored(b)))
}

// stored is a copy of f as format 5 keeps it (forest.Compact): no in-bag
// counts, no missing-value direction at leaves, leaf values rounded to
// float32.
func stored(f *forest.Forest) *forest.Forest {
	g := *f
	g.Trees = make([]*tree.Tree, len(f.Trees))
	for i, t := range f.Trees {
		u := *t
		u.Count = make([]float32, len(t.Count))
		u.MissingLeft = slices.Clone(t.MissingLeft)
		for j := range u.MissingLeft {
			if t.Left[j] < 0 {
				u.MissingLeft[j] = false
			}
		}
		u.LeafValue = make([]float64, len(t.LeafValue))
		for j, v := range t.LeafValue {
			u.LeafValue[j] = float64(float32(v))
		}
		g.Trees[i] = &u
	}
	return &g
}

// preorderTree relabels t's nodes into preorder (forest.Compact keeps
// trees so; Train grows them so).
func preorderTree(t *tree.Tree) *tree.Tree {
	n := t.NumNodes()
	u := &tree.Tree{Left: make([]int32, n), Right: make([]int32, n), Threshold: make([]float32, n),
		MissingLeft: make([]bool, n), Count: make([]float32, n), AtomStart: make([]int32, 1, n+1), LeafStart: make([]int32, 1, n+1)}
	next := int32(0)
	var visit func(i int32) int32
	visit = func(i int32) int32 {
		j := next
		next++
		u.Threshold[j], u.MissingLeft[j], u.Count[j] = t.Threshold[i], t.MissingLeft[i], t.Count[i]
		u.AtomFeature = append(u.AtomFeature, t.AtomFeature[t.AtomStart[i]:t.AtomStart[i+1]]...)
		u.AtomWeight = append(u.AtomWeight, t.AtomWeight[t.AtomStart[i]:t.AtomStart[i+1]]...)
		u.AtomStart = append(u.AtomStart, int32(len(u.AtomFeature)))
		if len(t.LeafClass) > 0 {
			u.LeafClass = append(u.LeafClass, t.LeafClass[t.LeafStart[i]:t.LeafStart[i+1]]...)
		}
		u.LeafValue = append(u.LeafValue, t.LeafValue[t.LeafStart[i]:t.LeafStart[i+1]]...)
		u.LeafStart = append(u.LeafStart, int32(len(u.LeafValue)))
		if t.Left[i] < 0 {
			u.Left[j], u.Right[j] = -1, -1
			return j
		}
		u.Left[j] = visit(t.Left[i])
		u.Right[j] = visit(t.Right[i])
		return j
	}
	visit(0)
	u.AtomFeature, u.AtomWeight = slices.Clip(u.AtomFeature), slices.Clip(u.AtomWeight)
	u.LeafClass, u.LeafValue = slices.Clip(u.LeafClass), slices.Clip(u.LeafValue)
	return u
}

// nanToSentinel returns a copy of f with the non-finite floats of OOB and
// Importances replaced by fixed sentinels, so DeepEqual can compare them.
func nanToSentinel(f *forest.Forest) *forest.Forest {
	g := *f
	fix := func(x float64) float64 {
		if math.IsNaN(x) {
			return -123456789
		}
		return x
	}
	if f.OOB != nil {
		o := *f.OOB
		o.Error, o.Strength, o.Correlation, o.R2 = fix(o.Error), fix(o.Strength), fix(o.Correlation), fix(o.R2)
		g.OOB = &o
	}
	if f.Importances != nil {
		g.Importances = map[string][]float64{}
		for k, v := range f.Importances {
			w := make([]float64, len(v))
			for i, x := range v {
				w[i] = fix(x)
			}
			g.Importances[k] = w
		}
	}
	return &g
}

// expectCorrupt crafts one model of f() per edit (re-checksummed, so only
// the decoder's own checks can catch it) and wants each rejected as
// ErrCorrupt on one line; the unedited crafted model must decode, so the
// edits are what fails.
func expectCorrupt(t *testing.T, f func() *forest.Forest, cases map[string]func(*table, map[string]string)) {
	t.Helper()
	for name, e := range cases {
		_, _, err := DecodeBytes(craft(t, f(), e))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
			continue
		}
		checkOneLine(t, err)
	}
	if _, _, err := DecodeBytes(craft(t, f(), func(*table, map[string]string) {})); err != nil {
		t.Fatalf("unedited crafted model: %v", err)
	}
}

// multiForest is a multi-output regression forest: three targets, three
// values per leaf.
func multiForest() *forest.Forest {
	f := regForest()
	f.Targets = []string{"y0", "y1", "naïve y2"}
	f.LabelName = "y0,y1,naïve y2"
	f.Trees[0].LeafStart = []int32{0, 0, 3, 6}
	f.Trees[0].LeafValue = []float64{-3.5, 0, 2, 1 << 100, -1, 0.5}
	f.Trees[1].LeafStart = []int32{0, 3}
	f.Trees[1].LeafValue = []float64{0.1, 0.2, 0.3}
	f.OOB = &forest.OOB{Rows: 4, Error: 0.5, R2: 0.25}
	return f
}

// tunedForest is classForest trained with --tune: the params say so and
// the search record is set.
func tunedForest() *forest.Forest {
	f := classForest()
	f.Params.Tune = true
	f.Tuning = &forest.Tuning{
		Metric: "error",
		Rounds: [][]int{{1, 2}, {3}},
		Candidates: []forest.TuneCandidate{
			{Stage: 1, MaxFeatures: "2", MTry: 2, MinLeaf: 1, Trees: []int{1}, Scores: []float64{0.5}, Briers: []float64{0.75}, Errors: []float64{0.5}},
			{Stage: 1, MaxFeatures: "2", MTry: 2, MinLeaf: 1, MeanDiff: true, Patch: "1x1-1x3", Trees: []int{1, 2},
				Scores: []float64{0.25, -0.125}, Briers: []float64{0.5, 0.1}, Errors: []float64{0.25, 0.2}},
			{Stage: 2, MaxFeatures: "4", MTry: 4, MinLeaf: 10, Lambda: 1.5, Trees: []int{3}, Scores: []float64{1e-300}, Briers: []float64{0}, Errors: []float64{0}, Winner: true},
		},
		Winner:      2,
		SearchTrees: 6,
	}
	return f
}

package model

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/tree"
)

// ladderForest is one tree of n nodes whose node i < n−2 has children
// i+1 and i+2: every child after its parent, as the format asked, but a
// graph in which node j is reached by Fibonacci(j) paths — a 50-node
// ladder made forestd inspect run for ever (issue 35, item 4).
func ladderForest(n int) *forest.Forest {
	t := &tree.Tree{Left: make([]int32, n), Right: make([]int32, n), Threshold: make([]float32, n),
		MissingLeft: make([]bool, n), Count: make([]float32, n), AtomStart: make([]int32, n+1), LeafStart: make([]int32, n+1)}
	for i := 0; i < n; i++ {
		t.Left[i], t.Right[i] = -1, -1
		if i < n-2 {
			t.Left[i], t.Right[i] = int32(i+1), int32(i+2)
			t.AtomFeature, t.AtomWeight = append(t.AtomFeature, 0), append(t.AtomWeight, 1)
		} else {
			t.LeafClass, t.LeafValue = append(t.LeafClass, int32(i%2)), append(t.LeafValue, 1)
		}
		t.AtomStart[i+1], t.LeafStart[i+1] = int32(len(t.AtomFeature)), int32(len(t.LeafValue))
	}
	return &forest.Forest{Kind: "rf", Task: frame.TaskClassification, Features: []string{"x"}, LabelName: "y",
		Classes: []string{"a", "b"}, Trees: []*tree.Tree{t}, Params: forest.Params{Trees: 1}}
}

// decodeCorrupt decodes b and wants ErrCorrupt on one line containing
// every one of want.
func decodeCorrupt(t *testing.T, b []byte, want ...string) {
	t.Helper()
	_, c := newChecked(t)
	_, _, err := c.DecodeBytes(b)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	checkOneLine(t, err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%q does not say %q", err, w)
		}
	}
}

// TestLadderRefused: a tree whose nodes share children is refused on
// decode (and encode) in one pass over its nodes, naming the node with two
// parents; the same nodes as a tree decode.
func TestLadderRefused(t *testing.T) {
	decodeCorrupt(t, craft(t, ladderForest(50), func(*table, map[string]string) {}),
		"tree 0: node 2 has two parents, 0 and 1")
	if _, _, err := EncodeBytes(ladderForest(50), Meta{}); err == nil || !strings.Contains(err.Error(), "two parents") {
		t.Fatalf("encode of a ladder: %v", err)
	}
	// an orphan: node 3 of a 5-node tree made a child of nobody
	decodeCorrupt(t, craft(t, classForest(), func(tab *table, _ map[string]string) {
		tab.cols[colIndex(t, "right")].i32[2] = 3 // node 2's children: 3 and 3
	}), "invalid children 3, 3")
}

func colIndex(t testing.TB, name string) int {
	for i, c := range nodeColumns {
		if c.name == name {
			return i
		}
	}
	t.Fatalf("no column %s", name)
	return -1
}

// TestLeafValuesRefused (issue 35, item 6): NaN, ±Inf and −1e30 leaf
// values, frequencies that are no distribution, and non-finite regression
// leaves are refused on decode, naming the tree, node and value.
func TestLeafValuesRefused(t *testing.T) {
	leafValue := func(e int, v float64) func(*table, map[string]string) {
		return func(tab *table, _ map[string]string) { tab.cols[colIndex(t, "leaf_value")].f64[e] = v }
	}
	// classForest's tree 0: entries 0, 1 are leaf 1 (0.75, 0.25); entry 2
	// is leaf 3 (1)
	for name, c := range map[string]struct {
		edit func(*table, map[string]string)
		want string
	}{
		"NaN":     {leafValue(0, math.NaN()), "tree 0: node 1 is a leaf with frequency NaN for class 0"},
		"+Inf":    {leafValue(2, math.Inf(1)), "node 3 is a leaf with frequency +Inf"},
		"-Inf":    {leafValue(2, math.Inf(-1)), "node 3 is a leaf with frequency -Inf"},
		"-1e30":   {leafValue(2, -1e30), "frequency -1e+30"},
		"sum 2":   {leafValue(0, 1.75), "frequency 1.75"},
		"sum 0.5": {leafValue(0, 0.25), "sum to 0.5, not 1"},
		"negative sum 1": {func(tab *table, _ map[string]string) {
			v := tab.cols[colIndex(t, "leaf_value")].f64
			v[0], v[1] = 1.5, -0.5
		}, "frequency 1.5"},
		"class twice": {func(tab *table, _ map[string]string) { tab.cols[colIndex(t, "leaf_class")].i32[1] = 0 }, "naming class 0 after class 0"},
	} {
		t.Run(name, func(t *testing.T) { decodeCorrupt(t, craft(t, classForest(), c.edit), c.want) })
	}
	for name, v := range map[string]float64{"reg NaN": math.NaN(), "reg +Inf": math.Inf(1), "reg -Inf": math.Inf(-1)} {
		t.Run(name, func(t *testing.T) {
			decodeCorrupt(t, craft(t, regForest(), leafValue(0, v)), "tree 0: node 1 is a leaf with value "+strconv.FormatFloat(v, 'g', -1, 64))
		})
	}
	// a large finite regression value is a value, not an error
	if _, _, err := DecodeBytes(craft(t, regForest(), leafValue(0, -1e30))); err != nil {
		t.Fatalf("regression leaf -1e30: %v", err)
	}
}

// TestDuplicateNamesRefused (issue 35, item 6): a feature listed twice
// (score read it twice while eval refused) and a class listed twice (its
// error blamed --keep) are refused on decode, naming the name.
func TestDuplicateNamesRefused(t *testing.T) {
	decodeCorrupt(t, craft(t, classForest(), func(_ *table, md map[string]string) {
		md[keyFeatures] = `["x0","colour","x0","x3"]`
	}), `feature "x0" is listed twice (positions 0 and 2)`)
	decodeCorrupt(t, craft(t, classForest(), func(_ *table, md map[string]string) {
		md[keyClasses] = `["a","b","a"]`
	}), `class "a" is listed twice (positions 0 and 2)`)
	f := classForest()
	f.Classes[2] = "a"
	if _, _, err := EncodeBytes(f, Meta{}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("encode with a class twice: %v", err)
	}
}

// TestModelVersionRange (issue 35, item 3): versions run from 0 to
// MaxVersion = 2⁶² − 1 on decode and encode, so a model published with
// 2⁶³ − 1 is never adopted and NextVersion never wraps.
func TestModelVersionRange(t *testing.T) {
	for _, v := range []string{"-1", "-9223372036854775808", "4611686018427387904", "9223372036854775807"} {
		t.Run(v, func(t *testing.T) {
			decodeCorrupt(t, craft(t, classForest(), func(_ *table, md map[string]string) { md[keyModelVersion] = v }),
				"model version "+v+" outside 0..4611686018427387903")
		})
	}
	for _, v := range []int64{0, MaxVersion} {
		b, _, err := EncodeBytes(classForest(), Meta{Version: v})
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if _, m, err := DecodeBytes(b); err != nil || m.Version != v {
			t.Fatalf("version %d: decoded %d, %v", v, m.Version, err)
		}
	}
	for _, v := range []int64{-1, MaxVersion + 1, math.MaxInt64} {
		if _, _, err := EncodeBytes(classForest(), Meta{Version: v}); err == nil {
			t.Fatalf("version %d encoded", v)
		}
	}
	if v, err := NextVersion(MaxVersion - 1); v != MaxVersion || err != nil {
		t.Fatalf("NextVersion(MaxVersion-1) = %d, %v", v, err)
	}
	for _, v := range []int64{MaxVersion, math.MaxInt64, -1} {
		if _, err := NextVersion(v); !errors.Is(err, ErrVersionLimit) {
			t.Fatalf("NextVersion(%d): %v", v, err)
		}
	}
}

// manyClasses lists n classes, the first three classForest's.
func manyClasses(t testing.TB, n int) string {
	names := make([]string, n)
	names[0], names[1], names[2] = "a", "b", "c"
	for i := 3; i < n; i++ {
		names[i] = "k" + strconv.Itoa(i)
	}
	b, err := json.Marshal(names)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClassBudget (issue 35, item 5): a model listing 2,000,000 classes
// whose leaves name three (scoring 400 rows of such a model took 2.6 GB)
// is refused on decode with the counts; up to forest.MaxUnnamedClasses
// classes no leaf names are allowed (a rare class out of bag for every
// tree), one more is not.
func TestClassBudget(t *testing.T) {
	decodeCorrupt(t, craft(t, classForest(), func(_ *table, md map[string]string) { md[keyClasses] = manyClasses(t, 2000000) }),
		"2000000 classes but the leaves name only 3")
	ok := craft(t, classForest(), func(_ *table, md map[string]string) {
		md[keyClasses] = manyClasses(t, 3+forest.MaxUnnamedClasses)
	})
	if _, _, err := DecodeBytes(ok); err != nil {
		t.Fatalf("%d unnamed classes: %v", forest.MaxUnnamedClasses, err)
	}
	decodeCorrupt(t, craft(t, classForest(), func(_ *table, md map[string]string) {
		md[keyClasses] = manyClasses(t, 4+forest.MaxUnnamedClasses)
	}), "1028 classes but the leaves name only 3")
}

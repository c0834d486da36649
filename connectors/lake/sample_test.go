package lake

import (
	"context"
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// bruteSample applies the definition directly: every row's key, the N
// smallest per stratum (quota), rows returned in lake order, read whole
// with connectors/files.
func bruteSample(t *testing.T, l *Lake, seed uint64, quota map[string]int, label string) arrow.Record {
	t.Helper()
	type row struct {
		file int
		row  int64
		key  uint64
		lab  string
	}
	var all []row
	var recs []arrow.Record
	for fi, f := range l.Files() {
		ref := whole(t, f.Path, l.fileColumns())
		a := concatRec(t, ref)
		for _, r := range ref {
			r.Release()
		}
		recs = append(recs, a)
		lab := a.Column(slices.Index(l.fileColumns(), label))
		for i := 0; i < int(a.NumRows()); i++ {
			v, ok := labelKey(lab, i)
			if !ok {
				continue
			}
			all = append(all, row{fi, int64(i), rowKey(seed, pathHash(f.Rel), int64(i)), v})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	taken := map[string]int{}
	var keep []row
	for _, r := range all {
		q, ok := quota[r.lab]
		if !ok {
			q = quota[""]
			r.lab = ""
		}
		if taken[r.lab] < q {
			taken[r.lab]++
			keep = append(keep, r)
		}
	}
	sort.Slice(keep, func(i, j int) bool {
		if keep[i].file != keep[j].file {
			return keep[i].file < keep[j].file
		}
		return keep[i].row < keep[j].row
	})
	var parts []arrow.Record
	for fi := range recs {
		var idx []int32
		for _, r := range keep {
			if r.file == fi {
				idx = append(idx, int32(r.row))
			}
		}
		p, err := takeRecord(memory.NewGoAllocator(), recs[fi], idx)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
		recs[fi].Release()
	}
	out := concatRec(t, parts)
	for _, p := range parts {
		p.Release()
	}
	return out
}

func concatRec(t testing.TB, recs []arrow.Record) arrow.Record {
	t.Helper()
	cols := make([]arrow.Array, recs[0].NumCols())
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	for j := range cols {
		cols[j] = concat(t, recs, j)
		defer cols[j].Release()
	}
	return array.NewRecord(recs[0].Schema(), cols, n)
}

func sameRows(t *testing.T, what string, got []arrow.Record, want arrow.Record) {
	t.Helper()
	g := concatRec(t, got)
	defer g.Release()
	if g.NumRows() != want.NumRows() {
		t.Fatalf("%s: %d rows, want %d", what, g.NumRows(), want.NumRows())
	}
	for j := 0; j < int(want.NumCols()); j++ {
		if !array.Equal(g.Column(j), want.Column(j)) {
			t.Fatalf("%s: column %s differs from the brute-force sample", what, want.ColumnName(j))
		}
	}
}

func TestReservoirSample(t *testing.T) {
	root := letterLake(t)
	cols := append(slices.Clone(letterFeatures), "label")
	for _, n := range []int{1, 777, 6000, 100000} {
		var first []arrow.Record
		for _, readers := range []int{1, 4} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			l, err := Open([]string{root}, Options{Columns: cols, Readers: readers, Mem: mem, MaxMemory: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			_, recs, rep, err := l.Sample(context.Background(), SampleOptions{N: n, Seed: 7, Label: "label"})
			if err != nil {
				t.Fatal(err)
			}
			want := min(n, 60000)
			if rep.Rows != want || rep.Population != 60000 || rep.Files != 3 || rep.Mode != "reservoir" {
				t.Fatalf("n=%d: report %+v", n, rep)
			}
			if readers == 1 {
				ref := bruteSample(t, l, 7, map[string]int{"": n}, "label")
				sameRows(t, "reservoir", recs, ref)
				ref.Release()
				first = recs
				continue
			}
			g1, g2 := concatRec(t, first), concatRec(t, recs)
			if !array.RecordEqual(g1, g2) {
				t.Fatalf("n=%d: the sample depends on the number of readers", n)
			}
			g1.Release()
			g2.Release()
			for _, r := range append(first, recs...) {
				r.Release()
			}
			mem.AssertSize(t, 0)
		}
	}
}

// TestReservoirUniform: with 3 equal files, each holds a third of the
// sample within 5 standard deviations (hypergeometric), for several seeds.
func TestReservoirUniform(t *testing.T) {
	root := letterLake(t)
	l, err := Open([]string{root}, Options{Columns: []string{"x.box"}})
	if err != nil {
		t.Fatal(err)
	}
	const n, pop = 3000, 60000
	sd := math.Sqrt(n * (1.0 / 3) * (2.0 / 3) * (pop - n) / (pop - 1))
	for seed := uint64(1); seed <= 5; seed++ {
		// Count the sampled rows per file by brute force over the keys:
		// Sample returns them in file order, so compare totals.
		_, recs, rep, err := l.Sample(context.Background(), SampleOptions{N: n, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Rows != n {
			t.Fatalf("rows %d", rep.Rows)
		}
		for _, r := range recs {
			r.Release()
		}
		perFile := make([]int, 3)
		var keys []struct {
			k uint64
			f int
		}
		for fi, f := range l.Files() {
			h := pathHash(f.Rel)
			for i := int64(0); i < f.Rows; i++ {
				keys = append(keys, struct {
					k uint64
					f int
				}{rowKey(seed, h, i), fi})
			}
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].k < keys[j].k })
		for _, k := range keys[:n] {
			perFile[k.f]++
		}
		for fi, c := range perFile {
			if math.Abs(float64(c)-n/3.0) > 5*sd {
				t.Fatalf("seed %d: file %d holds %d of %d sampled rows (sd %.1f)", seed, fi, c, n, sd)
			}
		}
	}
}

func TestStratifiedSample(t *testing.T) {
	root := letterLake(t)
	cols := []string{"x.box", "onpix", "label"}
	l, err := Open([]string{root}, Options{Columns: cols, Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2600
	_, recs, rep, err := l.Sample(context.Background(), SampleOptions{N: n, Mode: Stratified, Seed: 3, Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if rep.Rows != n || len(rep.Strata) != 26 {
		t.Fatalf("report %+v", rep)
	}
	quota := map[string]int{}
	sum := 0
	for _, s := range rep.Strata {
		exact := float64(n) * float64(s.Population) / 60000
		if math.Abs(float64(s.Sampled)-exact) >= 1 {
			t.Fatalf("stratum %s: %d drawn, proportional share %.2f", s.Label, s.Sampled, exact)
		}
		quota[s.Label] = s.Sampled
		sum += s.Sampled
	}
	if sum != n {
		t.Fatalf("strata sum to %d", sum)
	}
	// The letter counts (manifest: 734..813 per letter) times 3 files.
	for _, s := range rep.Strata {
		if s.Population < 3*734 || s.Population > 3*813 {
			t.Fatalf("stratum %s population %d", s.Label, s.Population)
		}
	}
	ref := bruteSample(t, l, 3, quota, "label")
	defer ref.Release()
	sameRows(t, "stratified", recs, ref)

	if _, _, _, err := l.Sample(context.Background(), SampleOptions{N: 5, Mode: Stratified, Seed: 1, Label: "x.box"}); err == nil {
		t.Fatal("stratifying on a float column must be an error")
	}
	if _, _, _, err := l.Sample(context.Background(), SampleOptions{N: 5, Mode: Stratified}); err == nil {
		t.Fatal("stratified without a label must be an error")
	}
}

func TestSetQuotas(t *testing.T) {
	for _, c := range []struct {
		counts map[string]int64
		n      int
		want   []int
	}{
		{map[string]int64{"a": 50, "b": 30, "c": 20}, 10, []int{5, 3, 2}},
		{map[string]int64{"a": 98, "b": 1, "c": 1}, 10, []int{8, 1, 1}}, // every stratum gets one
		{map[string]int64{"a": 98, "b": 1, "c": 1}, 2, []int{2, 0, 0}},  // no room for that
		{map[string]int64{"a": 3, "b": 2}, 100, []int{3, 2}},            // everything
		{map[string]int64{"a": 1, "b": 1, "c": 1}, 2, []int{1, 1, 0}},   // ties by label
	} {
		s := &sampler{strata: map[string]int{}}
		s.setQuotas(c.counts, c.n)
		if !slices.Equal(s.quota, c.want) {
			t.Errorf("counts %v n %d: quotas %v, want %v", c.counts, c.n, s.quota, c.want)
		}
	}
}

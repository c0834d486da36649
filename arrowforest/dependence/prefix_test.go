package dependence

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// prefixData is p columns of n rows (normal, exponential and a few ties)
// and a label of k classes that depends on columns 0 and 1.
func prefixData(n, p, k int, seed uint64) ([][]float64, []int32) {
	r := rand.New(rand.NewPCG(seed, 30))
	x := make([][]float64, p)
	for c := range x {
		x[c] = make([]float64, n)
		for i := range x[c] {
			switch c % 3 {
			case 0:
				x[c][i] = r.NormFloat64()
			case 1:
				x[c][i] = r.ExpFloat64()
			default:
				x[c][i] = float64(r.IntN(5))
			}
		}
	}
	y := make([]int32, n)
	for i := range y {
		v := int32(r.IntN(k))
		if x[0][i]*x[1][i] > 0 && r.IntN(2) == 0 {
			v = 0
		}
		y[i] = v
	}
	return x, y
}

// TestPrefixSameStatistics checks that a set test whose distances come
// from its prefix triangle (prefix.go) has exactly the sums, statistic,
// approximation and permutation statistics of the sweep over every
// column: for sets of 2 to 4 columns, 2, 3 and 9 classes (masked and
// by-class within sums), a numeric label, with and without the float32
// triangle and with a lazy one. A prefix of the wrong columns or rows
// would change the bits.
func TestPrefixSameStatistics(t *testing.T) {
	const n = 203
	for _, k := range []int{2, 3, 9} {
		x, y := prefixData(n, 4, k, uint64(k))
		for s := 2; s <= 4; s++ {
			xs := x[:s]
			pre := prefixTri(xs[:s-1], n, nil)
			tri0, tri1 := make([]float32, n*(n-1)/2), make([]float32, n*(n-1)/2)
			want, got := pairPass(xs, y, k, true, tri0), pairPassPre(xs, pre, y, k, true, tri1)
			if !reflect.DeepEqual(got, want) || !slices.Equal(tri0, tri1) {
				t.Fatalf("k %d, %d columns: pairPassPre differs from pairPass", k, s)
			}
			if got, want := pairPassPre(xs, pre, y, k, true, nil), pairPass(xs, y, k, true, nil); !reflect.DeepEqual(got, want) {
				t.Fatalf("k %d, %d columns: pairPassPre without a triangle differs from pairPass", k, s)
			}
			for _, lazy := range []bool{false, true} {
				a := newSetProblemLazy(xs, y, k, StatGCor, defaultMaxCacheBytes, nil, lazy)
				b := newSetProblemPre(xs, y, k, StatGCor, defaultMaxCacheBytes, nil, lazy, pre)
				if a.exact != b.exact || a.approxZ() != b.approxZ() {
					t.Fatalf("k %d, %d columns, lazy %v: statistic %v, z %v; want %v, %v", k, s, lazy, b.exact, b.approxZ(), a.exact, a.approxZ())
				}
				a.preparePerms()
				b.preparePerms()
				if !slices.Equal(a.tri, b.tri) {
					t.Fatalf("k %d, %d columns, lazy %v: triangles differ", k, s, lazy)
				}
				wa, wb := a.newWorker(), b.newWorker()
				for i := range 5 {
					if pa, pb := wa.perm(7, i), wb.perm(7, i); pa != pb {
						t.Fatalf("k %d, %d columns, lazy %v: permutation %d: %v, want %v", k, s, lazy, i, pb, pa)
					}
				}
			}
		}
	}
	x, _ := prefixData(n, 3, 2, 5)
	v := slices.Clone(x[0])
	for i := range v {
		v[i] = v[i]*v[i] + x[1][i]
	}
	for _, lazy := range []bool{false, true} {
		a := newSetNumProblemLazy(x, v, defaultMaxCacheBytes, nil, lazy)
		b := newSetNumProblemPre(x, v, defaultMaxCacheBytes, nil, lazy, prefixTri(x[:2], n, nil))
		a.preparePerms()
		b.preparePerms()
		if a.s != b.s || !slices.Equal(a.ra, b.ra) || !slices.Equal(a.tri, b.tri) || a.approxZ() != b.approxZ() {
			t.Fatalf("numeric label, lazy %v: sums differ", lazy)
		}
	}
}

// TestPrefixSearchTests runs a search's set tests — candidate screens on
// two screen sizes (so a prefix has two triangles) and full tests on the
// subsample, sets of 2 and 3 features in bottomUp's order, on two
// goroutines — with the prefix cache (ample; room in bytes for one
// triangle of 320 rows; one triangle at most) and without: every result
// is the same, and the cache answered requests within its bounds.
func TestPrefixSearchTests(t *testing.T) {
	x, y := prefixData(900, 6, 2, 11)
	lab := Label{Y: y, K: 2}
	o, err := TestOptions{Seed: 3, MaxRows: 700, Threads: 1}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	var sets [][]int
	for a := range x {
		for b := a + 1; b < len(x); b++ {
			sets = append(sets, []int{a, b})
			for c := b + 1; c < len(x); c++ {
				sets = append(sets, []int{a, b, c})
			}
		}
	}
	type job struct {
		feats []int
		pl    testPlan
	}
	newD := func() *data {
		d := newData(x, lab, o)
		d.proj = true
		return d
	}
	d0 := newD()
	var jobs []job
	for _, ms := range []int{0, 250, 320} {
		for _, f := range sets {
			pl := testPlan{permPlan: permPlan{fixed: 9}}
			if ms > 0 {
				pl.screen = d0.screenSet(ms)
				pl.permPlan = permPlan{exceed: 1, min: 9, max: 99, approxT: 1e-3}
			}
			jobs = append(jobs, job{f, pl})
		}
	}
	run := func(d *data, j job) TestResult {
		var tri []float32
		r, _, ok := d.run(StatGCor, j.feats, setKey(StatGCor, j.feats), j.pl, 1, &tri)
		if !ok {
			t.Fatal("stopped")
		}
		return r
	}
	want := make([]TestResult, len(jobs))
	for i, j := range jobs {
		want[i] = run(d0, j)
	}
	for _, c := range []struct {
		budget int64
		built  int
	}{{1 << 30, 6}, {320 * 319 / 2 * 8, 6}, {1 << 30, 1}} {
		budget := c.budget
		d := newD()
		d.pre = newPrefixCache(budget, c.built)
		got := make([]TestResult, len(jobs))
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(jobs); i += 2 {
					got[i] = run(d, jobs[i])
				}
			}()
		}
		wg.Wait()
		for i := range jobs {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("budget %d: set %v (screen %d): %+v, want %+v", budget, jobs[i].feats, len(jobs[i].pl.screen), got[i], want[i])
			}
		}
		if d.pre.hits == 0 || d.pre.used > budget || d.pre.built > c.built {
			t.Errorf("budget %d, %d triangles: %d hits, %d bytes and %d triangles held", budget, c.built, d.pre.hits, d.pre.used, d.pre.built)
		}
	}
}

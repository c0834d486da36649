package dependence

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// allocated is the bytes f allocates (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestProjectedRowsCap: MaxProjectedRows bounds what the projected joint
// test holds — about 8d + 12K bytes a pooled row, 104 MB on these 120,000
// rows of 10 columns at 64 directions — to the capped rows: it tests that
// many rows, allocates less than 16 MB doing so, and a negative cap is
// refused.
func TestProjectedRowsCap(t *testing.T) {
	const n, d, capRows = 60_000, 10, 6_000
	r := rand.New(rand.NewPCG(11, 12))
	ref, cur := energyCols(r, n, d, 0), energyCols(r, n, d, 0)
	opt := EnergyOptions{Test: TestOptions{Perms: 8, Seed: 1, Threads: 2}, Directions: 64, MaxProjectedRows: capRows}
	var res TestResult
	var err error
	bytes := allocated(func() { res, err = EnergyTestJoint(ref, cur, opt) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows tested, %.1f MB allocated", res.Rows, float64(bytes)/1e6)
	if res.Rows != capRows {
		t.Errorf("%d rows tested, want the cap %d", res.Rows, capRows)
	}
	if bytes > 16<<20 {
		t.Errorf("%d bytes allocated with the rows capped at %d, want < 16 MiB", bytes, capRows)
	}
	opt.MaxProjectedRows = -1
	if _, err := EnergyTestJoint(ref, cur, opt); err == nil {
		t.Error("a negative MaxProjectedRows was accepted")
	}
}

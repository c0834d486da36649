package drift

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
)

// TestMaxProjectedRows: the projected joint test uses at most
// MaxProjectedRows pooled rows, a seeded subsample (the same report twice),
// while the per-feature tests use every row; a cap below 2 is refused.
func TestMaxProjectedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ref := []arrow.Record{gauss(r, 3000, 4, 0, 0)}
	cur := []arrow.Record{gauss(r, 3000, 4, 0, 0.8)}
	o := Options{Seed: 1, MaxProjectedRows: 1000}
	a, err := Test(ref, cur, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Test(ref, cur, o)
	if err != nil {
		t.Fatal(err)
	}
	if a.Joint == nil || a.Joint.Rows != 1000 || a.Joint.Method != "projections" || a.Features[0].RefRows != 3000 {
		t.Fatalf("joint %+v, feature %+v: want the joint test on 1,000 rows and the feature on every row", a.Joint, a.Features[0])
	}
	if !reflect.DeepEqual(a.Joint, b.Joint) {
		t.Errorf("the capped joint test differs between two runs: %+v and %+v", a.Joint, b.Joint)
	}
	full, err := Test(ref, cur, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if full.Joint.Rows != 6000 {
		t.Errorf("default cap: joint on %d rows, want every row (6,000)", full.Joint.Rows)
	}
	if _, err := Test(ref, cur, Options{MaxProjectedRows: 1}); err == nil {
		t.Error("MaxProjectedRows 1 was accepted")
	}
}

package fdm_test

import (
	"math/rand/v2"
	"testing"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
)

func split(t *testing.T, name string, n int, seed uint64) (*frame.Frame, *frame.Frame) {
	t.Helper()
	fr, err := synth.Generate(name, synth.Options{N: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5b1)).Perm(n)
	pick := func(rows []int) *frame.Frame {
		out := &frame.Frame{Names: fr.Names, NRows: len(rows), Task: fr.Task, Classes: fr.Classes, LabelName: fr.LabelName, Y: make([]int32, len(rows))}
		for _, c := range fr.Cols {
			v := make([]float32, len(rows))
			for q, i := range rows {
				v[q] = c[i]
			}
			out.Cols = append(out.Cols, v)
		}
		for q, i := range rows {
			out.Y[q] = fr.Y[i]
		}
		return out
	}
	return pick(perm[:n*4/5]), pick(perm[n*4/5:])
}

func testAccuracy(t *testing.T, f *forest.Forest, te *frame.Frame) float64 {
	t.Helper()
	c, err := forest.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if te, err = f.Derive(te); err != nil { // landmark RF_FDM: the group norms
		t.Fatal(err)
	}
	pr, err := c.Predict(te, 2)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, y := range te.Y {
		if pr.Class[i] == y {
			ok++
		}
	}
	return float64(ok) / float64(te.NRows)
}

// TestRFFDMOnXOR4: RF_FDM with groups found by the search (no ground
// truth), n = 1000, 80/20 split, seeds 1..3 (the e2e benchmark runs 10):
// the mean test accuracy reaches the 0.95 on xor4, where a plain
// forest with the same seed stays near 0.86, and the search recovers the
// true structure every time.
func TestRFFDMOnXOR4(t *testing.T) {
	var rf, fd float64
	for s := uint64(1); s <= 3; s++ {
		tr, te := split(t, synth.XOR4, 1000, s)
		p := forest.DefaultParams(frame.TaskClassification)
		p.Seed = s
		f, err := forest.Train(tr, p, forest.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rf += testAccuracy(t, f, te) / 3
		p.Forest = "fdm"
		f, err = forest.Train(tr, p, forest.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if f.Params.FDMGroups != "1,2,3" || f.Params.FDMMarginal != "0" {
			t.Errorf("seed %d: search found groups %q, marginal %q", s, f.Params.FDMGroups, f.Params.FDMMarginal)
		}
		fd += testAccuracy(t, f, te) / 3
	}
	t.Logf("xor4, seeds 1..3: RF %.4f, RF_FDM %.4f", rf, fd)
	if fd < 0.95 || fd < rf+0.05 {
		t.Fatalf("RF_FDM accuracy %.4f (RF %.4f): want ≥ 0.95 and well above RF", fd, rf)
	}
}

// TestRFFDMLandmarksOnXOR: RF_FDM with distance-to-landmark mappings
// (--fdm-map drl: per-tree landmark distances as split atoms over the
// features and the derived group norms) with groups found by the search,
// n = 1000, 80/20 split, seeds 1..3, beside the projection version on
// the same data and seeds. Measured over seeds 1..10 (bash
// e2e/bench/dissertation.sh, fdm-target): drl 0.9815 ± 0.0033 on xor4
// (every seed ≥ 0.960) and 0.9790 ± 0.0032 on xor2 (every seed ≥ 0.965),
// rp 0.9755 and 0.9795. Asserted: the targets (mean ≥ 0.95 on
// xor4, ≥ 0.97 on xor2), every seed ≥ 0.94 on xor4, and landmarks within
// 0.02 of projections on average.
func TestRFFDMLandmarksOnXOR(t *testing.T) {
	for _, c := range []struct {
		name   string
		target float64
	}{{synth.XOR4, 0.95}, {synth.XOR2, 0.97}} {
		acc := map[string]float64{}
		for s := uint64(1); s <= 3; s++ {
			tr, te := split(t, c.name, 1000, s)
			for _, m := range []string{fdm.MapRP, fdm.MapDRL} {
				p := forest.DefaultParams(frame.TaskClassification)
				p.Seed, p.Forest, p.FDMMap = s, "fdm", m
				f, err := forest.Train(tr, p, forest.TrainOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if f.Params.FDMGroups == "" || (m == fdm.MapDRL) != (f.Derived.Len() > 0) {
					t.Fatalf("%s seed %d %s: groups %q, %d derived inputs", c.name, s, m, f.Params.FDMGroups, f.Derived.Len())
				}
				a := testAccuracy(t, f, te)
				t.Logf("%s seed %d: RF_FDM %s %.4f (groups %q, marginal %q)", c.name, s, m, a, f.Params.FDMGroups, f.Params.FDMMarginal)
				if c.name == synth.XOR4 && a < 0.94 {
					t.Errorf("%s seed %d: RF_FDM %s accuracy %.4f < 0.94", c.name, s, m, a)
				}
				acc[m] += a / 3
			}
		}
		t.Logf("%s, seeds 1..3: RF_FDM rp %.4f, drl %.4f", c.name, acc[fdm.MapRP], acc[fdm.MapDRL])
		if acc[fdm.MapDRL] < c.target || acc[fdm.MapDRL] < acc[fdm.MapRP]-0.02 {
			t.Fatalf("%s: RF_FDM drl accuracy %.4f (rp %.4f): want ≥ %.2f and within 0.02 of rp", c.name, acc[fdm.MapDRL], acc[fdm.MapRP], c.target)
		}
	}
}

package forest

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/locality"
)

// treeFeatures lists the features a tree splits on.
func treeFeatures(f *Forest, t int) []int32 {
	x := f.Trees[t]
	seen := map[int32]bool{}
	for i := 0; i < x.NumNodes(); i++ {
		for e := x.AtomStart[i]; e < x.AtomStart[i+1]; e++ {
			seen[x.AtomFeature[e]] = true
		}
	}
	var out []int32
	for j := range seen {
		out = append(out, j)
	}
	slices.Sort(out)
	return out
}

// TestLFSPatchWindow: on a 4×4 grid with 2×2 windows every tree splits on
// features of one 2×2 patch only (dissertation §4.1), and different trees
// see different patches.
func TestLFSPatchWindow(t *testing.T) {
	fr := trunkFrame(800, 16, 1)
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.Layout, p.Width, p.Height, p.LFSSize, p.LFSMin, p.Trees = "lfs", "grid", 4, 4, 2, 2, 30
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patches := map[[2]int32]bool{}
	for tr := range f.Trees {
		fs := treeFeatures(f, tr)
		r0, c0 := fs[0]/4, fs[0]%4
		for _, j := range fs {
			r0, c0 = min(r0, j/4), min(c0, j%4)
		}
		for _, j := range fs {
			if j/4-r0 > 1 || j%4-c0 > 1 {
				t.Fatalf("tree %d splits on %v: not one 2×2 patch", tr, fs)
			}
		}
		patches[[2]int32{r0, c0}] = true
	}
	if len(patches) < 4 {
		t.Fatalf("only %d distinct patches over 30 trees", len(patches))
	}
	if f.Params.MTry < 1 || f.Params.LFSSize != 2 {
		t.Fatalf("params %+v", f.Params)
	}
}

// TestLFSNeighbourhoods: without a layout, every tree's features lie in a
// neighbourhood (a feature and its nearest features) of the learnt
// locality, of the fixed size; defaults are recorded in the params.
func TestLFSNeighbourhoods(t *testing.T) {
	fr := trunkFrame(600, 12, 2)
	p := DefaultParams(frame.TaskClassification)
	p.Forest, p.LFSSize, p.LFSMin, p.Trees, p.MaxFeatures = "lfs", 4, 4, 25, "all"
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Params.LFSDistance != locality.Geodesic || f.Params.LFSK != 8 {
		t.Fatalf("defaults not recorded: %+v", f.Params)
	}
	d, err := locality.Compute(fr.Cols, locality.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var hoods [][]int32
	for j := 0; j < d.P; j++ {
		nb, _ := d.Neighbourhood(j, 4)
		slices.Sort(nb)
		hoods = append(hoods, nb)
	}
	for tr := range f.Trees {
		fs := treeFeatures(f, tr)
		ok := false
		for _, nb := range hoods {
			in := true
			for _, j := range fs {
				if !slices.Contains(nb, j) {
					in = false
				}
			}
			ok = ok || in
		}
		if !ok {
			t.Fatalf("tree %d splits on %v, in no 4-neighbourhood", tr, fs)
		}
	}
}

// TestLFSDeterministic: the same lfs forest at 1 and 2 threads.
func TestLFSDeterministic(t *testing.T) {
	fr := trunkFrame(700, 10, 3)
	withMissing(fr, 0.02, 3)
	for _, mod := range []func(*Params){
		func(p *Params) { p.LFSDistance = locality.PCA },
		func(p *Params) { p.Layout = "series" },
		func(p *Params) { p.LFSDistance, p.LFSSize, p.LFSMin = "subspace", 6, 3 },
	} {
		var ref *Forest
		for _, threads := range []int{1, 2} {
			p := DefaultParams(frame.TaskClassification)
			p.Forest, p.Trees, p.Threads = "lfs", 16, threads
			mod(&p)
			f, err := Train(fr, p, TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.Params.Threads = 0
			if ref == nil {
				ref = f
			} else if !reflect.DeepEqual(ref, f) {
				t.Fatalf("lfs %+v: 2 threads differ from 1", p)
			}
		}
	}
}

func TestLocalParamsValidation(t *testing.T) {
	fr := trunkFrame(100, 9, 1)
	for _, mod := range []func(*Params){
		func(p *Params) { p.LFSSize = 3 },                               // lfs setting on rf
		func(p *Params) { p.FDMCandidates = 3 },                         // fdm setting on rf
		func(p *Params) { p.Forest, p.LFSSize = "lfs", 10 },             // window > p
		func(p *Params) { p.Forest, p.LFSSize, p.LFSMin = "lfs", 3, 4 }, // min > max
		func(p *Params) { p.Forest, p.LFSDistance = "lfs", "cosine" },   // unknown distance
		func(p *Params) { p.Forest, p.Layout, p.LFSDistance = "lfs", "series", "corr" },
		func(p *Params) { p.Forest, p.Layout, p.Width, p.Height = "lfs", "grid", 3, 3; p.LFSSize = 4 },
		func(p *Params) { p.Forest, p.FDMGroups = "fdm", "0,1;1,2" },              // feature in two groups
		func(p *Params) { p.Forest, p.FDMGroups = "fdm", "0,x" },                  // not an index
		func(p *Params) { p.Forest, p.FDMGroups = "fdm", "0,9" },                  // out of range
		func(p *Params) { p.Forest, p.FDMMarginal = "fdm", "0;1" },                // marginal as sets
		func(p *Params) { p.Forest, p.FDMGroups, p.FDMMap = "fdm", "0,1", "pca" }, // unknown mapping
		func(p *Params) { p.Forest, p.FDMGroups, p.FDMAlpha = "fdm", "0,1", 0.1 }, // search setting, no search
		func(p *Params) { p.Forest, p.FDMSearch = "fdm", "sideways" },             // unknown method
	} {
		p := DefaultParams(frame.TaskClassification)
		p.Trees = 2
		mod(&p)
		if _, err := Train(fr, p, TrainOptions{}); err == nil {
			t.Errorf("accepted %+v", p)
		}
	}
	// one regression target is an fdm label (mappings ranked by dCor_n);
	// several are not
	reg := trunkFrame(100, 4, 1)
	if err := reg.SetTargets([]string{"a", "b"}, make([]float64, 2*reg.NRows)); err != nil {
		t.Fatal(err)
	}
	p := DefaultParams(frame.TaskRegression)
	p.Forest, p.FDMGroups = "fdm", "0,1"
	if _, err := Train(reg, p, TrainOptions{}); err == nil {
		t.Error("fdm on a multi-output regression target accepted")
	}
}

// TestFDMRegression: RF_FDM on a numeric label. The search (dCor_n, Holm)
// finds the marginal feature and the product pair of
// y = 2·x0 + sign(x1·x2) + noise without ground truth, the trees rank
// their mappings by dCor_n, and the forest predicts better than the mean.
func TestFDMRegression(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	n := 600
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
	p := DefaultParams(frame.TaskRegression)
	p.Forest, p.Trees, p.Seed, p.Threads = "fdm", 20, 1, 2
	f, err := Train(fr, p, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Params.FDMMarginal != "0" || f.Params.FDMGroups != "1,2" || f.Params.FDMAdjust != "holm" || f.Params.FDMAlpha != 0.05 {
		t.Errorf("search recorded marginal %q groups %q adjust %q alpha %v", f.Params.FDMMarginal, f.Params.FDMGroups, f.Params.FDMAdjust, f.Params.FDMAlpha)
	}
	if f.OOB == nil || !(f.OOB.Error < 0.5*variance(fr.YReg)) {
		t.Errorf("OOB %+v, label variance %v", f.OOB, variance(fr.YReg))
	}

	// the group search reports its tests and stops with the context
	tests := 0
	if _, err := Train(fr, p, TrainOptions{SearchProgress: func(dependence.SearchProgress) { tests++ }}); err != nil {
		t.Fatal(err)
	}
	if tests == 0 {
		t.Error("the group search reported no test")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(fr, p, TrainOptions{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled search: %v", err)
	}
}

func variance(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v))
}

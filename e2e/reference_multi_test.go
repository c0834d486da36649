package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
)

// skMultiTree is testdata/sklearn_multi_tree_*.json
// (make_sklearn_multi_refs.py).
type skMultiTree struct {
	Dataset  string   `json:"dataset"`
	Features []string `json:"features"`
	Outputs  []string `json:"outputs"`
	MaxDepth int      `json:"max_depth"`
	Command  string   `json:"command"`
	Nodes    []struct {
		ID           int       `json:"id"`
		Feature      *string   `json:"feature"`
		Left         int       `json:"left"`
		Right        int       `json:"right"`
		NNodeSamples int       `json:"n_node_samples"`
		Value        []float64 `json:"value"`
		Comparable   bool      `json:"comparable"`
		Unique       bool      `json:"unique"`
		ThresholdLo  float64   `json:"threshold_lo"`
		ThresholdHi  float64   `json:"threshold_hi"`
		// SamePartition lists the other features that split the node's
		// rows exactly as scikit-learn's feature does.
		SamePartition []string `json:"same_partition_features"`
	} `json:"nodes"`
	ComparableNodes int         `json:"comparable_nodes"`
	ComparableRows  []int       `json:"comparable_rows"`
	Predictions     [][]float64 `json:"predictions"`
}

// TestMultiOutputTreeMatchesScikitLearn grows one exact multi-output
// regression tree (three targets at once) on all rows with every feature
// as a candidate and compares it with scikit-learn's DecisionTreeRegressor
// fitted to the same 2-D y (testdata/make_sklearn_multi_refs.py): node by
// node down to the first split where another partition ties (node sizes,
// children, feature, a threshold inside the same gap between data values,
// the q leaf means), and the q training predictions of every row whose
// path passes no tie. The model also survives an encode/decode round trip
// and scores the same.
func TestMultiOutputTreeMatchesScikitLearn(t *testing.T) {
	t.Parallel()
	refs, _ := filepath.Glob(filepath.Join(refDir, "sklearn_multi_tree_*.json"))
	if len(refs) < 1 {
		t.Fatalf("no scikit-learn multi-output reference in %s", refDir)
	}
	for _, path := range refs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var ref skMultiTree
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			if ref.ComparableNodes < 30 || len(ref.ComparableRows) < 300 {
				t.Fatalf("reference compares only %d nodes and %d rows", ref.ComparableNodes, len(ref.ComparableRows))
			}
			fr := loadSharedOpts(t, ref.Dataset+".parquet", frame.Options{Features: ref.Features, Targets: ref.Outputs})
			q := len(ref.Outputs)
			p := forest.DefaultParams(frame.TaskRegression)
			p.Trees, p.MaxFeatures, p.Split = 1, "all", "exact"
			p.Sample, p.SampleFraction, p.MinLeaf, p.MinSplit, p.MaxDepth = "subsample", 1, 1, 2, ref.MaxDepth
			f, err := forest.Train(fr, p, forest.TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Targets, ref.Outputs) {
				t.Fatalf("targets %v, want %v", f.Targets, ref.Outputs)
			}
			tr := f.Trees[0]
			if tr.NumNodes() < ref.ComparableNodes {
				t.Fatalf("%d nodes, scikit-learn %d comparable", tr.NumNodes(), ref.ComparableNodes)
			}
			compared := 0
			for _, nd := range ref.Nodes {
				if !nd.Comparable {
					continue
				}
				compared++
				i := nd.ID
				if got := int(tr.Count[i]); got != nd.NNodeSamples {
					t.Fatalf("node %d: %d rows, scikit-learn %d", i, got, nd.NNodeSamples)
				}
				if nd.Left < 0 {
					if !tr.IsLeaf(i) {
						t.Fatalf("node %d: internal, scikit-learn has a leaf", i)
					}
					got := tr.LeafValue[tr.LeafStart[i]:tr.LeafStart[i+1]]
					for o := range nd.Value {
						if len(got) != q || math.Abs(got[o]-nd.Value[o]) > 1e-9*math.Max(1, math.Abs(nd.Value[o])) {
							t.Fatalf("leaf %d: means %v, scikit-learn %v", i, got, nd.Value)
						}
					}
					continue
				}
				if tr.IsLeaf(i) {
					t.Fatalf("node %d: leaf, scikit-learn splits on %s", i, *nd.Feature)
				}
				if !nd.Unique {
					continue // a tie: the subtree may differ
				}
				if int(tr.Left[i]) != nd.Left || int(tr.Right[i]) != nd.Right {
					t.Fatalf("node %d: children %d,%d; scikit-learn %d,%d", i, tr.Left[i], tr.Right[i], nd.Left, nd.Right)
				}
				feat := f.Features[tr.AtomFeature[tr.AtomStart[i]]]
				thr := float64(tr.Threshold[i])
				if feat != *nd.Feature {
					if !slices.Contains(nd.SamePartition, feat) {
						t.Fatalf("node %d: split on %s; scikit-learn on %s (or one of %v, the same partition)", i, feat, *nd.Feature, nd.SamePartition)
					}
				} else if !(nd.ThresholdLo <= thr && thr < nd.ThresholdHi) {
					t.Fatalf("node %d: split %s <= %v; scikit-learn %s in [%v, %v)", i, feat, thr, *nd.Feature, nd.ThresholdLo, nd.ThresholdHi)
				}
			}
			if compared != ref.ComparableNodes {
				t.Fatalf("compared %d nodes, the reference marks %d", compared, ref.ComparableNodes)
			}
			// through the model file, as a user scores it
			data, _, err := model.EncodeBytes(f, model.Meta{CreatedBy: "test"})
			if err != nil {
				t.Fatal(err)
			}
			g, _, err := model.DecodeBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			c, err := forest.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			pred, err := c.Predict(fr, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(pred.Value) != fr.NRows*q {
				t.Fatalf("%d predicted values for %d rows × %d outputs", len(pred.Value), fr.NRows, q)
			}
			for _, r := range ref.ComparableRows {
				for o, want := range ref.Predictions[r] {
					if got := pred.Value[r*q+o]; math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
						t.Fatalf("row %d output %s: %v, scikit-learn %v", r, ref.Outputs[o], got, want)
					}
				}
			}
		})
	}
}

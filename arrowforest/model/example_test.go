package model_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/arrowforest/tree"
)

// A one-split regression forest: go left when x ≤ 2.5 (or x is missing).
func tinyForest() *forest.Forest {
	return &forest.Forest{
		Kind:      "rf",
		Task:      frame.TaskRegression,
		Features:  []string{"x"},
		LabelName: "y",
		Trees: []*tree.Tree{{
			Left:        []int32{1, -1, -1},
			Right:       []int32{2, -1, -1},
			Threshold:   []float32{2.5, 0, 0},
			MissingLeft: []bool{true, false, false},
			Count:       []float32{10, 4, 6},
			AtomStart:   []int32{0, 1, 1, 1},
			AtomFeature: []int32{0},
			AtomWeight:  []float32{1},
			LeafStart:   []int32{0, 0, 1, 2},
			LeafValue:   []float64{-1, 1},
		}},
		Params: forest.Params{Trees: 1, Seed: 1},
	}
}

func Example() {
	b, meta, err := model.EncodeBytes(tinyForest(), model.Meta{Version: 7, CreatedBy: "forestd example"})
	if err != nil {
		log.Fatal(err)
	}

	f, got, err := model.DecodeBytes(b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("trees:", len(f.Trees), "features:", f.Features, "task:", f.Task)
	fmt.Println("version:", got.Version, "same id:", got.ID == meta.ID, "id length:", len(got.ID))

	// A strict prefix is reported as truncated.
	_, _, err = model.DecodeBytes(b[:len(b)-8])
	fmt.Println(errors.Is(err, model.ErrTruncated), err)

	// The bytes are a plain Arrow IPC stream.
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release()
	format, _ := r.Schema().Metadata().GetValue(model.KeyFormat)
	fmt.Println(format, r.Schema().Field(0).Name, r.Schema().Field(1).Name, r.Schema().NumFields())
	// Output:
	// trees: 1 features: [x] task: regression
	// version: 7 same id: true id length: 64
	// true truncated model: stream ended after 3 of 3 nodes without an end-of-stream marker
	// forestd-model split value 2
}

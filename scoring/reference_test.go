package scoring_test

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/scoring"
)

// TestModelReference: a model encoded with a reference sample gives it
// back after Decode (the one loader), one without gives nil, and the
// sample does not change the model ID.
func TestModelReference(t *testing.T) {
	fr := trunk(t, 300, 1)
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Seed, p.Threads = 5, 3, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := model.SampleReference(fr, f, 100, 7)
	with, err := scoring.EncodeMeta(f, model.Meta{Version: 1, CreatedBy: "test", Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	without, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	if with.ID() != without.ID() {
		t.Fatalf("IDs %s and %s", with.ID(), without.ID())
	}
	got, err := scoring.Decode(with.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	r := got.Reference()
	if r == nil || r.NumRows() != 100 || int(r.NumCols()) != len(got.Columns()) || !array.RecordApproxEqual(r, ref, array.WithNaNsEqual(true)) {
		t.Fatalf("reference after Decode: %v", r)
	}
	if got, _ := scoring.Decode(without.Bytes()); got.Reference() != nil {
		t.Fatal("a model without a sample has one")
	}
}

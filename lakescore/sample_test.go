package lakescore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/lakescore"
)

// TestSampleFrameAndRecords: a training sample decodes the label and the
// features only (not the partition column unless named), draws the same
// rows for the same seed, stratifies by the label; select's sample keeps
// every file column and the partition columns asked for.
func TestSampleFrameAndRecords(t *testing.T) {
	root := lakeOf(t, map[string]string{"day=1/a.parquet": "iris.parquet", "day=2/a.parquet": "iris.parquet"})
	opts := lakescore.SampleOptions{N: 60, Mode: lake.Stratified, Seed: 3}
	fr, rep, err := lakescore.SampleFrame(context.Background(), []string{root}, frame.Options{Label: "label"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fr.NRows != 60 || rep == nil || slices.Contains(fr.Names, "day") || slices.Contains(fr.Names, "label") || fr.P() != 4 {
		t.Fatalf("%d rows, features %v, report %+v", fr.NRows, fr.Names, rep)
	}
	again, _, err := lakescore.SampleFrame(context.Background(), []string{root}, frame.Options{Label: "label"}, opts)
	if err != nil || !slices.Equal(again.Cols[0], fr.Cols[0]) {
		t.Fatalf("another draw with the same seed: %v", err)
	}
	counts := map[int32]int{}
	for _, y := range fr.Y {
		counts[y]++
	}
	if len(counts) != 3 || counts[0] != 20 || counts[1] != 20 {
		t.Fatalf("stratified sample of iris's three classes: %v", counts)
	}
	if _, _, err := lakescore.SampleFrame(context.Background(), []string{root}, frame.Options{Label: "label", Features: []string{"label"}}, opts); err == nil {
		t.Fatal("the label among the features was accepted")
	}
	schema, recs, _, err := lakescore.SampleRecords(context.Background(), []string{root}, "label", []string{"day"}, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows != 60 || schema.NumFields() != 6 || len(schema.FieldIndices("day")) != 1 {
		t.Fatalf("%d rows of %v", rows, schema)
	}
}

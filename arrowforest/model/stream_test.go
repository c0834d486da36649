package model

import (
	"bytes"
	"testing"

	"github.com/forestd/forestd/arrowforest/forest"
)

// TestStreamSameBytes: Encode, which reads the node table from the trees
// a batch at a time (forestRows), writes the bytes of the whole table's
// encoding (flatten, then write) — the same digest, model ID and record
// batches — with batches that start and end inside trees (a few rows, or
// a few bytes, per batch) and across many trees, for classification,
// regression, many outputs and oblique atoms.
func TestStreamSameBytes(t *testing.T) {
	forests := map[string]*forest.Forest{
		"class": classForest(), "reg": regForest(), "multi": multiForest(),
		"random": randomForest(3, 7, 40, 6, 3, 4),
	}
	codecs := []codec{{}, {MaxBatchRows: 3}, {MaxBatchRows: 17}, {MaxBatchBytes: 1}, {MaxBatchBytes: 4000}}
	for name, f := range forests {
		for _, c := range codecs {
			meta := Meta{Version: 2, CreatedBy: "test"}
			var got bytes.Buffer
			m, err := c.encodeFormat4(&got, f, meta)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			tab, err := flatten(f)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := encodeMeta(f, meta, tab.rows)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			id, err := c.write(&want, tab, entries)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID != id || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s, %+v: streamed encoding (%d bytes, id %s) differs from the whole table's (%d bytes, id %s)",
					name, c, got.Len(), m.ID, want.Len(), id)
			}
		}
	}
}

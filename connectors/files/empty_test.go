package files

import (
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
)

func TestWriteReadEmpty(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, name := range []string{"e.parquet", "e.arrow", "e.arrows", "e.csv"} {
		p := filepath.Join(t.TempDir(), name)
		if err := WriteFile(p, schema, nil, WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, recs, err := ReadPaths([]string{p}, ReadOptions{Mem: mem})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(recs) != 0 || s.NumFields() != 2 || s.Field(1).Name != "label" {
			t.Errorf("%s: %d records, schema %v", name, len(recs), s)
		}
	}
}

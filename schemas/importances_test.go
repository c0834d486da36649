package schemas

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestBuildImportances(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, err := BuildImportances(mem, "m1", 4, []ImportanceRow{{"x1", "impurity", 0.7}, {"x2", "impurity", 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(Importances()) || rec.NumRows() != 2 {
		t.Fatalf("record %v", rec)
	}
	if rec.Column(2).(*array.String).Value(1) != "x2" || rec.Column(4).(*array.Float64).Value(0) != 0.7 ||
		rec.Column(1).(*array.Int64).Value(1) != 4 {
		t.Fatal("values")
	}
	if _, err := BuildImportances(mem, "m1", 4, []ImportanceRow{{"", "impurity", 1}}); err == nil {
		t.Fatal("row without a feature accepted")
	}
}

package operators

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
)

// intBatch is an Arrow batch of n rows: x1 = i, and an int64 label y =
// label(i) (or, with str, the label as a string column).
func intBatch(mem memory.Allocator, n int, label func(i int) int64, str bool) arrow.Record {
	yt := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if str {
		yt = arrow.BinaryTypes.String
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x1", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: yt}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Float64Builder).Append(float64(i))
		if str {
			b.Field(1).(*array.StringBuilder).Append("c" + string(rune('a'+label(i)%26)))
		} else {
			b.Field(1).(*array.Int64Builder).Append(label(i))
		}
	}
	return b.NewRecord()
}

// TestTrainerAutoNumeric: with task auto, a streamed integer label of more
// than frame.MaxAutoClasses distinct values is learnt as numbers — as
// forestd train and analyze read it — and one of fewer as classes; the
// first training window decides and later ones follow, so the model's task
// does not flip as windows cross the line; task classification keeps
// classes; string labels stay classes.
func TestTrainerAutoNumeric(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	add := func(tr *Trainer, rec arrow.Record) {
		t.Helper()
		defer rec.Release()
		if _, _, err := tr.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	snap := func(tr *Trainer) *frame.Frame {
		t.Helper()
		fr, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	many := func(i int) int64 { return int64(i * 7) } // as many values as rows
	params := smallParams(1)
	params.Criterion = "" // the task's, as the daemon and forestd_train leave it
	few := func(i int) int64 { return int64(i % 5) }

	// many values first: numbers, and still numbers when the window holds five
	tr, err := NewTrainer(TrainOptions{Label: "y", Window: 100, MinRows: 10, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	add(tr, intBatch(mem, 100, many, false))
	if fr := snap(tr); fr.Task != frame.TaskRegression || fr.YReg[3] != 21 {
		t.Fatalf("100 distinct integers: task %v", fr.Task)
	}
	add(tr, intBatch(mem, 100, few, false))
	fr := snap(tr)
	if fr.Task != frame.TaskRegression {
		t.Fatalf("5 distinct integers after the window was numeric: task %v", fr.Task)
	}
	if f, err := tr.Train(t.Context(), fr, 1); err != nil || f.Task != frame.TaskRegression {
		t.Fatalf("train: %v", err)
	}

	// few values first: classes, and still classes when the window holds many
	tr, _ = NewTrainer(TrainOptions{Label: "y", Window: 100, MinRows: 10, Params: smallParams(1)})
	add(tr, intBatch(mem, 100, few, false))
	if fr := snap(tr); fr.Task != frame.TaskClassification || len(fr.Classes) != 5 {
		t.Fatalf("5 distinct integers: task %v, %d classes", fr.Task, len(fr.Classes))
	}
	add(tr, intBatch(mem, 100, many, false))
	if fr := snap(tr); fr.Task != frame.TaskClassification {
		t.Fatalf("100 distinct integers after the window was classes: task %v", fr.Task)
	}

	// task classification: classes whatever their number
	tr, _ = NewTrainer(TrainOptions{Label: "y", Task: frame.TaskClassification, Window: 100, MinRows: 10, Params: smallParams(1)})
	add(tr, intBatch(mem, 100, many, false))
	if fr := snap(tr); fr.Task != frame.TaskClassification || len(fr.Classes) != 100 {
		t.Fatalf("task classification: task %v, %d classes", fr.Task, len(fr.Classes))
	}

	// a label decided numeric that then holds a name is an error naming it
	tr, _ = NewTrainer(TrainOptions{Label: "y", Window: 100, MinRows: 10, Params: smallParams(1)})
	add(tr, intBatch(mem, 100, many, false))
	snap(tr)
	add(tr, intBatch(mem, 10, few, true))
	if _, err := tr.Snapshot(time.Now()); err == nil || !strings.Contains(err.Error(), `label "y"`) {
		t.Fatalf("a name in a numeric label's window: %v", err)
	}
}

package operators

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/scoring"
)

// multiTargets are the label columns of multiBatch.
var multiTargets = []string{"a", "b", "c"}

// multiRow is input row id of multiBatch: its features and its targets a,
// b, c; ok is false when a target is null (a) or NaN (b), i.e. the row is
// skipped.
func multiRow(id int) (x1, x2 float64, x3 int64, y [3]float64, ok bool) {
	x1 = float64(id)
	x2 = math.Sin(float64(id) / 3)
	x3 = int64(id % 13)
	y = [3]float64{2*x1 + x2, x1 - float64(x3), float64(id % 5)}
	return x1, x2, x3, y, id%7 != 3 && id%11 != 5
}

// multiBatch is a labelled batch of rows lo..lo+n-1 (see multiRow): float
// features x1 (the row id) and x2, an integer feature x3, float targets a
// (null on rows id%7 == 3) and b (NaN on rows id%11 == 5) and an integer
// target c.
func multiBatch(mem memory.Allocator, lo, n int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x1", Type: arrow.PrimitiveTypes.Float64}, {Name: "x2", Type: arrow.PrimitiveTypes.Float64},
		{Name: "x3", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Float64}, {Name: "c", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for id := lo; id < lo+n; id++ {
		x1, x2, x3, y, _ := multiRow(id)
		b.Field(0).(*array.Float64Builder).Append(x1)
		b.Field(1).(*array.Float64Builder).Append(x2)
		b.Field(2).(*array.Int64Builder).Append(x3)
		if id%7 == 3 {
			b.Field(3).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(3).(*array.Float64Builder).Append(y[0])
		}
		if id%11 == 5 {
			b.Field(4).(*array.Float64Builder).Append(math.NaN())
		} else {
			b.Field(4).(*array.Float64Builder).Append(y[1])
		}
		b.Field(5).(*array.Int64Builder).Append(int64(y[2]))
	}
	return b.NewRecord()
}

// validRows lists the ids of rows lo..hi-1 that carry every target.
func validRows(lo, hi int) []int {
	var ids []int
	for id := lo; id < hi; id++ {
		if _, _, _, _, ok := multiRow(id); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// checkMultiRow fails unless row i of the multi-output frame fr is input
// row id: its features and its three targets.
func checkMultiRow(t *testing.T, fr *frame.Frame, i, id int) {
	t.Helper()
	x1, x2, x3, y, _ := multiRow(id)
	if fr.Cols[0][i] != float32(x1) || fr.Cols[1][i] != float32(x2) || fr.Cols[2][i] != float32(x3) {
		t.Fatalf("window row %d has features %v %v %v, want input row %d", i, fr.Cols[0][i], fr.Cols[1][i], fr.Cols[2][i], id)
	}
	if got := fr.YReg[3*i : 3*i+3]; !slices.Equal(got, y[:]) {
		t.Fatalf("window row %d (input row %d) has targets %v, want %v", i, id, got, y)
	}
}

func multiParams(seed uint64) forest.Params {
	p := forest.DefaultParams(frame.TaskRegression)
	p.Trees, p.Seed, p.Threads = 15, seed, 1
	return p
}

// TestTrainerMultiCountWindow: a count window with several labels keeps
// the most recent rows that carry every target, oldest first, with their
// q targets in the frame's row-major YReg (frame.SetTargets: Targets are
// the labels, regression); rows with a null or NaN target are skipped and
// counted; the window trains a multi-output forest.
func TestTrainerMultiCountWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := NewTrainer(TrainOptions{Labels: multiTargets, Window: 100, MinRows: 10, RetrainRows: 60, Params: multiParams(1)})
	if err != nil {
		t.Fatal(err)
	}
	added, skipped := 0, 0
	for lo := 0; lo < 250; lo += 50 {
		rec := multiBatch(mem, lo, 50)
		a, s, err := tr.Add(rec.Schema(), []arrow.Record{rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if want := len(validRows(lo, lo+50)); a != want || a+s != 50 {
			t.Fatalf("batch at %d: %d added, %d skipped; want %d added", lo, a, s, want)
		}
		added += a
		skipped += s
	}
	valid := validRows(0, 250)
	st := tr.Stats()
	if added != len(valid) || skipped == 0 || st.Skipped != int64(skipped) || st.Seen != int64(added) ||
		st.Rows != 100 || st.Evicted != int64(added-100) {
		t.Fatalf("stats %+v after %d added, %d skipped", st, added, skipped)
	}
	if !tr.Due(time.Now()) {
		t.Fatal("not due")
	}
	fr, err := tr.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := fr.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fr.Targets, multiTargets) || fr.Task != frame.TaskRegression || fr.LabelName != "a,b,c" ||
		fr.NumOutputs() != 3 || fr.NRows != 100 || !slices.Equal(fr.Names, []string{"x1", "x2", "x3"}) {
		t.Fatalf("snapshot: targets %v task %v label %q rows %d features %v", fr.Targets, fr.Task, fr.LabelName, fr.NRows, fr.Names)
	}
	last := valid[len(valid)-100:]
	for i, id := range last {
		checkMultiRow(t, fr, i, id)
	}
	f, err := tr.Train(context.Background(), fr, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Targets, multiTargets) || !forest.IsMultiOutput(f) || len(f.Trees) != 15 || f.Params.Criterion != "mse" {
		t.Fatalf("trained forest: targets %v, %d trees, criterion %q", f.Targets, len(f.Trees), f.Params.Criterion)
	}
}

// TestTrainerMultiReservoir: a reservoir with several labels samples the
// same rows as a single-label reservoir with the same seed (the targets
// per row do not change the draws), and every sampled row keeps its own
// targets.
func TestTrainerMultiReservoir(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const w = 40
	multi, err := NewTrainer(TrainOptions{Labels: multiTargets, Window: w, MinRows: 2, Kind: WindowReservoir, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// "c" has no null: rows where a or b is missing are dropped first, so
	// the single-label trainer gets exactly the valid rows
	single, err := NewTrainer(TrainOptions{Label: "c", Task: frame.TaskRegression, Exclude: []string{"a", "b"},
		Window: w, MinRows: 2, Kind: WindowReservoir, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < 400; lo += 20 {
		rec := multiBatch(mem, lo, 20)
		if _, _, err := multi.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		for _, id := range validRows(lo, lo+20) {
			one := multiBatch(mem, id, 1)
			if _, _, err := single.Add(one.Schema(), []arrow.Record{one}); err != nil {
				t.Fatal(err)
			}
			one.Release()
		}
	}
	fm, err := multi.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := single.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if fm.NRows != w || !slices.Equal(fm.Cols[0], fs.Cols[0]) {
		t.Fatalf("reservoirs differ: %d rows\n%v\n%v", fm.NRows, fm.Cols[0], fs.Cols[0])
	}
	if st := multi.Stats(); st.Seen != int64(len(validRows(0, 400))) || st.Skipped != int64(400-len(validRows(0, 400))) {
		t.Fatalf("stats %+v", st)
	}
	seen := map[float32]bool{}
	for i := 0; i < fm.NRows; i++ {
		id := int(fm.Cols[0][i])
		if seen[fm.Cols[0][i]] {
			t.Fatalf("row %d sampled twice", id)
		}
		seen[fm.Cols[0][i]] = true
		checkMultiRow(t, fm, i, id)
		if fs.YReg[i] != fm.YReg[3*i+2] {
			t.Fatalf("row %d: single-label target %v, multi-output c %v", id, fs.YReg[i], fm.YReg[3*i+2])
		}
	}
}

// TestTrainerMultiMatchesForestTrain: the daemon's window trains the same
// multi-output model (same model bytes) as forest.Train on the frame that
// frame.FromRecords builds from the same rows with Targets, as forestd
// train --label a,b,c does.
func TestTrainerMultiMatchesForestTrain(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, kind := range []forest.Kind{forest.KindRF, forest.KindSPORF} {
		p := multiParams(7)
		p.Forest = kind
		tr, err := NewTrainer(TrainOptions{Labels: multiTargets, Window: 500, MinRows: 50, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		var recs []arrow.Record
		for lo := 0; lo < 300; lo += 60 {
			rec := multiBatch(mem, lo, 60)
			if _, _, err := tr.Add(rec.Schema(), []arrow.Record{rec}); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
		win, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Train(context.Background(), win, 2)
		if err != nil {
			t.Fatal(err)
		}
		offline, err := frame.FromRecords(recs[0].Schema(), recs, frame.Options{Targets: multiTargets})
		releaseAll(recs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(offline.YReg, win.YReg) || !slices.Equal(offline.Cols[2], win.Cols[2]) || offline.SkippedLabels == 0 {
			t.Fatalf("%s: window frame differs from frame.FromRecords", kind)
		}
		want, err := forest.Train(offline, p, forest.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gb, _, err := model.EncodeBytes(got, model.Meta{Version: 1, CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		wb, _, err := model.EncodeBytes(want, model.Meta{Version: 1, CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gb, wb) {
			t.Fatalf("%s: the daemon's multi-output model differs from forest.Train's on the same rows", kind)
		}
	}
}

// TestTrainerMultiBadInput: a batch without a target column, or with a
// non-numeric one, is an input error that adds nothing; several labels
// refuse classification, the one-label fdm kind, drf, and bad lists.
func TestTrainerMultiBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := NewTrainer(TrainOptions{Labels: multiTargets, Window: 100, MinRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	rec := multiBatch(mem, 0, 30)
	defer rec.Release()
	added, _, err := tr.Add(rec.Schema(), []arrow.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	// no target b
	noB := array.NewRecord(arrow.NewSchema(slices.Delete(slices.Clone(rec.Schema().Fields()), 4, 5), nil),
		slices.Delete(slices.Clone(rec.Columns()), 4, 5), rec.NumRows())
	defer noB.Release()
	if _, _, err := tr.Add(noB.Schema(), []arrow.Record{noB}); !errors.Is(err, scoring.ErrInput) || !strings.Contains(err.Error(), `column "b"`) {
		t.Fatalf("batch without target b: %v", err)
	}
	// a string target c
	sb := array.NewStringBuilder(mem)
	for i := 0; i < int(rec.NumRows()); i++ {
		sb.Append("x")
	}
	str := sb.NewArray()
	sb.Release()
	defer str.Release()
	fields := slices.Clone(rec.Schema().Fields())
	fields[5] = arrow.Field{Name: "c", Type: arrow.BinaryTypes.String}
	cols := slices.Clone(rec.Columns())
	cols[5] = str
	strC := array.NewRecord(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer strC.Release()
	if _, _, err := tr.Add(strC.Schema(), []arrow.Record{strC}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("string target: %v", err)
	}
	if st := tr.Stats(); st.Rows != added {
		t.Fatalf("refused batches added rows: %+v", st)
	}
	bad := map[string]TrainOptions{
		"classification takes one label": {Labels: multiTargets, Task: frame.TaskClassification},
		"forest fdm learns one label":    {Labels: multiTargets, Params: forest.Params{Forest: "fdm", Trees: 10}},
		"forest drf is not a streaming":  {Labels: multiTargets, Params: forest.Params{Forest: "drf", Trees: 10}},
		`column "a" twice`:               {Labels: []string{"a", "b", "a"}},
		"empty column name":              {Labels: []string{"a", ""}},
		"also listed as a feature":       {Labels: multiTargets, Features: []string{"x1", "b"}},
		"also listed as excluded":        {Labels: multiTargets, Exclude: []string{"c"}},
		"exclude each other":             {Label: "y", Labels: multiTargets},
	}
	for want, o := range bad {
		if _, err := NewTrainer(o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", o, err, want)
		}
	}
	// one entry is the single-label trainer
	one, err := NewTrainer(TrainOptions{Labels: []string{"y"}})
	if err != nil || one.Options().Label != "y" || one.Options().Labels != nil {
		t.Fatalf("Labels [y]: %v %+v", err, one.Options())
	}
}

package operators

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/scoring"
)

func trunk(t testing.TB, n int, seed uint64) *frame.Frame {
	t.Helper()
	fr, err := synth.Generate(synth.Trunk, synth.Options{N: n, Seed: seed, P: 5})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

func smallParams(seed uint64) forest.Params {
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 20, seed, 1
	return p
}

func trainModel(t testing.TB, fr *frame.Frame, version int64) *scoring.Model {
	t.Helper()
	f, err := forest.Train(fr, smallParams(3), forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, version, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCurrentHotSwap(t *testing.T) {
	fr := trunk(t, 300, 1)
	m1, m2 := trainModel(t, fr, 1), trainModel(t, fr, 2)
	c := NewCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait without a model: %v", err)
	}
	got := make(chan *scoring.Model)
	go func() {
		m, _ := c.Wait(context.Background())
		got <- m
	}()
	if err := c.Offer(m2); err != nil {
		t.Fatalf("first model refused: %v", err)
	}
	if m := <-got; m != m2 {
		t.Fatal("Wait returned another model")
	}
	if err := c.Offer(m1); !errors.Is(err, ErrNotNewer) {
		t.Fatalf("older version over a newer one: %v", err)
	}
	if err := c.Offer(m2); !errors.Is(err, ErrLive) {
		t.Fatalf("the same model twice: %v", err)
	}
	// same version, different content: the larger ID wins, whatever order
	// the replicas see them in
	fr2 := trunk(t, 300, 9)
	a, b := trainModel(t, fr2, 3), trainModel(t, fr, 3)
	if a.ID() == b.ID() {
		t.Fatal("different forests with one ID")
	}
	hi := a
	if b.ID() > a.ID() {
		hi = b
	}
	for _, order := range [][2]*scoring.Model{{a, b}, {b, a}} {
		c := NewCurrent()
		c.Offer(m2)
		c.Offer(order[0])
		c.Offer(order[1])
		if c.Load() != hi {
			t.Fatal("replicas did not converge on the same model")
		}
	}
	// concurrent offers end on the newest
	c = NewCurrent()
	var wg sync.WaitGroup
	for _, m := range []*scoring.Model{m1, m2, a, b, m1, m2} {
		wg.Add(1)
		go func() { defer wg.Done(); c.Offer(m) }()
	}
	wg.Wait()
	if c.Load() != hi {
		t.Fatalf("concurrent offers ended on version %d", c.Load().Version())
	}
}

// TestCurrentColumns: a newer model that reads other source columns is
// refused, naming the columns, unless AllowColumnChange is set.
func TestCurrentColumns(t *testing.T) {
	m1 := trainModel(t, trunk(t, 300, 1), 1)
	other := trunk(t, 300, 2)
	other.Names[4] = "x99"
	m2 := trainModel(t, other, 2)
	c := NewCurrent()
	if err := c.Offer(m1); err != nil {
		t.Fatal(err)
	}
	err := c.Offer(m2)
	if !errors.Is(err, ErrColumnsChanged) || !strings.Contains(err.Error(), "x99") || c.Load() != m1 {
		t.Fatalf("model for other columns: %v", err)
	}
	c = NewCurrent()
	c.AllowColumnChange = true
	if err := c.Offer(m1); err != nil {
		t.Fatal(err)
	}
	if err := c.Offer(m2); err != nil || c.Load() != m2 {
		t.Fatalf("allowed column change refused: %v", err)
	}
}

func labelled(t testing.TB, mem memory.Allocator, n int, seed uint64) (*arrow.Schema, []arrow.Record) {
	rec := trunk(t, n, seed).ToRecord(mem)
	return rec.Schema(), []arrow.Record{rec}
}

func releaseAll(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}

func TestTrainerCountWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := NewTrainer(TrainOptions{Label: "y", Window: 100, MinRows: 10, RetrainRows: 60, Params: smallParams(1)})
	if err != nil {
		t.Fatal(err)
	}
	all := trunk(t, 250, 4)
	rec := all.ToRecord(mem)
	defer rec.Release()
	for lo := int64(0); lo < 250; lo += 50 {
		s := rec.NewSlice(lo, lo+50)
		if _, _, err := tr.Add(s.Schema(), []arrow.Record{s}); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if lo == 0 && tr.Due(time.Now()) {
			t.Fatal("due after 50 of 60 rows")
		}
	}
	st := tr.Stats()
	if st.Rows != 100 || st.Seen != 250 || st.Evicted != 150 {
		t.Fatalf("stats %+v", st)
	}
	if !tr.Due(time.Now()) {
		t.Fatal("not due after 250 new rows")
	}
	fr, err := tr.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// the window holds the last 100 rows, oldest first
	for i := 0; i < 100; i++ {
		if fr.Cols[0][i] != all.Cols[0][150+i] || fr.Classes[fr.Y[i]] != all.Classes[all.Y[150+i]] {
			t.Fatalf("window row %d is not input row %d", i, 150+i)
		}
	}
	if tr.Due(time.Now()) {
		t.Fatal("due right after a snapshot")
	}
	f, err := tr.Train(context.Background(), fr, 1)
	if err != nil || len(f.Trees) != 20 {
		t.Fatalf("train: %v", err)
	}
}

func TestTrainerRetrainEvery(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, _ := NewTrainer(TrainOptions{Label: "y", Window: 1000, MinRows: 10, RetrainEvery: time.Minute})
	s, recs := labelled(t, mem, 20, 1)
	defer releaseAll(recs)
	t0 := time.Now()
	tr.Add(s, recs)
	if tr.Due(t0) {
		t.Fatal("due before the interval")
	}
	if !tr.Due(t0.Add(2 * time.Minute)) {
		t.Fatal("not due after the interval")
	}
	tr.Snapshot(t0.Add(2 * time.Minute))
	if tr.Due(t0.Add(10 * time.Minute)) {
		t.Fatal("due with no new rows")
	}
}

// TestReservoirUniform checks Algorithm R's defining property: after k rows,
// each row is in the reservoir with probability w/k. Over 400 seeds, each of
// 40 rows should be kept 400·10/40 = 100 times; a binomial(400, 1/4) count
// lies within 100 ± 45 (5.2 standard deviations) unless the sampler is biased.
func TestReservoirUniform(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const k, w, runs = 40, 10, 400
	// x1 identifies the row
	fb := array.NewFloat64Builder(mem)
	lb := array.NewInt64Builder(mem)
	for i := 0; i < k; i++ {
		fb.Append(float64(i))
		lb.Append(int64(i % 2))
	}
	x, y := fb.NewArray(), lb.NewArray()
	fb.Release()
	lb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x1", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecord(schema, []arrow.Array{x, y}, k)
	x.Release()
	y.Release()
	defer rec.Release()
	counts := make([]int, k)
	for seed := uint64(0); seed < runs; seed++ {
		tr, _ := NewTrainer(TrainOptions{Label: "y", Window: w, MinRows: 2, Kind: WindowReservoir, Seed: seed})
		for i := int64(0); i < k; i++ { // one row per message
			s := rec.NewSlice(i, i+1)
			tr.Add(schema, []arrow.Record{s})
			s.Release()
		}
		fr, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if fr.NRows != w {
			t.Fatalf("reservoir holds %d rows", fr.NRows)
		}
		for _, v := range fr.Cols[0] {
			counts[int(v)]++
		}
	}
	for i, c := range counts {
		if math.Abs(float64(c)-100) > 45 {
			t.Fatalf("row %d kept %d times in %d runs; expected about 100: %v", i, c, runs, counts)
		}
	}
}

// TestTrainDeterministic: the same labelled rows and seed give the same
// model bytes at any thread count.
func TestTrainDeterministic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var models [][]byte
	for _, threads := range []int{1, 2, 3} {
		tr, _ := NewTrainer(TrainOptions{Label: "y", Window: 500, Params: smallParams(11)})
		s, recs := labelled(t, mem, 400, 5)
		tr.Add(s, recs)
		releaseAll(recs)
		fr, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Train(context.Background(), fr, threads)
		if err != nil {
			t.Fatal(err)
		}
		m, err := scoring.Encode(f, 1, "test")
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, m.Bytes())
	}
	if !bytes.Equal(models[0], models[1]) || !bytes.Equal(models[0], models[2]) {
		t.Fatal("model bytes depend on the thread count")
	}
}

func TestTrainerBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, _ := NewTrainer(TrainOptions{Label: "y", Window: 100, MinRows: 10})
	s, recs := labelled(t, mem, 20, 1)
	defer releaseAll(recs)
	if _, _, err := tr.Add(s, recs); err != nil {
		t.Fatal(err)
	}
	// no label column
	noY := array.NewRecord(arrow.NewSchema(s.Fields()[:5], nil), recs[0].Columns()[:5], 20)
	defer noY.Release()
	if _, _, err := tr.Add(noY.Schema(), []arrow.Record{noY}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("batch without label: %v", err)
	}
	// a feature missing
	noX := array.NewRecord(arrow.NewSchema(s.Fields()[1:], nil), recs[0].Columns()[1:], 20)
	defer noX.Release()
	if _, _, err := tr.Add(noX.Schema(), []arrow.Record{noX}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("batch without x1: %v", err)
	}
	// a float label after an integer one: regression after classification
	fb := array.NewFloat64Builder(mem)
	for i := 0; i < 20; i++ {
		fb.Append(float64(i) / 3)
	}
	yf := fb.NewArray()
	fb.Release()
	defer yf.Release()
	fields := append(append([]arrow.Field(nil), s.Fields()[:5]...), arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float64})
	reg := array.NewRecord(arrow.NewSchema(fields, nil), append(append([]arrow.Array(nil), recs[0].Columns()[:5]...), yf), 20)
	defer reg.Release()
	if _, _, err := tr.Add(reg.Schema(), []arrow.Record{reg}); !errors.Is(err, scoring.ErrInput) {
		t.Fatalf("regression label after classification: %v", err)
	}
	if tr.Stats().Rows != 20 {
		t.Fatalf("refused batches added rows: %+v", tr.Stats())
	}
	for _, bad := range []TrainOptions{{}, {Label: "y", Window: 1}, {Label: "y", Kind: "lru"}, {Label: "y", MinRows: 1},
		{Label: "y", Window: 10, MinRows: 20}, {Label: "y", Features: []string{"y"}}, {Label: "y", RetrainRows: -1}} {
		if _, err := NewTrainer(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestTrainerFeatureWithoutValues: a listed feature that no row of the
// window carries (a null column, as the JSON reader makes for a key no
// message has) is refused at the retrain, naming the column and the
// window's size; it used to train an all-null column silently.
func TestTrainerFeatureWithoutValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := NewTrainer(TrainOptions{Label: "y", Features: []string{"x1", "nosuch"}, Window: 100, MinRows: 10, Params: smallParams(1)})
	if err != nil {
		t.Fatal(err)
	}
	s, recs := labelled(t, mem, 40, 1)
	defer releaseAll(recs)
	nb := array.NewFloat64Builder(mem)
	nb.AppendNulls(40)
	nulls := nb.NewArray()
	nb.Release()
	defer nulls.Release()
	withNull := array.NewRecord(arrow.NewSchema(append(s.Fields(), arrow.Field{Name: "nosuch", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), nil),
		append(recs[0].Columns(), nulls), 40)
	defer withNull.Release()
	if _, _, err := tr.Add(withNull.Schema(), []arrow.Record{withNull}); err != nil {
		t.Fatal(err) // a message may lack a value; the window as a whole may not
	}
	fr, err := tr.Snapshot(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Train(context.Background(), fr, 1)
	if !errors.Is(err, frame.ErrNoValues) || !strings.Contains(err.Error(), "training on 40 rows") || !strings.Contains(err.Error(), `feature "nosuch" has no value`) {
		t.Fatalf("train: %v", err)
	}
}

// TestCurrentFirst: work that waited for a model before any existed gets
// the first model installed, even when newer ones followed before it woke,
// so it never gets a newer model than work pinned after it.
func TestCurrentFirst(t *testing.T) {
	fr := trunk(t, 300, 1)
	m1, m2 := trainModel(t, fr, 1), trainModel(t, fr, 2)
	c := NewCurrent()
	got := make(chan *scoring.Model)
	go func() {
		m, _ := c.First(context.Background())
		got <- m
	}()
	c.Offer(m1)
	c.Offer(m2)
	if m := <-got; m != m1 {
		t.Fatalf("First returned version %d, want the first model", m.Version())
	}
	if m, _ := c.First(context.Background()); m != m1 {
		t.Fatal("First after the swap is not the first model")
	}
	if c.Load() != m2 {
		t.Fatal("Load is not the newest model")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewCurrent().First(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("First on a cancelled context: %v", err)
	}
}

// TestTrainerWindowGrowsWithRows: the window's columns grow with the rows
// it holds, so a window of 2^40 rows (allocated whole, 4 TB a feature)
// takes 3,000 rows and snapshots them in order; the count window still
// evicts the oldest once a small window is full (TestTrainerCountWindow).
func TestTrainerWindowGrowsWithRows(t *testing.T) {
	for _, kind := range []string{WindowCount, WindowReservoir} {
		tr, err := NewTrainer(TrainOptions{Label: "y", Window: 1 << 40, Kind: kind, MinRows: 2, Params: smallParams(1)})
		if err != nil {
			t.Fatal(err)
		}
		all := trunk(t, 3000, 5)
		rec := all.ToRecord(memory.DefaultAllocator)
		for lo := int64(0); lo < 3000; lo += 700 {
			s := rec.NewSlice(lo, min(lo+700, 3000))
			if _, _, err := tr.Add(s.Schema(), []arrow.Record{s}); err != nil {
				t.Fatal(err)
			}
			s.Release()
		}
		rec.Release()
		fr, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if fr.NRows != 3000 {
			t.Fatalf("%s: %d rows in the window, want 3000", kind, fr.NRows)
		}
		for i := 0; i < 3000; i++ {
			if fr.Cols[1][i] != all.Cols[1][i] || fr.Classes[fr.Y[i]] != all.Classes[all.Y[i]] {
				t.Fatalf("%s: window row %d is not input row %d", kind, i, i)
			}
		}
	}
}

// TestTrainerOptionErrors: a feature listed twice, and the forest
// parameters CheckParams refuses before any row arrives, naming the
// parameter.
func TestTrainerOptionErrors(t *testing.T) {
	if _, err := NewTrainer(TrainOptions{Label: "y", Features: []string{"x1", "x2", "x1"}}); err == nil || !strings.Contains(err.Error(), "feature x1 listed twice") {
		t.Errorf("features listed twice: %v", err)
	}
	for param, set := range map[string]func(*forest.Params){
		"max_features": func(p *forest.Params) { p.MaxFeatures = "banana" },
		"min_leaf":     func(p *forest.Params) { p.MinLeaf = 0 },
		"max_depth":    func(p *forest.Params) { p.MaxDepth = -1 },
	} {
		o := TrainOptions{Label: "y", Params: smallParams(1)}
		set(&o.Params)
		var pe *forest.ParamError
		if err := o.CheckParams(); !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: %v", param, err)
		}
	}
	o := TrainOptions{Label: "y", Params: smallParams(1)}
	o.Params.Criterion = ""
	if err := o.CheckParams(); err != nil {
		t.Errorf("an empty criterion (the task's): %v", err)
	}
}

// TestTrainerReference: the trainer's reference sample is bounded by
// ReferenceRows, the model's feature columns, and the same for the same
// seed; a negative bound keeps none.
func TestTrainerReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sample := func(rows int, seed uint64) arrow.Record {
		tr, _ := NewTrainer(TrainOptions{Label: "y", Window: 500, Params: smallParams(11), ReferenceRows: rows, Seed: seed})
		s, recs := labelled(t, mem, 400, 5)
		tr.Add(s, recs)
		releaseAll(recs)
		fr, err := tr.Snapshot(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Train(context.Background(), fr, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := tr.Reference(f, fr)
		want := min(rows, 400)
		if rows == 0 {
			want = 400 // the default, model.DefaultReferenceRows, is more
		}
		if r != nil && (r.NumRows() != int64(want) || int(r.NumCols()) != len(f.Features)) {
			t.Fatalf("%d rows × %d columns, want %d × %d", r.NumRows(), r.NumCols(), want, len(f.Features))
		}
		return r
	}
	a, b := sample(50, 1), sample(50, 1)
	if !array.RecordApproxEqual(a, b, array.WithNaNsEqual(true)) || array.RecordApproxEqual(a, sample(50, 2), array.WithNaNsEqual(true)) {
		t.Fatal("the sample is not the seed's")
	}
	if sample(0, 1).NumRows() != 400 || sample(-1, 1) != nil {
		t.Fatal("default or negative bound")
	}
}

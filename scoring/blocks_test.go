package scoring_test

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/fixture"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// ipcBytes is recs as one Arrow IPC stream: schema, metadata and every
// buffer.
func ipcBytes(t *testing.T, recs []arrow.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(recs[0].Schema()))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestScoreBlocksSameBytes: Score, which ranks the top classes block by
// block as the forest finishes them (and keeps only the class for none),
// writes the records that the full rows×K matrix of
// forest.Compiled.Predict gives through schemas.BuildPredictions, byte
// for byte as Arrow IPC, for all, none, top1, top5, top<k> above the
// classes, auto and "auto", at 1 to 5 threads, over three records whose
// rows the blocks do not follow. The model of 600 classes and 7 trees
// has many equal probabilities among the ranks compared.
func TestScoreBlocksSameBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const k = 600
	p := forest.DefaultParams(frame.TaskClassification)
	p.Trees, p.Seed, p.Threads = 7, 3, 2
	f, err := forest.Train(fixture.Classes(3000, 6, k, 1), p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 4, "test")
	if err != nil {
		t.Fatal(err)
	}
	te := fixture.Classes(2300, 6, k, 2)
	rec := te.ToRecord(mem)
	defer rec.Release()
	cuts := []int64{0, 700, 701, 2300}
	var recs []arrow.Record
	for i := range cuts[1:] {
		r := rec.NewSlice(cuts[i], cuts[i+1])
		defer r.Release()
		recs = append(recs, r)
	}
	c, err := forest.Compile(m.Forest())
	if err != nil {
		t.Fatal(err)
	}
	full, err := c.Predict(te, 1)
	if err != nil {
		t.Fatal(err)
	}
	ties := 0
	for _, probs := range []scoring.Probs{scoring.ProbsAll, scoring.ProbsNone, scoring.ProbsTop(1), scoring.ProbsTop(5),
		scoring.ProbsTop(k + 100), scoring.ProbsAuto, "auto"} {
		opts := scoring.Options{Probs: probs, Source: "f.parquet", FirstRow: 10, Keep: []string{"y"}, Mem: mem}
		schema, err := m.PredictionSchema(rec.Schema(), opts)
		if err != nil {
			t.Fatal(err)
		}
		resolved, err := m.ResolveProbs(probs)
		if err != nil {
			t.Fatal(err)
		}
		spec := schemas.PredictionSpec{ModelID: m.ID(), ModelVersion: m.Version(), Classes: m.Classes(),
			Keep: []arrow.Field{schema.Field(4)}, TopK: resolved.TopK()}
		switch {
		case resolved == scoring.ProbsNone:
			spec.Probs = schemas.ProbsNone
		case spec.TopK > 0:
			spec.Probs = schemas.ProbsTop
		}
		if md := schema.Metadata(); md.FindKey(schemas.MetaProbsNote) >= 0 {
			spec.ProbsNote = md.Values()[md.FindKey(schemas.MetaProbsNote)]
		}
		var want []arrow.Record
		for i, r := range recs {
			r0, r1 := int(cuts[i]), int(cuts[i+1])
			w, err := schemas.BuildPredictions(mem, spec, schemas.PredictionBatch{Source: opts.Source, FirstRow: opts.FirstRow + int64(r0),
				Keep: []arrow.Array{r.Column(r.Schema().FieldIndices("y")[0])}, Class: full.Class[r0:r1], Prob: full.Prob[r0*k : r1*k]})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, w)
		}
		wantBytes := ipcBytes(t, want)
		if spec.Probs == schemas.ProbsTop {
			ties += rankTies(want, spec.TopK)
		}
		release(want)
		for threads := 1; threads <= 5; threads++ {
			opts.Threads = threads
			got, err := m.Score(recs, opts)
			if err != nil {
				t.Fatal(err)
			}
			same := bytes.Equal(ipcBytes(t, got), wantBytes)
			release(got)
			if !same {
				t.Fatalf("%q at %d threads: Score's records differ from those of the full matrix", probs, threads)
			}
		}
	}
	if ties < 1000 {
		t.Fatalf("%d equal probabilities of adjacent ranks: the ties are not tested", ties)
	}
}

// rankTies counts adjacent ranks of equal probability in top-k records.
func rankTies(recs []arrow.Record, top int) int {
	n := 0
	for _, r := range recs {
		col := func(q int) *array.Float32 {
			return r.Column(r.Schema().FieldIndices(schemas.TopProbName(q))[0]).(*array.Float32)
		}
		for q := 2; q <= top; q++ {
			a, b := col(q-1), col(q)
			for i := 0; i < int(r.NumRows()); i++ {
				if a.Value(i) == b.Value(i) {
					n++
				}
			}
		}
	}
	return n
}

// scoreAlloc is the bytes the Go heap allocated for one Score call of
// rec with probs on one thread (runtime.MemStats.TotalAlloc: Go slices
// and Arrow buffers of the Go allocator alike).
func scoreAlloc(t testing.TB, m *scoring.Model, rec arrow.Record, probs scoring.Probs) int64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := m.Score([]arrow.Record{rec}, scoring.Options{Probs: probs, Threads: 1})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	release(out)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestScoreProbsMemory: with a model of 1,000 classes, scoring 32,000
// rows instead of 8,000 allocates at least the 24,000 more rows × 1,000
// classes × 4 bytes of the probability matrix with all, and less than a
// tenth of it with top5 and none, which keep each row's ranks (or its
// class) only, not every class's probability; Model.PredictionBytes
// states both.
func TestScoreProbsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("scores 80,000 rows of 1,000 classes")
	}
	const k, n1, n2 = 1000, 8000, 32000
	m := trainModel(t, fixture.Classes(3000, 8, k, 1), 1)
	small := fixture.Classes(n1, 8, k, 2).ToRecord(memory.DefaultAllocator)
	defer small.Release()
	large := fixture.Classes(n2, 8, k, 3).ToRecord(memory.DefaultAllocator)
	defer large.Release()
	matrix := int64((n2 - n1) * k * 4)
	for _, c := range []struct {
		probs  scoring.Probs
		perRow int64
	}{
		{scoring.ProbsAll, 4 + 4*k},
		{scoring.ProbsTop(5), 4 + 8*5},
		{scoring.ProbsNone, 4},
	} {
		perRow, blocks, err := m.PredictionBytes(n2, 1, c.probs)
		if err != nil || perRow != c.perRow || blocks < 8*k*int64(min(n2, 1<<23/k)/2) {
			t.Fatalf("%s: PredictionBytes %d per row, %d for the blocks, %v; want %d per row", c.probs, perRow, blocks, err, c.perRow)
		}
		a1, a2 := scoreAlloc(t, m, small, c.probs), scoreAlloc(t, m, large, c.probs)
		if c.probs != scoring.ProbsAll {
			// an upper bound: allocations only add noise (a garbage
			// collection emptying a pool mid-call), so the fewer of two runs
			a1, a2 = min(a1, scoreAlloc(t, m, small, c.probs)), min(a2, scoreAlloc(t, m, large, c.probs))
		}
		t.Logf("%-5s %6d rows: %7.1f MB allocated, %6d rows: %7.1f MB (the matrix of the %d more rows: %.1f MB)",
			c.probs, n1, float64(a1)/1e6, n2, float64(a2)/1e6, n2-n1, float64(matrix)/1e6)
		switch grown := a2 - a1; {
		case c.probs == scoring.ProbsAll && grown < matrix:
			t.Errorf("all: %d more bytes for %d more rows; the probability matrix alone is %d", grown, n2-n1, matrix)
		case c.probs != scoring.ProbsAll && grown > matrix/10:
			t.Errorf("%s: %d more bytes for %d more rows, more than a tenth of their probability matrix (%d)", c.probs, grown, n2-n1, matrix)
		}
	}
	if _, _, err := m.PredictionBytes(10, 1, "top0"); err == nil {
		t.Fatal("PredictionBytes of top0: no error")
	}
	fr := fixture.Classes(300, 4, 5, 1)
	for _, y := range fr.Y {
		fr.YReg = append(fr.YReg, float64(y))
	}
	fr.Task, fr.Y, fr.Classes = frame.TaskRegression, nil, nil
	reg := trainModel(t, fr, 1)
	if perRow, _, err := reg.PredictionBytes(10, 1, scoring.ProbsTop(5)); err != nil || perRow != 8 {
		t.Fatalf("regression: %d bytes per row, %v", perRow, err)
	}
}

package scoring_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/scoring"
)

// widened is rec with every float32 column as float64 (the same values),
// a record whose features Score must copy into its frame.
func widened(rec arrow.Record, mem memory.Allocator) arrow.Record {
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	cols := make([]arrow.Array, len(fields))
	for j := range fields {
		a, ok := rec.Column(j).(*array.Float32)
		if !ok {
			cols[j] = rec.Column(j)
			cols[j].Retain()
			continue
		}
		b := array.NewFloat64Builder(mem)
		for _, v := range a.Float32Values() {
			b.Append(float64(v))
		}
		cols[j] = b.NewArray()
		b.Release()
		fields[j].Type = arrow.PrimitiveTypes.Float64
	}
	out := array.NewRecord(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// TestScoreSegments: Score predicts a call's records in segments of at
// least 65,536 rows, and a record of float32 features without nulls is
// scored from its own buffers, not copied. Records cut at 0, 70,000,
// 70,001, 70,005 and 150,000 rows, with NaN features, give the classes
// and probabilities of one compiled pass over all rows, and the same
// Arrow IPC bytes as the same rows as float64 (copied into the frame).
// TestViewInPlace checks that the float32 record is not copied.
func TestScoreSegments(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tr, err := synth.Generate(synth.Trunk, synth.Options{N: 2000, Seed: 1, P: 50})
	if err != nil {
		t.Fatal(err)
	}
	p := forest.DefaultParams(tr.Task)
	p.Trees, p.Seed, p.Threads = 5, 3, 2
	f, err := forest.Train(tr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	const n = 150000
	te, err := synth.Generate(synth.Trunk, synth.Options{N: n, Seed: 2, P: 50})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 97 {
		te.Cols[i%50][i] = float32(math.NaN())
	}
	c, err := forest.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	full, err := c.Predict(te, 2)
	if err != nil {
		t.Fatal(err)
	}
	rec := te.ToRecord(mem)
	defer rec.Release()
	wide := widened(rec, mem)
	defer wide.Release()
	cuts := []int64{0, 70000, 70001, 70005, n}
	opts := scoring.Options{Probs: scoring.ProbsAll, Source: "f.parquet", FirstRow: 3, Keep: []string{"y"}, Mem: mem, Threads: 2}
	var got [2][]byte
	for v, whole := range []arrow.Record{rec, wide} {
		var recs []arrow.Record
		for i := range cuts[1:] {
			r := whole.NewSlice(cuts[i], cuts[i+1])
			defer r.Release()
			recs = append(recs, r)
		}
		out, err := m.Score(recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		row := 0
		for _, o := range out {
			cls := o.Column(int(o.Schema().FieldIndices("prediction")[0])).(*array.String)
			p1 := o.Column(int(o.Schema().FieldIndices("prob_1")[0])).(*array.Float32)
			for i := 0; i < int(o.NumRows()); i++ {
				if cls.Value(i) != f.Classes[full.Class[row]] || p1.Value(i) != full.Prob[2*row+1] {
					t.Fatalf("variant %d row %d: %s %v, one pass gives %s %v", v, row, cls.Value(i), p1.Value(i),
						f.Classes[full.Class[row]], full.Prob[2*row+1])
				}
				row++
			}
		}
		got[v] = ipcBytes(t, out)
		release(out)
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Fatal("float32 and float64 features give other prediction records")
	}
}

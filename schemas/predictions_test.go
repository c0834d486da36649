package schemas

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestBuildPredictions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	kb := array.NewInt64Builder(mem)
	kb.AppendValues([]int64{7, 8, 9}, nil)
	key := kb.NewArray()
	kb.Release()
	defer key.Release()
	spec := PredictionSpec{ModelID: "abc", ModelVersion: 3, Classes: []string{"no", "yes"},
		Keep: []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}}
	rec, err := BuildPredictions(mem, spec, PredictionBatch{Source: "f.parquet", FirstRow: 10, Keep: []arrow.Array{key},
		Class: []int32{1, 0, 1}, Prob: []float32{0.2, 0.8, 0.9, 0.1, 0.4, 0.6}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !rec.Schema().Equal(Predictions(spec)) {
		t.Fatalf("schema %v", rec.Schema())
	}
	want := []string{"model_id", "model_version", "source", "row", "id", "prediction", "prob_no", "prob_yes"}
	for i, f := range rec.Schema().Fields() {
		if f.Name != want[i] {
			t.Fatalf("column %d is %s, want %s", i, f.Name, want[i])
		}
	}
	if got := rec.Column(5).(*array.String).Value(1); got != "no" {
		t.Fatalf("prediction of row 1: %s", got)
	}
	if got := rec.Column(3).(*array.Int64).Value(2); got != 12 {
		t.Fatalf("row coordinate %d, want 12", got)
	}
	if got := rec.Column(7).(*array.Float32).Value(0); got != 0.8 {
		t.Fatalf("prob_yes of row 0: %v", got)
	}
	// regression
	r2, err := BuildPredictions(mem, PredictionSpec{ModelID: "x"}, PredictionBatch{Value: []float64{1.5, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Column(4).(*array.Float64).Value(1) != 2 {
		t.Fatal("regression value")
	}
	r2.Release()
	// inconsistent input is an error, not a panic
	if _, err := BuildPredictions(mem, spec, PredictionBatch{Class: []int32{0}, Prob: []float32{1}}); err == nil {
		t.Fatal("short probabilities accepted")
	}
	if _, err := BuildPredictions(mem, PredictionSpec{Classes: []string{"a"}}, PredictionBatch{Class: []int32{3}, Prob: []float32{1}}); err == nil {
		t.Fatal("class index out of range accepted")
	}
}

// TestBuildPredictionsTop: a ProbsTop record carries top<i>_class and
// top<i>_prob pairs, ranked by probability with ties broken by the
// predicted class, then class order; ProbsNone carries prediction alone;
// both say so in the schema's metadata, and ProbsAll's metadata is the
// one it always had.
func TestBuildPredictionsTop(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	classes := []string{"a", "b", "c", "d"}
	batch := PredictionBatch{Source: "s", Class: []int32{2, 1, 3},
		Prob: []float32{
			0.1, 0.2, 0.6, 0.1, // c, b, then a and d tied: class order
			0.4, 0.4, 0.2, 0, // a and b tied, b predicted: b first
			0, 0, 0, 1, // d, then a, b, c tied at 0
		}}
	spec := PredictionSpec{ModelID: "m", Classes: classes, Probs: ProbsTop, TopK: 3, ProbsNote: "why"}
	rec, err := BuildPredictions(mem, spec, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var names []string
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name)
	}
	want := "[model_id model_version source row prediction top1_class top1_prob top2_class top2_prob top3_class top3_prob]"
	if got := fmt.Sprint(names); got != want {
		t.Fatalf("columns %s, want %s", got, want)
	}
	if !rec.Schema().Equal(Predictions(spec)) {
		t.Fatal("record schema is not Predictions(spec)")
	}
	md := rec.Schema().Metadata()
	for k, v := range map[string]string{"forestd.schema": "predictions/v1", MetaProbs: "top3", MetaClasses: "4", MetaProbsNote: "why"} {
		if i := md.FindKey(k); i < 0 || md.Values()[i] != v {
			t.Errorf("metadata %s: %v, want %q", k, md, v)
		}
	}
	wantClass := [][]string{{"c", "b", "a"}, {"b", "a", "c"}, {"d", "a", "b"}}
	wantProb := [][]float32{{0.6, 0.2, 0.1}, {0.4, 0.4, 0.2}, {1, 0, 0}}
	for i := 0; i < 3; i++ {
		for q := 0; q < 3; q++ {
			c := rec.Column(5 + 2*q).(*array.String).Value(i)
			p := rec.Column(6 + 2*q).(*array.Float32).Value(i)
			if c != wantClass[i][q] || p != wantProb[i][q] {
				t.Errorf("row %d rank %d: %s %v, want %s %v", i, q+1, c, p, wantClass[i][q], wantProb[i][q])
			}
		}
		if rec.Column(4).(*array.String).Value(i) != rec.Column(5).(*array.String).Value(i) {
			t.Errorf("row %d: top1_class is not the prediction", i)
		}
	}
	// none: prediction alone, with or without the probabilities
	for _, prob := range [][]float32{batch.Prob, nil} {
		b := batch
		b.Prob = prob
		none, err := BuildPredictions(mem, PredictionSpec{Classes: classes, Probs: ProbsNone}, b)
		if err != nil {
			t.Fatal(err)
		}
		if none.NumCols() != 5 || none.Schema().Field(4).Name != ColPrediction {
			t.Errorf("none: %v", none.Schema())
		}
		if i := none.Schema().Metadata().FindKey(MetaProbs); i < 0 || none.Schema().Metadata().Values()[i] != "none" {
			t.Errorf("none: metadata %v", none.Schema().Metadata())
		}
		none.Release()
	}
	// all: metadata unchanged
	all := Predictions(PredictionSpec{Classes: classes})
	if md := all.Metadata(); md.Len() != 1 || md.Keys()[0] != "forestd.schema" {
		t.Errorf("all: metadata %v", md)
	}
	// undefined specs are errors, not panics
	for name, bad := range map[string]PredictionSpec{
		"top0":            {Classes: classes, Probs: ProbsTop},
		"top5 of 4":       {Classes: classes, Probs: ProbsTop, TopK: 5},
		"TopK with all":   {Classes: classes, TopK: 2},
		"TopK with none":  {Classes: classes, Probs: ProbsNone, TopK: 2},
		"top regression":  {Probs: ProbsTop, TopK: 1},
		"none regression": {Probs: ProbsNone},
		"unknown":         {Classes: classes, Probs: 9},
	} {
		b := batch
		if bad.Classes == nil {
			b = PredictionBatch{Value: []float64{1}}
		}
		if r, err := BuildPredictions(mem, bad, b); err == nil {
			r.Release()
			t.Errorf("%s: accepted", name)
		}
		if err := CheckNames(bad, nil); err == nil {
			t.Errorf("%s: CheckNames accepted it", name)
		}
	}
	// a kept column may be named like another mode's probability column
	keep := func(name string) []arrow.Field { return []arrow.Field{{Name: name, Type: arrow.BinaryTypes.String}} }
	for _, c := range []struct {
		spec  PredictionSpec
		clash bool
	}{
		{PredictionSpec{Classes: classes, Probs: ProbsTop, TopK: 2, Keep: keep("top2_prob")}, true},
		{PredictionSpec{Classes: classes, Probs: ProbsTop, TopK: 2, Keep: keep("top3_prob")}, false},
		{PredictionSpec{Classes: classes, Probs: ProbsTop, TopK: 2, Keep: keep("prob_a")}, false},
		{PredictionSpec{Classes: classes, Keep: keep("prob_a")}, true},
		{PredictionSpec{Classes: classes, Keep: keep("top1_class")}, false},
		{PredictionSpec{Classes: classes, Probs: ProbsNone, Keep: keep("prob_a")}, false},
	} {
		if err := CheckNames(c.spec, nil); (err != nil) != c.clash {
			t.Errorf("keep %s with %d/top%d: %v", c.spec.Keep[0].Name, c.spec.Probs, c.spec.TopK, err)
		}
	}
}

// TestTopClasses ranks random rows with many ties (probabilities of few
// distinct values, NaN among them) against a full sort, for every k.
func TestTopClasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		c := 1 + rng.IntN(40)
		prob := make([]float32, c)
		for j := range prob {
			switch rng.IntN(8) {
			case 0:
				prob[j] = float32(math.NaN())
			default:
				prob[j] = float32(rng.IntN(4)) / 4
			}
		}
		pred := int32(rng.IntN(c))
		ref := make([]int32, c)
		for j := range ref {
			ref[j] = int32(j)
		}
		sort.SliceStable(ref, func(a, b int) bool { // class order kept among equals
			pa, pb := prob[ref[a]], prob[ref[b]]
			na, nb := math.IsNaN(float64(pa)), math.IsNaN(float64(pb))
			if na != nb {
				return nb
			}
			if !na && pa != pb {
				return pa > pb
			}
			return ref[a] == pred && ref[b] != pred
		})
		for k := 1; k <= c; k++ {
			dst := make([]int32, k)
			topClasses(dst, prob, pred, make([]int32, 0, k))
			if fmt.Sprint(dst) != fmt.Sprint(ref[:k]) {
				t.Fatalf("prob %v pred %d k %d: %v, want %v", prob, pred, k, dst, ref[:k])
			}
		}
	}
}

// TestTopRanks: TopRanks ranks several rows at once as topClasses ranks
// each (ties, NaN), with each rank's probability; a ProbsTop record built
// from the ranks (PredictionBatch.Top, Prob nil) is the record built from
// every class's probability, metadata included; ranks of other sizes or
// naming no class are errors, not panics.
func TestTopRanks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	const n, k = 50, 9
	classes := make([]string, k)
	for j := range classes {
		classes[j] = "c" + fmt.Sprint(j)
	}
	class := make([]int32, n)
	prob := make([]float32, n*k)
	for i := range class {
		class[i] = int32(rng.IntN(k))
		for j := 0; j < k; j++ {
			if rng.IntN(10) == 0 {
				prob[i*k+j] = float32(math.NaN())
			} else {
				prob[i*k+j] = float32(rng.IntN(3)) / 3
			}
		}
	}
	for top := 1; top <= k; top++ {
		rank, rankProb := make([]int32, n*top), make([]float32, n*top)
		TopRanks(k, top, class, prob, rank, rankProb)
		for i := range class {
			want := make([]int32, top)
			topClasses(want, prob[i*k:(i+1)*k], class[i], nil)
			if !slices.Equal(rank[i*top:(i+1)*top], want) {
				t.Fatalf("top %d row %d: %v, want %v", top, i, rank[i*top:(i+1)*top], want)
			}
			for q, c := range want {
				if p, w := rankProb[i*top+q], prob[i*k+int(c)]; math.Float32bits(p) != math.Float32bits(w) {
					t.Fatalf("top %d row %d rank %d: probability %v, want %v", top, i, q+1, p, w)
				}
			}
		}
		spec := PredictionSpec{ModelID: "m", Classes: classes, Probs: ProbsTop, TopK: top, ProbsNote: "why"}
		full, err := BuildPredictions(mem, spec, PredictionBatch{Source: "s", Class: class, Prob: prob})
		if err != nil {
			t.Fatal(err)
		}
		ranked, err := BuildPredictions(mem, spec, PredictionBatch{Source: "s", Class: class, Top: rank, TopProb: rankProb})
		if err != nil {
			t.Fatal(err)
		}
		same := bytes.Equal(ipcBytes(t, full), ipcBytes(t, ranked))
		full.Release()
		ranked.Release()
		if !same {
			t.Fatalf("top %d: the record from the ranks differs from the record from every probability", top)
		}
	}
	spec := PredictionSpec{Classes: classes, Probs: ProbsTop, TopK: 2}
	for name, b := range map[string]PredictionBatch{
		"short ranks":           {Class: class, Top: make([]int32, 2*n-1), TopProb: make([]float32, 2*n)},
		"short probabilities":   {Class: class, Top: make([]int32, 2*n), TopProb: make([]float32, 2*n-1)},
		"no rank probabilities": {Class: class, Top: make([]int32, 2*n)},
		"class 9 of 9":          {Class: class, Top: append(make([]int32, 2*n-1), k), TopProb: make([]float32, 2*n)},
		"class -1":              {Class: class, Top: append([]int32{-1}, make([]int32, 2*n-1)...), TopProb: make([]float32, 2*n)},
		"ranks without top":     {Class: class, Top: make([]int32, 2*n), TopProb: make([]float32, 2*n)},
	} {
		sp := spec
		if name == "ranks without top" {
			sp = PredictionSpec{Classes: classes}
		}
		if r, err := BuildPredictions(mem, sp, b); err == nil {
			r.Release()
			t.Errorf("%s: accepted", name)
		}
	}
}

// ipcBytes is rec as an Arrow IPC stream: schema, metadata and buffers,
// NaN bits included.
func ipcBytes(t *testing.T, rec arrow.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestIsProbName(t *testing.T) {
	for name, want := range map[string]bool{
		"prob_a": true, "prob_": true, "top1_class": true, "top12_prob": true,
		"top0_class": false, "top01_prob": false, "top_class": false, "top1_probs": false,
		"topx_class": false, "prediction": false, "top1": false, "Top1_class": false,
	} {
		if IsProbName(name) != want {
			t.Errorf("IsProbName(%q) = %v", name, !want)
		}
	}
}

// TestLeadColumnsAsBuilt: the lead columns filled at their final size
// (repeatString, int64Column) hold the values, and write the same Arrow
// IPC bytes, as the builders that appended them row by row before.
func TestLeadColumnsAsBuilt(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	id := "036d2a1bdf1e0549fd18108fbc3ad32792eb0aaee6b03bc4485fd95d93b1dc38"
	for _, n := range []int{0, 1, 3, 1000, 4099} {
		for _, source := range []string{"", "trunk-1m.parquet"} {
			spec := PredictionSpec{ModelID: id, ModelVersion: 7}
			owned, cols, err := leadColumns(mem, spec, source, 40, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			sb, ib := array.NewStringBuilder(mem), array.NewInt64Builder(mem)
			var want []arrow.Array
			for i := 0; i < n; i++ {
				sb.Append(id)
			}
			want = append(want, sb.NewArray())
			for i := 0; i < n; i++ {
				ib.Append(7)
			}
			want = append(want, ib.NewArray())
			for i := 0; i < n; i++ {
				sb.Append(source)
			}
			want = append(want, sb.NewArray())
			for i := 0; i < n; i++ {
				ib.Append(40 + int64(i))
			}
			want = append(want, ib.NewArray())
			sb.Release()
			ib.Release()
			schema := Predictions(spec)
			fields := schema.Fields()[:4]
			ls := arrow.NewSchema(fields, nil)
			got, exp := array.NewRecord(ls, cols, int64(n)), array.NewRecord(ls, want, int64(n))
			for j := range want {
				if !array.Equal(cols[j], want[j]) {
					t.Fatalf("n %d source %q: column %s differs", n, source, fields[j].Name)
				}
			}
			var bg, be bytes.Buffer
			for _, c := range []struct {
				r arrow.Record
				b *bytes.Buffer
			}{{got, &bg}, {exp, &be}} {
				w := ipc.NewWriter(c.b, ipc.WithSchema(ls), ipc.WithAllocator(mem))
				if err := w.Write(c.r); err != nil {
					t.Fatal(err)
				}
				w.Close()
			}
			if !bytes.Equal(bg.Bytes(), be.Bytes()) {
				t.Fatalf("n %d source %q: IPC bytes differ", n, source)
			}
			got.Release()
			exp.Release()
			for _, a := range append(owned, want...) {
				a.Release()
			}
		}
	}
	// past the 32-bit offsets of a string column: an error before any
	// allocation, not a panic
	if _, err := repeatString(mem, id, math.MaxInt32/len(id)+1); err == nil {
		t.Fatal("a string column past 2 GiB accepted")
	}
}

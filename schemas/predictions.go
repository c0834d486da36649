package schemas

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Prediction column names.
const (
	ColModelID      = "model_id"
	ColModelVersion = "model_version"
	ColSource       = "source"
	ColRow          = "row"
	ColPrediction   = "prediction"
	ProbPrefix      = "prob_"
)

// Schema metadata keys of a prediction record that does not carry a
// probability per class (ProbsTop, ProbsNone); a record with every
// class's probability (ProbsAll) has only forestd.schema, as before these
// choices existed.
const (
	// MetaProbs is the probability columns: "top<k>" (e.g. "top5") or
	// "none".
	MetaProbs = "forestd.probs"
	// MetaClasses is the model's number of classes, of which the record
	// carries the top k or none.
	MetaClasses = "forestd.classes"
	// MetaProbsNote says why the record carries these columns when the
	// caller did not choose them (PredictionSpec.ProbsNote).
	MetaProbsNote = "forestd.probs_note"
)

// ProbColumns chooses the probability columns of a classification
// prediction record (PredictionSpec.Probs).
type ProbColumns uint8

const (
	// ProbsAll is a prob_<class> float32 column per class, in class order
	// (the zero value).
	ProbsAll ProbColumns = iota
	// ProbsTop is PredictionSpec.TopK pairs of columns top<i>_class utf8,
	// top<i>_prob float32 (i = 1..TopK): the TopK most probable classes
	// of each row, most probable first (see TopClassName).
	ProbsTop
	// ProbsNone is no probability column: prediction alone.
	ProbsNone
)

// TopClassName is the name of the class column of rank i (1 for the most
// probable class) of a ProbsTop record: top<i>_class.
func TopClassName(i int) string { return "top" + strconv.Itoa(i) + "_class" }

// TopProbName is the name of the probability column of rank i of a
// ProbsTop record: top<i>_prob.
func TopProbName(i int) string { return "top" + strconv.Itoa(i) + "_prob" }

// IsProbName reports whether name is the name of a probability column of
// some prediction record: prob_<anything>, or top<i>_class or top<i>_prob
// with i a number without leading zeros from 1.
func IsProbName(name string) bool {
	if strings.HasPrefix(name, ProbPrefix) {
		return true
	}
	rest, ok := strings.CutPrefix(name, "top")
	if !ok {
		return false
	}
	num, ok := strings.CutSuffix(rest, "_class")
	if !ok {
		if num, ok = strings.CutSuffix(rest, "_prob"); !ok {
			return false
		}
	}
	if num == "" || num[0] == '0' {
		return false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// PredictionSpec describes one batch of predictions.
type PredictionSpec struct {
	ModelID      string
	ModelVersion int64
	// Classes names the classes (classification); nil for regression.
	Classes []string
	// Keep are passthrough columns copied from the input (e.g. a key).
	Keep []arrow.Field
	// Probs chooses the probability columns of a classification record
	// (ProbsAll: one per class), and TopK the number of classes of
	// ProbsTop, 1..len(Classes) (0 otherwise). Both are zero for
	// regression.
	Probs ProbColumns
	TopK  int
	// ProbsNote, when set with ProbsTop or ProbsNone, is written into the
	// schema's metadata under MetaProbsNote: why the record carries these
	// columns (a default that chose the top classes of a model with many
	// classes).
	ProbsNote string
}

// check refuses a spec whose probability columns are not defined.
func (spec PredictionSpec) check() error {
	k := len(spec.Classes)
	switch spec.Probs {
	case ProbsAll, ProbsNone:
		if spec.TopK != 0 {
			return fmt.Errorf("schemas: TopK %d without ProbsTop", spec.TopK)
		}
	case ProbsTop:
		if spec.TopK < 1 || spec.TopK > k {
			return fmt.Errorf("schemas: TopK %d of %d classes (want 1..%d)", spec.TopK, k, k)
		}
	default:
		return fmt.Errorf("schemas: unknown probability columns %d", spec.Probs)
	}
	if spec.Classes == nil && spec.Probs != ProbsAll {
		return errors.New("schemas: probability columns chosen for a model without classes")
	}
	return nil
}

// Predictions returns the schema of a prediction batch:
//
//	model_id utf8, model_version int64, source utf8, row int64,
//	<keep columns>, prediction (utf8 class name | float64 value),
//	then, for classification, the probabilities spec.Probs chooses:
//	  ProbsAll:  prob_<class> float32 per class, in class order
//	  ProbsTop:  top1_class utf8, top1_prob float32, …,
//	             top<k>_class utf8, top<k>_prob float32 (k = spec.TopK)
//	  ProbsNone: nothing.
//
// source and row are the coordinates of the scored row (file path or
// topic/partition/offset, and the row within it), so downstream consumers
// can join predictions back and drop duplicates after a restart.
//
// top<i>_class is the class of rank i in the row, ordered by probability
// descending; equal probabilities rank the predicted class first, then in
// class order, so that top1_class is always the prediction and output is
// deterministic. The metadata key forestd.schema is "predictions/v1";
// ProbsTop and ProbsNone add MetaProbs ("top<k>", "none"), MetaClasses
// and, when set, MetaProbsNote.
func Predictions(spec PredictionSpec) *arrow.Schema {
	fields := []arrow.Field{
		{Name: ColModelID, Type: arrow.BinaryTypes.String},
		{Name: ColModelVersion, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColSource, Type: arrow.BinaryTypes.String},
		{Name: ColRow, Type: arrow.PrimitiveTypes.Int64},
	}
	fields = append(fields, spec.Keep...)
	keys, vals := []string{"forestd.schema"}, []string{"predictions/v1"}
	if spec.Classes != nil {
		fields = append(fields, arrow.Field{Name: ColPrediction, Type: arrow.BinaryTypes.String})
		fields = append(fields, probFields(spec)...)
		if spec.Probs != ProbsAll {
			probs := "none"
			if spec.Probs == ProbsTop {
				probs = "top" + strconv.Itoa(spec.TopK)
			}
			keys = append(keys, MetaProbs, MetaClasses)
			vals = append(vals, probs, strconv.Itoa(len(spec.Classes)))
			if spec.ProbsNote != "" {
				keys, vals = append(keys, MetaProbsNote), append(vals, spec.ProbsNote)
			}
		}
	} else {
		fields = append(fields, arrow.Field{Name: ColPrediction, Type: arrow.PrimitiveTypes.Float64})
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

// probFields are the probability columns of a classification record.
func probFields(spec PredictionSpec) []arrow.Field {
	var fields []arrow.Field
	switch spec.Probs {
	case ProbsAll:
		for _, c := range spec.Classes {
			fields = append(fields, arrow.Field{Name: ProbPrefix + c, Type: arrow.PrimitiveTypes.Float32})
		}
	case ProbsTop:
		for i := 1; i <= spec.TopK; i++ {
			fields = append(fields, arrow.Field{Name: TopClassName(i), Type: arrow.BinaryTypes.String},
				arrow.Field{Name: TopProbName(i), Type: arrow.PrimitiveTypes.Float32})
		}
	}
	return fields
}

// PredictionBatch holds the values of one batch: Class and Prob
// (row-major, len(Classes) per row: every class's probability, whatever
// spec.Probs writes; nil allowed with ProbsNone, and with ProbsTop when Top
// is set) for classification, Value for regression.
type PredictionBatch struct {
	Source   string
	FirstRow int64
	Keep     []arrow.Array // one per spec.Keep field, already sliced to the batch
	Class    []int32
	Prob     []float32
	Value    []float64
	// Top and TopProb are, for ProbsTop, each row's spec.TopK classes in
	// rank order and their probabilities (row-major, TopK per row), as
	// TopRanks ranks them: a caller that ranked the rows as it predicted
	// them, without keeping every class's probability, hands them over
	// here. Without them BuildPredictions ranks Prob with TopRanks.
	Top     []int32
	TopProb []float32
}

// leadColumns builds the columns every prediction record starts with —
// model_id, model_version, source and row for n rows from firstRow — and
// appends the passthrough arrays keep after them. owned holds the arrays
// it built (the caller releases them, also on error); cols is owned plus
// keep, in schema order.
func leadColumns(mem memory.Allocator, spec PredictionSpec, source string, firstRow int64, n int, keep []arrow.Array) (owned, cols []arrow.Array, err error) {
	if len(keep) != len(spec.Keep) {
		return nil, nil, fmt.Errorf("schemas: %d passthrough arrays for %d fields", len(keep), len(spec.Keep))
	}
	// The four columns are one value repeated or a count: their buffers
	// are filled at their final size (no builder, whose doubling copied
	// and cleared a 64-byte model ID per row several times over).
	id, err := repeatString(mem, spec.ModelID, n)
	if err != nil {
		return nil, nil, fmt.Errorf("schemas: column %s: %w", ColModelID, err)
	}
	owned = append(owned, id)
	ver := int64Column(mem, n, func(v []int64) {
		for i := range v {
			v[i] = spec.ModelVersion
		}
	})
	owned = append(owned, ver)
	src, err := repeatString(mem, source, n)
	if err != nil {
		return owned, nil, fmt.Errorf("schemas: column %s: %w", ColSource, err)
	}
	owned = append(owned, src)
	owned = append(owned, int64Column(mem, n, func(v []int64) {
		for i := range v {
			v[i] = firstRow + int64(i)
		}
	}))
	cols = append(cols, owned...)
	for k, a := range keep {
		if a.Len() != n {
			return owned, nil, fmt.Errorf("schemas: passthrough column %s has %d rows, want %d", spec.Keep[k].Name, a.Len(), n)
		}
		cols = append(cols, a)
	}
	return owned, cols, nil
}

// repeatString is a string array of n copies of s without nulls, its
// offsets and data allocated once at their final size; a column whose
// bytes would pass the 32-bit offsets of an Arrow string array is an
// error.
func repeatString(mem memory.Allocator, s string, n int) (arrow.Array, error) {
	if total := int64(len(s)) * int64(n); total > math.MaxInt32 {
		return nil, fmt.Errorf("%d rows of %d bytes pass the 2 GiB of a string column: score fewer rows at a time", n, len(s))
	}
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	off := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	data := memory.NewResizableBuffer(mem)
	data.Resize(len(s) * n)
	b := data.Bytes()
	for i := 0; i <= n; i++ {
		off[i] = int32(i * len(s))
	}
	if len(b) > 0 { // s, then the bytes so far doubled until full
		for k := copy(b, s); k < len(b); k *= 2 {
			copy(b[k:], b[:k])
		}
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, offsets, data}, nil, 0, 0)
	offsets.Release()
	data.Release()
	defer d.Release()
	return array.NewStringData(d), nil
}

// int64Column is an int64 array of n values without nulls, filled by fill.
func int64Column(mem memory.Allocator, n int, fill func([]int64)) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(arrow.Int64Traits.BytesRequired(n))
	fill(arrow.Int64Traits.CastFromBytes(buf.Bytes()))
	d := array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer d.Release()
	return array.NewInt64Data(d)
}

// BuildPredictions assembles a record following Predictions(spec).
func BuildPredictions(mem memory.Allocator, spec PredictionSpec, b PredictionBatch) (arrow.Record, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	schema := Predictions(spec)
	n := len(b.Value)
	k := len(spec.Classes)
	if spec.Classes != nil {
		n = len(b.Class)
		ranked := spec.Probs == ProbsTop && b.Top != nil
		if len(b.Prob) != n*k && !(b.Prob == nil && (spec.Probs == ProbsNone || ranked)) {
			return nil, fmt.Errorf("schemas: %d probabilities for %d rows × %d classes", len(b.Prob), n, k)
		}
		if ranked {
			if err := checkTop(b.Top, b.TopProb, n, spec.TopK, k); err != nil {
				return nil, err
			}
		}
	}
	owned, cols, err := leadColumns(mem, spec, b.Source, b.FirstRow, n, b.Keep)
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	if err != nil {
		return nil, err
	}
	nFixed := len(owned)
	if spec.Classes != nil {
		sb := array.NewStringBuilder(mem)
		sb.Reserve(n)
		bytes := 0
		for _, c := range b.Class {
			if c >= 0 && int(c) < k {
				bytes += len(spec.Classes[c])
			}
		}
		sb.ReserveData(bytes)
		for _, c := range b.Class {
			if c < 0 || int(c) >= k {
				sb.Release()
				return nil, fmt.Errorf("schemas: class index %d outside 0..%d", c, k-1)
			}
			sb.Append(spec.Classes[c])
		}
		owned = append(owned, sb.NewArray())
		sb.Release()
		switch spec.Probs {
		case ProbsAll:
			for q := 0; q < k; q++ {
				fb := array.NewFloat32Builder(mem)
				fb.Reserve(n)
				for i := 0; i < n; i++ {
					fb.UnsafeAppend(b.Prob[i*k+q])
				}
				owned = append(owned, fb.NewArray())
				fb.Release()
			}
		case ProbsTop:
			rank, rankProb := b.Top, b.TopProb
			if rank == nil {
				rank, rankProb = make([]int32, n*spec.TopK), make([]float32, n*spec.TopK)
				TopRanks(k, spec.TopK, b.Class, b.Prob, rank, rankProb)
			}
			owned = append(owned, topColumns(mem, spec.Classes, spec.TopK, rank, rankProb)...)
		}
	} else {
		fb := array.NewFloat64Builder(mem)
		fb.AppendValues(b.Value, nil)
		owned = append(owned, fb.NewArray())
		fb.Release()
	}
	cols = append(cols, owned[nFixed:]...)
	return array.NewRecord(schema, cols, int64(n)), nil
}

// checkTop refuses ranked classes (PredictionBatch.Top, TopProb) that are
// not top per row of n rows or name no class of k.
func checkTop(rank []int32, rankProb []float32, n, top, k int) error {
	if len(rank) != n*top || len(rankProb) != n*top {
		return fmt.Errorf("schemas: %d ranked classes and %d probabilities for %d rows × top %d", len(rank), len(rankProb), n, top)
	}
	for _, c := range rank {
		if c < 0 || int(c) >= k {
			return fmt.Errorf("schemas: ranked class index %d outside 0..%d", c, k-1)
		}
	}
	return nil
}

// TopRanks ranks the classes of the rows of one batch, the one statement
// of forestd's top-k rule (ProbsTop): row i, predicted class class[i],
// has the probabilities prob[i*k:(i+1)*k] of the k classes; its top most
// probable classes (top at most k) go into rank[i*top:(i+1)*top] in rank
// order — probability descending; among equal probabilities the predicted
// class first, then class order; a NaN after every number — and their
// probabilities into rankProb at the same places. rank and rankProb hold
// len(class)·top values, prob len(class)·k. BuildPredictions ranks with
// it, and so does a caller that ranks each block of rows as it predicts
// them (scoring.Model.Score) and hands the ranks over in
// PredictionBatch.Top, so that both give the same records. It costs one
// comparison per class plus O(log top) per class that enters a row's
// running top.
func TopRanks(k, top int, class []int32, prob []float32, rank []int32, rankProb []float32) {
	if top <= 0 {
		return
	}
	heap := make([]int32, 0, top)
	for i, pred := range class {
		p, r := prob[i*k:(i+1)*k], rank[i*top:(i+1)*top]
		topClasses(r, p, pred, heap)
		for q, c := range r {
			rankProb[i*top+q] = p[c]
		}
	}
}

// topColumns builds the 2·top columns of a ProbsTop record from each
// row's ranked classes (rank, top per row, indices into classes) and
// their probabilities (rankProb): the class and probability of each rank.
func topColumns(mem memory.Allocator, classes []string, top int, rank []int32, rankProb []float32) []arrow.Array {
	n := len(rank) / top
	cols := make([]arrow.Array, 0, 2*top)
	for q := 0; q < top; q++ {
		sb := array.NewStringBuilder(mem)
		fb := array.NewFloat32Builder(mem)
		sb.Reserve(n)
		fb.Reserve(n)
		for i := 0; i < n; i++ {
			sb.Append(classes[rank[i*top+q]])
			fb.UnsafeAppend(rankProb[i*top+q])
		}
		cols = append(cols, sb.NewArray(), fb.NewArray())
		sb.Release()
		fb.Release()
	}
	return cols
}

// topClasses writes into dst the indices of the len(dst) most probable
// classes of one row, whose probabilities are prob (one per class; len(dst)
// at most len(prob)), in rank order: probability descending; among equal
// probabilities the predicted class pred first, then class order; a NaN
// ranks after every number. scratch is a buffer it may use (nil or of
// capacity len(dst) avoids allocating). It costs one comparison per class
// plus O(log len(dst)) per class that enters the running top.
func topClasses(dst []int32, prob []float32, pred int32, scratch []int32) {
	top := len(dst)
	if top == 0 {
		return
	}
	// a heap of the best classes seen, the one ranking last at its root
	h := scratch[:0]
	before := func(a, b int32) bool { return ranksBefore(prob, pred, a, b) }
	for j := range int32(top) {
		h = append(h, j)
		for c := len(h) - 1; c > 0; { // sift up
			p := (c - 1) / 2
			if !before(h[p], h[c]) {
				break
			}
			h[p], h[c] = h[c], h[p]
			c = p
		}
	}
	root := prob[h[0]]
	for j := int32(top); j < int32(len(prob)); j++ {
		// a class of lower probability than the root's, or of equal
		// probability and later in class order, cannot enter: one float
		// comparison for most classes of a many-class row
		if p := prob[j]; p < root || p == root && j != pred || !before(j, h[0]) {
			continue
		}
		h[0] = j
		for p := 0; ; { // sift down
			c := 2*p + 1
			if c >= len(h) {
				break
			}
			if c+1 < len(h) && before(h[c], h[c+1]) {
				c++
			}
			if !before(h[p], h[c]) {
				break
			}
			h[p], h[c] = h[c], h[p]
			p = c
		}
		root = prob[h[0]]
	}
	slices.SortFunc(h, func(a, b int32) int {
		switch {
		case a == b:
			return 0
		case before(a, b):
			return -1
		}
		return 1
	})
	copy(dst, h)
}

// ranksBefore reports whether class a ranks before class b (see
// topClasses, TopRanks).
func ranksBefore(prob []float32, pred, a, b int32) bool {
	pa, pb := prob[a], prob[b]
	na, nb := pa != pa, pb != pb
	switch {
	case na != nb:
		return nb
	case !na && pa != pb:
		return pa > pb
	case (a == pred) != (b == pred):
		return a == pred
	}
	return a < b
}

package scoring

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/internal/colname"
	"github.com/forestd/forestd/schemas"
)

// Options configure one Score call.
type Options struct {
	// Keep names input columns copied into every prediction record, after
	// the source coordinates (e.g. an id). A missing column, or one named
	// like an output column of a model with several outputs, is an
	// ErrInput error. A name that occurs twice in the input keeps the first.
	Keep []string
	// Source is written into every prediction row's source column: where
	// the input came from (a file path, "topic/partition/offset").
	Source string
	// FirstRow is the row number of the first input row within Source; rows
	// are numbered from it across the records of one call.
	FirstRow int64
	// Threads bounds the goroutines scoring one call (0: every CPU).
	// Predictions never depend on it.
	Threads int
	// Mem allocates the prediction records (nil: memory.DefaultAllocator).
	Mem memory.Allocator
	// Probs chooses the class probabilities of a classification model's
	// records: ProbsAuto (the zero value: a column per class up to
	// MaxAllProbs classes, else the top DefaultTopK), ProbsAll,
	// ProbsTop(k) or ProbsNone (see Probs). Other models ignore it.
	Probs Probs
}

func (o *Options) resolve() error {
	if o.Threads < 0 {
		return fmt.Errorf("scoring: %d threads", o.Threads)
	}
	if err := o.Probs.Validate(); err != nil {
		return fmt.Errorf("scoring: Probs: %w", err)
	}
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	return nil
}

// PredictionSchema returns the schema of the records Score makes with
// opts from input of the given schema: schemas.Predictions (with the
// kept columns and the probabilities opts.Probs chooses), or
// schemas.MultiPredictions for a model with several outputs. A kept
// column that is missing or clashes is an ErrInput error; an invalid
// option is an error naming it.
func (m *Model) PredictionSchema(input *arrow.Schema, opts Options) (*arrow.Schema, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if input == nil && len(opts.Keep) > 0 {
		return nil, inputErrorf("kept column %s: no input schema to find it in", opts.Keep[0])
	}
	spec, _, err := m.spec(input, opts)
	if err != nil {
		return nil, err
	}
	if t := m.Targets(); t != nil {
		return schemas.MultiPredictions(spec, t), nil
	}
	return schemas.Predictions(spec), nil
}

// sharedSchema is the schema of recs (at least one), which must all be
// records of one schema: a nil record or another schema is ErrInput.
func sharedSchema(recs []arrow.Record) (*arrow.Schema, error) {
	for i, r := range recs {
		if r == nil {
			return nil, inputErrorf("record %d of the call is nil", i)
		}
	}
	schema := recs[0].Schema()
	for i, r := range recs[1:] {
		if !r.Schema().Equal(schema) {
			return nil, inputErrorf("record %d of the call has another schema than record 0: %s", i+1, schemaDiff(schema, r.Schema()))
		}
	}
	return schema, nil
}

// spec resolves the kept columns in the input schema and the probability
// columns of opts (resolved).
func (m *Model) spec(input *arrow.Schema, opts Options) (schemas.PredictionSpec, []int, error) {
	spec := schemas.PredictionSpec{ModelID: m.meta.ID, ModelVersion: m.meta.Version, Classes: m.f.Classes}
	var err error
	if spec.Probs, spec.TopK, spec.ProbsNote, err = m.probColumns(opts.Probs); err != nil {
		return spec, nil, fmt.Errorf("scoring: Probs: %w", err)
	}
	idx := make([]int, 0, len(opts.Keep))
	for _, k := range opts.Keep {
		ix := input.FieldIndices(k)
		if len(ix) == 0 {
			return spec, nil, InputError(frame.MissingColumnf("%s", colname.NotFound("kept", k, schemaNames(input))))
		}
		idx = append(idx, ix[0])
		spec.Keep = append(spec.Keep, input.Field(ix[0]))
	}
	if err := schemas.CheckNames(spec, m.Targets()); err != nil {
		return spec, nil, InputError(fmt.Errorf("kept column: %w", err))
	}
	return spec, idx, nil
}

// Score scores recs, which share one schema, and returns one prediction
// record per input record (see the package documentation), rows numbered
// from opts.FirstRow across the records. The caller releases the records.
// No records give no predictions; a record without rows gives a prediction
// record without rows.
func (m *Model) Score(recs []arrow.Record, opts Options) ([]arrow.Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	schema, err := sharedSchema(recs)
	if err != nil {
		return nil, err
	}
	spec, keepIdx, err := m.spec(schema, opts)
	if err != nil {
		return nil, err
	}
	out := make([]arrow.Record, 0, len(recs))
	fail := func(err error) ([]arrow.Record, error) {
		for _, o := range out {
			o.Release()
		}
		return nil, err
	}
	row := 0 // of the call, across segments
	for s := 0; s < len(recs); {
		e := m.segmentEnd(recs, s)
		fr, err := m.frame(schema, recs[s:e])
		if err != nil {
			return fail(err)
		}
		pred, err := m.predict(fr, opts.Threads, spec.Probs, spec.TopK)
		if err != nil {
			return fail(err)
		}
		at := 0 // of the segment
		for _, r := range recs[s:e] {
			n := int(r.NumRows())
			keep := make([]arrow.Array, len(keepIdx))
			for i, ix := range keepIdx {
				keep[i] = r.Column(ix)
			}
			rec, err := pred.record(opts.Mem, spec, opts.Source, opts.FirstRow+int64(row), at, n, keep)
			if err != nil {
				return fail(err)
			}
			out = append(out, rec)
			row, at = row+n, at+n
		}
		s = e
	}
	return out, nil
}

// segmentRows is the fewest rows Score predicts in one pass of the forest
// when a call has several records: a record of at least this many rows
// is a pass of its own, smaller ones are joined until they make this
// many, so that a call of many small records still fills every thread's
// blocks of rows.
const segmentRows = 1 << 16

// segmentEnd is the end of the records Score predicts together from
// recs[s]: recs[s:] whole for a model whose predictor reads every row of
// the call (several outputs, drf), else records from s until they hold
// segmentRows rows. A compiled forest's prediction of a row does not
// depend on the other rows of the pass, so the segments give the same
// predictions as one pass (TestScoreSegmentsSameBytes).
func (m *Model) segmentEnd(recs []arrow.Record, s int) int {
	if m.f.Kind == forest.KindDRF || forest.IsMultiOutput(m.f) {
		return len(recs)
	}
	rows := int64(0)
	e := s
	for e < len(recs) && rows < segmentRows {
		rows += recs[e].NumRows()
		e++
	}
	return e
}

// CheckInput reports, as an ErrInput error, an input schema that does not
// give the model's source columns (one missing, given twice, or of a type
// the model cannot read): what Score checks of its records' schema, for a
// caller that has the schema of an input without records — a file of no
// rows, which a lake refuses from its footer all the same (lakescore), so
// that a file lacking the model's columns is an error whatever its rows.
func (m *Model) CheckInput(input *arrow.Schema) error {
	if input == nil {
		return inputErrorf("no input schema to find the model's columns in")
	}
	_, err := m.frame(input, nil)
	return err
}

// frame reads the model's source columns from recs into the frame its trees
// score: the model's own FDM mapping and derived inputs applied.
func (m *Model) frame(schema *arrow.Schema, recs []arrow.Record) (*frame.Frame, error) {
	fr, err := m.view(schema, recs)
	if err != nil {
		return nil, InputError(err)
	}
	if fr, err = m.f.FromSource(fr); err != nil {
		return nil, InputError(err)
	}
	return fr, nil
}

// view is frame.FeaturesFromRecords of the model's source columns, except
// that a single record whose source columns are all float32 without nulls
// (nor category levels) is not copied: the frame's columns are the
// record's value buffers, read only and for no longer than the record
// lives (Score's segments). Copying would give the same bits (a NaN stays
// the NaN it is, and only nulls become NaN).
func (m *Model) view(schema *arrow.Schema, recs []arrow.Record) (*frame.Frame, error) {
	if len(recs) != 1 {
		return frame.FeaturesFromRecords(schema, recs, m.names, m.levels)
	}
	rec := recs[0]
	cols := make([][]float32, len(m.names))
	for k, name := range m.names {
		ix := schema.FieldIndices(name)
		if len(ix) != 1 || (m.levels != nil && m.levels[k] != nil) {
			return frame.FeaturesFromRecords(schema, recs, m.names, m.levels)
		}
		a, ok := rec.Column(ix[0]).(*array.Float32)
		if !ok || a.NullN() != 0 {
			return frame.FeaturesFromRecords(schema, recs, m.names, m.levels)
		}
		cols[k] = a.Float32Values()
	}
	// the checks of the names and types, on no rows
	fr, err := frame.FeaturesFromRecords(schema, nil, m.names, m.levels)
	if err != nil {
		return nil, err
	}
	fr.Cols, fr.NRows = cols, int(rec.NumRows())
	return fr, nil
}

// predictions are the model's predictions for every row of one frame.
type predictions struct {
	targets []string // several outputs: values holds len(targets) per row
	values  []float64
	class   []int32 // classification: the class index per row,
	k       int     // of k classes,
	// and the probabilities predict was asked to keep: every class's
	// (prob, k per row), the top classes' (rank and rankProb, top per
	// row, schemas.TopRanks), or none
	prob     []float32
	top      int
	rank     []int32
	rankProb []float32
}

// predict scores every row of fr: the one place where forestd predicts.
// A classification model's predictions keep the probabilities that cols
// and top (a schemas.PredictionSpec's Probs and TopK) write: with
// schemas.ProbsAll every class's, rows×K; with ProbsTop each row's top
// classes, ranked block by block as the compiled forest finishes them
// (forest.Compiled.PredictBlocks), and with ProbsNone none, so that
// neither holds the rows×K matrix — only the forest's blocks of rows
// (Model.PredictionBytes).
func (m *Model) predict(fr *frame.Frame, threads int, cols schemas.ProbColumns, top int) (*predictions, error) {
	if err := m.Prepare(threads); err != nil {
		return nil, err
	}
	if m.multi != nil { // one column per output
		values, err := m.multi.PredictValues(fr, threads)
		if err != nil {
			return nil, fmt.Errorf("scoring: %w", err)
		}
		return &predictions{targets: m.multi.Targets(), values: values}, nil
	}
	if m.c == nil {
		return nil, errors.New("scoring: model has no compiled forest")
	}
	k := m.f.NumClasses()
	if k == 0 || cols == schemas.ProbsAll {
		pred, err := m.c.Predict(fr, threads)
		if err != nil {
			return nil, fmt.Errorf("scoring: %w", err)
		}
		return &predictions{values: pred.Value, class: pred.Class, prob: pred.Prob, k: k}, nil
	}
	n := fr.NRows
	p := &predictions{class: make([]int32, n), k: k}
	if cols == schemas.ProbsTop {
		if top < 1 || top > k {
			return nil, fmt.Errorf("scoring: top %d of %d classes", top, k)
		}
		p.top, p.rank, p.rankProb = top, make([]int32, n*top), make([]float32, n*top)
	}
	err := m.c.PredictBlocks(fr, threads, func(r0, r1 int, class []int32, prob []float32) {
		copy(p.class[r0:r1], class)
		if p.top > 0 {
			schemas.TopRanks(k, top, class, prob, p.rank[r0*top:r1*top], p.rankProb[r0*top:r1*top])
		}
	})
	if err != nil {
		return nil, fmt.Errorf("scoring: %w", err)
	}
	return p, nil
}

// PredictionBytes is the memory Score holds for the predictions of rows
// rows of m scored on threads goroutines (0: every CPU) with p, besides
// the input and the output records. perRow grows with the rows: a
// classifier's class index (4 bytes) and the probabilities p keeps —
// every class's for ProbsAll (4 bytes per class: the rows×K matrix), each
// rank's class and probability for top<k> (8 bytes per rank), none for
// ProbsNone —, or the values of a model without classes (8 bytes per
// output). blocks does not grow with the rows past one block per thread:
// the compiled forest's blocks of rows (forest.Compiled.BlockBytes: each
// thread's sums, 8 bytes per class, and unless ProbsAll the block's
// probabilities, 4 bytes per class). A drf model's predictor is not
// counted. An invalid p is an error starting with its value.
func (m *Model) PredictionBytes(rows, threads int, p Probs) (perRow, blocks int64, err error) {
	cols, top, _, err := m.probColumns(p)
	if err != nil {
		return 0, 0, err
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	k := len(m.Classes())
	switch {
	case m.Targets() != nil || k == 0:
		perRow = int64(8 * max(len(m.Targets()), 1))
	case cols == schemas.ProbsAll:
		perRow = int64(4 + 4*k)
	case cols == schemas.ProbsTop:
		perRow = int64(4 + 8*top)
	default:
		perRow = 4
	}
	if c := m.c; c != nil {
		blocks = c.BlockBytes(rows, threads, k > 0 && cols != schemas.ProbsAll)
	}
	return perRow, blocks, nil
}

// record builds the prediction record of rows [row, row+n) of p, numbered
// from firstRow within source, with the kept input arrays of those rows.
func (p *predictions) record(mem memory.Allocator, spec schemas.PredictionSpec, source string, firstRow int64, row, n int, keep []arrow.Array) (arrow.Record, error) {
	if p.targets != nil {
		q := len(p.targets)
		return schemas.BuildMultiPredictions(mem, spec, p.targets, source, firstRow, keep, p.values[row*q:(row+n)*q])
	}
	b := schemas.PredictionBatch{Source: source, FirstRow: firstRow, Keep: keep}
	switch {
	case p.k == 0:
		b.Value = p.values[row : row+n]
	case p.top > 0:
		b.Class, b.Top, b.TopProb = p.class[row:row+n], p.rank[row*p.top:(row+n)*p.top], p.rankProb[row*p.top:(row+n)*p.top]
	case p.prob != nil:
		b.Class, b.Prob = p.class[row:row+n], p.prob[row*p.k:(row+n)*p.k]
	default:
		b.Class = p.class[row : row+n]
	}
	return schemas.BuildPredictions(mem, spec, b)
}

// schemaDiff names the first difference between two schemas in one line:
// the number of columns, a column's name, type or nullability, or the
// metadata.
func schemaDiff(a, b *arrow.Schema) string {
	if a.NumFields() != b.NumFields() {
		var gone, added []string
		for _, f := range a.Fields() {
			if !b.HasField(f.Name) {
				gone = append(gone, f.Name)
			}
		}
		for _, f := range b.Fields() {
			if !a.HasField(f.Name) {
				added = append(added, f.Name)
			}
		}
		return fmt.Sprintf("%d columns, then %d (without %v, with %v)", a.NumFields(), b.NumFields(), gone, added)
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		switch {
		case fa.Name != fb.Name:
			return fmt.Sprintf("column %d is %q, then %q", i, fa.Name, fb.Name)
		case !arrow.TypeEqual(fa.Type, fb.Type):
			return fmt.Sprintf("column %s is %s, then %s", fa.Name, fa.Type, fb.Type)
		case fa.Nullable != fb.Nullable:
			return fmt.Sprintf("column %s is nullable %v, then %v", fa.Name, fa.Nullable, fb.Nullable)
		}
	}
	return "their metadata differ"
}

// schemaNames are the names of schema's fields, in order.
func schemaNames(schema *arrow.Schema) []string {
	out := make([]string, schema.NumFields())
	for j := range out {
		out[j] = schema.Field(j).Name
	}
	return out
}

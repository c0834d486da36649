package operators

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/schemas"
)

// ScoreOptions configure a Scorer.
type ScoreOptions struct {
	// Key names an input column copied into every prediction (e.g. an id),
	// in addition to the source coordinates; empty means none.
	Key string
	// Threads scores one batch's rows on up to this many goroutines
	// (default 1: the runtime already scores several batches in parallel).
	Threads int
	// Mem allocates the prediction records (default memory.DefaultAllocator).
	Mem memory.Allocator
}

// Scorer scores feature batches with the current model (DESIGN.md §5): the
// forest's posterior is the mean over trees of the leaf class frequencies
// (classification) or of the leaf means (regression), as forest.Compiled
// computes it (Breiman's random forest; MORF paper §2.2).
type Scorer struct {
	cur  *Current
	opts ScoreOptions
}

// NewScorer checks the options.
func NewScorer(cur *Current, opts ScoreOptions) (*Scorer, error) {
	if cur == nil {
		return nil, errors.New("operators: scorer without a model holder")
	}
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	if opts.Threads < 0 {
		return nil, fmt.Errorf("operators: %d threads", opts.Threads)
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	return &Scorer{cur: cur, opts: opts}, nil
}

// Score scores the records of one message (sharing schema) with model m;
// a nil m means the first model installed in the scorer's holder, waited
// for until ctx is done (Current.First). It returns one prediction record
// per input record, following schemas.Predictions (schemas.MultiPredictions
// for a model with several outputs: score_multi.go): source is the message's
// coordinates ("topic/partition/offset") and row counts rows across the
// message's records from 0. A schema without the model's features, or with
// a column the model cannot read, is an ErrInput error.
func (s *Scorer) Score(ctx context.Context, m *Model, schema *arrow.Schema, recs []arrow.Record, source string) ([]arrow.Record, *Model, error) {
	if m == nil {
		var err error
		if m, err = s.cur.First(ctx); err != nil {
			return nil, nil, err
		}
	}
	f := m.Forest
	// the model's own source columns and mapping (forest.SourceColumns,
	// FromSource): a model pinned with its FDM mapping is scored with it
	names, levels := f.SourceColumns()
	fr, err := frame.FeaturesFromRecords(schema, recs, names, levels)
	if err != nil {
		return nil, m, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if fr, err = f.FromSource(fr); err != nil {
		return nil, m, fmt.Errorf("%w: %w", ErrInput, err)
	}
	spec := schemas.PredictionSpec{ModelID: m.Meta.ID, ModelVersion: m.Meta.Version, Classes: f.Classes}
	keyIdx := -1
	if s.opts.Key != "" {
		ix := schema.FieldIndices(s.opts.Key)
		if len(ix) == 0 {
			return nil, m, inputErr("key column %q is not in the input", s.opts.Key)
		}
		keyIdx = ix[0]
		spec.Keep = []arrow.Field{schema.Field(keyIdx)}
	}
	if m.Multi != nil { // one column per output (score_multi.go)
		out, err := s.scoreMulti(m, fr, spec, keyIdx, recs, source)
		return out, m, err
	}
	pred, err := m.Compiled.Predict(fr, s.opts.Threads)
	if err != nil {
		return nil, m, fmt.Errorf("operators: scoring: %w", err)
	}
	k := f.NumClasses()
	out := make([]arrow.Record, 0, len(recs))
	row := 0
	for _, r := range recs {
		n := int(r.NumRows())
		b := schemas.PredictionBatch{Source: source, FirstRow: int64(row)}
		if keyIdx >= 0 {
			b.Keep = []arrow.Array{r.Column(keyIdx)}
		}
		if k > 0 {
			b.Class = pred.Class[row : row+n]
			b.Prob = pred.Prob[row*k : (row+n)*k]
		} else {
			b.Value = pred.Value[row : row+n]
		}
		rec, err := schemas.BuildPredictions(s.opts.Mem, spec, b)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, m, err
		}
		out = append(out, rec)
		row += n
	}
	return out, m, nil
}

// ImportancesRecord returns the model's feature importances, one row per
// feature and kind (impurity decrease, projection counts π_j of the MORF
// paper §3.2, OOB permutation importance — whichever the model carries),
// following schemas.Importances.
func ImportancesRecord(mem memory.Allocator, m *Model) (arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	f := m.Forest
	var rows []schemas.ImportanceRow
	for _, kind := range sortedKeys(f.Importances) {
		v := f.Importances[kind]
		for j, name := range f.Features {
			if j < len(v) {
				rows = append(rows, schemas.ImportanceRow{Feature: name, Kind: kind, Value: v[j]})
			}
		}
	}
	return schemas.BuildImportances(mem, m.Meta.ID, m.Meta.Version, rows)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package scoring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/manifold"
	"github.com/forestd/forestd/arrowforest/model"
	"github.com/forestd/forestd/schemas"
)

// ErrInput marks input that does not fit a model or an operator: a schema
// without the model's features, a wrong-typed or categorical column, a
// label of the wrong kind. Retrying cannot help; the daemon and the
// Redpanda Connect processors quarantine such messages.
var ErrInput = errors.New("input does not fit")

// InputError wraps err (naming the column or value at fault) as an
// ErrInput error.
func InputError(err error) error { return fmt.Errorf("%w: %w", ErrInput, err) }

func inputErrorf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, a...))
}

// Model is a decoded forestd model ready to score: the forest, its identity
// (content ID and version) and its encoded bytes (unless Load dropped
// them). It is immutable once built and safe for concurrent use.
type Model struct {
	f     *forest.Forest
	meta  model.Meta
	bytes []byte
	// c is the compiled forest; nil for a drf forest, which predicts
	// through its manifold.Predictor (multi, built by Prepare).
	c *forest.Compiled
	// names and levels are the source columns read from the input
	// (forest.SourceColumns).
	names  []string
	levels [][]string

	prep  sync.Once
	multi forest.MultiOutput // several outputs: c, or the drf predictor
	err   error              // from preparing the drf predictor
}

// LoadOptions are Load's options; the zero value keeps the file's bytes.
type LoadOptions struct {
	// NoBytes drops the model file's bytes once the model is decoded, for
	// a caller that never calls Bytes (it returns nil): a format-5 model
	// then costs its compiled walk alone, not also the file's size (the
	// Benthos processors and forestd score; docs/performance.md, "Issue 36,
	// fourth pass"). The daemon keeps them to publish the model.
	NoBytes bool
}

// Load reads and checks the model file at path (every check of
// model.DecodeBytes: format version, checksum, tree structure) and compiles it;
// opts holds at most one LoadOptions. Errors name the path.
func Load(path string, opts ...LoadOptions) (*Model, error) {
	if len(opts) > 1 {
		return nil, fmt.Errorf("scoring: loading %s: %d LoadOptions, want at most one", path, len(opts))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	m, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(opts) == 1 && opts[0].NoBytes {
		m.bytes = nil // nothing decoded aliases data (model.DecodeCompiled copies every value out)
	}
	return m, nil
}

// Decode checks and compiles an encoded model (a model file's bytes, or a
// model from the daemon's model topic). data is kept by the Model: the
// caller must not change it. A model of format 5 is compiled from its
// compact node table without trees (model.DecodeCompiled: one validation,
// about 12 bytes a node in memory beside data), so its Forest carries
// the header alone.
func Decode(data []byte) (*Model, error) {
	f, c, meta, err := model.DecodeCompiled(data)
	if err != nil {
		return nil, err
	}
	m := &Model{f: f, meta: meta, bytes: data, c: c}
	m.names, m.levels = f.SourceColumns()
	return m, nil
}

// Encode encodes a trained forest as model version version (createdBy names
// the writer, e.g. "forestd serve") and returns it ready to score. Encoding
// is deterministic: the same forest and version give the same bytes and ID.
func Encode(f *forest.Forest, version int64, createdBy string) (*Model, error) {
	data, meta, err := model.EncodeBytes(f, model.Meta{Version: version, CreatedBy: createdBy})
	if err != nil {
		return nil, err
	}
	return newModel(f, meta, data)
}

// EncodeMeta is Encode with the whole of meta: the version, the writer and
// the reference sample (model.Meta.Reference, Model.Reference).
func EncodeMeta(f *forest.Forest, meta model.Meta) (*Model, error) {
	data, meta, err := model.EncodeBytes(f, meta)
	if err != nil {
		return nil, err
	}
	return newModel(f, meta, data)
}

func newModel(f *forest.Forest, meta model.Meta, data []byte) (*Model, error) {
	m := &Model{f: f, meta: meta, bytes: data}
	m.names, m.levels = f.SourceColumns()
	if f.Kind == forest.KindDRF {
		return m, nil // predicts through manifold.Predictor: Prepare
	}
	c, err := forest.Compile(f)
	if err != nil {
		return nil, fmt.Errorf("compiling model %s: %w", meta.ID, err)
	}
	m.c = c
	return m, nil
}

// Prepare does the one-off work a model needs before its first prediction
// on up to threads goroutines (0: every CPU): for a distance random forest
// it builds the manifold.Predictor, which recomputes the training distance
// matrix from the stored responses (dRF paper §2.3); other kinds are
// compiled already. Score calls it with its own thread count; call it
// earlier to keep that cost out of the first batch. The result does not
// depend on threads.
func (m *Model) Prepare(threads int) error {
	m.prep.Do(func() {
		if m.f.Kind != forest.KindDRF {
			if forest.IsMultiOutput(m.f) {
				m.multi = m.c
			}
			return
		}
		if threads < 1 {
			threads = runtime.GOMAXPROCS(0)
		}
		p, err := manifold.NewPredictor(m.f, threads)
		if err != nil {
			m.err = fmt.Errorf("preparing drf model %s: %w", m.meta.ID, err)
			return
		}
		m.multi = p
	})
	return m.err
}

// Reference is the model's reference sample of its training rows
// (model.SampleReference: its source columns, float64 with NaN for a
// missing number, strings with nulls), which drift tests compare traffic
// with (arrowforest/drift); nil when the model carries none. Shared: do
// not release it.
func (m *Model) Reference() arrow.Record { return m.meta.Reference }

// Forest returns the model's forest. It is shared: do not modify it. For
// a model decoded from format 5 (Decode, Load) its Trees are nil: NumTrees
// counts them, and model.DecodeBytes of Bytes gives them.
func (m *Model) Forest() *forest.Forest { return m.f }

// NumTrees is the number of trees.
func (m *Model) NumTrees() int {
	if m.c != nil {
		return m.c.NumTrees()
	}
	return len(m.f.Trees)
}

// Meta returns the model's identity: content ID, version, writer.
func (m *Model) Meta() model.Meta { return m.meta }

// ID is the model's content ID (a SHA-256, see arrowforest/model).
func (m *Model) ID() string { return m.meta.ID }

// Version is the model version its writer chose.
func (m *Model) Version() int64 { return m.meta.Version }

// Bytes returns the encoded model; nil for a model loaded with
// LoadOptions.NoBytes. It is shared: do not modify it.
func (m *Model) Bytes() []byte { return m.bytes }

// Kind is the forest kind.
func (m *Model) Kind() forest.Kind { return m.f.Kind }

// Columns names the input columns the model reads, in order: its features,
// or with an FDM mapping the mapping's inputs (forest.SourceColumns).
func (m *Model) Columns() []string { return m.names }

// Classes names the classes of a classification model (nil otherwise).
func (m *Model) Classes() []string { return m.f.Classes }

// Targets names the outputs of a model with several (a multi-output
// regression forest or a distance random forest); nil for one output.
func (m *Model) Targets() []string {
	if m.f.DRF != nil {
		return m.f.DRF.Targets
	}
	return m.f.Targets
}

// Newer reports whether m orders after o: a higher version, or the same
// version and a larger content ID, so that replicas that trained
// concurrently converge on one model. Any model is newer than nil.
func (m *Model) Newer(o *Model) bool {
	if o == nil {
		return true
	}
	if m.meta.Version != o.meta.Version {
		return m.meta.Version > o.meta.Version
	}
	return m.meta.ID > o.meta.ID
}

// Importances returns the model's feature importances as one record
// following schemas.Importances: a row per feature and kind (impurity
// decrease, the projection counts π_j of the MORF paper §3.2, OOB
// permutation importance — whichever the model carries). mem allocates it
// (nil: memory.DefaultAllocator); the caller releases it.
func (m *Model) Importances(mem memory.Allocator) (arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	kinds := make([]string, 0, len(m.f.Importances))
	for k := range m.f.Importances {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var rows []schemas.ImportanceRow
	for _, kind := range kinds {
		v := m.f.Importances[kind]
		for j, name := range m.f.Features {
			if j < len(v) {
				rows = append(rows, schemas.ImportanceRow{Feature: name, Kind: kind, Value: v[j]})
			}
		}
	}
	return schemas.BuildImportances(mem, m.meta.ID, m.meta.Version, rows)
}

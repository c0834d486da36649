package benthos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/arrowforest/fdm"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/operators"
)

func selectSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Categories("Machine Learning").
		Summary("Reduces messages to the features a forestd feature selection kept and maps the dependent groups (FDM), as `forestd select --apply` maps files.").
		Description(`
The mapping is the JSON file `+"`forestd select --mapping`"+` writes (dissertation
ch. 5–6: the marginally dependent features, and each jointly dependent group
mapped by feature dependence mapping). Each message becomes, in this order: the
`+"`keep`"+` columns, the marginal features as they are, the mapped columns, and
the `+"`label`"+` when set — the columns and values `+"`forestd select --apply MAPPING --keep ... --label ...`"+`
writes for the same rows. A column appears once, so a name clash is refused
at start, naming the column: a mapping whose mapped column is named like one
of its input features (it would replace that input in every message), or a
`+"`keep`"+` column or `+"`label`"+` named like a mapped column.

JSON messages (one object each) of a batch are mapped as one record and come
back as JSON objects of those columns; Arrow IPC stream messages come back as
Arrow IPC streams. A message without a column the mapping reads, a kept
column or the label, or with a value of the wrong kind, is marked with an
error and a one-line reason while the rest of the batch is mapped.

Metrics: `+"`forestd_rows_selected`, `forestd_messages_errored`, `forestd_batch_latency_ns`"+`.`).
		Fields(
			service.NewStringField("mapping").
				Description("Path of a mapping file written by `forestd select --mapping` (or `forestd select`'s default `<out>.fdm.json`).").
				Example("./selection.fdm.json").
				LintRule(`root = if this.trim() == "" { ["mapping: the path of a forestd select mapping file is required"] }`),
			service.NewStringListField("keep").
				Description("Columns copied first, unchanged (e.g. an id); every message must have them.").
				Default([]any{}).Example([]any{"id"}),
			service.NewStringField("label").
				Description("The label column, copied after the mapped columns; every message must have it when set (for a `forestd_train` after this processor).").
				Default("").Example("y"),
		).
		LintRule(`root = if this.label.or("") != "" && this.keep.or([]).contains(this.label) { ["label: the label is already a kept column; name it in one of keep and label"] }`).
		Example("Select, then score",
			"Map raw feature rows with a selection, then score them with a model trained on the mapped columns.", `
pipeline:
  processors:
    - forestd_select:
        mapping: ./selection.fdm.json
        keep: [id]
    - forestd_score:
        model: ./mapped.model
`)
}

// selectProc is the forestd_select processor; it holds an immutable
// mapping and is safe for concurrent use.
type selectProc struct {
	t     *fdm.Transform
	path  string
	keep  []string
	label string
	kinds map[string]codec.Kind
	mem   memory.Allocator
	met   struct {
		rows, errored *service.MetricCounter
		latency       *service.MetricTimer
	}
}

func newSelectProc(conf *service.ParsedConfig, mgr *service.Resources) (*selectProc, error) {
	p := &selectProc{mem: memory.DefaultAllocator}
	var err error
	if p.path, err = conf.FieldString("mapping"); err != nil {
		return nil, err
	}
	if p.keep, err = conf.FieldStringList("keep"); err != nil {
		return nil, err
	}
	if p.label, err = conf.FieldString("label"); err != nil {
		return nil, err
	}
	fh, err := os.Open(p.path)
	if err != nil {
		return nil, fmt.Errorf("forestd_select: %w", err)
	}
	p.t, err = fdm.ReadTransform(fh)
	fh.Close()
	if err != nil {
		return nil, fmt.Errorf("forestd_select: %s: %w", p.path, err)
	}
	// a kept column or the label named like a mapped column could never
	// be mapped: refused here rather than in every message
	if err := operators.CheckSelectNames(p.t, p.options()); err != nil {
		return nil, fmt.Errorf("forestd_select: %w", err)
	}
	p.kinds = featureKinds(p.t.Inputs(), nil)
	m := mgr.Metrics()
	p.met.rows = m.NewCounter("forestd_rows_selected")
	p.met.errored = m.NewCounter("forestd_messages_errored")
	p.met.latency = m.NewTimer("forestd_batch_latency_ns")
	return p, nil
}

func (p *selectProc) options() operators.SelectOptions {
	return operators.SelectOptions{Keep: p.keep, Label: p.label, Mem: p.mem}
}

// ProcessBatch implements service.BatchProcessor.
func (p *selectProc) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	t0 := time.Now()
	errored := func(msg *service.Message, err error) {
		msg.SetError(oneLine(err))
		p.met.errored.Incr(1)
	}
	parts := splitBatch("forestd_select", batch, errored)
	rows := 0
	if len(parts.json) > 0 {
		rows += p.selectJSON(batch, parts, errored)
	}
	for _, i := range parts.arrow {
		rows += p.selectArrow(batch[i], parts.bytes[i], errored)
	}
	p.met.rows.Incr(int64(rows))
	p.met.latency.Timing(time.Since(t0).Nanoseconds())
	return []service.MessageBatch{batch}, nil
}

// selectJSON maps the JSON messages of a batch as one record, each message
// validated on its own first (see scoreProc.scoreJSON).
func (p *selectProc) selectJSON(batch service.MessageBatch, parts batchParts, errored func(*service.Message, error)) int {
	require := slices.Concat(p.t.Inputs(), p.keep)
	if p.label != "" {
		require = append(require, p.label)
	}
	// the mapping's inputs, keep and label are decoded, nothing else (the
	// output holds only those); keep and label take the kind most of the
	// batch's messages give them
	rec, ok, fail := parts.jsonRecord("forestd_select", batch, codec.JSONOptions{Require: require, Kinds: p.kinds, Only: require, Single: true}, p.mem, errored)
	if rec == nil {
		return 0
	}
	defer rec.Release()
	_, out, err := operators.SelectRecords(p.t, rec.Schema(), []arrow.Record{rec}, p.options())
	if err != nil {
		return fail(err)
	}
	defer release(out)
	lines, err := jsonLines(out[0])
	if err != nil {
		return fail(err)
	}
	for k, i := range ok {
		batch[i].SetBytes(lines[k])
	}
	return len(ok)
}

func (p *selectProc) selectArrow(msg *service.Message, value []byte, errored func(*service.Message, error)) int {
	schema, recs, err := codec.Decode(value, codec.ContentTypeArrow, p.mem)
	if err != nil {
		errored(msg, fmt.Errorf("forestd_select: %w", err))
		return 0
	}
	defer release(recs)
	outSchema, out, err := operators.SelectRecords(p.t, schema, recs, p.options())
	if err != nil {
		errored(msg, fmt.Errorf("forestd_select: %w", err))
		return 0
	}
	defer release(out)
	b, err := codec.EncodeArrowStream(outSchema, out, p.mem)
	if err != nil {
		errored(msg, fmt.Errorf("forestd_select: %w", err))
		return 0
	}
	msg.SetBytes(b)
	n := 0
	for _, r := range out {
		n += int(r.NumRows())
	}
	return n
}

// Close implements service.BatchProcessor.
func (p *selectProc) Close(ctx context.Context) error { return nil }

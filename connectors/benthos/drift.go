package benthos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/arrowforest/dependence"
	"github.com/forestd/forestd/arrowforest/drift"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/operators"
)

// Metadata keys forestd_drift sets with output: metadata.
const (
	metaDrift         = "forestd_drift"          // "true" or "false"
	metaDriftFeatures = "forestd_drift_features" // the drifted tests, comma-separated ("(joint)" for the joint test)
	metaDriftReport   = "forestd_drift_report"   // the report as one JSON object
	metaDriftWindow   = "forestd_drift_window"   // the window's number, from 1
)

func driftSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Categories("Machine Learning").
		Summary("Tests whether the rows of each batch (or of a window of batches) still follow a reference sample, as `forestd drift` tests files.").
		Description(`
Two-sample energy tests (Székely and Rizzo; R `+"`energy::eqdist.e`"+`'s
statistic) between the reference file and the current rows: one per
feature and one joint over the features, with seeded permutation p-values and
false alarms controlled across them (Holm by default); the library call is
`+"`arrowforest/drift.Test`"+`, the one `+"`forestd drift`"+` and the daemon use.

The current rows are the batch's messages — JSON objects (one each) and Arrow
IPC streams — or, with `+"`window`"+`, the rows of consecutive batches until
at least that many have arrived (a tumbling window; with several pipeline
threads batches join it in the order they reach the processor). A message
without a feature, or with a value of the wrong kind, is marked with an error
and a one-line reason and stays out of the test.

With `+"`output: metadata`"+` (default) every message passes on; the
messages of the batch that completes a window get the metadata
`+"`forestd_drift`"+` ("true" or "false"), `+"`forestd_drift_features`"+`
(the drifted tests, comma-separated, "(joint)" for the joint test),
`+"`forestd_drift_report`"+` (the report as one JSON object, the
`+"`forestd drift`"+` object) and `+"`forestd_drift_window`"+` (the window's
number). With `+"`output: report`"+` the data messages are dropped and each
completed window becomes one message: the report as JSON or, with
`+"`report_format: arrow`"+`, as an Arrow IPC stream of the
`+"`schemas.DriftReport`"+` table.

Metrics: `+"`forestd_drift_windows`, `forestd_drift_detected`, `forestd_messages_errored`, `forestd_batch_latency_ns`"+`.`).
		Fields(
			service.NewStringField("reference").
				Description("The reference sample: a Parquet, Arrow IPC or CSV file, or a directory of them (e.g. the model's training data).").
				Example("./train.parquet").
				LintRule(`root = if this.trim() == "" { ["reference: the path of the reference sample is required"] }`),
			service.NewStringListField("features").
				Description("The features to test (default: every column of the reference).").
				Default([]any{}).Example([]any{"x1", "x2"}),
			service.NewIntField("window").
				Description("Rows per test: 0 tests each batch on its own; N collects batches until at least N rows have arrived.").
				Default(0).
				LintRule(`root = if this < 0 { ["window must be 0 (each batch) or a positive row count"] }`),
			service.NewStringEnumField("output", "metadata", "report").
				Description("metadata: messages pass on, those of the batch that completes a window carry the result; report: each completed window becomes one report message, the data messages are dropped.").
				Default("metadata"),
			service.NewStringEnumField("report_format", "json", "arrow").
				Description("The report message's format with output: report.").
				Default("json"),
			service.NewFloatField("alpha").
				Description("Level of the family of tests (features and joint).").
				Default(drift.DefaultAlpha).
				LintRule(`root = if this <= 0 || this >= 1 { ["alpha must be in (0, 1)"] }`),
			service.NewStringEnumField("adjust", "holm", "bh", "none").
				Description("False-alarm control across the tests.").
				Default("holm"),
			service.NewIntField("seed").
				Description("Seed of the permutations and the projections.").
				Default(1).
				LintRule(`root = if this < 0 { ["seed must not be negative"] }`),
			service.NewIntField("directions").
				Description("Random directions of the joint test's projected statistic.").
				Default(drift.DefaultDirections).
				LintRule(`root = if this < 1 { ["directions must be at least 1"] }`),
			service.NewIntField("threads").
				Description("Permutation workers (0: one per CPU); the result does not depend on it.").
				Default(0).
				LintRule(`root = if this < 0 { ["threads must be 0 (one per CPU) or positive"] }`),
		).
		LintRule(`root = if this.report_format.or("json") != "json" && this.output.or("metadata") != "report" { ["report_format: applies to output: report only"] }`).
		Example("Drift of scored traffic",
			"Test every 5,000 rows against the training data and route the windows that drifted.", `
pipeline:
  processors:
    - forestd_drift:
        reference: ./train.parquet
        window: 5000
    - forestd_score:
        model: ./iris.model
output:
  switch:
    cases:
      - check: '@forestd_drift == "true"'
        output: {file: {path: ./drifted.jsonl, codec: lines}}
        continue: true
      - output: {drop: {}}
`)
}

// driftProc is the forestd_drift processor: an immutable reference and a
// window of current records behind a mutex (pipeline threads share it).
type driftProc struct {
	ref    []arrow.Record
	opts   drift.Options
	kinds  map[string]codec.Kind
	window int
	report bool // output: report
	arrow  bool // report_format: arrow
	mem    memory.Allocator
	// ctx is done once the processor is closed: a running test stops
	// (drift.Options.Context) and Close waits for it (tests) before it
	// releases the reference.
	ctx    context.Context
	cancel context.CancelFunc
	tests  sync.WaitGroup

	mu     sync.Mutex
	closed bool
	cur    []arrow.Record
	rows   int
	tested int

	met struct {
		windows, detected, errored *service.MetricCounter
		latency                    *service.MetricTimer
	}
}

func newDriftProc(conf *service.ParsedConfig, mgr *service.Resources) (*driftProc, error) {
	p := &driftProc{mem: memory.DefaultAllocator}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	path, err := conf.FieldString("reference")
	if err != nil {
		return nil, err
	}
	if p.opts.Features, err = conf.FieldStringList("features"); err != nil {
		return nil, err
	}
	if p.window, err = conf.FieldInt("window"); err != nil {
		return nil, err
	}
	out, err := conf.FieldString("output")
	if err != nil {
		return nil, err
	}
	format, err := conf.FieldString("report_format")
	if err != nil {
		return nil, err
	}
	p.report, p.arrow = out == "report", format == "arrow"
	if p.opts.Alpha, err = conf.FieldFloat("alpha"); err != nil {
		return nil, err
	}
	adjust, err := conf.FieldString("adjust")
	if err != nil {
		return nil, err
	}
	if p.opts.Adjust, err = dependence.ParseAdjust(adjust); err != nil {
		return nil, fmt.Errorf("forestd_drift: adjust: %w", err)
	}
	seed, err := conf.FieldInt("seed")
	if err != nil {
		return nil, err
	}
	if seed < 0 {
		return nil, fmt.Errorf("forestd_drift: seed %d must not be negative", seed)
	}
	p.opts.Seed = uint64(seed)
	if p.opts.Directions, err = conf.FieldInt("directions"); err != nil {
		return nil, err
	}
	if p.opts.Threads, err = conf.FieldInt("threads"); err != nil {
		return nil, err
	}
	if p.window < 0 || p.opts.Directions < 1 || p.opts.Threads < 0 {
		return nil, fmt.Errorf("forestd_drift: window %d, directions %d, threads %d out of range", p.window, p.opts.Directions, p.opts.Threads)
	}
	schema, recs, err := files.ReadPaths([]string{path}, files.ReadOptions{Mem: p.mem})
	if err != nil {
		return nil, fmt.Errorf("forestd_drift: reference %s: %w", path, err)
	}
	p.ref = recs
	if len(p.opts.Features) == 0 {
		for _, f := range schema.Fields() {
			p.opts.Features = append(p.opts.Features, f.Name)
		}
	}
	p.kinds = make(map[string]codec.Kind, len(p.opts.Features))
	for _, name := range p.opts.Features {
		ix := schema.FieldIndices(name)
		if len(ix) == 0 {
			release(p.ref)
			return nil, fmt.Errorf("forestd_drift: reference %s has no column %q", path, name)
		}
		p.kinds[name] = codec.KindNumber
		switch t := schema.Field(ix[0]).Type.(type) {
		case *arrow.StringType, *arrow.LargeStringType:
			p.kinds[name] = codec.KindString
		case *arrow.DictionaryType:
			if t.ValueType.ID() == arrow.STRING {
				p.kinds[name] = codec.KindString
			}
		}
	}
	m := mgr.Metrics()
	p.met.windows = m.NewCounter("forestd_drift_windows")
	p.met.detected = m.NewCounter("forestd_drift_detected")
	p.met.errored = m.NewCounter("forestd_messages_errored")
	p.met.latency = m.NewTimer("forestd_batch_latency_ns")
	return p, nil
}

// ProcessBatch implements service.BatchProcessor.
func (p *driftProc) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	t0 := time.Now()
	defer func() { p.met.latency.Timing(time.Since(t0).Nanoseconds()) }()
	errored := func(msg *service.Message, err error) {
		msg.SetError(oneLine(err))
		p.met.errored.Incr(1)
	}
	recs := p.decode(batch, errored)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		release(recs)
		for _, msg := range batch {
			errored(msg, errors.New("forestd_drift: the processor is closed"))
		}
		return []service.MessageBatch{batch}, nil
	}
	for _, r := range recs {
		p.cur = append(p.cur, r)
		p.rows += int(r.NumRows())
	}
	if p.rows == 0 || p.rows < p.window {
		p.mu.Unlock()
		if p.report {
			return nil, nil
		}
		return []service.MessageBatch{batch}, nil
	}
	cur := p.cur
	p.cur, p.rows = nil, 0
	p.tested++
	n := p.tested
	p.tests.Add(1)
	p.mu.Unlock()
	defer p.tests.Done()
	defer release(cur)

	// the test stops when the batch's context ends (Benthos' hard stop)
	// or the processor closes
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	opts := p.opts
	opts.Context = tctx
	rep, err := drift.Test(p.ref, cur, opts)
	if err != nil {
		// a window that cannot be tested (a feature without values on
		// one side): its batch's messages say why
		for _, msg := range batch {
			errored(msg, fmt.Errorf("forestd_drift: window %d: %w", n, err))
		}
		if p.report {
			return nil, nil
		}
		return []service.MessageBatch{batch}, nil
	}
	p.met.windows.Incr(1)
	if rep.Drift {
		p.met.detected.Incr(1)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("forestd_drift: %w", err)
	}
	if p.report {
		body := js
		if p.arrow {
			rec := operators.DriftRecord(rep, p.mem)
			body, err = codec.EncodeArrowStream(rec.Schema(), []arrow.Record{rec}, p.mem)
			rec.Release()
			if err != nil {
				return nil, fmt.Errorf("forestd_drift: %w", err)
			}
		}
		msg := service.NewMessage(body)
		msg.MetaSetMut(metaDriftWindow, n)
		return []service.MessageBatch{{msg}}, nil
	}
	var drifted []string
	for _, f := range rep.Features {
		if f.Drift {
			drifted = append(drifted, f.Name)
		}
	}
	if rep.Joint != nil && rep.Joint.Drift {
		drifted = append(drifted, "(joint)")
	}
	for _, msg := range batch {
		msg.MetaSetMut(metaDrift, fmt.Sprint(rep.Drift))
		msg.MetaSetMut(metaDriftFeatures, strings.Join(drifted, ","))
		msg.MetaSetMut(metaDriftReport, string(js))
		msg.MetaSetMut(metaDriftWindow, n)
	}
	return []service.MessageBatch{batch}, nil
}

// decode returns the batch's rows as records: the JSON messages as one
// record of the features (each message checked on its own), each Arrow
// message as its records. The caller owns them.
func (p *driftProc) decode(batch service.MessageBatch, errored func(*service.Message, error)) []arrow.Record {
	parts := splitBatch("forestd_drift", batch, errored)
	var recs []arrow.Record
	if len(parts.json) > 0 {
		feats := slices.Clone(p.opts.Features)
		rec, _, _ := parts.jsonRecord("forestd_drift", batch, codec.JSONOptions{Require: feats, Kinds: p.kinds, Only: feats, Single: true}, p.mem, errored)
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	for _, i := range parts.arrow {
		schema, rs, err := codec.Decode(parts.bytes[i], codec.ContentTypeArrow, p.mem)
		if err == nil {
			for _, name := range p.opts.Features {
				if len(schema.FieldIndices(name)) == 0 {
					err = fmt.Errorf("no column %q", name)
					break
				}
			}
		}
		if err != nil {
			release(rs)
			errored(batch[i], fmt.Errorf("forestd_drift: %w", err))
			continue
		}
		recs = append(recs, rs...)
	}
	return recs
}

// Close implements service.BatchProcessor. Benthos closes the processor
// once per pipeline thread, which share it: the first Close stops a test
// running on any thread, waits for it (until ctx ends) and releases the
// reference; later batches are errored.
func (p *driftProc) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	done := make(chan struct{})
	go func() {
		p.tests.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("forestd_drift: closing: %w", ctx.Err()) // the running test keeps the reference; the GC frees it
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	release(p.cur)
	release(p.ref)
	p.cur, p.ref = nil, nil
	return nil
}

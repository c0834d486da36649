package benthos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/internal/bufpool"
	"github.com/forestd/forestd/schemas"
	"github.com/forestd/forestd/scoring"
)

// Metadata keys set on every scored message.
const (
	MetaModelID      = "forestd_model_id"
	MetaModelVersion = "forestd_model_version"
)

// outputNames are the prediction columns a kept column may not be named.
var outputNames = []string{schemas.ColModelID, schemas.ColModelVersion, schemas.ColSource, schemas.ColRow, schemas.ColPrediction}

func scoreSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Categories("Machine Learning").
		Summary("Scores messages with a forestd decision-forest model (rf, sporf, morf, lfs, fdm, multi-output, drf).").
		Description(`
A batch is scored as one Arrow record, not message by message: put a batching
policy in front of it (the `+"`batched`"+` input, or an input's `+"`batching`"+`).

**JSON messages** (one object each) come back as the same object plus the
columns `+"`forestd score`"+` writes: `+"`model_id`, `model_version`, `prediction`"+` and
the class probabilities `+"`probs`"+` chooses (classification: `+"`prob_<class>`"+` per
class, or `+"`top1_class`, `top1_prob`"+`… of the k most probable), or one field per
target for multi-output and drf models — at the root, or under `+"`result_field`"+`. A
member the object already has under one of those names is replaced (a message
scored twice carries the newer prediction; at the root, a multi-output model's
target fields replace label members of the same name). What would replace a
column the model reads is refused, naming it: a `+"`result_field`"+` that is also a
`+"`keep`"+` column at start, and, at every load of the model file (at start, or at
a reload, which then keeps the current model), a `+"`result_field`"+` the model
reads, a column it reads named like a member added at the root (set
`+"`result_field`"+`), or a `+"`keep`"+` column named like one of its targets.
Every column the model reads must be a key of the object: a number (a boolean
reads as 1 or 0; null is a missing value, which the trees route as trained)
or, for a categorical feature, a string.

**Arrow IPC stream messages** come back as Arrow IPC streams of prediction
records (forestd's predictions schema: `+"`model_id, model_version, source, row`"+`,
the `+"`keep`"+` columns, then the predictions), one record per input record,
rows numbered from 0 in each message. The Arrow messages of a batch that share
a schema are scored together in one call (the forest's walk costs less per
row on larger blocks).

A message that cannot be scored (not JSON or Arrow, a missing feature, a value
of the wrong kind, a missing kept column) is marked with an error and a
one-line reason while the rest of the batch is scored, so `+"`catch`, `switch`"+`
with `+"`errored()`"+` and `+"`reject_errored`"+` route it to a dead letter. Scored messages
get the metadata `+"`"+MetaModelID+"`"+` and `+"`"+MetaModelVersion+"`"+`.

The model file is polled every `+"`reload_interval`"+` and a changed file is loaded
and swapped in atomically: a batch is scored entirely by one model, a file that
does not decode (half written, truncated) is ignored until it does, and a
model is installed only if its version is higher (or equal with a larger
content ID), so versions only move forward. Write new models with a rename
(`+"`forestd_train`"+` does) and a higher `+"`--model-version`"+`.

Metrics: `+"`forestd_rows_scored`, `forestd_messages_errored`, `forestd_model_version`, `forestd_batch_latency_ns`, `forestd_model_reloads`, `forestd_model_reload_errors`"+`.`).
		Fields(
			service.NewStringField("model").
				Description("Path of a forestd model file (`forestd train --out`, or the `model_path` of a `forestd_train` processor).").
				Example("./models/churn.model").
				LintRule(`root = if this.trim() == "" { ["model: the path of a forestd model file is required"] }`),
			service.NewStringField("result_field").
				Description("JSON messages: the key under which the prediction columns are added as one object; empty adds them at the root of the message. A member of that name is replaced; a model that reads a column of that name (or, at the root, a column named like a prediction member) is refused when it loads, and a `keep` column of that name at start.").
				Default("").Example("forestd"),
			service.NewStringListField("keep").
				Description("Arrow IPC messages: input columns copied into the prediction records after `row`, as `forestd score --keep` does (e.g. an id). JSON messages keep all their members anyway.").
				Default([]any{}).Example([]any{"id"}),
			service.NewInterpolatedStringField("source").
				Description("Arrow IPC messages: the value of the `source` column of their predictions, e.g. where the message came from.").
				Default("").Example(`${! meta("kafka_topic") }/${! meta("kafka_partition") }/${! meta("kafka_offset") }`),
			service.NewDurationField("reload_interval").
				Description("How often the model file is checked for a new model.").
				Default("1s").
				LintRule(`root = if !this.string().re_match("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$") || this.string().re_replace_all("[^1-9]", "") == "" { ["reload_interval must be a positive duration (500ms, 1s, 1m)"] }`),
			service.NewBoolField("require_model").
				Description("Fail at start when the model file does not load. Set false when a `forestd_train` in the same pipeline writes it: until the first model appears, messages get an error saying so.").
				Default(true).Advanced(),
			service.NewStringField("probs").
				Description("The class probabilities of a classification model's predictions: `auto` (a `prob_<class>` member or column per class up to 256 classes, the top 5 beyond: a model of 10,000 classes would add 10,000 members to every message), `all` (`prob_<class>` per class), `top<k>` (e.g. `top3`: `top1_class`, `top1_prob`, …, `top3_class`, `top3_prob`, the k most probable classes, most probable first; equal probabilities rank the prediction first, then in class order; a k above the model's classes ranks them all) or `none` (`prediction` alone). Regression, multi-output and drf models have no class probabilities and ignore it, so one setting serves every model the file may hold.").
				Default("auto").Example("top3").
				LintRule(`root = if !this.string().re_match("^(auto|all|none|top[1-9][0-9]*)$") { ["probs must be auto, all, none or top<k> with k from 1 (e.g. top5)"] }`),
			service.NewIntField("threads").
				Description("Goroutines scoring one batch (0: every CPU). Benthos already runs one batch per pipeline thread (`pipeline.threads`, one per CPU by default), so one goroutine per batch keeps the CPUs busy and a 1,000-row batch in one block of the forest's walk (two goroutines split it into two slower blocks of 500). Raise it when the pipeline has fewer threads than CPUs. Predictions never depend on it.").
				Default(1).Advanced().
				LintRule(`root = if this < 0 { ["threads must be 0 (every CPU) or more"] }`),
		).
		LintRule(`root = [
  if this.keep.or([]).any(k -> ["model_id", "model_version", "source", "row", "prediction"].contains(k) || k.has_prefix("prob_") || k.re_match("^top[1-9][0-9]*_(class|prob)$")) { "keep: a kept column may not be named like a prediction column (model_id, model_version, source, row, prediction, prob_*, top<i>_class, top<i>_prob)" },
  if this.result_field.or("") != "" && this.keep.or([]).contains(this.result_field) { "result_field: the predictions' key is also a keep column" },
].filter(e -> e != null)`).
		Example("Score JSON lines from stdin",
			"Batches of up to 1,000 JSON objects are scored as one record; errored messages go to a dead-letter file.", `
input:
  batched:
    child:
      stdin:
        scanner:
          lines: {}
    policy:
      count: 1000
      period: 100ms
pipeline:
  processors:
    - forestd_score:
        model: ./churn.model
output:
  switch:
    cases:
      - check: errored()
        output:
          file:
            path: ./dead-letters.jsonl
            codec: lines
          processors:
            - mapping: 'root = this.merge({"error": error()})'
      - output:
          stdout:
            codec: lines
`)
}

type scoreMetrics struct {
	rows, errored, reloads, reloadErrors *service.MetricCounter
	version                              *service.MetricGauge
	latency                              *service.MetricTimer
}

func newScoreMetrics(m *service.Metrics) scoreMetrics {
	return scoreMetrics{
		rows:         m.NewCounter("forestd_rows_scored"),
		errored:      m.NewCounter("forestd_messages_errored"),
		reloads:      m.NewCounter("forestd_model_reloads"),
		reloadErrors: m.NewCounter("forestd_model_reload_errors"),
		version:      m.NewGauge("forestd_model_version"),
		latency:      m.NewTimer("forestd_batch_latency_ns"),
	}
}

// scoreProc is the forestd_score processor. It is safe for concurrent use
// (Benthos runs one processor on every pipeline thread): the model is an
// immutable scoring.Model behind an atomic pointer.
type scoreProc struct {
	path        string
	resultField string
	keep        []string
	source      *service.InterpolatedString
	probs       scoring.Probs
	threads     int
	mem         memory.Allocator
	jsonMem     *bufpool.Pool // the JSON path's records, released within ProcessBatch
	log         *service.Logger
	met         scoreMetrics
	file        *modelFile
	spec        atomic.Pointer[jsonSpec] // the live model's, built once per model
	lastErr     string                   // the last reload error warned about (onModel runs under the model file's lock)
	unscored    warnLimit                // the WARN log of messages passed on unscored
}

// warnInterval is the least time between two WARN lines about messages
// forestd_score could not score.
const warnInterval = time.Second

// warnLimit rate-limits a WARN log line: at most one per warnInterval,
// each counting the messages since the previous line, so that a pipeline
// that passes unscorable messages on (stdin → forestd_score → stdout, with
// no switch on errored()) says so without one line per message.
type warnLimit struct {
	mu         sync.Mutex
	now        func() time.Time // time.Now; tests set a clock
	last       time.Time
	suppressed int
}

// note counts n unscored messages, the first with reason, and logs them
// with those suppressed since the last line when warnInterval has passed.
func (w *warnLimit) note(log *service.Logger, n int, reason string) {
	if n == 0 || log == nil {
		return
	}
	w.mu.Lock()
	now := time.Now
	if w.now != nil {
		now = w.now
	}
	t := now()
	if !w.last.IsZero() && t.Sub(w.last) < warnInterval {
		w.suppressed += n
		w.mu.Unlock()
		return
	}
	more := w.suppressed
	w.last, w.suppressed = t, 0
	w.mu.Unlock()
	msg := fmt.Sprintf("forestd_score: %d message%s not scored, passed on with the error set (route them with a switch on errored()): %s", n, plural(n), reason)
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more since the last warning)", more)
	}
	log.Warn(msg)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// jsonSpec is what reading JSON messages for a model needs: the source
// columns it requires and their kinds (read-only once built).
type jsonSpec struct {
	m     *scoring.Model
	names []string
	kinds map[string]codec.Kind
	// rows holds the *codec.JSONRows of batches scored with the model,
	// reused (Reset) so that a batch's columns take no new memory; Benthos
	// runs ProcessBatch on every pipeline thread at once, hence a pool
	rows sync.Pool
	// members holds *memberRows, the prediction members of a batch's rows
	// before they are merged into the messages (pooled as rows is)
	members sync.Pool
}

// memberRows is the text of a batch's prediction members, row after row:
// row k is buf[ends[k-1]:ends[k]].
type memberRows struct {
	buf  []byte
	ends []int
}

func (r *memberRows) start(k int) int {
	if k == 0 {
		return 0
	}
	return r.ends[k-1]
}

// scratch returns an empty memberRows from the pool.
func (s *jsonSpec) scratch() *memberRows {
	if r, ok := s.members.Get().(*memberRows); ok {
		r.buf, r.ends = r.buf[:0], r.ends[:0]
		return r
	}
	return &memberRows{}
}

// putScratch returns r to the pool unless one batch made it outsized.
func (s *jsonSpec) putScratch(r *memberRows) {
	if cap(r.buf) <= 4<<20 {
		s.members.Put(r)
	}
}

// jsonRows returns a JSONRows reading the model's columns, empty.
func (s *jsonSpec) jsonRows() *codec.JSONRows {
	if jr, ok := s.rows.Get().(*codec.JSONRows); ok {
		jr.Reset()
		return jr
	}
	return codec.NewJSONRows(codec.JSONOptions{Require: s.names, Kinds: s.kinds, Only: s.names, Single: true})
}

// jsonSpecOf returns m's jsonSpec, built on the first batch after a swap.
func (p *scoreProc) jsonSpecOf(m *scoring.Model) *jsonSpec {
	if s := p.spec.Load(); s != nil && s.m == m {
		return s
	}
	names, levels := m.Forest().SourceColumns()
	s := &jsonSpec{m: m, names: names, kinds: featureKinds(names, levels)}
	p.spec.Store(s)
	return s
}

func newScoreProc(conf *service.ParsedConfig, mgr *service.Resources) (*scoreProc, error) {
	p := &scoreProc{mem: memory.DefaultAllocator, jsonMem: bufpool.New(4<<20, false), log: mgr.Logger(), met: newScoreMetrics(mgr.Metrics())}
	var err error
	if p.path, err = conf.FieldString("model"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.path) == "" {
		return nil, fmt.Errorf("forestd_score: model: the path of a forestd model file is required")
	}
	if p.resultField, err = conf.FieldString("result_field"); err != nil {
		return nil, err
	}
	if p.keep, err = conf.FieldStringList("keep"); err != nil {
		return nil, err
	}
	for _, k := range p.keep {
		if slices.Contains(outputNames, k) || schemas.IsProbName(k) {
			return nil, fmt.Errorf("forestd_score: keep: column %q is named like a prediction column", k)
		}
	}
	probs, err := conf.FieldString("probs")
	if err != nil {
		return nil, err
	}
	if p.probs = scoring.Probs(probs); p.probs.Validate() != nil {
		return nil, fmt.Errorf("forestd_score: probs: %w", p.probs.Validate())
	}
	if p.resultField != "" && slices.Contains(p.keep, p.resultField) {
		return nil, fmt.Errorf("forestd_score: result_field %q is also a keep column; name the predictions' key otherwise", p.resultField)
	}
	if p.source, err = conf.FieldInterpolatedString("source"); err != nil {
		return nil, err
	}
	every, err := conf.FieldDuration("reload_interval")
	if err != nil {
		return nil, err
	}
	if every <= 0 {
		return nil, fmt.Errorf("forestd_score: reload_interval %v is not positive", every)
	}
	require, err := conf.FieldBool("require_model")
	if err != nil {
		return nil, err
	}
	if p.threads, err = conf.FieldInt("threads"); err != nil {
		return nil, err
	}
	if p.threads < 0 {
		return nil, fmt.Errorf("forestd_score: threads %d", p.threads)
	}
	p.file = newModelFile(p.path, 0, p.checkModel, p.onModel) // a drf model's one-off work on every CPU
	if _, err := p.file.poll(); err != nil {
		if require {
			return nil, fmt.Errorf("forestd_score: %w", err)
		}
		p.log.Warnf("forestd_score: no model yet (%v); messages are errored until %s holds one", err, p.path)
	}
	p.file.watch(every)
	return p, nil
}

// checkModel refuses a model whose predictions would replace a column it
// reads in the JSON messages it scores: a result_field named like one of
// its columns, or, with the predictions at the root, a column named like
// one of them (model_id, model_version, prediction, the probability
// members probs chooses, or the targets of a multi-output model); and a
// keep column named like one of
// its targets. It runs at every load of the model file, so such a model is
// refused at start (require_model) or at a reload, where the current model
// keeps scoring, with an error naming the column.
func (p *scoreProc) checkModel(m *scoring.Model) error {
	cols := m.Columns()
	if p.resultField != "" {
		if slices.Contains(cols, p.resultField) {
			return fmt.Errorf("result_field %q is a column the model reads; the predictions would replace it in every JSON message: choose another result_field", p.resultField)
		}
	} else {
		for _, o := range p.jsonOutputNames(m) {
			if slices.Contains(cols, o) {
				return fmt.Errorf("the model reads a column %q, which its predictions, added at the root of each JSON message, would replace: set result_field", o)
			}
		}
	}
	for _, t := range m.Targets() {
		if slices.Contains(p.keep, t) {
			return fmt.Errorf("keep: column %q is named like a predicted column of the model (one of its targets)", t)
		}
	}
	return nil
}

// jsonOutputNames are the members scoreJSON adds to a JSON message: the
// prediction columns but source and row, with the probabilities probs
// chooses.
func (p *scoreProc) jsonOutputNames(m *scoring.Model) []string {
	out := []string{schemas.ColModelID, schemas.ColModelVersion}
	if t := m.Targets(); t != nil {
		return append(out, t...)
	}
	out = append(out, schemas.ColPrediction)
	probs, err := m.ResolveProbs(p.probs) // valid: checked at start
	switch {
	case err != nil || probs == scoring.ProbsAll:
		for _, c := range m.Classes() {
			out = append(out, schemas.ProbPrefix+c)
		}
	case probs.TopK() > 0:
		for i := 1; i <= probs.TopK(); i++ {
			out = append(out, schemas.TopClassName(i), schemas.TopProbName(i))
		}
	}
	return out
}

// onModel reports what a poll of the model file did.
func (p *scoreProc) onModel(m *scoring.Model, installed bool, err error) {
	switch {
	case err != nil:
		// A file that cannot be loaded is tried again at every poll: warn
		// when the failure is new, and only count it after that.
		p.met.reloadErrors.Incr(1)
		if msg := err.Error(); msg != p.lastErr {
			p.lastErr = msg
			p.log.Warnf("forestd_score: model file %s not loaded (kept the current model): %v", p.path, err)
		} else {
			p.log.Debugf("forestd_score: model file %s still not loaded: %v", p.path, err)
		}
	case installed:
		p.lastErr = ""
		p.met.reloads.Incr(1)
		p.met.version.Set(m.Version())
		p.log.Infof("forestd_score: scoring with model %s version %d from %s", m.ID(), m.Version(), p.path)
	default:
		cur := p.file.cur.Load()
		if cur != nil && cur.ID() != m.ID() {
			p.log.Warnf("forestd_score: %s holds model version %d (%s), not newer than the current version %d; kept the current model", p.path, m.Version(), m.ID(), cur.Version())
		}
	}
}

// ProcessBatch implements service.BatchProcessor.
func (p *scoreProc) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	t0 := time.Now()
	nErr, reason := 0, ""
	errored := func(msg *service.Message, err error) {
		msg.SetError(oneLine(err))
		p.met.errored.Incr(1)
		if nErr++; nErr == 1 {
			reason = oneLine(err).Error()
		}
	}
	defer func() { p.unscored.note(p.log, nErr, reason) }()
	m := p.file.cur.Load()
	if m == nil {
		for _, msg := range batch {
			errored(msg, fmt.Errorf("forestd_score: no model loaded yet from %s", p.path))
		}
		return []service.MessageBatch{batch}, nil
	}
	parts := splitBatch("forestd_score", batch, errored)
	rows := 0
	if len(parts.json) > 0 {
		rows += p.scoreJSON(m, batch, parts, errored)
	}
	if len(parts.arrow) > 0 {
		rows += p.scoreArrow(m, batch, parts, errored)
	}
	p.met.rows.Incr(int64(rows))
	p.met.latency.Timing(time.Since(t0).Nanoseconds())
	return []service.MessageBatch{batch}, nil
}

// scoreJSON scores the JSON messages of a batch as one record. Each
// message is validated on its own as its object is read (every column the
// model reads present, of the kind it reads; its other members valid JSON
// of any kind, nested values included, and not decoded); a message that
// fails gets its error and adds no row. What Model.Score can still reject
// afterwards concerns the record's schema, which every row shares, so it
// errors the JSON messages of the batch together.
func (p *scoreProc) scoreJSON(m *scoring.Model, batch service.MessageBatch, parts batchParts, errored func(*service.Message, error)) int {
	spec := p.jsonSpecOf(m)
	// only the model's columns are decoded: the prediction is merged into
	// each message's own bytes, so its other members are only validated
	jr := spec.jsonRows()
	defer spec.rows.Put(jr)
	// the record and the predictions are released before this returns, and
	// nothing of them outlives it (the members are copied out as text), so
	// their buffers come from a pool
	rec, ok, fail := parts.jsonRows("forestd_score", batch, jr, p.jsonMem, errored)
	if rec == nil {
		return 0
	}
	defer rec.Release()
	preds, err := m.Score([]arrow.Record{rec}, scoring.Options{Threads: p.threads, Mem: p.jsonMem, Probs: p.probs})
	if err != nil {
		return fail(err)
	}
	defer release(preds)
	out := dropColumns(preds[0], schemas.ColSource, schemas.ColRow)
	defer out.Release()
	// members the message already has are replaced through Benthos'
	// structured form; otherwise the prediction's members are appended to
	// the message's own bytes, which stay as they are
	has := func(name string) bool { return rec.Schema().HasField(name) || jr.Skipped(name) }
	clash := p.resultField != "" && has(p.resultField)
	if p.resultField == "" {
		for _, f := range out.Schema().Fields() {
			clash = clash || has(f.Name)
		}
	}
	var key []byte
	if p.resultField != "" {
		key, _ = json.Marshal(p.resultField)
	}
	members := codec.NewJSONMembers(out)
	// the members of every row go first into a pooled scratch buffer, so
	// that the messages' new bytes take one allocation of the exact size
	// (each message a full slice of it): a buffer grown by append would
	// leave the messages set before the growth holding the old array
	sc := spec.scratch()
	defer spec.putScratch(sc)
	for k := range ok {
		if sc.buf, err = members.Append(sc.buf, k); err != nil {
			return fail(err) // a column JSON cannot hold: every row has it
		}
		sc.ends = append(sc.ends, len(sc.buf))
	}
	row := func(k int) []byte { return sc.buf[sc.start(k):sc.ends[k]] }
	size := 0
	for k, i := range ok {
		size += len(parts.bytes[i]) + len(row(k)) + len(key) + 4
	}
	buf := make([]byte, 0, size)
	id, version := any(m.ID()), any(m.Version()) // boxed once, not per message
	for k, i := range ok {
		msg := batch[i]
		add := func(dst []byte) ([]byte, error) { return append(dst, row(k)...), nil }
		start := len(buf)
		spliced := false
		if !clash {
			buf, spliced, _ = appendMerged(buf, parts.bytes[i], key, add)
		}
		if spliced {
			msg.SetBytes(buf[start:len(buf):len(buf)])
		} else if err := mergeStructured(msg, append(append([]byte{'{'}, row(k)...), '}'), p.resultField); err != nil {
			errored(msg, fmt.Errorf("forestd_score: %w", err))
			continue
		}
		msg.MetaSetMut(MetaModelID, id)
		msg.MetaSetMut(MetaModelVersion, version)
	}
	return len(ok)
}

// arrowMsg is one decoded Arrow IPC message of a batch.
type arrowMsg struct {
	i      int // index in the batch
	schema *arrow.Schema
	recs   []arrow.Record
	source string
}

// scoreArrow scores the Arrow IPC messages of a batch into Arrow IPC
// streams of their prediction records: the messages of one schema together
// in one Model.Score call (one frame for the forest's walk, which costs less
// per row on larger blocks), each message's predictions then numbered from
// row 0 with its own source, as if it had been scored alone. An error of
// Model.Score concerns the schema, which the group shares, so it errors the
// group's messages together.
func (p *scoreProc) scoreArrow(m *scoring.Model, batch service.MessageBatch, parts batchParts, errored func(*service.Message, error)) int {
	var groups [][]*arrowMsg
	source := batch.InterpolationExecutor(p.source) // from each message's place in the batch
	defer func() {
		for _, g := range groups {
			for _, a := range g {
				release(a.recs)
			}
		}
	}()
	for _, i := range parts.arrow {
		schema, recs, err := codec.Decode(parts.bytes[i], codec.ContentTypeArrow, p.mem)
		if err != nil {
			errored(batch[i], fmt.Errorf("forestd_score: %w", err))
			continue
		}
		a := &arrowMsg{i: i, schema: schema, recs: recs}
		if a.source, err = source.TryString(i); err != nil {
			release(recs)
			errored(batch[i], fmt.Errorf("forestd_score: source: %w", err))
			continue
		}
		placed := false
		for k, g := range groups {
			if g[0].schema.Equal(schema) {
				groups[k], placed = append(g, a), true
				break
			}
		}
		if !placed {
			groups = append(groups, []*arrowMsg{a})
		}
	}
	rows := 0
	for _, g := range groups {
		rows += p.scoreArrowGroup(m, batch, g, errored)
	}
	return rows
}

func (p *scoreProc) scoreArrowGroup(m *scoring.Model, batch service.MessageBatch, g []*arrowMsg, errored func(*service.Message, error)) int {
	var all []arrow.Record
	for _, a := range g {
		all = append(all, a.recs...)
	}
	preds, err := m.Score(all, scoring.Options{Keep: p.keep, Threads: p.threads, Mem: p.mem, Probs: p.probs})
	if err != nil {
		for _, a := range g {
			errored(batch[a.i], fmt.Errorf("forestd_score: %w", err))
		}
		return 0
	}
	defer release(preds)
	rows, k := 0, 0
	for _, a := range g {
		msg := batch[a.i]
		own := make([]arrow.Record, len(a.recs))
		first := int64(0)
		for j := range a.recs {
			own[j] = withCoords(preds[k], a.source, first, p.mem)
			first += preds[k].NumRows()
			k++
		}
		out, err := encodeArrow(own, p.mem)
		release(own)
		if err != nil {
			errored(msg, fmt.Errorf("forestd_score: %w", err))
			continue
		}
		msg.SetBytes(out)
		msg.MetaSetMut(MetaModelID, m.ID())
		msg.MetaSetMut(MetaModelVersion, m.Version())
		rows += int(first)
	}
	return rows
}

// withCoords returns pred with its source and row columns replaced: source
// everywhere, rows numbered from first (the other columns shared).
func withCoords(pred arrow.Record, source string, first int64, mem memory.Allocator) arrow.Record {
	n := int(pred.NumRows())
	cols := slices.Clone(pred.Columns())
	var owned []arrow.Array
	for j, f := range pred.Schema().Fields() {
		switch f.Name {
		case schemas.ColSource:
			b := array.NewStringBuilder(mem)
			b.Reserve(n)
			for i := 0; i < n; i++ {
				b.Append(source)
			}
			cols[j] = b.NewArray()
			b.Release()
		case schemas.ColRow:
			b := array.NewInt64Builder(mem)
			b.Reserve(n)
			for i := 0; i < n; i++ {
				b.UnsafeAppend(first + int64(i))
			}
			cols[j] = b.NewArray()
			b.Release()
		default:
			continue
		}
		owned = append(owned, cols[j])
	}
	rec := array.NewRecord(pred.Schema(), cols, int64(n))
	for _, a := range owned {
		a.Release()
	}
	return rec
}

// Close implements service.BatchProcessor (called once per pipeline
// thread).
func (p *scoreProc) Close(ctx context.Context) error {
	p.file.stopWatching()
	return nil
}

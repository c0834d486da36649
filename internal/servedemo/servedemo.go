// Package servedemo is forestd serve --demo (ARCHITECTURE.md, Command
// line): it starts the daemon with an embedded broker, feeds it a
// simulated Trunk stream (Randomer Forests §3.1) and prints what flows out
// — predictions, per-version accuracy, dead letters, metrics — until it
// has shown a hot swap and a dead letter. A part of the command, kept out
// of its flag parsing.
package servedemo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/internal/metricsum"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/schemas"
)

// Demo settings: Trunk with 10 features (Randomer Forests §3.1), whose
// Bayes error is Φ(−‖μ‖) ≈ 0.0245.
const (
	demoP          = 10
	demoTrainBatch = 400 // labelled rows per message
	demoScoreBatch = 200 // unlabelled rows per message
	demoTick       = 100 * time.Millisecond
)

// Defaults turns the configuration into the demo's unless a flag said
// otherwise (set holds the flags given): an embedded broker on a free
// loopback port, train and score, frequent retraining, quiet logs.
func Defaults(cfg *daemon.Config, set map[string]bool) {
	if !set["embedded-listen"] {
		cfg.Embedded.Listen = "127.0.0.1:0"
	}
	if !set["brokers"] {
		cfg.Brokers = nil
	}
	if !set["stages"] {
		cfg.Stages = []string{"score", "train"}
	}
	cfg.Train.Label = "y"
	if !set["retrain-every"] {
		cfg.Train.RetrainEvery = "4000"
	}
	if !set["window"] {
		cfg.Train.Window = 8000
	}
	if !set["min-rows"] {
		cfg.Train.MinRows = 1000
	}
	if !set["trees"] {
		cfg.Train.Trees = 40
	}
	if !set["key"] {
		cfg.Key = "truth"
	}
	if !set["log-level"] {
		cfg.Log.Level = "warn"
	}
	if !set["commit-interval"] {
		cfg.Pipeline.CommitInterval = 100 * time.Millisecond
	}
	if !set["session-timeout"] {
		cfg.Kafka.SessionTimeout = 3 * time.Second
	}
	if !set["drain-timeout"] {
		cfg.Pipeline.DrainTimeout = 3 * time.Second
	}
}

// demoStats accumulates what the demo saw on the prediction topic.
type demoStats struct {
	mu        sync.Mutex
	rows      map[int64]int     // model version → predictions
	correct   map[int64]int     // classes predicted right, of classed
	classed   map[int64]int     // class predictions with a truth to compare
	regressed map[int64]int     // regression values with a truth to compare
	sqErr     map[int64]float64 // their sum of squared errors
	shown     map[int64]int
	lines     []string
	dlq       int
	firstOut  time.Time
}

// Run is `forestd serve --demo`: it starts the daemon with an embedded
// broker, feeds a simulated stream (labelled Trunk rows to the training
// topic, unlabelled rows with their true class in a "truth" column to the
// features topic, and one malformed message), and prints predictions,
// per-version accuracy and metrics to out as they flow (the daemon's log
// to logw), then stops by itself after dur, or up to two minutes later
// until it has shown a hot swap and a dead letter.
func Run(ctx context.Context, cfg daemon.Config, dur time.Duration, out, logw io.Writer) error {
	// the demo prints each dead letter itself, reason and all: the
	// daemon's WARN line for it would only repeat it as a raw log line
	log := slog.New(dropMessages{cfg.Log.Logger(logw).Handler(), pipeline.LogQuarantined})
	ctx, cancel := context.WithTimeout(ctx, dur+demoGrace+30*time.Second)
	defer cancel()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	fmt.Fprintf(out, "forestd demo: embedded Kafka broker, simulated Trunk stream (p=%d), train → hot-swap → score; runs %v\n", demoP, dur)
	d, err := daemon.Start(runCtx, cfg, daemon.Options{Logger: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  broker   %s (topics %s, %s → %s)\n", d.Config().Brokers[0], cfg.Topics.Training, cfg.Topics.Features, cfg.Topics.Predictions)
	fmt.Fprintf(out, "  status   http://%s/   (the live status page: models, traffic, dead letters)\n", d.OpsAddr())
	fmt.Fprintf(out, "  metrics  http://%s/metrics   (also /healthz, /readyz)\n", d.OpsAddr())
	fmt.Fprintf(out, "  training: window %d rows, retrain every %s rows, %d trees\n\n", cfg.Train.Window, cfg.Train.RetrainEvery, cfg.Train.Trees)

	st := &demoStats{rows: map[int64]int{}, correct: map[int64]int{}, classed: map[int64]int{}, regressed: map[int64]int{}, sqErr: map[int64]float64{}, shown: map[int64]int{}}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); demoProduce(runCtx, d, log) }()
	go func() { defer wg.Done(); demoWatch(runCtx, d, st) }()
	go func() {
		defer wg.Done()
		kafka.Tail(runCtx, d.ClientOptions(), cfg.Topics.DLQ, func(env *pipeline.Envelope) {
			st.mu.Lock()
			st.dlq++
			r, _ := env.Header(pipeline.HeaderDLQReason)
			tp, _ := env.Header(pipeline.HeaderSourceTopic)
			pa, _ := env.Header(pipeline.HeaderSourcePartition)
			of, _ := env.Header(pipeline.HeaderSourceOffset)
			st.lines = append(st.lines, fmt.Sprintf("  dead letter  %s/%s/%s: %s", tp, pa, of, r))
			st.mu.Unlock()
		})
	}()
	go demoStop(runCtx, stopRun, dur, st)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	t0 := time.Now()
loop:
	for {
		select {
		case <-runCtx.Done():
			break loop
		case <-tick.C:
			st.flush(out)
			model := "none yet" // the gauge is -1 before the first model
			if v := gauge(d.Registry(), "forestd_model_version"); v >= 1 {
				model = fmt.Sprintf("v%.0f", v)
			}
			fmt.Fprintf(out, "  [%4.1fs] rows in %6.0f  predictions %6.0f  model %s  dead letters %.0f  retrains %.0f\n",
				time.Since(t0).Seconds(), metricsum.Counter(d.Registry(), "forestd_rows_in_total"), metricsum.Counter(d.Registry(), "forestd_rows_out_total"),
				model, metricsum.Counter(d.Registry(), "forestd_dead_letters_total"), metricsum.Counter(d.Registry(), "forestd_models_trained_total"))
		}
	}
	wg.Wait()
	st.flush(out)
	err = d.Wait()
	if st.summary(out, d) == 0 && err == nil { // the demo showed nothing it promises
		err = fmt.Errorf("demo: no model scored the stream in %v (%.0f retrains failed, %.0f messages dead-lettered: the log says why)",
			dur, metricsum.Counter(d.Registry(), "forestd_training_errors_total"), metricsum.Counter(d.Registry(), "forestd_dead_letters_total"))
	}
	return err
}

// demoGrace is how much longer than its duration the demo may run on a
// slow or busy machine to show what it promises.
const demoGrace = 2 * time.Minute

// demoStop ends the demo (stop) after dur, or later, up to demoGrace more,
// until it has shown what it promises: predictions of two model versions
// (a hot swap) and the dead letter. On an idle machine both come well
// within the default duration; on a loaded one a fixed clock ended the
// demo before its first model (TestServeDemo under load).
func demoStop(ctx context.Context, stop context.CancelFunc, dur time.Duration, st *demoStats) {
	defer stop()
	shown := func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.rows) >= 2 && st.dlq >= 1
	}
	end := time.NewTimer(dur)
	defer end.Stop()
	select {
	case <-ctx.Done():
		return
	case <-end.C:
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(demoGrace); !shown() && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dropMessages is a slog.Handler that leaves out the records with one
// message and hands the rest to its inner handler.
type dropMessages struct {
	slog.Handler
	msg string
}

// Handle implements slog.Handler.
func (h dropMessages) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h dropMessages) WithAttrs(as []slog.Attr) slog.Handler {
	return dropMessages{h.Handler.WithAttrs(as), h.msg}
}

// WithGroup implements slog.Handler.
func (h dropMessages) WithGroup(name string) slog.Handler {
	return dropMessages{h.Handler.WithGroup(name), h.msg}
}

func gauge(reg prometheus.Gatherer, name string) float64 {
	fams, err := reg.Gather()
	if err != nil {
		return 0
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 && f.GetMetric()[0].GetGauge() != nil {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// demoProduce feeds the stream until ctx is done.
func demoProduce(ctx context.Context, d *daemon.Daemon, log interface{ Warn(string, ...any) }) {
	cfg := d.Config()
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: d.ClientOptions(), Topics: map[string]string{"train": cfg.Topics.Training, "score": cfg.Topics.Features}})
	if err != nil {
		log.Warn("demo producer", "err", err)
		return
	}
	defer sink.Close()
	// one malformed message: a string where a number belongs (with the
	// kept "truth" column, so that the type is what the daemon rejects)
	poisonJSON := `{"truth": "1", "x1": "not a number"`
	for j := 2; j <= demoP; j++ {
		poisonJSON += fmt.Sprintf(`, "x%d": 0.5`, j)
	}
	poison := pipeline.Output{Stream: "score", Key: []byte("poison"), Raw: []byte(poisonJSON + "}"),
		Headers: []pipeline.Header{{Key: kafka.HeaderContentType, Value: []byte(codec.ContentTypeJSON)}}}
	tick := time.NewTicker(demoTick)
	defer tick.Stop()
	for seed := uint64(1); ; seed++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		train, err := synth.Generate(synth.Trunk, synth.Options{N: demoTrainBatch, Seed: 2 * seed, P: demoP})
		if err != nil {
			log.Warn("demo data", "err", err)
			return
		}
		score, _ := synth.Generate(synth.Trunk, synth.Options{N: demoScoreBatch, Seed: 2*seed + 1, P: demoP})
		tr := train.ToRecord(memory.DefaultAllocator)
		sr := withTruth(score.ToRecord(memory.DefaultAllocator))
		outs := []pipeline.Output{{Stream: "train", Key: []byte(fmt.Sprint("t", seed)), Record: tr},
			{Stream: "score", Key: []byte(fmt.Sprint("s", seed)), Record: sr}}
		if seed == 10 { // early, so that even a short demo on a busy machine shows it
			outs = append(outs, poison)
		}
		if err := sink.Write(ctx, outs); err != nil && ctx.Err() == nil {
			log.Warn("demo producer", "err", err)
		}
		tr.Release()
		sr.Release()
	}
}

// withTruth renames the label column y to truth: the model does not read it
// (it is not a feature), the scorer copies it into the predictions (--key).
func withTruth(rec arrow.Record) arrow.Record {
	defer rec.Release()
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	fields[len(fields)-1].Name = "truth"
	return array.NewRecord(arrow.NewSchema(fields, nil), rec.Columns(), rec.NumRows())
}

// demoWatch reads the prediction topic and keeps per-version accuracy. It
// reads whatever the records carry — Arrow or JSON (whose numbers decode as
// floats), a class or a regression value, probabilities of every class, of
// the top k or none, the demo's truth column or another --key — and shows
// what it finds: a column it lacks is left out of the line, never a panic.
func demoWatch(ctx context.Context, d *daemon.Daemon, st *demoStats) {
	key := d.Config().Key
	kafka.Tail(ctx, d.ClientOptions(), d.Config().Topics.Predictions, func(env *pipeline.Envelope) {
		ct, _ := env.Header(kafka.HeaderContentType)
		_, recs, err := codec.Decode(env.Value, string(ct), memory.DefaultAllocator)
		if err != nil {
			return
		}
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.firstOut.IsZero() {
			st.firstOut = time.Now()
		}
		for _, r := range recs {
			st.watch(r, key)
		}
	})
}

// watch counts the rows of one prediction record and keeps the first two
// of each model version as lines to print; st.mu is held.
func (st *demoStats) watch(r arrow.Record, key string) {
	col := func(name string) arrow.Array {
		if name == "" {
			return nil
		}
		if idx := r.Schema().FieldIndices(name); len(idx) > 0 {
			return r.Column(idx[0])
		}
		return nil
	}
	ver, src, row := col(schemas.ColModelVersion), col(schemas.ColSource), col(schemas.ColRow)
	pred, truth := col(schemas.ColPrediction), col("truth")
	keyCol := col(key)
	if key == "truth" {
		keyCol = nil // shown as the truth
	}
	p1, topClass, topProb := col(schemas.ProbPrefix+"1"), col(schemas.TopClassName(1)), col(schemas.TopProbName(1))
	for i := 0; i < int(r.NumRows()); i++ {
		v, _ := demoInt(ver, i)
		st.rows[v]++
		p, numeric := demoFloat(pred, i)
		t, truthNum := demoFloat(truth, i)
		switch {
		case pred == nil || truth == nil || pred.IsNull(i) || truth.IsNull(i):
		case numeric && truthNum: // regression: a number against the 0/1 class
			st.regressed[v]++
			st.sqErr[v] += (p - t) * (p - t)
		default:
			st.classed[v]++
			if demoString(pred, i) == demoString(truth, i) {
				st.correct[v]++
			}
		}
		if st.shown[v] >= 2 {
			continue
		}
		st.shown[v]++
		line := fmt.Sprintf("  prediction   model v%d", v)
		if src != nil || row != nil {
			rn, _ := demoInt(row, i)
			line += fmt.Sprintf("  %s row %-3d", demoString(src, i), rn)
		}
		var notes []string
		switch {
		case pred == nil:
			line += " → (no prediction column)"
		case numeric:
			line += " → " + demoString(pred, i)
		default:
			line += " → class " + demoString(pred, i)
		}
		if pv, ok := demoFloat(p1, i); ok {
			notes = append(notes, fmt.Sprintf("p(1)=%.2f", pv))
		} else if pv, ok := demoFloat(topProb, i); ok && topClass != nil {
			notes = append(notes, fmt.Sprintf("p(%s)=%.2f", demoString(topClass, i), pv))
		}
		if keyCol != nil {
			notes = append(notes, key+" "+demoString(keyCol, i))
		}
		if truth != nil {
			notes = append(notes, "truth "+demoString(truth, i))
		}
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, ", ") + ")"
		}
		st.lines = append(st.lines, line)
	}
}

// demoString is row i of a as text ("" for a missing column, "null" for a
// null), a float without trailing zeros (JSON's 1 is 1, not 1.000000).
func demoString(a arrow.Array, i int) string {
	switch {
	case a == nil:
		return ""
	case a.IsNull(i):
		return "null"
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', 6, 64)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', 6, 32)
	}
	return fmt.Sprint(a.GetOneForMarshal(i))
}

// demoFloat is row i of a numeric column; false for a missing column, a
// null or a column that is not numeric.
func demoFloat(a arrow.Array, i int) (float64, bool) {
	if a == nil || a.IsNull(i) {
		return 0, false
	}
	switch a := a.(type) {
	case *array.Float64:
		return a.Value(i), true
	case *array.Float32:
		return float64(a.Value(i)), true
	case *array.Int64:
		return float64(a.Value(i)), true
	case *array.Int32:
		return float64(a.Value(i)), true
	case *array.Int16:
		return float64(a.Value(i)), true
	case *array.Int8:
		return float64(a.Value(i)), true
	case *array.Uint64:
		return float64(a.Value(i)), true
	case *array.Uint32:
		return float64(a.Value(i)), true
	case *array.Uint16:
		return float64(a.Value(i)), true
	case *array.Uint8:
		return float64(a.Value(i)), true
	}
	return 0, false
}

// demoInt is row i of an integer column, which JSON decodes as floats.
func demoInt(a arrow.Array, i int) (int64, bool) {
	f, ok := demoFloat(a, i)
	return int64(f), ok
}

func (st *demoStats) flush(w io.Writer) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, l := range st.lines {
		fmt.Fprintln(w, l)
	}
	st.lines = nil
}

// summary prints the demo's outcome and returns how many model versions
// scored the stream.
func (st *demoStats) summary(w io.Writer, d *daemon.Daemon) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	var vs []int64
	for v := range st.rows {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	fmt.Fprintf(w, "\nsummary: %d model versions scored the stream (Trunk p=%d Bayes error ≈ 0.025)\n", len(vs), demoP)
	for _, v := range vs {
		switch {
		case st.classed[v] > 0:
			fmt.Fprintf(w, "  model v%-3d %7d predictions  error %.4f\n", v, st.rows[v], 1-float64(st.correct[v])/float64(st.classed[v]))
		case st.regressed[v] > 0:
			fmt.Fprintf(w, "  model v%-3d %7d predictions  mean squared error %.4f\n", v, st.rows[v], st.sqErr[v]/float64(st.regressed[v]))
		default: // no truth column (another --key) to compare with
			fmt.Fprintf(w, "  model v%-3d %7d predictions (no truth column to compare with)\n", v, st.rows[v])
		}
	}
	fmt.Fprintf(w, "  dead letters: %d (the malformed message, reason in its headers)\n", st.dlq)
	fams, err := d.Registry().Gather()
	if err != nil {
		return len(vs)
	}
	fmt.Fprintln(w, "metrics (excerpt of /metrics):")
	for _, f := range fams {
		name := f.GetName()
		if !strings.HasPrefix(name, "forestd_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			lab := ""
			if len(labels) > 0 {
				lab = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil && m.GetCounter().GetValue() > 0:
				fmt.Fprintf(w, "  %s%s %g\n", name, lab, m.GetCounter().GetValue())
			case m.GetGauge() != nil && name == "forestd_model_version":
				fmt.Fprintf(w, "  %s%s %g\n", name, lab, m.GetGauge().GetValue())
			case m.GetHistogram() != nil && m.GetHistogram().GetSampleCount() > 0 && (name == "forestd_end_to_end_latency_seconds" || lab == "{stage=score}"):
				h := m.GetHistogram()
				fmt.Fprintf(w, "  %s%s count %d mean %.4fs\n", name, lab, h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount()))
			}
		}
	}
	return len(vs)
}

package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
	"github.com/forestd/forestd/arrowforest/synth"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/operators"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

func model(t *testing.T, fr *frame.Frame, version int64) *scoring.Model {
	t.Helper()
	p := forest.DefaultParams(fr.Task)
	p.Trees, p.Threads = 5, 1
	f, err := forest.Train(fr, p, forest.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := scoring.Encode(f, version, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAdoptRules (reliability issue, items 5 and 6): a model from the model
// topic is adopted only when its entry's reference agrees with its content,
// it is newer than the live model and reads the same columns (unless
// allowed); every refusal is logged with its reason and counted in
// forestd_models_rejected_total{reason}; a model seen again is neither.
func TestAdoptRules(t *testing.T) {
	digits := func(seed uint64) *frame.Frame {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: seed, P: 6})
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}
	live := model(t, digits(1), 5)
	newer := model(t, digits(2), 6)
	older := model(t, digits(3), 4)
	iris, err := synth.Generate(synth.Trunk, synth.Options{N: 200, Seed: 4, P: 4})
	if err != nil {
		t.Fatal(err)
	}
	otherCols := model(t, iris, 30)
	var log bytes.Buffer
	_, m := testMetrics()
	ms := &models{Current: operators.NewCurrent(), Metrics: m, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	if !ms.Offer(live, "seed") {
		t.Fatal("first model refused")
	}
	ref := func(m *scoring.Model) kafka.ModelRef { return kafka.ModelRef{ID: m.ID(), Version: m.Version()} }
	lying := ref(otherCols)
	lying.Version = 31
	for _, c := range []struct {
		name   string
		ref    kafka.ModelRef
		data   []byte
		reason string
	}{
		{"key says 31, content 30", lying, otherCols.Bytes(), rejectVersion},
		{"entry names another model", kafka.ModelRef{ID: newer.ID(), Version: 6}, older.Bytes(), rejectVersion},
		{"not a model", kafka.ModelRef{ID: "x", Version: 9}, []byte("garbage"), rejectUndecodable},
		{"older", ref(older), older.Bytes(), rejectNotNewer},
		{"other columns", ref(otherCols), otherCols.Bytes(), rejectColumns},
	} {
		before := testutil.ToFloat64(m.ModelRejected.WithLabelValues(c.reason))
		if ms.Adopt(c.ref, c.data, "model topic") || ms.Current.Load() != live {
			t.Fatalf("%s: adopted", c.name)
		}
		if got := testutil.ToFloat64(m.ModelRejected.WithLabelValues(c.reason)) - before; got != 1 {
			t.Fatalf("%s: reason %s counted %v times", c.name, c.reason, got)
		}
		if !strings.Contains(log.String(), "reason="+c.reason) {
			t.Fatalf("%s: no log line with reason %s:\n%s", c.name, c.reason, log.String())
		}
	}
	// the live model seen again: not a refusal
	total := testutil.CollectAndCount(m.ModelRejected)
	if ms.Adopt(ref(live), live.Bytes(), "model topic") {
		t.Fatal("the live model adopted again")
	}
	if testutil.CollectAndCount(m.ModelRejected) != total || testutil.ToFloat64(m.ModelRejected.WithLabelValues(rejectNotNewer)) != 1 {
		t.Fatal("the live model seen again counted as refused")
	}
	if !ms.Adopt(ref(newer), newer.Bytes(), "model topic") || ms.Current.Load().ID() != newer.ID() {
		t.Fatal("a newer model for the same columns refused")
	}
	if v := testutil.ToFloat64(m.ModelVersion); v != 6 {
		t.Fatalf("model version metric %v", v)
	}
	// allowed: a model for other columns takes over
	ms.Current.AllowColumnChange = true
	if !ms.Adopt(ref(otherCols), otherCols.Bytes(), "model topic") {
		t.Fatal("allowed column change refused")
	}
}

// TestReasonKind: the status page counts dead letters by a bounded kind of
// reason, told from the error chain (frame's column errors, the runtime's
// internal and permanent errors), not from the reason's text.
func TestReasonKind(t *testing.T) {
	m := model(t, func() *frame.Frame {
		fr, err := synth.Generate(synth.Trunk, synth.Options{N: 100, Seed: 1, P: 3})
		if err != nil {
			t.Fatal(err)
		}
		return fr
	}(), 1)
	score := func(value string) error {
		b, err := kafka.NewDecoder(nil)(&pipeline.Envelope{Value: []byte(value)})
		if err != nil {
			return err
		}
		defer b.Release()
		_, _, err = (&scoreStage{}).Process(context.Background(), withPinned(b, m))
		return err
	}
	missing := score(`{"x1": 1, "x2": 2}`)
	wrong := score(`{"x1": 1, "x2": 2, "x3": "three"}`)
	// the key column (--key id) missing: a missing column too, not
	// "other input error"
	b, err := kafka.NewDecoder(nil)(&pipeline.Envelope{Value: []byte(`{"x1": 1, "x2": 2, "x3": 3}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, _, noKey := (&scoreStage{Key: "id"}).Process(context.Background(), withPinned(b, m))
	b.Release()
	if noKey == nil || !strings.Contains(noKey.Error(), `kept column "id" not found (columns: x1, x2, x3)`) {
		t.Fatalf("scoring without the key column: %v", noKey)
	}
	for _, c := range []struct {
		stage string
		err   error
		want  string
	}{
		{"decode", errors.New("neither Arrow nor JSON"), "undecodable"},
		{"score", missing, "missing column"},
		{"score", wrong, "wrong column type"},
		{"score", noKey, "missing column"},
		{"score", fmt.Errorf("%w: index out of range", pipeline.ErrInternal), "internal error"},
		{"sink", fmt.Errorf("%w: too large", pipeline.ErrPermanent), "undeliverable"},
		{"train", pipeline.BadInput(errors.New("label y is string here")), "other input error"},
	} {
		if got := reasonKind(c.stage, c.err); got != c.want {
			t.Errorf("%s %v: kind %q, want %q", c.stage, c.err, got, c.want)
		}
	}
}

func withPinned(b *pipeline.Batch, m *scoring.Model) *pipeline.Batch {
	b.Env.Pinned = m
	return b
}

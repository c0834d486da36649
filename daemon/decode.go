package daemon

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
	"github.com/forestd/forestd/scoring"
)

// scoreDecoder is the daemon's message decoder: kafka.NewDecoder's, except
// for a JSON message of the features topic when the score stage is the
// only one to read it (no select stage) and a model is pinned to the
// message. Such a message is decoded into the columns that model reads and
// the kept key column alone; its other members are checked as a full
// decode checks them (codec.JSONOptions.Check), so the same messages are
// refused with the same reasons, and the JSONRows doing it is reused
// message after message (ARCHITECTURE.md, Performance techniques). What
// Model.Score refuses in such a record, scoreStage scores again from a full
// decode, for the reason a full record gives (it may name the message's
// other columns).
type scoreDecoder struct {
	full  pipeline.Decoder
	topic string // the features topic
	key   string // the kept key column (score.key), or ""
	spec  atomic.Pointer[decodeSpec]
}

// decodeSpec is what decoding for one model needs.
type decodeSpec struct {
	m    *scoring.Model
	only []string
	rows sync.Pool // *codec.JSONRows, reused (Reset); workers decode at once
}

func newScoreDecoder(topic, key string) *scoreDecoder {
	return &scoreDecoder{full: kafka.NewDecoder(nil), topic: topic, key: key}
}

// specOf returns m's decodeSpec, built on the first message after a swap.
func (d *scoreDecoder) specOf(m *scoring.Model) *decodeSpec {
	if s := d.spec.Load(); s != nil && s.m == m {
		return s
	}
	only := append([]string(nil), m.Columns()...)
	if d.key != "" {
		only = append(only, d.key)
	}
	s := &decodeSpec{m: m, only: only}
	d.spec.Store(s)
	return s
}

// decode implements pipeline.Decoder.
func (d *scoreDecoder) decode(env *pipeline.Envelope) (*pipeline.Batch, error) {
	m, _ := env.Pinned.(*scoring.Model)
	if m == nil || env.Topic != d.topic || len(env.Value) == 0 {
		return d.full(env)
	}
	ct := kafka.ContentTypeOf(env.Headers)
	var err error
	if ct == "" {
		ct, err = codec.Sniff(env.Value)
	} else {
		ct, err = codec.NormalizeContentType(ct)
	}
	if err != nil || ct == codec.ContentTypeArrow {
		return d.full(env) // its error, or an Arrow IPC stream
	}
	s := d.specOf(m)
	jr, ok := s.rows.Get().(*codec.JSONRows)
	if ok {
		jr.Reset()
	} else {
		jr = codec.NewJSONRows(codec.JSONOptions{Only: s.only, Check: true})
	}
	defer s.rows.Put(jr)
	if _, err := jr.Append(env.Value); err != nil {
		return nil, err // the error of a full decode (Check)
	}
	rec := jr.Record(nil)
	return &pipeline.Batch{Env: env, Schema: rec.Schema(), Records: []arrow.Record{rec}, ContentType: ct}, nil
}

// decoder returns the runtime's decoder for routes: a scoreDecoder when
// the features route is the score stage alone (a select stage forwards the
// message's other columns, so it needs them all), kafka.NewDecoder's
// otherwise.
func (d *Daemon) decoder(routes []pipeline.Route) pipeline.Decoder {
	for _, r := range routes {
		if r.Topic != d.cfg.Topics.Features || len(r.Stages) != 1 {
			continue
		}
		if ss, ok := r.Stages[0].(*scoreStage); ok {
			sd := newScoreDecoder(r.Topic, d.cfg.Key)
			ss.Full = sd.full
			return sd.decode
		}
	}
	return kafka.NewDecoder(nil)
}

package status

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The metric families the traffic samples read (pipeline.Metrics).
const (
	metricRowsIn     = "forestd_rows_in_total"
	metricRowsOut    = "forestd_rows_out_total"
	metricBatch      = "forestd_batch_latency_seconds"
	metricEndToEnd   = "forestd_end_to_end_latency_seconds"
	metricCommitLag  = "forestd_commit_lag"
	batchExcludedTag = "decode" // decoding is not a stage's batch work
)

// counters is one reading of the registry's cumulative metrics.
type counters struct {
	at         time.Time
	rowsIn     float64
	rowsOut    float64
	batch, e2e histogram
	lag        map[string]float64 // "topic/partition" → messages
}

// histogram is a cumulative histogram: counts[i] observations ≤ bounds[i].
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// add merges a Prometheus histogram with the same buckets into h.
func (h *histogram) add(m *dto.Histogram) {
	bs := m.GetBucket()
	if h.bounds == nil {
		h.bounds = make([]float64, len(bs))
		h.counts = make([]float64, len(bs))
		for i, b := range bs {
			h.bounds[i] = b.GetUpperBound()
		}
	}
	if len(bs) != len(h.bounds) {
		return // different buckets: not mergeable
	}
	for i, b := range bs {
		h.counts[i] += float64(b.GetCumulativeCount())
	}
	h.total += float64(m.GetSampleCount())
}

// minus is h − o: the observations between two readings.
func (h histogram) minus(o histogram) histogram {
	d := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), total: h.total - o.total}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(o.counts) {
			d.counts[i] -= o.counts[i]
		}
	}
	return d
}

// quantile estimates the q-quantile by linear interpolation inside the
// bucket that holds it (as Prometheus' histogram_quantile does); NaN
// without observations. Observations above the last bound count at it.
func (h histogram) quantile(q float64) float64 {
	if h.total <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.total
	lo, prev := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i]
		if c >= rank {
			if c == prev {
				return b
			}
			return lo + (b-lo)*(rank-prev)/(c-prev)
		}
		lo, prev = b, c
	}
	return h.bounds[len(h.bounds)-1]
}

// Run samples the registry every Interval until ctx is done.
func (r *Recorder) Run(ctx context.Context) {
	if r.opts.Gatherer == nil {
		return
	}
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	r.Sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Sample()
		}
	}
}

// Sample reads the registry once and, from the second reading on, adds a
// traffic sample: the rates and latency quantiles since the previous one.
func (r *Recorder) Sample() {
	if r.opts.Gatherer == nil {
		return
	}
	fams, err := r.opts.Gatherer.Gather()
	if err != nil && len(fams) == 0 {
		return
	}
	c := &counters{at: r.opts.Now(), lag: map[string]float64{}}
	for _, f := range fams {
		switch f.GetName() {
		case metricRowsIn, metricRowsOut:
			var s float64
			for _, m := range f.GetMetric() {
				s += m.GetCounter().GetValue()
			}
			if f.GetName() == metricRowsIn {
				c.rowsIn = s
			} else {
				c.rowsOut = s
			}
		case metricBatch:
			for _, m := range f.GetMetric() {
				if labelValue(m, "stage") != batchExcludedTag {
					c.batch.add(m.GetHistogram())
				}
			}
		case metricEndToEnd:
			for _, m := range f.GetMetric() {
				c.e2e.add(m.GetHistogram())
			}
		case metricCommitLag:
			for _, m := range f.GetMetric() {
				c.lag[labelValue(m, "topic")+"/"+labelValue(m, "partition")] = m.GetGauge().GetValue()
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.prev
	r.prev = c
	if p == nil {
		return
	}
	dt := c.at.Sub(p.at).Seconds()
	if dt <= 0 {
		return
	}
	b, e := c.batch.minus(p.batch), c.e2e.minus(p.e2e)
	s := Sample{At: c.at, RowsInPerSecond: Float(math.Max(0, c.rowsIn-p.rowsIn) / dt),
		RowsOutPerSecond: Float(math.Max(0, c.rowsOut-p.rowsOut) / dt),
		BatchP50:         Float(b.quantile(0.5)), BatchP99: Float(b.quantile(0.99)),
		EndToEndP50: Float(e.quantile(0.5)), EndToEndP99: Float(e.quantile(0.99)), Lag: c.lag}
	r.traffic.push(s)
	r.samples++
	r.rev.Traffic++
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// lagKeys lists the partitions seen in the samples, sorted.
func lagKeys(ss []Sample) []string {
	set := map[string]bool{}
	for _, s := range ss {
		for k := range s.Lag {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := splitPartition(keys[i]), splitPartition(keys[j])
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.part < b.part
	})
	return keys
}

type tp struct {
	topic string
	part  int
}

func splitPartition(k string) tp {
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return tp{topic: k}
	}
	n := 0
	for _, ch := range k[i+1:] {
		if ch < '0' || ch > '9' {
			return tp{topic: k}
		}
		n = n*10 + int(ch-'0')
	}
	return tp{topic: k[:i], part: n}
}

package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the runtime's Prometheus metrics (rows in and out, dead
// letters, commit lag, batch latency; ARCHITECTURE.md, the daemon's
// promises). They live in their own registry (no global state), which also
// carries the Go runtime and process collectors (resident memory, CPU); a
// program built on the runtime registers its own metrics there too.
type Metrics struct {
	Registry *prometheus.Registry

	MessagesIn  *prometheus.CounterVec // topic
	RowsIn      *prometheus.CounterVec // topic
	RowsOut     *prometheus.CounterVec // stream
	DeadLetters *prometheus.CounterVec // stage
	// DeadLettersTrimmed counts dead letters cut to fit the dead-letter
	// topic (the sink increments it); DeadLetterStreamDown is 1 while a
	// dead letter cannot be written and consumption is paused.
	DeadLettersTrimmed   prometheus.Counter
	DeadLetterStreamDown prometheus.Gauge
	Retries              *prometheus.CounterVec // op: stage, sink, commit, ...
	Stale                prometheus.Counter

	BatchLatency *prometheus.HistogramVec // stage
	SinkLatency  prometheus.Histogram
	EndToEnd     prometheus.Histogram

	InFlightMessages prometheus.Gauge
	InFlightBytes    prometheus.Gauge

	CommitLag *prometheus.GaugeVec // topic, partition: high watermark − committed offset
	// GroupLag is every partition's log end minus the group's committed
	// offset, whoever holds it; StalledPartitions counts, by topic, the
	// partitions with messages waiting and no commit for the stall timeout.
	GroupLag          *prometheus.GaugeVec // topic, partition
	StalledPartitions *prometheus.GaugeVec // topic
	Uncommitted       prometheus.Gauge
	Commits           prometheus.Counter
	CommitErrors      prometheus.Counter
	Generations       prometheus.Counter
	Partitions        prometheus.Gauge
}

// latency buckets from 0.5 ms to ~16 s
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// NewMetrics creates the metrics in a fresh registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	m := &Metrics{Registry: r}
	m.MessagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_messages_in_total", Help: "Messages received, by source topic."}, []string{"topic"})
	m.RowsIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_rows_in_total", Help: "Rows decoded from source messages, by source topic."}, []string{"topic"})
	m.RowsOut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_rows_out_total", Help: "Rows delivered and acknowledged, by output stream."}, []string{"stream"})
	m.DeadLetters = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_dead_letters_total", Help: "Messages quarantined in the dead-letter topic (counted once the broker has acknowledged the dead letter), by the stage that refused them."}, []string{"stage"})
	m.DeadLettersTrimmed = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_dead_letters_trimmed_total", Help: "Dead letters cut to fit the dead-letter topic's message limit (headers forestd-dlq-trimmed, forestd-dlq-original-bytes, forestd-dlq-value-sha256)."})
	m.DeadLetterStreamDown = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_dead_letter_stream_down", Help: "1 while a dead letter cannot be written and consumption is paused, else 0."})
	m.Retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_retries_total", Help: "Retried operations, by operation."}, []string{"op"})
	m.Stale = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_stale_messages_total", Help: "Messages refused because their offset was already tracked or before the generation's start (redeliveries)."})
	m.BatchLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "forestd_batch_latency_seconds", Help: "Time to process one message batch, by stage (decode, score, train, ...).", Buckets: latencyBuckets}, []string{"stage"})
	m.SinkLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forestd_sink_write_seconds", Help: "Time for the sink to acknowledge one message's outputs.", Buckets: latencyBuckets})
	m.EndToEnd = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forestd_end_to_end_latency_seconds", Help: "From the source message's timestamp to the acknowledgement of its outputs.", Buckets: latencyBuckets})
	m.InFlightMessages = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_inflight_messages", Help: "Messages submitted and not yet finished."})
	m.InFlightBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_inflight_bytes", Help: "Message bytes submitted and not yet finished."})
	m.CommitLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "forestd_commit_lag", Help: "High watermark minus committed offset, by topic and partition (messages not yet committed)."}, []string{"topic", "partition"})
	m.GroupLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "forestd_group_lag", Help: "Log end offset minus the group's committed offset, by topic and partition, whichever member holds the partition."}, []string{"topic", "partition"})
	m.StalledPartitions = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "forestd_stalled_partitions", Help: "Partitions with messages waiting and no commit by the group for longer than the stall timeout, by topic."}, []string{"topic"})
	m.Uncommitted = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_uncommitted_messages", Help: "Messages fetched whose offsets are not yet committable."})
	m.Commits = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_commits_total", Help: "Successful offset commits."})
	m.CommitErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_commit_errors_total", Help: "Failed offset commits."})
	m.Generations = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_group_generations_total", Help: "Consumer-group generations joined (rebalances)."})
	m.Partitions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_assigned_partitions", Help: "Partitions assigned to this member."})
	for _, c := range []prometheus.Collector{
		m.MessagesIn, m.RowsIn, m.RowsOut, m.DeadLetters, m.DeadLettersTrimmed, m.DeadLetterStreamDown, m.Retries, m.Stale,
		m.BatchLatency, m.SinkLatency, m.EndToEnd, m.InFlightMessages, m.InFlightBytes,
		m.CommitLag, m.GroupLag, m.StalledPartitions, m.Uncommitted, m.Commits, m.CommitErrors, m.Generations, m.Partitions,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	return m
}

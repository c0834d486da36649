package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forestd/forestd/internal/broker"
)

// metrics are the daemon's own Prometheus metrics — models, training,
// analysis — beside the runtime's (pipeline.Metrics), in the same registry.
type metrics struct {
	ModelVersion       prometheus.Gauge
	ModelSwaps         prometheus.Counter
	ModelsTrained      prometheus.Counter
	TrainingErrors     prometheus.Counter
	ModelsPublished    prometheus.Counter
	TrainingRows       prometheus.Gauge
	TrainingSeconds    prometheus.Histogram
	ReportsPublished   prometheus.Counter
	AnalysisSeconds    prometheus.Histogram
	AnalysisRows       prometheus.Gauge
	SelectedPublished  prometheus.Counter
	ModelRejected      *prometheus.CounterVec // reason
	TrainingSkipped    prometheus.Counter
	TrainingEvicted    prometheus.Counter
	ScoreWaitingModels prometheus.Gauge
	Retries            *prometheus.CounterVec // the runtime's forestd_retries_total (publish-model)
}

// newMetrics creates the daemon's metrics in reg, beside the runtime's
// (whose forestd_retries_total it shares).
func newMetrics(reg *prometheus.Registry, retries *prometheus.CounterVec) *metrics {
	m := &metrics{Retries: retries}
	m.ModelVersion = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_model_version", Help: "Version of the model currently scoring (-1 before the first model)."})
	m.ModelVersion.Set(-1)
	m.ModelSwaps = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_model_swaps_total", Help: "Models hot-swapped in."})
	m.ModelsTrained = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_models_trained_total", Help: "Models trained by this daemon."})
	m.TrainingErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_training_errors_total", Help: "Retrains that failed (logged as \"training failed\" with the reason); the live model stays."})
	m.ModelsPublished = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_models_published_total", Help: "Models published to the model topic."})
	m.TrainingRows = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_training_window_rows", Help: "Labelled rows in the training window."})
	m.TrainingSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forestd_training_seconds", Help: "Time to train one model.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)})
	m.AnalysisSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "forestd_analysis_seconds", Help: "Time of one dependence analysis of the analysis window (train.analysis_window).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)})
	m.AnalysisRows = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_analysis_window_rows", Help: "Rows in the latest dependence analysis (at most train.analysis_window)."})
	m.ReportsPublished = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_reports_published_total", Help: "Dependence reports published."})
	m.SelectedPublished = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_selected_batches_total", Help: "Batches forwarded with the selected and mapped columns."})
	m.ModelRejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "forestd_models_rejected_total", Help: "Models refused, by reason: undecodable, version_mismatch (a model-topic entry whose key disagrees with its content), not_newer, columns_changed (reads other columns than the live model)."}, []string{"reason"})
	m.TrainingSkipped = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_training_rows_skipped_total", Help: "Training rows skipped for a null label (with several labels: a null or NaN in any of them)."})
	m.TrainingEvicted = prometheus.NewCounter(prometheus.CounterOpts{Name: "forestd_training_rows_evicted_total", Help: "Rows evicted from the bounded training window."})
	m.ScoreWaitingModels = prometheus.NewGauge(prometheus.GaugeOpts{Name: "forestd_score_waiting_for_model", Help: "Messages waiting for a first model."})
	reg.MustRegister(m.ModelVersion, m.ModelSwaps, m.ModelsTrained, m.TrainingErrors, m.ModelsPublished, m.TrainingRows, m.TrainingSeconds,
		m.ReportsPublished, m.AnalysisSeconds, m.AnalysisRows, m.SelectedPublished, m.ModelRejected, m.TrainingSkipped, m.TrainingEvicted, m.ScoreWaitingModels)
	return m
}

// brokerMetrics are the embedded broker's limits (internal/broker,
// limits.go: what they refused), read from broker.LimitStats at each
// scrape; registered only when the daemon starts the embedded broker.
type brokerMetrics struct {
	OversizedRequests  prometheus.CounterFunc
	RefusedConnections prometheus.CounterFunc
	TimedOut           prometheus.CounterFunc
	OpenConnections    prometheus.GaugeFunc
}

func newBrokerMetrics(reg *prometheus.Registry, stats func() broker.LimitStats) *brokerMetrics {
	m := &brokerMetrics{
		OversizedRequests: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "forestd_broker_oversized_requests_total",
			Help: "Embedded broker: connections closed for a request size above embedded.max_request_bytes (or above 64 KiB before SASL authentication)."},
			func() float64 { return float64(stats().OversizedRequests) }),
		RefusedConnections: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "forestd_broker_refused_connections_total",
			Help: "Embedded broker: connections closed at accept because embedded.max_connections were open."},
			func() float64 { return float64(stats().RefusedConnections) }),
		TimedOut: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "forestd_broker_timed_out_connections_total",
			Help: "Embedded broker: connections closed because their TLS handshake and first request, a request body or SASL authentication did not complete in time, or because they were idle."},
			func() float64 { return float64(stats().TimedOut) }),
		OpenConnections: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "forestd_broker_open_connections",
			Help: "Embedded broker: client connections open now."},
			func() float64 { return float64(stats().OpenConnections) }),
	}
	reg.MustRegister(m.OversizedRequests, m.RefusedConnections, m.TimedOut, m.OpenConnections)
	return m
}

package daemon

import (
	"time"

	"github.com/forestd/forestd/pipeline"
)

// fastRetry retries quickly in tests.
var fastRetry = pipeline.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Multiplier: 2}

// testMetrics are the runtime's and the daemon's metrics in one registry,
// as Start makes them.
func testMetrics() (*pipeline.Metrics, *metrics) {
	pm := pipeline.NewMetrics()
	return pm, newMetrics(pm.Registry, pm.Retries)
}

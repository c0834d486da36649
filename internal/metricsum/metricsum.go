// Package metricsum reads totals back from a Prometheus registry: the
// daemon's stop log and the serve demo's progress lines share it.
package metricsum

import "github.com/prometheus/client_golang/prometheus"

// Counter adds up every series of a counter family in reg (0 when absent).
func Counter(reg prometheus.Gatherer, name string) float64 {
	fams, err := reg.Gather()
	if err != nil {
		return 0
	}
	var s float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			if c := mt.GetCounter(); c != nil {
				s += c.GetValue()
			}
		}
	}
	return s
}

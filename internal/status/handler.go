package status

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/forestd/forestd/internal/report"
)

//go:embed assets/index.html assets/status.js assets/status.css
var assets embed.FS

// charts are the SVG charts served at /status/chart/NAME.svg.
var charts = [...]string{"importances", "history", "rows", "latency", "lag", "pvalues", "groups", "drift"}

// Charts lists the SVG charts served at /status/chart/NAME.svg (a new
// slice).
func Charts() []string { return slices.Clone(charts[:]) }

// securityHeaders forbid inline scripts, other origins, framing and
// content sniffing: the page's own script and stylesheet, and fetches of
// its own API, are all it may use.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// Handler serves the status page: / (the page), /api/status (Status as
// JSON: whole, or without what the client holds when the query names it,
// see ParseHeld and StatusSince; a query it cannot read is 400 with the
// reason), /status/chart/NAME.svg (the charts) and /status/status.js and
// /status/status.css (the page's assets). Only GET and HEAD are allowed;
// other paths are 404. The page fetches its assets and /api/status at
// these absolute paths, so a program serving it beside its own handlers
// mounts Handler on Patterns of its mux's root (as the daemon does), not
// under a prefix; the page's link to /metrics works where the program
// serves its Prometheus registry there.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(r.serve)
}

// Patterns lists the ServeMux patterns Handler answers (a new slice).
func Patterns() []string { return []string{"/", "/api/status", "/status/"} }

func (r *Recorder) serve(w http.ResponseWriter, req *http.Request) {
	securityHeaders(w.Header())
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the status page is read-only", http.StatusMethodNotAllowed)
		return
	}
	p := req.URL.Path
	switch {
	case p == "/":
		r.asset(w, req, "assets/index.html", "text/html; charset=utf-8")
	case p == "/favicon.ico": // browsers ask; no icon, and no 404 in their console
		w.WriteHeader(http.StatusNoContent)
	case p == "/status/status.js":
		r.asset(w, req, "assets/status.js", "text/javascript; charset=utf-8")
	case p == "/status/status.css":
		r.asset(w, req, "assets/status.css", "text/css; charset=utf-8")
	case p == "/api/status":
		h, err := ParseHeld(req.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, err := json.MarshalIndent(r.StatusSince(h), "", " ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		r.writeBody(w, req, "application/json", append(b, '\n'), nil)
	case strings.HasPrefix(p, "/status/chart/") && strings.HasSuffix(p, ".svg"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/status/chart/"), ".svg")
		rev, svg, err := r.chart(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		r.writeBody(w, req, "image/svg+xml", svg, func() []byte { return r.chartGzip(name, rev, svg) })
	default:
		http.NotFound(w, req)
	}
}

func (r *Recorder) asset(w http.ResponseWriter, req *http.Request, name, ctype string) {
	b, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r.writeBody(w, req, ctype, b, nil)
}

// Chart returns one of the page's charts (see Charts) as SVG, drawn by
// package report from the current status; a chart is redrawn only when
// its part of the status changed.
func (r *Recorder) Chart(name string) ([]byte, error) {
	_, svg, err := r.chart(name)
	return svg, err
}

// chart is Chart with the revision the chart was drawn at.
func (r *Recorder) chart(name string) (string, []byte, error) {
	r.mu.Lock()
	rev := r.chartRev(name)
	if c, ok := r.cache[name]; ok && c.rev == rev {
		r.mu.Unlock()
		return rev, c.svg, nil
	}
	r.mu.Unlock()
	s := r.status(false, Held{})
	svg, err := draw(name, s)
	if err != nil {
		return "", nil, err
	}
	b := []byte(svg)
	r.mu.Lock()
	if rev == r.chartRev(name) { // unchanged while drawing
		r.cache[name] = cached{rev: rev, svg: b}
	}
	r.mu.Unlock()
	return rev, b, nil
}

// chartGzip returns svg, chart name's drawing at revision rev, gzipped:
// compressed once per revision however many pages ask for it.
func (r *Recorder) chartGzip(name, rev string, svg []byte) []byte {
	r.mu.Lock()
	if c, ok := r.cache[name]; ok && c.rev == rev && c.gz != nil {
		r.mu.Unlock()
		return c.gz
	}
	r.mu.Unlock()
	z := r.gzipBytes(svg)
	r.mu.Lock()
	if c, ok := r.cache[name]; ok && c.rev == rev {
		c.gz = z
		r.cache[name] = c
	}
	r.mu.Unlock()
	return z
}

// chartRev is the revision a chart is drawn from (r.mu held).
func (r *Recorder) chartRev(name string) string {
	switch name {
	case "importances":
		return fmt.Sprint("m", r.rev.Model)
	case "history":
		return fmt.Sprint("h", r.rev.History)
	case "rows", "latency", "lag":
		return fmt.Sprint("t", r.rev.Traffic)
	case "pvalues", "groups":
		return fmt.Sprint("a", r.rev.Analysis)
	case "drift":
		return fmt.Sprint("d", r.rev.Drift)
	}
	return ""
}

func draw(name string, s Status) (template.HTML, error) {
	switch name {
	case "importances":
		if s.Model == nil {
			return report.Bars(report.BarChart{Title: "feature importances (no model yet)", Class: "importances"})
		}
		return s.Model.ImportanceChart(s.Model.ImportanceKind)
	case "history":
		x := make([]float64, len(s.History))
		oob := make([]float64, len(s.History))
		r2 := make([]float64, len(s.History))
		hasR2 := false
		for i, v := range s.History {
			x[i], oob[i], r2[i] = float64(v.Version), float64(v.OOBError), float64(v.OOBR2)
			hasR2 = hasR2 || !isNaN(r2[i])
		}
		series := []report.Series{{Name: "OOB error", Y: oob}}
		if hasR2 {
			series = append(series, report.Series{Name: "OOB R²", Y: r2})
		}
		return report.Lines(report.LineChart{Title: "OOB estimates by model version", Class: "history", X: x, Series: series, Points: true, XInteger: true})
	case "rows", "latency", "lag":
		return trafficChart(name, s.Traffic)
	case "pvalues", "groups":
		if s.Analysis == nil {
			return report.Bars(report.BarChart{Title: "no dependence analysis yet", Class: name})
		}
		if name == "pvalues" {
			return report.PValues(s.Analysis.Dependence)
		}
		return report.Groups(s.Analysis.Dependence)
	case "drift":
		return driftChart(s.Drift)
	}
	return "", fmt.Errorf("status: no chart %q (want one of %s)", name, strings.Join(charts[:], ", "))
}

func isNaN(v float64) bool { return v != v }

// trafficChart draws the traffic ring: x is seconds before the latest
// sample.
func trafficChart(name string, t Traffic) (template.HTML, error) {
	n := len(t.Samples)
	x := make([]float64, n)
	for i, s := range t.Samples {
		x[i] = s.At.Sub(t.Samples[n-1].At).Seconds()
	}
	col := func(f func(Sample) Float, scale float64) []float64 {
		out := make([]float64, n)
		for i, s := range t.Samples {
			out[i] = float64(f(s)) * scale
		}
		return out
	}
	c := report.LineChart{Class: name, X: x, XUnit: " s", YMin0: true}
	switch name {
	case "rows":
		c.Title = "rows per second"
		c.Series = []report.Series{{Name: "in", Y: col(func(s Sample) Float { return s.RowsInPerSecond }, 1)},
			{Name: "out", Y: col(func(s Sample) Float { return s.RowsOutPerSecond }, 1)}}
	case "latency":
		c.Title = "latency (ms)"
		c.Series = []report.Series{
			{Name: "batch p50", Y: col(func(s Sample) Float { return s.BatchP50 }, 1000)},
			{Name: "batch p99", Y: col(func(s Sample) Float { return s.BatchP99 }, 1000)},
			{Name: "end-to-end p50", Y: col(func(s Sample) Float { return s.EndToEndP50 }, 1000)},
			{Name: "end-to-end p99", Y: col(func(s Sample) Float { return s.EndToEndP99 }, 1000)}}
	case "lag":
		c.Title = "consumer lag per partition (messages)"
		for _, k := range t.Partitions {
			y := make([]float64, n)
			for i, s := range t.Samples {
				v, ok := s.Lag[k]
				if !ok {
					v = float64(NaN())
				}
				y[i] = v
			}
			c.Series = append(c.Series, report.Series{Name: k, Y: y})
		}
	}
	return report.Lines(c)
}

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Ops is the daemon's operations endpoint (ARCHITECTURE.md, The daemon's promises): /metrics in the
// Prometheus text format, /healthz (the process is serving), /readyz (the
// daemon is ready to work: ready returns nil; otherwise 503 and the reason)
// and Go's /debug/pprof profiles.
type Ops struct {
	srv *http.Server
	ln  net.Listener
}

// OpsHandler is an extra handler of the ops endpoint (e.g. a status page)
// and the ServeMux pattern it answers.
type OpsHandler struct {
	Pattern string
	Handler http.Handler
}

// ServeOps listens on addr (host:port; port 0 picks a free one) and serves
// the endpoints, and any extra handlers, until Close.
func ServeOps(addr string, m *Metrics, ready func() error, logger *slog.Logger, extra ...OpsHandler) (*Ops, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pipeline: ops listener on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	// Go profiles, for diagnosing a slow or large daemon (the endpoint is
	// on loopback unless configured otherwise).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	for _, h := range extra {
		mux.Handle(h.Pattern, h.Handler)
	}
	o := &Ops{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("ops server stopped", "err", err)
		}
	}()
	return o, nil
}

// Addr is the address the endpoint listens on.
func (o *Ops) Addr() string { return o.ln.Addr().String() }

// Close shuts the endpoint down.
func (o *Ops) Close(ctx context.Context) error { return o.srv.Shutdown(ctx) }

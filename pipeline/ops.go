package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Ops is the daemon's operations endpoint (ARCHITECTURE.md, The daemon's promises): /metrics in the
// Prometheus text format, /healthz (the process is serving), /readyz (the
// daemon is ready to work: ready returns nil; otherwise 503 and the reason)
// and, on a loopback address only, Go's /debug/pprof profiles. Every path
// answers GET and HEAD; another method gets 405 Method Not Allowed with an
// Allow header.
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

// opsTimeouts are the ops server's timeouts: a request's headers must
// arrive within readHeader; a keep-alive connection idle for idle is
// closed; a response not written within write (a client that stops
// reading) is cut off.
type opsTimeouts struct{ readHeader, idle, write time.Duration }

// defaultOpsTimeouts are ServeOps's. The write timeout exceeds pprof's
// default 30 s CPU profile; pprof refuses a ?seconds= at or above it.
var defaultOpsTimeouts = opsTimeouts{readHeader: 5 * time.Second, idle: time.Minute, write: 2 * time.Minute}

// ServeOps listens on addr (host:port; port 0 picks a free one) and serves
// the endpoints, and any extra handlers, until Close. The profiles under
// /debug/pprof/ (index, named profiles such as heap and goroutine, a CPU
// profile, symbols) are served only when addr is a loopback address, so
// that binding the endpoint beyond the machine for Prometheus exposes the
// metrics and the probes, not the process's memory and stacks.
func ServeOps(addr string, m *Metrics, ready func() error, logger *slog.Logger, extra ...OpsHandler) (*Ops, error) {
	return serveOps(addr, m, ready, logger, defaultOpsTimeouts, extra)
}

// serveOps is ServeOps with the server's timeouts.
func serveOps(addr string, m *Metrics, ready func() error, logger *slog.Logger, to opsTimeouts, extra []OpsHandler) (*Ops, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pipeline: ops listener on %s: %w", addr, err)
	}
	lo := loopback(ln.Addr())
	var h http.Handler = opsMux(m, ready, lo, extra)
	if lo {
		h = loopbackHosts(h)
	}
	o := &Ops{ln: ln, srv: &http.Server{Handler: h,
		ReadHeaderTimeout: to.readHeader, IdleTimeout: to.idle, WriteTimeout: to.write}}
	go func() {
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("ops server stopped", "err", err)
		}
	}()
	return o, nil
}

// loopback reports whether a listener's address is a loopback address
// (an unspecified address such as 0.0.0.0 is not).
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// loopbackHosts answers 421 Misdirected Request to a request whose Host
// is not localhost or a loopback address. An endpoint on loopback can
// only be reached from this machine, but a page a browser loads from
// elsewhere can rebind its own name to 127.0.0.1 and then read
// /api/status as same-origin (DNS rebinding); its Host header still
// carries that name. An endpoint bound beyond loopback is reachable by
// whatever name the network gives it, so it accepts any Host.
func loopbackHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("forestd: Host %q is not this endpoint's: it listens on loopback; use localhost or 127.0.0.1", r.Host),
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost (any case, a trailing dot allowed) or a loopback IP
// literal, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// opsMux routes the endpoints; the method patterns make ServeMux answer 405
// to anything but GET and HEAD.
func opsMux(m *Metrics, ready func() error, pprofOn bool, extra []OpsHandler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
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
	if pprofOn {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	}
	for _, h := range extra {
		mux.Handle(h.Pattern, h.Handler)
	}
	return mux
}

// Addr is the address the endpoint listens on.
func (o *Ops) Addr() string { return o.ln.Addr().String() }

// Close shuts the endpoint down.
func (o *Ops) Close(ctx context.Context) error { return o.srv.Shutdown(ctx) }

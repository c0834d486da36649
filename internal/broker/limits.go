package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// kfake reads a request by reading its 4-byte size and then allocating a
// buffer of that size (as uint32, so up to 4 GiB) before reading the body,
// with no bound and before any SASL step: a client that declares 2 GiB and
// sends a few bytes makes the broker allocate 2 GiB (issue 35, finding 1).
// Every accepted connection therefore goes through limitConn, which follows
// the request framing (frameReader) and checks each size prefix before
// handing it to kfake. A size it refuses is never returned to kfake: the
// Read that completed it returns an error instead, and the connection is
// closed. The limits mirror Kafka's broker settings:
//
//   - MaxRequestBytes: socket.request.max.bytes (a larger or negative size
//     closes the connection);
//   - MaxUnauthenticatedRequestBytes: sasl.server.max.receive.size (with
//     SASL, requests before authentication completes are small);
//   - MaxInflightRequestBytes: queued.max.request.bytes (the declared sizes
//     of the requests being received, over all connections; a connection
//     whose request does not fit waits, so memory for request bodies is
//     bounded however many connections declare large sizes);
//   - MaxConnections: max.connections (a connection beyond it is closed at
//     once);
//
// and timeouts Kafka expresses through connections.max.idle.ms and its
// authenticator, so that connections that hold budget or a connection slot
// without sending are closed:
//
//   - HandshakeTimeout: a new connection must finish its TLS handshake (if
//     any) and send its first complete request within it, so a client that
//     connects and sends nothing, or stalls mid-handshake, gives its slot
//     back quickly;
//   - RequestReadTimeout: a request's body must arrive within it of its
//     size;
//   - AuthTimeout: with SASL, a connection must authenticate within it;
//   - IdleTimeout: connections.max.idle.ms itself, a connection with no
//     request or response for that long is closed (clients reconnect).

// Defaults of the limits (Options).
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultMaxInflightRequestBytes bounds the declared sizes of the
	// requests being received at once (raised to MaxRequestBytes if that
	// is larger).
	DefaultMaxInflightRequestBytes = 128 << 20
	// DefaultMaxUnauthenticatedRequestBytes bounds requests before SASL
	// completes; SaslHandshake, SaslAuthenticate and ApiVersions requests
	// are a few hundred bytes.
	DefaultMaxUnauthenticatedRequestBytes = 64 << 10
	// DefaultMaxConnections caps concurrent client connections.
	DefaultMaxConnections = 1000
	// DefaultRequestReadTimeout is how long a request's body may take to
	// arrive after its size.
	DefaultRequestReadTimeout = 30 * time.Second
	// DefaultAuthTimeout is how long a connection may take to complete
	// SASL authentication.
	DefaultAuthTimeout = 30 * time.Second
	// DefaultHandshakeTimeout is how long a new connection may take to
	// finish its TLS handshake and send its first complete request
	// (clients send ApiVersions at once).
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms default.
	DefaultIdleTimeout = 10 * time.Minute
)

// apiKeySASLAuthenticate is the Kafka API key of SaslAuthenticate.
const apiKeySASLAuthenticate = 36

// Errors a limited connection's Read returns (wrapped) before closing.
var (
	ErrRequestTooLarge = errors.New("request larger than the broker's limit")
	errBudgetClosed    = errors.New("connection closed while waiting for request memory")
)

// LimitStats counts what the limits refused since the broker started.
type LimitStats struct {
	// OversizedRequests are connections closed for a request size above
	// MaxRequestBytes, negative, or above MaxUnauthenticatedRequestBytes
	// before authentication.
	OversizedRequests int64
	// RefusedConnections are connections closed at accept because
	// MaxConnections were open.
	RefusedConnections int64
	// TimedOut are connections closed because the TLS handshake and first
	// request, a request body or the SASL exchange did not complete in
	// time, or because they were idle for IdleTimeout.
	TimedOut int64
	// OpenConnections are the client connections open now.
	OpenConnections int64
}

// limits is the state the limited listener and its connections share.
type limits struct {
	maxRequest, maxUnauth int64
	maxConns              int64
	readTimeout           time.Duration
	authTimeout           time.Duration // 0: no SASL, connections start authenticated
	handshakeTimeout      time.Duration
	idleTimeout           time.Duration
	budget                *semaphore.Weighted
	log                   *slog.Logger

	open, oversized, refused, timedOut atomic.Int64
}

func (l *limits) stats() LimitStats {
	return LimitStats{OversizedRequests: l.oversized.Load(), RefusedConnections: l.refused.Load(),
		TimedOut: l.timedOut.Load(), OpenConnections: l.open.Load()}
}

// warn logs the n-th event of a kind when n is a power of two, so that a
// flood of hostile connections cannot flood the log.
func (l *limits) warn(n int64, msg string, args ...any) {
	if l.log != nil && n&(n-1) == 0 {
		l.log.Warn(msg, append(args, "component", "broker", "count", n)...)
	}
}

// limitListener applies the connection cap and wraps what it accepts in
// limitConn.
type limitListener struct {
	net.Listener
	l *limits
}

// Accept returns the next connection within the cap. It closes
// connections beyond the cap itself and retries temporary errors (such as
// running out of file descriptors) after a pause, as net/http's server
// does: kfake stops listening for good on the first error Accept returns.
func (ln limitListener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if ln.l.log != nil {
				ln.l.log.Warn("broker: accept failed; retrying", "component", "broker", "err", err, "retry_in", pause)
			}
			time.Sleep(pause)
			continue
		}
		pause = 0
		if ln.l.open.Add(1) > ln.l.maxConns {
			ln.l.open.Add(-1)
			c.Close()
			ln.l.warn(ln.l.refused.Add(1), "broker: connection refused: too many open connections",
				"remote", c.RemoteAddr().String(), "max_connections", ln.l.maxConns)
			continue
		}
		return newLimitConn(c, ln.l), nil
	}
}

// limitConn enforces the request limits on one client connection. Read is
// called by kfake's reader, one call at a time; Write by its writer.
type limitConn struct {
	net.Conn
	l      *limits
	fr     frameReader
	hooks  frameHooks
	authed atomic.Bool
	ctx    context.Context // done when the connection closes
	cancel context.CancelFunc

	active atomic.Int64 // time of the last request end or response write (UnixNano)

	mu        sync.Mutex
	closed    bool
	reserved  int64           // budget held by the request being read
	handedOut bool            // its size went to the reader, which has not called Read since (it is allocating the body)
	timer     *time.Timer     // the request's read timeout, the auth timeout or the idle timeout
	gen       uint64          // bumped whenever timer is stopped, so a timer that already fired does nothing
	first     *time.Timer     // the handshake timeout, until the first request ends
	authReqs  map[int32]int16 // SaslAuthenticate requests in flight: correlation ID → version
	once      sync.Once
}

func newLimitConn(c net.Conn, l *limits) *limitConn {
	lc := &limitConn{Conn: c, l: l}
	lc.ctx, lc.cancel = context.WithCancel(context.Background())
	lc.hooks = frameHooks{size: lc.onSize, header: lc.onHeader, end: lc.onEnd}
	lc.active.Store(time.Now().UnixNano())
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.first = time.AfterFunc(l.handshakeTimeout, func() {
		lc.mu.Lock()
		done := lc.first == nil || lc.closed
		lc.mu.Unlock()
		if !done {
			lc.timeout("TLS handshake and first request")
		}
	})
	if l.authTimeout > 0 {
		lc.authReqs = map[int32]int16{}
		lc.armLocked(l.authTimeout, "SASL authentication")
	} else {
		lc.authed.Store(true)
	}
	return lc
}

func (c *limitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.handedOut { // the reader has allocated the body of the size it was given
		c.handedOut = false
		if c.closed {
			c.releaseLocked()
		}
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	if ferr := c.fr.feed(p[:n], &c.hooks); ferr != nil {
		c.Close()
		return 0, ferr // the size is never seen by kfake, which then allocates nothing
	}
	return n, err
}

// onSize checks a request's declared size and reserves it from the
// budget, waiting until it fits.
func (c *limitConn) onSize(size uint32) error {
	s := int64(size)
	limit := c.l.maxRequest
	if !c.authed.Load() {
		limit = min(limit, c.l.maxUnauth)
	}
	if s > limit { // a negative int32 is above 2 GiB here
		c.l.warn(c.l.oversized.Add(1), "broker: connection closed: request size above the limit",
			"remote", c.RemoteAddr().String(), "size", int32(size), "limit", limit, "authenticated", c.authed.Load())
		return fmt.Errorf("broker: %s declared %d bytes, limit %d: %w", c.RemoteAddr(), int32(size), limit, ErrRequestTooLarge)
	}
	if s == 0 {
		return nil
	}
	if err := c.l.budget.Acquire(c.ctx, s); err != nil {
		return errBudgetClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.l.budget.Release(s)
		return errBudgetClosed
	}
	c.reserved, c.handedOut = s, true
	if c.authed.Load() { // before authentication the auth timeout runs instead
		c.armLocked(c.l.readTimeout, "request body")
	}
	return nil
}

func (c *limitConn) onHeader(key, version int16, corr int32) {
	if key != apiKeySASLAuthenticate || c.authed.Load() {
		return
	}
	c.mu.Lock()
	if len(c.authReqs) < 16 {
		c.authReqs[corr] = version
	}
	c.mu.Unlock()
}

// onEnd returns a request's reservation once its last byte has been read,
// ends the handshake timeout and, once authenticated, starts the idle
// timeout.
func (c *limitConn) onEnd() {
	c.active.Store(time.Now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked()
	if c.first != nil {
		c.first.Stop()
		c.first = nil
	}
	if c.authed.Load() {
		c.armLocked(c.l.idleTimeout, idle)
	}
}

func (c *limitConn) releaseLocked() {
	if c.reserved > 0 {
		c.l.budget.Release(c.reserved)
		c.reserved = 0
	}
}

func (c *limitConn) stopTimerLocked() {
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// idle names the idle timeout, which runs again for what remains when a
// response was written since it was armed.
const idle = "a request or response"

// armLocked replaces the connection's timer with one that closes it after
// d unless replaced or stopped first.
func (c *limitConn) armLocked(d time.Duration, what string) {
	c.stopTimerLocked()
	gen := c.gen
	var fire func()
	fire = func() {
		c.mu.Lock()
		if c.gen != gen || c.closed {
			c.mu.Unlock()
			return
		}
		if what == idle {
			if rest := time.Duration(c.active.Load()+int64(d)) - time.Duration(time.Now().UnixNano()); rest > 0 {
				c.timer = time.AfterFunc(rest, fire)
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		c.timeout(what)
	}
	c.timer = time.AfterFunc(d, fire)
}

func (c *limitConn) timeout(what string) {
	c.l.warn(c.l.timedOut.Add(1), "broker: connection closed: "+what+" did not arrive in time", "remote", c.RemoteAddr().String())
	c.Close()
}

// Write watches the responses to SaslAuthenticate requests: the connection
// is authenticated once one reports success and carries no SCRAM
// server-first message (kfake closes the connection on a failed step).
func (c *limitConn) Write(p []byte) (int, error) {
	c.active.Store(time.Now().UnixNano())
	if !c.authed.Load() && len(p) >= 8 {
		corr := int32(binary.BigEndian.Uint32(p[4:8]))
		c.mu.Lock()
		version, ok := c.authReqs[corr]
		delete(c.authReqs, corr)
		if ok && saslAuthenticated(p[8:], version) {
			c.authed.Store(true)
			c.authReqs = nil
			c.armLocked(c.l.idleTimeout, idle)
		}
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

// saslAuthenticated reports whether a SaslAuthenticate response body (after
// the correlation ID) of the given request version ends the exchange with
// success: error code 0 and auth bytes that are not a SCRAM server-first
// message (RFC 5802 §7: it starts "r="; PLAIN answers with no bytes, the
// SCRAM server-final message starts "v=").
func saslAuthenticated(b []byte, version int16) bool {
	if version >= 2 { // flexible: the response header's tagged fields
		if len(b) < 1 || b[0] != 0 {
			return false
		}
		b = b[1:]
	}
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 0 {
		return false
	}
	b = b[2:]
	var n int64
	if version >= 2 { // compact nullable error message, then compact auth bytes
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k)+1 {
			return false
		}
		if l > 0 {
			k += int(l - 1)
		}
		b = b[k:]
		l, k = binary.Uvarint(b)
		if k <= 0 || l == 0 {
			return false
		}
		n, b = int64(l-1), b[k:]
	} else {
		if len(b) < 2 {
			return false
		}
		skip := 2 + max(int(int16(binary.BigEndian.Uint16(b))), 0) // nullable error message
		if len(b) < skip+4 {
			return false
		}
		b = b[skip:]
		n, b = int64(int32(binary.BigEndian.Uint32(b))), b[4:]
	}
	if n < 0 || n > int64(len(b)) {
		return false
	}
	return n < 2 || b[0] != 'r' || b[1] != '='
}

// Close closes the connection once, returning its reservation and its slot.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.cancel()
		c.mu.Lock()
		c.closed = true
		if !c.handedOut { // else the reader may still be allocating: its next Read releases
			c.releaseLocked()
		}
		c.stopTimerLocked()
		if c.first != nil {
			c.first.Stop()
			c.first = nil
		}
		c.mu.Unlock()
		c.l.open.Add(-1)
	})
	return err
}

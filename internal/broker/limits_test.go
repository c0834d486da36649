package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// sendSize dials addr and sends a request size prefix followed by 4 KiB
// (issue 35's size bomb is 7f ff ff f0 and 4 KiB).
func sendSize(t *testing.T, addr string, size uint32) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	msg := append(binary.BigEndian.AppendUint32(nil, size), make([]byte, 4096)...)
	_, _ = c.Write(msg) // the broker may have closed already
	return c
}

// closedByPeer reports whether the broker closes c within d (reading
// until EOF or a reset; a timeout means it is still open).
func closedByPeer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// produceConsume produces a 200 KiB record on topic t (above the
// unauthenticated request limit) and consumes it back.
func produceConsume(t *testing.T, addr string, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("v"), 200<<10)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: value}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		var got bool
		fs.EachRecord(func(r *kgo.Record) { got = got || bytes.Equal(r.Value, value) })
		if got {
			return
		}
	}
}

// TestSizeBomb: issue 35's attack, six rounds of four connections each
// declaring 2 GiB − 16 (and a negative size, and one byte above the limit)
// then sending 4 KiB: the broker closes every such connection without
// allocating the declared size, and still serves a client afterwards.
func TestSizeBomb(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0", Topics: []Topic{{Name: "t", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const rounds, conns = 6, 4
	base := heapAfterGC()
	sizes := []uint32{0x7ffffff0, 0xffffffff, DefaultMaxRequestBytes + 1}
	for r := range rounds {
		var cs []net.Conn
		for i := range conns {
			cs = append(cs, sendSize(t, b.Addr(), sizes[(r*conns+i)%len(sizes)]))
		}
		for i, c := range cs {
			if !closedByPeer(c, 10*time.Second) {
				t.Errorf("round %d: connection %d declaring %#x is still open", r, i, sizes[(r*conns+i)%len(sizes)])
			}
		}
		if h := heapAfterGC(); h > base+64<<20 {
			t.Fatalf("round %d: live heap grew from %d to %d MiB", r, base>>20, h>>20)
		}
	}
	if got := b.LimitStats().OversizedRequests; got != rounds*conns {
		t.Errorf("%d oversized requests counted, want %d", got, rounds*conns)
	}
	produceConsume(t, b.Addr())
}

// TestInflightBudget: connections that declare the largest allowed size
// and then stall are received one budget's worth at a time and closed at
// the read timeout, so the heap holds one of them, not all.
func TestInflightBudget(t *testing.T) {
	const size = 64 << 20
	b, err := Start(Options{Listen: "127.0.0.1:0", Topics: []Topic{{Name: "t", Partitions: 1}},
		MaxRequestBytes: size, MaxInflightRequestBytes: size, RequestReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base := heapAfterGC()
	const n = 8
	var wg sync.WaitGroup
	var cs []net.Conn
	for range n {
		cs = append(cs, sendSize(t, b.Addr(), size))
	}
	closed := make(chan bool, n)
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); closed <- closedByPeer(c, 30*time.Second) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var peak uint64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			h := heapAfterGC()
			peak = max(peak, h) // live memory: garbage is the collector's to bound (GOMEMLIMIT)
		}
	}
	close(closed)
	for ok := range closed {
		if !ok {
			t.Error("a stalled connection was not closed")
		}
	}
	// one body within the budget, one being dropped by a reader that has
	// just been closed (its reservation returned), and slack; without the
	// budget all eight are live
	if peak > base+3*size {
		t.Errorf("live heap peaked %d MiB above its start with %d connections of %d MiB declared", (peak-base)>>20, n, size>>20)
	}
	if got := b.LimitStats().TimedOut; got != n {
		t.Errorf("%d connections timed out, want %d", got, n)
	}
	produceConsume(t, b.Addr())
}

// TestConnectionCap: connections beyond MaxConnections are closed at once;
// the broker serves clients again when connections go.
func TestConnectionCap(t *testing.T) {
	const limit, n = 8, 14
	b, err := Start(Options{Listen: "127.0.0.1:0", Topics: []Topic{{Name: "t", Partitions: 1}}, MaxConnections: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if closedByPeer(c, time.Second) {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st := b.LimitStats()
	if refused < n-limit || st.OpenConnections > limit || st.RefusedConnections < n-limit {
		t.Fatalf("%d of %d connections refused (%+v), want at least %d", refused, n, st, n-limit)
	}
	for _, c := range cs {
		c.Close()
	}
	produceConsume(t, b.Addr())
}

// TestUnauthenticatedLimits: with SASL, a request above 64 KiB before
// authentication closes the connection, as does a connection that does
// not authenticate in time; PLAIN and SCRAM clients, once authenticated,
// send requests above that size.
func TestUnauthenticatedLimits(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0", Topics: []Topic{{Name: "t", Partitions: 1}},
		AuthTimeout: 300 * time.Millisecond, Users: []User{
			{Mechanism: MechanismPlain, Name: "p", Password: "pw"},
			{Mechanism: MechanismScramSHA512, Name: "s", Password: "pw"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c := sendSize(t, b.Addr(), DefaultMaxUnauthenticatedRequestBytes+1); !closedByPeer(c, 10*time.Second) {
		t.Error("an unauthenticated request above the limit was read")
	}
	if got := b.LimitStats().OversizedRequests; got != 1 {
		t.Errorf("%d oversized requests counted, want 1", got)
	}
	idle, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if !closedByPeer(idle, 10*time.Second) {
		t.Error("a connection that never authenticated stayed open")
	}
	produceConsume(t, b.Addr(), kgo.SASL(plain.Auth{User: "p", Pass: "pw"}.AsMechanism()))
	produceConsume(t, b.Addr(), kgo.SASL(scram.Auth{User: "s", Pass: "pw"}.AsSha512Mechanism()))
}

// TestSASLAuthenticated: the end of the SASL exchange is read from
// SaslAuthenticate responses of every version.
func TestSASLAuthenticated(t *testing.T) {
	for v := int16(0); v <= 2; v++ {
		for _, c := range []struct {
			code int16
			msg  *string
			auth string
			want bool
		}{
			{0, nil, "", true},                                   // PLAIN
			{0, nil, "v=c2lnbmF0dXJl", true},                     // SCRAM server-final
			{0, nil, "r=nonce,s=c2FsdA==,i=4096", false},         // SCRAM server-first
			{58, kmsg.StringPtr("bad"), "", false},               // SASL_AUTHENTICATION_FAILED
			{0, kmsg.StringPtr("a message"), "v=c2lnbg==", true}, // a message on success
		} {
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.Version, resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes = v, c.code, c.msg, []byte(c.auth)
			body := resp.AppendTo(nil)
			if resp.IsFlexible() {
				body = append([]byte{0}, body...)
			}
			if got := saslAuthenticated(body, v); got != c.want {
				t.Errorf("v%d %+v: %v", v, c, got)
			}
			for i := range body { // a truncated failure never counts as success
				if !c.want && saslAuthenticated(body[:i], v) {
					t.Errorf("v%d %+v cut at %d: authenticated", v, c, i)
				}
			}
		}
	}
}

// TestFrameReaderHooks: sizes and frame ends are found however the stream
// is cut, and an error from the size hook stops before the body.
func TestFrameReaderHooks(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 3, 8, 20} {
		stream = append(binary.BigEndian.AppendUint32(stream, uint32(n)), make([]byte, n)...)
	}
	want := []int64{0, -1, 3, -1, 8, -1, 20, -1}
	for cut := 1; cut <= len(stream); cut++ {
		var r frameReader
		var got []int64
		h := &frameHooks{size: func(s uint32) error { got = append(got, int64(s)); return nil }, end: func() { got = append(got, -1) }}
		for lo := 0; lo < len(stream); lo += cut {
			if err := r.feed(stream[lo:min(lo+cut, len(stream))], h); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pieces of %d bytes: %v, want %v", cut, got, want)
		}
	}
	var r frameReader
	stop := errors.New("stop")
	if err := r.feed([]byte{0x7f, 0xff, 0xff, 0xf0, 1, 2}, &frameHooks{size: func(uint32) error { return stop }}); err != stop {
		t.Fatalf("feed: %v", err)
	}
}

// FuzzFraming: any byte stream, cut anywhere, yields the same sizes and
// frame ends as the whole, and any SaslAuthenticate body is parsed without
// a panic.
func FuzzFraming(f *testing.F) {
	f.Add(append([]byte{0x7f, 0xff, 0xff, 0xf0}, make([]byte, 64)...), uint8(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0}, uint8(1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 0, 0, 0, 8, 0, 36, 0, 2, 0, 0, 0, 1}, uint8(5))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint8) {
		events := func(step int) []int64 {
			var r frameReader
			var got []int64
			h := &frameHooks{size: func(s uint32) error { got = append(got, int64(s)); return nil }, end: func() { got = append(got, -1) },
				header: func(k, v int16, c int32) { got = append(got, -2) }}
			for lo := 0; lo < len(stream); lo += step {
				_ = r.feed(stream[lo:min(lo+step, len(stream))], h)
			}
			return got
		}
		if whole, cutUp := events(max(len(stream), 1)), events(int(cut)%16+1); !reflect.DeepEqual(whole, cutUp) {
			t.Fatalf("whole %v, in pieces %v", whole, cutUp)
		}
		for v := int16(0); v <= 2; v++ {
			saslAuthenticated(stream, v)
		}
	})
}

// waitOpen polls b until at most n client connections are open.
func waitOpen(t *testing.T, b *Broker, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.LimitStats().OpenConnections > n {
		if time.Now().After(deadline) {
			t.Fatalf("%+v: want at most %d open connections", b.LimitStats(), n)
		}
		runtime.Gosched()
	}
}

// TestHandshakeTimeout: connections that never send a complete request —
// silent, stalled in the TLS handshake, or stopped inside the first
// request's size — are closed after HandshakeTimeout, counted as timed
// out, and give their slots back: with every slot held by them, a client
// gets in once they are closed.
func TestHandshakeTimeout(t *testing.T) {
	cert, key := writeSelfSigned(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, withTLS := range []bool{false, true} {
		o := Options{Listen: "127.0.0.1:0", Topics: []Topic{{Name: "t", Partitions: 1}}, MaxConnections: 6,
			HandshakeTimeout: 300 * time.Millisecond}
		var copts []kgo.Opt
		if withTLS {
			o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
			pool := x509.NewCertPool()
			pool.AddCert(pair.Leaf)
			copts = append(copts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool}))
		}
		b, err := Start(o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var cs []net.Conn
		// nothing; a TLS record header; half a size: each twice, every slot
		for _, first := range [][]byte{nil, {0x16, 0x03, 0x01}, {0, 0}, nil, {0x16, 0x03, 0x01}, {0, 0}} {
			c, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(first); err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		for i, c := range cs {
			if !closedByPeer(c, 10*time.Second) {
				t.Fatalf("tls %v: connection %d that sent no complete request stayed open", withTLS, i)
			}
		}
		waitOpen(t, b, 0)
		if st := b.LimitStats(); st.TimedOut != int64(len(cs)) || st.RefusedConnections != 0 {
			t.Fatalf("tls %v: %+v, want %d timed out and none refused", withTLS, st, len(cs))
		}
		produceConsume(t, b.Addr(), copts...)
	}
}

// TestIdleTimeout: a connection whose last request was answered is closed
// after IdleTimeout of silence and counted as timed out.
func TestIdleTimeout(t *testing.T) {
	b, err := Start(Options{Listen: "127.0.0.1:0", IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatal(err)
	}
	if !closedByPeer(c, 10*time.Second) {
		t.Fatal("an idle connection stayed open")
	}
	waitOpen(t, b, 0)
	if st := b.LimitStats(); st.TimedOut != 1 {
		t.Fatalf("%+v, want 1 timed out", st)
	}
}

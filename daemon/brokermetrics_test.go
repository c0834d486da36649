package daemon

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestBrokerLimitMetrics: with the embedded broker, /metrics shows what
// its limits refused (broker.LimitStats): a request size above
// embedded.max_request_bytes is counted in
// forestd_broker_oversized_requests_total, and the open connections (the
// daemon's own clients at least) in forestd_broker_open_connections.
func TestBrokerLimitMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{stageScore}
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.Kafka.SessionTimeout = 2 * time.Second
	d, err := Start(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	c, err := net.Dial("tcp", d.broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, 0x7ffffff0), make([]byte, 64)...)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := get(t, "http://"+d.OpsAddr()+"/metrics")
		if strings.Contains(body, "\nforestd_broker_oversized_requests_total 1\n") &&
			strings.Contains(body, "\nforestd_broker_open_connections ") && !strings.Contains(body, "\nforestd_broker_open_connections 0\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics has no oversized request or no open connection of the embedded broker:\n%s", body)
		}
	}
}

// TestBrokerTimeoutsConfigured: embedded.handshake_timeout and
// embedded.idle_timeout reach the embedded broker: a connection that sends
// nothing is closed after the handshake timeout, and one that sent an
// ApiVersions request and got its answer after the idle timeout, both well
// within a read deadline the defaults (10 s, 10 min) would pass.
func TestBrokerTimeoutsConfigured(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.Embedded.HandshakeTimeout = 300 * time.Millisecond
	cfg.Embedded.IdleTimeout = time.Second
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{stageScore}
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.Kafka.SessionTimeout = 2 * time.Second
	d, err := Start(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	// closed reports whether the broker closes c before the deadline.
	closed := func(c net.Conn) error {
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return err
		}
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return err
		}
		return nil // EOF or reset: closed by the broker
	}
	silent, err := net.Dial("tcp", d.broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := closed(silent); err != nil {
		t.Fatalf("a connection that sent nothing is still open after 5 s with handshake_timeout 300ms: %v", err)
	}
	idle, err := net.Dial("tcp", d.broker.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// ApiVersions v0: api key 18, version 0, correlation id 7, client id "t"
	req := binary.BigEndian.AppendUint16(nil, 18)
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, 7)
	req = append(binary.BigEndian.AppendUint16(req, 1), 't')
	if _, err := idle.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...)); err != nil {
		t.Fatal(err)
	}
	if err := idle.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	size := make([]byte, 4)
	if _, err := io.ReadFull(idle, size); err != nil {
		t.Fatalf("no answer to ApiVersions: %v", err)
	}
	if _, err := io.ReadFull(idle, make([]byte, binary.BigEndian.Uint32(size))); err != nil {
		t.Fatalf("ApiVersions answer: %v", err)
	}
	if err := closed(idle); err != nil {
		t.Fatalf("an idle connection is still open after 5 s with idle_timeout 1s: %v", err)
	}
}

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

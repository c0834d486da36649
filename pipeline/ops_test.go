package pipeline

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOpsMethods (reliability issue, item 8): /metrics, /healthz and
// /readyz answer GET and HEAD; any other method is 405 with an Allow header
// (/metrics used to answer every method).
func TestOpsMethods(t *testing.T) {
	m := NewMetrics()
	o, err := ServeOps("127.0.0.1:0", m, func() error { return errors.New("no model yet") }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(ctxTimeout(t, 2*time.Second))
	base := "http://" + o.Addr()
	do := func(method, path string) (*http.Response, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for path, want := range map[string]int{"/metrics": 200, "/healthz": 200, "/readyz": 503} {
		for _, method := range []string{"GET", "HEAD"} {
			if resp, body := do(method, path); resp.StatusCode != want {
				t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, body)
			}
		}
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			resp, _ := do(method, path)
			if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "GET") {
				t.Errorf("%s %s: %d, Allow %q; want 405 allowing GET", method, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
	if resp, body := do("GET", "/readyz"); !strings.Contains(body, "not ready: no model yet") {
		t.Errorf("/readyz %d %q", resp.StatusCode, body)
	}
	if resp, body := do("GET", "/metrics"); !strings.Contains(body, "forestd_dead_letters_trimmed_total") {
		t.Errorf("/metrics %d lacks the metrics", resp.StatusCode)
	}
	// profiles on a loopback listener
	if resp, body := do("GET", "/debug/pprof/"); resp.StatusCode != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ on loopback: %d", resp.StatusCode)
	}
}

// TestOpsPprofLoopbackOnly (reliability issue, item 8): the profiles are
// served only when the endpoint listens on a loopback address.
func TestOpsPprofLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want bool
	}{{"127.0.0.1", true}, {"::1", true}, {"0.0.0.0", false}, {"::", false}, {"10.1.2.3", false}} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(c.ip), Port: 9}); got != c.want {
			t.Errorf("loopback(%s) = %v", c.ip, got)
		}
	}
	srv := httptest.NewServer(opsMux(NewMetrics(), nil, false, nil))
	defer srv.Close()
	for path, want := range map[string]int{"/debug/pprof/": 404, "/debug/pprof/heap": 404, "/metrics": 200} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without profiles: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestOpsDropsIdleAndStuckClients: the ops server closes a keep-alive
// connection left idle and a connection whose client stops reading a
// response; both used to be held for as long as the client kept them open
// (200 idle connections, 0 closed in 20 s), a goroutine and a descriptor
// each, shared with the daemon's Kafka connections.
func TestOpsDropsIdleAndStuckClients(t *testing.T) {
	handlerDone := make(chan error, 1)
	big := OpsHandler{Pattern: "GET /big", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 1<<20)
		var err error
		for i := 0; i < 256 && err == nil; i++ { // far more than the socket buffers hold
			_, err = w.Write(chunk)
		}
		handlerDone <- err
	})}
	to := defaultOpsTimeouts
	to.idle, to.write = 300*time.Millisecond, time.Second
	o, err := serveOps("127.0.0.1:0", NewMetrics(), nil, nil, to, []OpsHandler{big})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(ctxTimeout(t, 2*time.Second))

	// an idle keep-alive connection is closed by the server
	c, err := net.Dial("tcp", o.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle keep-alive connection: read %v, want EOF (closed by the server)", err)
	}

	// a client that stops reading does not hold the handler
	c2, err := net.Dial("tcp", o.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := io.WriteString(c2, "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-handlerDone:
		if err == nil {
			t.Error("the handler wrote 256 MiB to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Error("a client that stops reading holds the handler for more than 5 s")
	}
}

// TestOpsLoopbackHosts (untrusted-bytes issue, item 7): an endpoint on
// loopback answers only requests whose Host names loopback, so a page that
// rebinds its own DNS name to 127.0.0.1 cannot read it as same-origin; it
// used to answer any Host.
func TestOpsLoopbackHosts(t *testing.T) {
	o, err := ServeOps("127.0.0.1:0", NewMetrics(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(ctxTimeout(t, 2*time.Second))
	_, port, _ := net.SplitHostPort(o.Addr())
	for host, want := range map[string]int{
		o.Addr(): 200, "localhost:" + port: 200, "LOCALHOST.": 200, "[::1]:" + port: 200, "127.9.9.9": 200,
		"attacker.example:" + port: http.StatusMisdirectedRequest, "localhost.attacker.example": http.StatusMisdirectedRequest,
		"10.0.0.1:" + port: http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest("GET", "http://"+o.Addr()+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
	if !loopbackHost("127.0.0.1:80") || loopbackHost("") || loopbackHost("0.0.0.0") {
		t.Error("loopbackHost")
	}
}

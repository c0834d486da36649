package pipeline

import (
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

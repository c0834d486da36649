package status

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/forestd/forestd/internal/testmodel"
)

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"gzip, deflate, br, zstd", true}, // Chromium
		{"deflate, br", false},
		{"GZIP", true},
		{"br;q=1.0, gzip;q=0.8", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"*", true},
		{"*;q=0", false},
		{"identity", false},
		{"x-gzip", false},
		{"gzip;q=banana", true}, // an unreadable q is the default
	} {
		req := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			req.Header.Set("Accept-Encoding", c.header)
		}
		if got := acceptsGzip(req); got != c.want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.header, got, c.want)
		}
	}
}

// TestGzipResponses: a client that accepts gzip gets the charts, the
// page's assets and a large status document compressed — the same bytes
// once decoded, with Vary — and the same chart revision is compressed
// once; a client that does not (or says q=0) gets them as they are; a body
// under minGzip (the page's steady poll) is never compressed.
func TestGzipResponses(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	r, err := New(Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r.ModelLive(testmodel.Wide(t, 1, 20, 200), "trained")
	h := r.Handler()
	fetch := func(path, accept string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, w.Code)
		}
		return w
	}
	decode := func(w *httptest.ResponseRecorder) []byte {
		t.Helper()
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, path := range []string{"/status/chart/importances.svg", "/status/status.js", "/api/status"} {
		plain := fetch(path, "")
		if plain.Header().Get("Content-Encoding") != "" || plain.Body.Len() < minGzip {
			t.Fatalf("%s without gzip: encoding %q, %d bytes", path, plain.Header().Get("Content-Encoding"), plain.Body.Len())
		}
		if q0 := fetch(path, "gzip;q=0"); q0.Header().Get("Content-Encoding") != "" {
			t.Fatalf("%s with gzip;q=0 came compressed", path)
		}
		z := fetch(path, "gzip, deflate, br")
		if z.Header().Get("Content-Encoding") != "gzip" || z.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s: headers %v", path, z.Header())
		}
		if z.Body.Len() >= plain.Body.Len()/2 {
			t.Fatalf("%s: %d bytes gzipped, %d plain", path, z.Body.Len(), plain.Body.Len())
		}
		body := decode(z)
		if path == "/api/status" { // "now" moves with the clock only: the same document
			plain = fetch(path, "")
		}
		if !bytes.Equal(body, plain.Body.Bytes()) {
			t.Fatalf("%s: decoded body differs from the plain one", path)
		}
	}
	// one compression per chart revision
	rev, svg, err := r.chart("importances")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := r.chartGzip("importances", rev, svg), r.chartGzip("importances", rev, svg); &a[0] != &b[0] {
		t.Fatal("the same chart revision was compressed twice")
	}
	// a held poll is a few hundred bytes: sent as it is
	pg := &page{}
	pg.read(t, fetch(pg.url(), "").Body.Bytes())
	poll := fetch(pg.url(), "gzip")
	if poll.Header().Get("Content-Encoding") != "" || poll.Body.Len() >= minGzip {
		t.Fatalf("held poll: encoding %q, %d bytes", poll.Header().Get("Content-Encoding"), poll.Body.Len())
	}
}

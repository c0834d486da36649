package status

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
)

// minGzip is the smallest body the status handler compresses: below it
// gzip's 18-byte frame and the CPU cost more than they save (the page's
// steady poll of /api/status is a few hundred bytes).
const minGzip = 1024

// acceptsGzip reports whether the request's Accept-Encoding lists gzip
// (or *) without q=0 (RFC 9110 §12.5.3). Browsers always send it.
func acceptsGzip(req *http.Request) bool {
	for _, v := range req.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "*" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// gzipBytes compresses b (level BestSpeed: the status page's bodies are
// SVG and JSON, which compress 5–10× at any level, redrawn every second)
// with a pooled compressor: a new one allocates over a megabyte.
func (r *Recorder) gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, ok := r.zpool.Get().(*gzip.Writer)
	if ok {
		zw.Reset(&buf)
	} else {
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level: no error
	}
	zw.Write(b) // a bytes.Buffer does not fail
	zw.Close()
	r.zpool.Put(zw)
	return buf.Bytes()
}

// writeBody writes body with its content type, gzip-compressed when the
// client accepts gzip and the body is at least minGzip bytes; gz, when
// not nil, returns the compressed body (a cached one), else it is
// compressed here.
func (r *Recorder) writeBody(w http.ResponseWriter, req *http.Request, ctype string, body []byte, gz func() []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Add("Vary", "Accept-Encoding")
	if len(body) >= minGzip && acceptsGzip(req) {
		var z []byte
		if gz != nil {
			z = gz()
		} else {
			z = r.gzipBytes(body)
		}
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(z)))
		w.Write(z)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

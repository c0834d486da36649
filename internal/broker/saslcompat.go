package broker

import (
	"encoding/binary"
	"net"
	"sync"
)

// librdkafka (and so kcat and the confluent clients) turns SASL on only
// when a broker's ApiVersions response lists SaslHandshake with version 0
// in its range (its RD_KAFKA_FEATURE_SASL_HANDSHAKE); it then speaks
// SaslHandshake v1 followed by SaslAuthenticate, because the broker also
// lists SaslHandshake v1 and SaslAuthenticate. kfake lists SaslHandshake
// 1..1 only (it does not implement v0's unframed authentication), so
// librdkafka refuses with "SASL Handshake not supported by broker". With
// SASL enabled the broker's connections therefore go through saslCompat,
// which changes SaslHandshake's minimum version from 1 to 0 in every
// ApiVersions response: a two-byte change in place. A client that really
// sent SaslHandshake v0 would get kfake's unsupported-version error, as
// without the change.

// Kafka API keys the shim reads.
const (
	apiKeySASLHandshake = 17
	apiKeyApiVersions   = 18
)

// saslCompatListener wraps the connections it accepts in saslCompat.
type saslCompatListener struct{ net.Listener }

func (l saslCompatListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &saslCompat{Conn: c, versions: map[int32]int16{}}, nil
}

// saslCompat tracks the requests read from a client connection (size,
// then API key, version and correlation ID at the start of each frame) and
// patches the responses to its ApiVersions requests. kfake writes each
// response frame with one Write and answers a connection's requests one
// at a time.
type saslCompat struct {
	net.Conn
	mu       sync.Mutex
	req      frameReader
	versions map[int32]int16 // ApiVersions requests in flight: correlation ID → version
}

func (c *saslCompat) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.req.feed(p[:n], &frameHooks{header: func(key, version int16, corr int32) {
		if key == apiKeyApiVersions && len(c.versions) < 64 {
			c.versions[corr] = version
		}
	}})
	c.mu.Unlock()
	return n, err
}

func (c *saslCompat) Write(p []byte) (int, error) {
	if len(p) >= 8 {
		corr := int32(binary.BigEndian.Uint32(p[4:8]))
		c.mu.Lock()
		version, ok := c.versions[corr]
		delete(c.versions, corr)
		c.mu.Unlock()
		if ok && int(binary.BigEndian.Uint32(p[:4])) == len(p)-4 {
			q := append([]byte(nil), p...) // the caller's buffer stays as it was
			patchApiVersions(q[8:], version)
			n, err := c.Conn.Write(q)
			return min(n, len(p)), err
		}
	}
	return c.Conn.Write(p)
}

// frameReader follows a stream of size-prefixed Kafka frames (a 4-byte
// big-endian size, then that many bytes) however the stream is cut, and
// calls its hooks: on each size prefix before any of the body, with the
// first eight body bytes of each frame long enough to hold them (API key,
// version, correlation ID: the request header), and after each frame's
// last byte. The limits (limits.go) and the librdkafka shim share it.
type frameReader struct {
	head [12]byte // size, then key, version, correlation ID
	have int      // bytes of head filled
	left int64    // bytes of the current frame not yet seen (once have >= 4)
}

// frameHooks are frameReader's callbacks; nil ones are skipped.
type frameHooks struct {
	size   func(size uint32) error // an error stops feed, which returns it
	header func(key, version int16, corr int32)
	end    func()
}

func (r *frameReader) feed(b []byte, h *frameHooks) error {
	for len(b) > 0 {
		if r.have < 4 { // the size first: a frame may be shorter than a header
			k := copy(r.head[r.have:4], b)
			r.have += k
			b = b[k:]
			if r.have < 4 {
				return nil
			}
			size := binary.BigEndian.Uint32(r.head[:4])
			r.left = int64(size)
			if h.size != nil {
				if err := h.size(size); err != nil {
					return err
				}
			}
		} else {
			k := min(int64(len(b)), r.left)
			if r.have < len(r.head) && r.head4() >= 8 {
				k = min(k, int64(len(r.head)-r.have))
				copy(r.head[r.have:], b[:k])
				r.have += int(k)
				if r.have == len(r.head) && h.header != nil {
					h.header(int16(binary.BigEndian.Uint16(r.head[4:6])), int16(binary.BigEndian.Uint16(r.head[6:8])),
						int32(binary.BigEndian.Uint32(r.head[8:12])))
				}
			}
			r.left -= k
			b = b[k:]
		}
		if r.left == 0 {
			r.have = 0
			if h.end != nil {
				h.end()
			}
		}
	}
	return nil
}

// head4 is the current frame's size.
func (r *frameReader) head4() uint32 { return binary.BigEndian.Uint32(r.head[:4]) }

// patchApiVersions sets SaslHandshake's minimum version to 0 in an
// ApiVersions response body of the given version (after the frame size
// and correlation ID; the response header carries no tagged fields even
// in flexible versions). It changes nothing in a body it cannot parse, an
// error response, or a version it does not know.
func patchApiVersions(body []byte, version int16) {
	if version < 0 || version > 5 || len(body) < 2 || body[0] != 0 || body[1] != 0 {
		return // kfake answers unknown versions with a v0 error response
	}
	b := body[2:]
	var n int
	if version >= 3 { // compact array: uvarint length + 1
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > 1<<16 {
			return
		}
		n, b = int(l-1), b[k:]
	} else {
		if len(b) < 4 {
			return
		}
		l := int32(binary.BigEndian.Uint32(b))
		if l < 0 || l > 1<<16 {
			return
		}
		n, b = int(l), b[4:]
	}
	for i := 0; i < n; i++ {
		if len(b) < 6 {
			return
		}
		key, minV := int16(binary.BigEndian.Uint16(b)), int16(binary.BigEndian.Uint16(b[2:]))
		if key == apiKeySASLHandshake { // its first entry only, so a second patch changes nothing
			if minV == 1 {
				binary.BigEndian.PutUint16(b[2:], 0)
			}
			return
		}
		b = b[6:]
		if version >= 3 { // tagged fields of the entry
			tags, k := binary.Uvarint(b)
			if k <= 0 {
				return
			}
			b = b[k:]
			for t := uint64(0); t < tags; t++ {
				_, k1 := binary.Uvarint(b)
				if k1 <= 0 {
					return
				}
				size, k2 := binary.Uvarint(b[k1:])
				if k2 <= 0 || uint64(len(b)-k1-k2) < size {
					return
				}
				b = b[k1+k2+int(size):]
			}
		}
	}
}

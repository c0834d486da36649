package broker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions sends one ApiVersions request of the given version on a new
// connection and decodes the response with franz-go's kmsg.
func apiVersions(t *testing.T, addr string, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "forestd-test", "1"
	body := kmsg.NewRequestFormatter(kmsg.FormatterClientID("forestd-test")).AppendRequest(nil, req, 77)
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, resp); err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(resp)); corr != 77 {
		t.Fatalf("correlation ID %d", corr)
	}
	out := kmsg.NewPtrApiVersionsResponse()
	out.Version = version
	if err := out.ReadFrom(resp[4:]); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSASLCompatApiVersions: with SASL users the broker lists
// SaslHandshake from version 0, as librdkafka requires, and every other
// API exactly as the broker without SASL lists it; without users nothing
// is changed.
func TestSASLCompatApiVersions(t *testing.T) {
	plain, err := Start(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	sasl, err := Start(Options{Listen: "127.0.0.1:0", Users: []User{{Mechanism: MechanismScramSHA512, Name: "u", Password: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sasl.Close()
	for _, v := range []int16{0, 1, 2, 3, 4} {
		want, got := apiVersions(t, plain.Addr(), v), apiVersions(t, sasl.Addr(), v)
		if got.ErrorCode != 0 || len(got.ApiKeys) != len(want.ApiKeys) {
			t.Fatalf("v%d: error %d, %d keys vs %d", v, got.ErrorCode, len(got.ApiKeys), len(want.ApiKeys))
		}
		found := false
		for i, k := range got.ApiKeys {
			w := want.ApiKeys[i]
			if k.ApiKey == apiKeySASLHandshake {
				found = true
				if w.MinVersion != 1 || k.MinVersion != 0 || k.MaxVersion != w.MaxVersion {
					t.Fatalf("v%d: SaslHandshake %d..%d (plain %d..%d), want 0..%d", v, k.MinVersion, k.MaxVersion, w.MinVersion, w.MaxVersion, w.MaxVersion)
				}
				continue
			}
			if !reflect.DeepEqual(k, w) {
				t.Fatalf("v%d: key %d changed: %+v vs %+v", v, k.ApiKey, k, w)
			}
		}
		if !found {
			t.Fatalf("v%d: no SaslHandshake listed", v)
		}
		if got.Version >= 3 && len(got.SupportedFeatures) != len(want.SupportedFeatures) {
			t.Fatalf("v%d: features changed", v)
		}
	}
}

// TestFrameReader: request headers are found however the stream is cut,
// and frames too short for a header are skipped.
func TestFrameReader(t *testing.T) {
	var stream []byte
	frame := func(key, version int16, corr int32, extra int) {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+extra))
		b = binary.BigEndian.AppendUint16(b, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		stream = append(append(stream, b...), make([]byte, extra)...)
	}
	frame(18, 3, 1, 20)
	stream = append(stream, 0, 0, 0, 2, 9, 9) // a 2-byte frame
	frame(3, 12, 2, 0)
	frame(18, 0, -5, 3)
	want := [][3]int64{{18, 3, 1}, {3, 12, 2}, {18, 0, -5}}
	for cut := 1; cut <= len(stream); cut++ {
		var r frameReader
		var got [][3]int64
		for lo := 0; lo < len(stream); lo += cut {
			r.feed(stream[lo:min(lo+cut, len(stream))], &frameHooks{header: func(k, v int16, c int32) { got = append(got, [3]int64{int64(k), int64(v), int64(c)}) }})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pieces of %d bytes: %v, want %v", cut, got, want)
		}
	}
}

// FuzzSASLCompat: any request stream is followed and any response body
// patched without a panic; a patch changes at most SaslHandshake's minimum
// version (two bytes, to zero), never the length, and a second patch
// changes nothing.
func FuzzSASLCompat(f *testing.F) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	for _, k := range []int16{0, 17, 18, 36} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: 1, MaxVersion: 3})
	}
	f.Add(resp.AppendTo(nil), int16(3))
	resp.Version = 1
	f.Add(resp.AppendTo(nil), int16(1))
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 17}, int16(0))
	f.Fuzz(func(t *testing.T, body []byte, version int16) {
		var r frameReader
		_ = r.feed(body, &frameHooks{header: func(int16, int16, int32) {}})
		p := bytes.Clone(body)
		patchApiVersions(p, version)
		diff := 0
		for i := range p {
			if p[i] != body[i] {
				diff++
				if p[i] != 0 {
					t.Fatalf("byte %d patched to %d", i, p[i])
				}
			}
		}
		if diff > 1 { // 0x0001 → 0x0000 flips one byte
			t.Fatalf("%d bytes changed", diff)
		}
		q := bytes.Clone(p)
		patchApiVersions(q, version)
		if diff == 1 && !bytes.Equal(p, q) {
			t.Fatal("a second patch changed the body again")
		}
	})
}

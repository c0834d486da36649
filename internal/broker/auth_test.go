package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// writeSelfSigned writes a self-signed server certificate for 127.0.0.1
// and its key as PEM files.
func writeSelfSigned(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "forestd test broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "pem"), filepath.Join(dir, "broker-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestParseSASLUser(t *testing.T) {
	good := map[string][2]string{
		"alice:SCRAM-SHA-512": {"alice", "SCRAM-SHA-512"},
		"bob:plain":           {"bob", "PLAIN"},
		"c d:scram-sha-256":   {"c d", "SCRAM-SHA-256"},
	}
	for in, want := range good {
		n, m, err := parseSASLUser(in)
		if err != nil || n != want[0] || m != want[1] {
			t.Errorf("%q: %q %q %v", in, n, m, err)
		}
	}
	for _, bad := range []string{"", "alice", ":PLAIN", "alice:", "alice:GSSAPI", "a:b:PLAIN", " alice:PLAIN", "al\nice:PLAIN"} {
		if _, _, err := parseSASLUser(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParsePasswordFile(t *testing.T) {
	m, err := ParsePasswordFile(strings.NewReader("# users\nalice:s3cr:et\r\n\n  \nbob:pw\n"))
	if err != nil || !reflect.DeepEqual(m, map[string]string{"alice": "s3cr:et", "bob": "pw"}) {
		t.Fatalf("%v %v", m, err)
	}
	bad := map[string]string{
		"alice\n":                  "line 1 is not NAME:PASSWORD",
		"alice:\n":                 "line 1: empty name or password",
		"# x\n:pw\n":               "line 2: empty name or password",
		"a:1\nb:2\na:3\n":          `line 3: user "a" twice`,
		strings.Repeat("x", 2<<20): "larger than",
	}
	for in, want := range bad {
		_, err := ParsePasswordFile(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%.20q: the error shows a password: %v", in, err)
		}
	}
}

// TestBrokerAuthResolve: certificate, key and passwords are read from
// files or the environment; what is missing is an error naming it; the
// client settings trust the broker's certificate and use the first user.
func TestBrokerAuthResolve(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("alice:a-pw\nbob:b-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == PasswordEnv {
				return v
			}
			return ""
		}
	}
	a := Auth{TLSCert: cert, TLSKey: key, SASLUsers: []string{"alice:SCRAM-SHA-512", "bob:plain"}, SASLPasswordFile: pwFile}
	tc, users, err := a.Resolve(env("ignored"))
	if err != nil {
		t.Fatal(err)
	}
	want := []User{{Mechanism: "SCRAM-SHA-512", Name: "alice", Password: "a-pw"}, {Mechanism: "PLAIN", Name: "bob", Password: "b-pw"}}
	if tc == nil || len(tc.Certificates) != 1 || !reflect.DeepEqual(users, want) {
		t.Fatalf("tls %v, users %+v", tc, users)
	}
	// without a file, the environment's password is every user's
	a.SASLPasswordFile = ""
	if _, users, err = a.Resolve(env("env-pw")); err != nil || users[0].Password != "env-pw" || users[1].Password != "env-pw" {
		t.Fatalf("env password: %+v %v", users, err)
	}
	errs := map[string]Auth{
		"has no password: give a password file or set $FORESTD_SASL_PASSWORD": {SASLUsers: []string{"alice:PLAIN"}},
		`"carol" has no password in`:                                          {SASLUsers: []string{"carol:PLAIN"}, SASLPasswordFile: pwFile},
		"SASL password file":                                                  {SASLUsers: []string{"alice:PLAIN"}, SASLPasswordFile: filepath.Join(dir, "none")},
		"TLS certificate":                                                     {TLSCert: key, TLSKey: key},
		"must be given together":                                              {TLSCert: cert},
		`user "alice" twice`:                                                  {SASLUsers: []string{"alice:PLAIN", "alice:SCRAM-SHA-256"}},
		"sasl_password_file without":                                          {SASLPasswordFile: pwFile},
		`mechanism "OAUTH" is not PLAIN`:                                      {SASLUsers: []string{"alice:oauth"}},
	}
	for want, a := range errs {
		_, _, err := a.Resolve(env(""))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", a, err, want)
		}
	}
}

// FuzzPasswordFile: any file is parsed without a panic; what parses has
// non-empty names without a colon and non-empty passwords, and survives
// being written back.
func FuzzPasswordFile(f *testing.F) {
	f.Add([]byte("alice:pw\n# c\nbob:x:y\r\n"))
	f.Add([]byte(":\n"))
	f.Add([]byte("a:1\na:2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParsePasswordFile(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		names := make([]string, 0, len(m))
		for n, pw := range m {
			if n == "" || pw == "" || strings.Contains(n, ":") {
				t.Fatalf("entry %q:%q", n, pw)
			}
			names = append(names, n)
		}
		sort.Strings(names)
		var sb strings.Builder
		for _, n := range names {
			if strings.ContainsAny(n+m[n], "\n") || n[0] == '#' || strings.HasSuffix(m[n], "\r") {
				return // not representable line by line
			}
			sb.WriteString(n + ":" + m[n] + "\n")
		}
		m2, err := ParsePasswordFile(strings.NewReader(sb.String()))
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("written back: %v %v vs %v", err, m2, m)
		}
	})
}

// FuzzSASLUser: any user spec is parsed without a panic; what parses has a
// known mechanism and a name that parses back to itself.
func FuzzSASLUser(f *testing.F) {
	f.Add("alice:SCRAM-SHA-512")
	f.Add("a:b:PLAIN")
	f.Add(":")
	f.Fuzz(func(t *testing.T, s string) {
		n, m, err := parseSASLUser(s)
		if err != nil {
			return
		}
		switch m {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			t.Fatalf("mechanism %q", m)
		}
		n2, m2, err := parseSASLUser(n + ":" + m)
		if err != nil || n2 != n || m2 != m || n == "" || strings.Contains(n, ":") {
			t.Fatalf("%q → %q %q → %q %q %v", s, n, m, n2, m2, err)
		}
	})
}

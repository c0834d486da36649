package kafka

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forestd/forestd/internal/broker"
)

// TestCheckAuth: against a broker that requires TLS and SASL, the right
// credentials pass; a wrong password (for each mechanism), an unknown user
// and an untrusted certificate are ErrAuth with a message naming the cause;
// a broker that is down is not ErrAuth (worth retrying).
func TestCheckAuth(t *testing.T) {
	tc, caFile := selfSignedTLS(t)
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			_, co := startBroker(t, broker.Options{TLS: tc, Users: []broker.User{{Mechanism: mech, Name: "alice", Password: "s3cret"}}})
			co.TLS = TLSOptions{Enabled: true, CAFile: caFile}
			co.SASL = SASLOptions{Mechanism: mech, Username: "alice", Password: "s3cret"}
			if err := CheckAuth(testCtx(t, 10*time.Second), co); err != nil {
				t.Fatalf("right credentials: %v", err)
			}
			for _, bad := range []SASLOptions{
				{Mechanism: mech, Username: "alice", Password: "wrong"},
				{Mechanism: mech, Username: "mallory", Password: "s3cret"},
			} {
				o := co
				o.SASL = bad
				err := CheckAuth(testCtx(t, 10*time.Second), o)
				if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "refused SASL "+mech+" authentication as \""+bad.Username+"\"") {
					t.Fatalf("%s/%s: %v, want ErrAuth naming the SASL refusal", bad.Username, bad.Password, err)
				}
			}
			o := co
			o.TLS = TLSOptions{Enabled: true} // the system roots do not hold the test CA
			if err := CheckAuth(testCtx(t, 10*time.Second), o); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("untrusted certificate: %v", err)
			}
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	co := ClientOptions{Brokers: []string{down}, SASL: SASLOptions{Mechanism: SASLScramSHA512, Username: "alice", Password: "x"}}
	if err := CheckAuth(testCtx(t, 10*time.Second), co); err == nil || errors.Is(err, ErrAuth) {
		t.Fatalf("broker down: %v, want a retryable error", err)
	}
}

package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
)

// ErrAuth marks a connection that the brokers refuse for its credentials
// or certificates: SASL authentication that fails (wrong user or password,
// a mechanism the broker does not enable) or a broker certificate that does
// not verify. Retrying with the same settings cannot help.
var ErrAuth = errors.New("kafka: authentication failed")

// CheckAuth connects to the brokers in turn with the options' TLS and SASL
// settings until one lets the client in. It returns nil then; an ErrAuth
// error when a broker refused the certificate check or the SASL exchange;
// otherwise the last connection error (a broker down: worth retrying).
//
// A broker may answer failed SASL authentication with an error code
// (SASL_AUTHENTICATION_FAILED) or simply close the connection (as the
// embedded broker does); both count as ErrAuth once the SASL exchange has
// begun, that is, after the TCP and TLS handshakes and the mechanism
// handshake succeeded, so a refused password is told apart from a broker
// that is down.
func CheckAuth(ctx context.Context, co ClientOptions) error {
	c, err := co.build()
	if err != nil {
		return err
	}
	var last error
	for _, addr := range c.brokers {
		d := *c.dialer
		rec := &recordingMechanism{Mechanism: d.SASLMechanism}
		if d.SASLMechanism != nil {
			d.SASLMechanism = rec
		}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("kafka: connecting to %s: %w", addr, err)
		}
		if certificateError(err) {
			return fmt.Errorf("%w: the TLS certificate of broker %s does not verify (set the CA file or server name): %w", ErrAuth, addr, err)
		}
		if rec.started.Load() || errors.Is(err, kafkago.SASLAuthenticationFailed) ||
			errors.Is(err, kafkago.UnsupportedSASLMechanism) || errors.Is(err, kafkago.IllegalSASLState) {
			return fmt.Errorf("%w: broker %s refused SASL %s authentication as %q (wrong username or password, or a mechanism the broker does not enable): %w",
				ErrAuth, addr, co.SASL.Mechanism, co.SASL.Username, err)
		}
		last = fmt.Errorf("kafka: connecting to %s: %w", addr, err)
	}
	return last
}

// certificateError reports a TLS certificate that failed verification.
func certificateError(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		inv x509.CertificateInvalidError
	)
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &inv)
}

// recordingMechanism notes that the SASL exchange began (Start is called
// after the mechanism handshake succeeded).
type recordingMechanism struct {
	sasl.Mechanism
	started atomic.Bool
}

func (r *recordingMechanism) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	r.started.Store(true)
	return r.Mechanism.Start(ctx)
}

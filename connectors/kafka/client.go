package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// TLSOptions configure TLS to the brokers.
type TLSOptions struct {
	Enabled bool
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates
	// (empty: the system roots).
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key (mutual TLS).
	CertFile, KeyFile string
	// ServerName overrides the name checked in the broker's certificate.
	ServerName string
	// InsecureSkipVerify disables certificate checks (testing only).
	InsecureSkipVerify bool
	// Config, when set, is used as is (programmatic configuration) and the
	// file fields are ignored.
	Config *tls.Config
}

// SASLOptions configure SASL authentication.
type SASLOptions struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty disables SASL.
	Mechanism string
	Username  string
	Password  string
}

// ClientOptions say how to reach the brokers.
type ClientOptions struct {
	// Brokers are bootstrap host:port addresses.
	Brokers  []string
	ClientID string
	TLS      TLSOptions
	SASL     SASLOptions
	// DialTimeout bounds connecting, including the TLS and SASL handshakes
	// (default 10 s).
	DialTimeout time.Duration
}

// Validate checks the options without touching the network or files.
func (o *ClientOptions) Validate() error {
	if len(o.Brokers) == 0 {
		return errors.New("kafka: no brokers")
	}
	for _, b := range o.Brokers {
		host, port, err := net.SplitHostPort(b)
		if err != nil || host == "" {
			return fmt.Errorf("kafka: broker address %q is not host:port", b)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("kafka: broker address %q: bad port", b)
		}
	}
	if o.ClientID == "" {
		o.ClientID = "forestd"
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.DialTimeout < 0 {
		return errors.New("kafka: negative dial timeout")
	}
	switch strings.ToUpper(o.SASL.Mechanism) {
	case "":
		if o.SASL.Username != "" || o.SASL.Password != "" {
			return errors.New("kafka: SASL username or password given without a mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		o.SASL.Mechanism = strings.ToUpper(o.SASL.Mechanism)
		if o.SASL.Username == "" {
			return fmt.Errorf("kafka: SASL %s needs a username", o.SASL.Mechanism)
		}
	default:
		return fmt.Errorf("kafka: SASL mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", o.SASL.Mechanism)
	}
	if (o.TLS.CertFile == "") != (o.TLS.KeyFile == "") {
		return errors.New("kafka: TLS client certificate and key must be given together")
	}
	if !o.TLS.Enabled && (o.TLS.CAFile != "" || o.TLS.CertFile != "" || o.TLS.InsecureSkipVerify || o.TLS.Config != nil) {
		o.TLS.Enabled = true
	}
	return nil
}

func (o *ClientOptions) tlsConfig() (*tls.Config, error) {
	if !o.TLS.Enabled {
		return nil, nil
	}
	if o.TLS.Config != nil {
		return o.TLS.Config, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLS.ServerName, InsecureSkipVerify: o.TLS.InsecureSkipVerify} //nolint:gosec // opt-in, for tests
	if o.TLS.CAFile != "" {
		pem, err := os.ReadFile(o.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: TLS CA file %s holds no PEM certificate", o.TLS.CAFile)
		}
		c.RootCAs = pool
	}
	if o.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLS.CertFile, o.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: TLS client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func (o *ClientOptions) mechanism() (sasl.Mechanism, error) {
	switch o.SASL.Mechanism {
	case "":
		return nil, nil
	case SASLPlain:
		return plain.Mechanism{Username: o.SASL.Username, Password: o.SASL.Password}, nil
	case SASLScramSHA256:
		return scram.Mechanism(scram.SHA256, o.SASL.Username, o.SASL.Password)
	case SASLScramSHA512:
		return scram.Mechanism(scram.SHA512, o.SASL.Username, o.SASL.Password)
	}
	return nil, fmt.Errorf("kafka: SASL mechanism %q", o.SASL.Mechanism)
}

// client is the resolved connection configuration shared by readers,
// writers and the admin client.
type client struct {
	brokers   []string
	dialer    *kafkago.Dialer
	transport *kafkago.Transport
}

// close closes the transport's connection pools: kafka-go keeps a
// metadata goroutine and the connections of every pool a Transport opened
// until CloseIdleConnections, so a client not closed leaks them for the
// life of the process.
func (c *client) close() { c.transport.CloseIdleConnections() }

func (o ClientOptions) build() (*client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	mech, err := o.mechanism()
	if err != nil {
		return nil, err
	}
	return &client{
		brokers: o.Brokers,
		dialer: &kafkago.Dialer{ClientID: o.ClientID, Timeout: o.DialTimeout, DualStack: true,
			TLS: tc, SASLMechanism: mech},
		transport: &kafkago.Transport{ClientID: o.ClientID, DialTimeout: o.DialTimeout, TLS: tc, SASL: mech,
			MetadataTTL: 2 * time.Second},
	}, nil
}

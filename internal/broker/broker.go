// Package broker is forestd's embedded Kafka-protocol broker (ARCHITECTURE.md, The daemon's promises:
// "with no brokers configured, forestd serve starts an embedded
// Kafka-protocol broker on loopback"). It wraps franz-go's kfake, a
// single-process broker that speaks the Kafka wire protocol (produce, fetch,
// classic consumer groups, offset commits, compaction), persists its logs and
// group offsets under a data directory, and can require TLS and SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512). The package owns only the broker's
// lifecycle and options; it contains no model maths and no pipeline logic.
//
// The broker binds to loopback unless told otherwise, so `forestd serve`
// with no --brokers never exposes a port beyond the machine.
//
// With SASL users, the broker's connections pass through a small shim
// (saslcompat.go) that lists SaslHandshake from version 0 in ApiVersions
// responses, without which librdkafka clients such as kcat refuse to
// authenticate against kfake.
//
// Consumer-group members that die during a rebalance are expired at their
// session timeout by a watch beside kfake (sessions.go), which on its own
// never expires a member whose JoinGroup or SyncGroup reply went into a
// closed connection.
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"golang.org/x/sync/semaphore"
)

// DefaultListen is where the embedded broker listens when no address is given.
const DefaultListen = "127.0.0.1:9092"

// DefaultMaxMessageBytes is the largest record batch the broker accepts,
// Kafka's own default (message.max.bytes = 1048588).
const DefaultMaxMessageBytes = 1048588

// SASL mechanisms a User may use.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// User is a SASL user; with SASL enabled every user is a superuser (the
// broker does not check ACLs).
type User struct {
	Mechanism string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Name      string
	Password  string
}

// Topic is a topic created when the broker starts (if it does not exist yet
// in the data directory).
type Topic struct {
	Name       string
	Partitions int32
	// Configs are Kafka topic configs, e.g. cleanup.policy=compact.
	Configs map[string]string
}

// Options configure the broker. The zero value listens on DefaultListen,
// keeps everything in memory, and accepts plaintext connections.
type Options struct {
	// Listen is host:port. The host must be an IP literal or "localhost";
	// port 0 picks a free port (see Broker.Addr). Empty means DefaultListen.
	Listen string
	// DataDir persists topics, logs and committed group offsets; a broker
	// started again on the same directory resumes where the last one stopped,
	// even after kill -9 (writes go through the OS page cache; SyncWrites
	// makes every produce durable against power loss too). Empty means memory
	// only.
	DataDir    string
	SyncWrites bool
	// Partitions is the partition count of topics created without one
	// (auto-created topics and Topics with Partitions 0). 0 means 4.
	Partitions int
	// Topics are created at start-up when they do not exist.
	Topics []Topic
	// MaxMessageBytes bounds one produced record batch; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// TLS, when set, makes the listener require TLS with this config (it
	// must hold a certificate).
	TLS *tls.Config
	// Users, when non-empty, enables SASL: clients must authenticate as one
	// of them.
	Users []User
	// MinSessionTimeout is the shortest consumer-group session timeout the
	// broker allows; 0 means 1 s (Kafka's default is 6 s; a lower floor lets
	// tests and the demo detect a dead member quickly).
	MinSessionTimeout time.Duration
	// AutoCreateTopics lets a producer or consumer create a topic by naming
	// it, as Kafka's auto.create.topics.enable does.
	AutoCreateTopics bool
	// Logger receives the broker's warnings and errors; nil discards them.
	Logger *slog.Logger

	// The limits below protect the broker from hostile or broken clients
	// (limits.go; each mirrors a Kafka broker setting). 0 means the default.

	// MaxRequestBytes bounds one request's declared size, checked before
	// the broker reads the body (Kafka's socket.request.max.bytes); a
	// larger or negative size closes the connection. Default
	// DefaultMaxRequestBytes; at least MaxMessageBytes.
	MaxRequestBytes int
	// MaxInflightRequestBytes bounds the declared sizes of the requests
	// being received at once over all connections (Kafka's
	// queued.max.request.bytes); a request that does not fit waits.
	// Default the larger of DefaultMaxInflightRequestBytes and
	// MaxRequestBytes; at least MaxRequestBytes.
	MaxInflightRequestBytes int64
	// MaxUnauthenticatedRequestBytes bounds requests before SASL
	// authentication completes (Kafka's sasl.server.max.receive.size).
	// Default DefaultMaxUnauthenticatedRequestBytes.
	MaxUnauthenticatedRequestBytes int
	// MaxConnections caps concurrent client connections (Kafka's
	// max.connections); one beyond it is closed at once. Default
	// DefaultMaxConnections.
	MaxConnections int
	// RequestReadTimeout is how long a request's body may take to arrive
	// after its size; AuthTimeout how long a connection may take to
	// authenticate when SASL is on; HandshakeTimeout how long a new
	// connection may take to finish its TLS handshake (if any) and send
	// its first complete request; IdleTimeout how long a connection may
	// go without a request or a response (Kafka's
	// connections.max.idle.ms). A connection past one is closed. Defaults
	// DefaultRequestReadTimeout, DefaultAuthTimeout,
	// DefaultHandshakeTimeout and DefaultIdleTimeout.
	RequestReadTimeout time.Duration
	AuthTimeout        time.Duration
	HandshakeTimeout   time.Duration
	IdleTimeout        time.Duration
}

// Broker is a running embedded broker.
type Broker struct {
	c         *kfake.Cluster
	addr      string
	sessions  *sessionWatch
	limits    *limits
	closeOnce sync.Once
}

func (o *Options) resolve() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return fmt.Errorf("broker: listen address %q: %w", o.Listen, err)
	}
	if host != "localhost" && net.ParseIP(host) == nil {
		return fmt.Errorf("broker: listen address %q: host must be an IP address or localhost", o.Listen)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("broker: listen address %q: port must be 0..65535", o.Listen)
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.Partitions < 0 {
		return fmt.Errorf("broker: partitions %d must be positive", o.Partitions)
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxMessageBytes < 1024 {
		return fmt.Errorf("broker: max message bytes %d is below 1024", o.MaxMessageBytes)
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = max(DefaultMaxRequestBytes, o.MaxMessageBytes)
	}
	if o.MaxRequestBytes < o.MaxMessageBytes || o.MaxRequestBytes > 1<<31-1 {
		return fmt.Errorf("broker: max request bytes %d: must be between max message bytes (%d) and 2147483647", o.MaxRequestBytes, o.MaxMessageBytes)
	}
	if o.MaxInflightRequestBytes == 0 {
		o.MaxInflightRequestBytes = max(DefaultMaxInflightRequestBytes, int64(o.MaxRequestBytes))
	}
	if o.MaxInflightRequestBytes < int64(o.MaxRequestBytes) {
		return fmt.Errorf("broker: max in-flight request bytes %d is below max request bytes %d", o.MaxInflightRequestBytes, o.MaxRequestBytes)
	}
	if o.MaxUnauthenticatedRequestBytes == 0 {
		o.MaxUnauthenticatedRequestBytes = DefaultMaxUnauthenticatedRequestBytes
	}
	if o.MaxUnauthenticatedRequestBytes < 1024 || o.MaxUnauthenticatedRequestBytes > o.MaxRequestBytes {
		return fmt.Errorf("broker: max unauthenticated request bytes %d: must be between 1024 and max request bytes (%d)", o.MaxUnauthenticatedRequestBytes, o.MaxRequestBytes)
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnections < 0 {
		return fmt.Errorf("broker: max connections %d is negative", o.MaxConnections)
	}
	if o.RequestReadTimeout == 0 {
		o.RequestReadTimeout = DefaultRequestReadTimeout
	}
	if o.AuthTimeout == 0 {
		o.AuthTimeout = DefaultAuthTimeout
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.RequestReadTimeout < 0 || o.AuthTimeout < 0 || o.HandshakeTimeout < 0 || o.IdleTimeout < 0 {
		return fmt.Errorf("broker: negative request read timeout (%v), auth timeout (%v), handshake timeout (%v) or idle timeout (%v)",
			o.RequestReadTimeout, o.AuthTimeout, o.HandshakeTimeout, o.IdleTimeout)
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = time.Second
	}
	if o.MinSessionTimeout < 0 {
		return errors.New("broker: negative minimum session timeout")
	}
	for _, u := range o.Users {
		switch u.Mechanism {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return fmt.Errorf("broker: SASL user %q: mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", u.Name, u.Mechanism)
		}
		if u.Name == "" || u.Password == "" {
			return errors.New("broker: a SASL user needs a name and a password")
		}
	}
	if o.TLS != nil && len(o.TLS.Certificates) == 0 && o.TLS.GetCertificate == nil {
		return errors.New("broker: TLS config has no certificate")
	}
	for _, t := range o.Topics {
		if t.Name == "" || t.Partitions < 0 {
			return fmt.Errorf("broker: topic %q with %d partitions", t.Name, t.Partitions)
		}
	}
	return nil
}

// Start starts a broker. It returns once the broker accepts connections.
func Start(opts Options) (*Broker, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	host, portS, _ := net.SplitHostPort(opts.Listen)
	port, _ := strconv.Atoi(portS)
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("broker: data directory: %w", err)
		}
	}
	lim := &limits{maxRequest: int64(opts.MaxRequestBytes), maxUnauth: int64(opts.MaxUnauthenticatedRequestBytes),
		maxConns: int64(opts.MaxConnections), readTimeout: opts.RequestReadTimeout,
		handshakeTimeout: opts.HandshakeTimeout, idleTimeout: opts.IdleTimeout,
		budget: semaphore.NewWeighted(opts.MaxInflightRequestBytes), log: opts.Logger}
	if len(opts.Users) > 0 {
		lim.authTimeout = opts.AuthTimeout
	} else {
		lim.maxUnauth = lim.maxRequest
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ClusterID("forestd-embedded"),
		kfake.DefaultNumPartitions(opts.Partitions),
		kfake.GroupMinSessionTimeout(opts.MinSessionTimeout),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(opts.MaxMessageBytes)}),
		// kfake binds 127.0.0.1; bind the host the user asked for instead.
		// TLS is done here, under the limits (limits.go) and the librdkafka
		// shim (saslcompat.go), which must see the plaintext.
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen(network, net.JoinHostPort(host, p))
			if err != nil {
				return nil, err
			}
			if opts.TLS != nil {
				ln = tls.NewListener(ln, opts.TLS)
			}
			ln = limitListener{ln, lim}
			if len(opts.Users) > 0 {
				ln = saslCompatListener{ln}
			}
			return ln, nil
		}),
		kfake.WithLogger(slogLogger{opts.Logger}),
	}
	if opts.DataDir != "" {
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
		if opts.SyncWrites {
			kopts = append(kopts, kfake.SyncWrites())
		}
	}
	if opts.AutoCreateTopics {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if len(opts.Users) > 0 {
		kopts = append(kopts, kfake.EnableSASL())
		for _, u := range opts.Users {
			kopts = append(kopts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
		}
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("broker: starting on %s: %w", opts.Listen, err)
	}
	b := &Broker{c: c, addr: c.ListenAddrs()[0], limits: lim}
	if b.sessions, err = newSessionWatch(c, b.addr, opts.TLS, opts.Users, opts.Logger); err != nil {
		c.Close()
		return nil, err
	}
	for _, t := range opts.Topics {
		if err := b.CreateTopic(t); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// CreateTopic creates t unless a topic of that name exists.
func (b *Broker) CreateTopic(t Topic) error {
	if b.c.TopicInfo(t.Name) != nil {
		return nil
	}
	p := t.Partitions
	if p == 0 {
		p = -1 // the default partition count
	}
	if err := b.c.CreateTopic(t.Name, p, t.Configs); err != nil {
		if b.c.TopicInfo(t.Name) != nil {
			return nil
		}
		return fmt.Errorf("broker: creating topic %s: %w", t.Name, err)
	}
	return nil
}

// Addr is the host:port the broker listens on (with a port 0 request, the
// port it picked).
func (b *Broker) Addr() string { return b.addr }

// Cluster exposes the underlying kfake cluster for tests (fault injection,
// group inspection).
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Close stops the broker, flushing persisted state to the data directory.
// Later calls do nothing (a deferred Close beside an explicit one is safe).
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		if b.sessions != nil {
			b.sessions.close()
		}
		b.c.Close()
	})
}

// ExpiredMembers is the number of consumer-group members the broker
// expired because their session lapsed without the broker's own timer
// firing (see sessions.go).
func (b *Broker) ExpiredMembers() int64 { return b.sessions.expired.Load() }

// LimitStats counts what the broker's connection and request limits
// refused (limits.go).
func (b *Broker) LimitStats() LimitStats { return b.limits.stats() }

// WaitGroup waits until the consumer group is stable with n members (n < 0:
// any number) and returns the partitions assigned to each member.
func (b *Broker) WaitGroup(ctx context.Context, group string, n int) (map[string]map[string][]int32, error) {
	gi, err := b.c.WaitGroupStable(ctx, group, n)
	if err != nil {
		return nil, fmt.Errorf("broker: waiting for group %s: %w", group, err)
	}
	out := map[string]map[string][]int32{}
	for _, m := range gi.Members {
		out[m.MemberID] = m.Assignment
	}
	return out, nil
}

// slogLogger adapts kfake's logger to slog; kfake's info and debug levels
// log every request, so only warnings and errors pass.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	if s.l == nil || (level != kfake.LogLevelError && level != kfake.LogLevelWarn) {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if level == kfake.LogLevelError {
		s.l.Error(msg, "component", "broker")
		return
	}
	s.l.Warn(msg, "component", "broker")
}

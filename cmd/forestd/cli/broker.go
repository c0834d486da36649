package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/internal/broker"
)

func runBroker(args []string, env Env) error {
	fs := newFlagSet("broker", brokerUsage, env)
	listen := fs.String("listen", broker.DefaultListen, "address to listen on (port 0: a free port, printed in the log)")
	dataDir := fs.String("data-dir", "", "directory to persist topics, logs and committed offsets in (empty: memory only)")
	partitions := fs.Int("partitions", 4, "partitions of auto-created topics")
	maxMsg := fs.Int("max-message-bytes", broker.DefaultMaxMessageBytes, "largest record batch accepted")
	maxReq := fs.Int("max-request-bytes", broker.DefaultMaxRequestBytes, "largest request a client may send; a larger declared size closes the connection before it is read (Kafka's socket.request.max.bytes)")
	maxConns := fs.Int("max-connections", broker.DefaultMaxConnections, "concurrent client connections; more are closed at once")
	syncWrites := fs.Bool("sync-writes", false, "fsync every produced batch (survives power loss, slower)")
	maxRuntime := fs.Duration("max-runtime", 0, "stop after this long (0: run until a signal)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	var auth broker.Auth
	var users listFlag
	fs.StringVar(&auth.TLSCert, "tls-cert", "", "PEM certificate (chain): accept TLS connections only (with --tls-key)")
	fs.StringVar(&auth.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.Var(&users, "sasl-user", "NAME:MECHANISM with MECHANISM PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512: require SASL authentication as one of these users (repeatable)")
	fs.StringVar(&auth.SASLPasswordFile, "sasl-password-file", "", "file of NAME:PASSWORD lines, one per --sasl-user (default: every user's password is $FORESTD_SASL_PASSWORD)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	lc := daemon.LogConfig{Level: *logLevel, Format: *logFormat}
	c := daemon.DefaultConfig()
	c.Log = lc
	c.Brokers = []string{"127.0.0.1:1"} // skip the embedded checks; only log settings are validated here
	if err := c.Validate(); err != nil {
		return usageError{err}
	}
	if err := daemon.CheckAddr("--listen", *listen); err != nil {
		return usageError{err}
	}
	if *maxReq < *maxMsg || *maxReq > 1<<31-1 {
		return usagef("--max-request-bytes %d: must be between --max-message-bytes (%d) and 2147483647", *maxReq, *maxMsg)
	}
	if *maxConns < 1 {
		return usagef("--max-connections %d: must be at least 1", *maxConns)
	}
	auth.SASLUsers = users.vals
	if err := auth.Validate(broker.AuthNames{Cert: "--tls-cert", Key: "--tls-key", Users: "--sasl-user", Passwords: "--sasl-password-file"}); err != nil {
		return usageError{err}
	}
	tc, sasl, err := auth.Resolve(os.Getenv)
	if err != nil {
		return err
	}
	log := lc.Logger(env.Stderr)
	b, err := broker.Start(broker.Options{Listen: *listen, DataDir: *dataDir, Partitions: *partitions,
		MaxMessageBytes: *maxMsg, SyncWrites: *syncWrites, AutoCreateTopics: true, Logger: log, TLS: tc, Users: sasl,
		MaxRequestBytes: *maxReq, MaxConnections: *maxConns})
	if err != nil {
		return err
	}
	names := make([]string, len(sasl))
	for i, u := range sasl {
		names[i] = u.Name + ":" + u.Mechanism
	}
	log.Info("broker listening", "addr", b.Addr(), "data_dir", *dataDir, "tls", tc != nil, "sasl_users", strings.Join(names, ","))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *maxRuntime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *maxRuntime)
		defer cancel()
	}
	<-ctx.Done()
	t0 := time.Now()
	b.Close()
	log.Info("broker stopped", "flush_seconds", time.Since(t0).Seconds())
	return nil
}

const brokerUsage = `[--listen HOST:PORT] [--data-dir DIR] [--tls-cert FILE --tls-key FILE] [--sasl-user NAME:MECHANISM ...]

Runs forestd's embedded Kafka-protocol broker alone (the one ` + "`forestd serve`" + `
starts when it has no --brokers), so that the broker and the daemon can be
restarted independently. It stops on SIGTERM or SIGINT, flushing its data.

TLS: --tls-cert and --tls-key (PEM) make the listener accept TLS only.
SASL: each --sasl-user NAME:MECHANISM (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)
defines a user; with any, clients must authenticate as one of them. Passwords
never go on the command line: --sasl-password-file FILE holds NAME:PASSWORD
lines ('#' comments), or, without it, $FORESTD_SASL_PASSWORD is the password
of every user. A client connects with e.g. kcat -X security.protocol=SASL_SSL
-X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=NAME -X sasl.password=...
-X ssl.ca.location=CERT, or forestd serve --brokers ADDR with kafka.tls and
kafka.sasl in its config.`

package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/forestd/forestd/connectors/broker"
)

func runBroker(args []string, env Env) error {
	fs := newFlagSet("broker", "[--listen HOST:PORT] [--data-dir DIR]\n\nRuns forestd's embedded Kafka-protocol broker alone (the one `forestd serve`\nstarts when it has no --brokers), so that the broker and the daemon can be\nrestarted independently. It stops on SIGTERM or SIGINT, flushing its data.", env)
	listen := fs.String("listen", broker.DefaultListen, "address to listen on (port 0: a free port, printed in the log)")
	dataDir := fs.String("data-dir", "", "directory to persist topics, logs and committed offsets in (empty: memory only)")
	partitions := fs.Int("partitions", 4, "partitions of auto-created topics")
	maxMsg := fs.Int("max-message-bytes", broker.DefaultMaxMessageBytes, "largest record batch accepted")
	syncWrites := fs.Bool("sync-writes", false, "fsync every produced batch (survives power loss, slower)")
	maxRuntime := fs.Duration("max-runtime", 0, "stop after this long (0: run until a signal)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	lc := logConfig{Level: *logLevel, Format: *logFormat}
	c := defaultServeConfig()
	c.Log = lc
	c.Brokers = []string{"127.0.0.1:1"} // skip the embedded checks; only log settings are validated here
	if err := c.validate(); err != nil {
		return usageError{err}
	}
	if err := checkAddr("--listen", *listen); err != nil {
		return usageError{err}
	}
	log := newLogger(lc, env.Stderr)
	b, err := broker.Start(broker.Options{Listen: *listen, DataDir: *dataDir, Partitions: *partitions,
		MaxMessageBytes: *maxMsg, SyncWrites: *syncWrites, AutoCreateTopics: true, Logger: log})
	if err != nil {
		return err
	}
	log.Info("broker listening", "addr", b.Addr(), "data_dir", *dataDir)
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

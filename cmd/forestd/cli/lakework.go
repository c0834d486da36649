package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// workFlags are score's flags for sharing a lake through Kafka.
type workFlags struct {
	topic      string
	brokers    listFlag
	group      string
	enqueue    bool
	partitions int
	verbose    bool
}

func (w *workFlags) add(fs *flags) {
	w.brokers.split = true
	fs.StringVar(&w.topic, "workers-topic", "", "lake: share the lake's files with other workers through this Kafka topic (one message per file; the group commits a file once its output is in place)")
	fs.Var(&w.brokers, "brokers", "Kafka bootstrap brokers host:port (comma-separated) for --workers-topic")
	fs.StringVar(&w.group, "group", "forestd-lake", "consumer group of the workers sharing --workers-topic")
	fs.BoolVar(&w.enqueue, "enqueue", false, "with --workers-topic: first publish one message per file of the lake, then work like the other workers")
	fs.BoolVar(&w.verbose, "verbose", false, "with --workers-topic: log group membership and commit problems to stderr")
	fs.IntVar(&w.partitions, "topic-partitions", 16, "with --enqueue: partitions of the topic if it has to be created (the most workers that can share it)")
}

// runWorker scores the files the consumer group assigns to this process,
// one at a time, until the whole topic is done (lakescore.RunWorker).
func runWorker(env Env, sl *scoreLakeFlags, m *scoring.Model, paths []string, out string, opts lakescore.Options) (*lakescore.Summary, error) {
	w := &sl.work
	if len(paths) != 1 {
		return nil, usagef("--workers-topic needs exactly one --in: the lake's root directory (job messages name files below it)")
	}
	root := paths[0]
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, usagef("--workers-topic: --in %s must be the lake's root directory", root)
	}
	if len(w.brokers.vals) == 0 {
		return nil, usagef("--workers-topic needs --brokers host:port")
	}
	if sl.dryRun {
		return nil, usagef("--dry-run does not combine with --workers-topic")
	}
	wo := lakescore.WorkerOptions{Client: kafka.ClientOptions{Brokers: w.brokers.vals}, Topic: w.topic, Group: w.group,
		Enqueue: w.enqueue, Partitions: w.partitions}
	if w.verbose {
		wo.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return lakescore.RunWorker(ctx, m, root, out, opts, wo)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/connectors/lakework"
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

// workSummary is the worker part of score's JSON summary.
type workSummary struct {
	Topic    string `json:"topic"`
	Group    string `json:"group"`
	Enqueued int    `json:"enqueued"`
	Jobs     int    `json:"jobs"`
	BadJobs  int    `json:"bad_jobs"`
}

// runWorker scores the files the consumer group assigns to this process,
// one at a time, until the whole topic is done (see connectors/lakework).
func (ls *lakeScorer) runWorker(sl *scoreLakeFlags, paths []string, opts lake.Options, t0 time.Time) error {
	w := &sl.work
	if len(paths) != 1 {
		return usagef("--workers-topic needs exactly one --in: the lake's root directory (job messages name files below it)")
	}
	root := paths[0]
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return usagef("--workers-topic: --in %s must be the lake's root directory", root)
	}
	if len(w.brokers.vals) == 0 {
		return usagef("--workers-topic needs --brokers host:port")
	}
	if sl.dryRun {
		return usagef("--dry-run does not combine with --workers-topic")
	}
	wopts := lakework.Options{Client: kafka.ClientOptions{Brokers: w.brokers.vals}, Topic: w.topic, Group: w.group,
		Partitions: w.partitions}
	if w.verbose {
		wopts.Logger = slog.New(slog.NewTextHandler(ls.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum := scoreSummary{Model: ls.model, ModelID: ls.meta.ID, Out: ls.out, MaxMemory: int64(sl.maxMemory), ChunkRows: ls.chunk,
		Skipped: []lake.Skipped{}, Worker: &workSummary{Topic: w.topic, Group: w.group}}
	if w.enqueue {
		list, err := lake.List([]string{root})
		if err != nil {
			return err
		}
		rels := make([]string, len(list))
		for i, f := range list {
			rels[i] = f.Rel
		}
		if err := lakework.Enqueue(ctx, wopts, rels); err != nil {
			return err
		}
		sum.Worker.Enqueued = len(rels)
	}
	failOpts := opts
	failOpts.OnError = lake.Fail
	handle := func(ctx context.Context, job lakework.Job) error {
		f := lake.File{Path: filepath.Join(root, filepath.FromSlash(job.File)), Root: root, Rel: job.File}
		sum.FilesListed++
		bad := func(err error) error {
			if opts.OnError == lake.Fail {
				return &lake.FileError{File: f.Path, Err: err}
			}
			sum.Skipped = append(sum.Skipped, lake.Skipped{File: f.Path, Reason: err.Error()})
			return fmt.Errorf("%w: %w", lakework.ErrBadJob, err)
		}
		if !lake.IsParquetName(job.File) {
			return bad(errors.New("not a Parquet file name"))
		}
		parts, err := lake.ParsePartitions(job.File)
		if err != nil {
			return bad(err)
		}
		f.Partitions = parts
		if ls.done(lake.OutputPath(ls.out, f)) {
			sum.Resumed++ // delivered again after a crash or a rebalance
			return nil
		}
		l, err := lake.OpenFiles([]lake.File{f}, failOpts)
		if err != nil {
			var fe *lake.FileError
			if errors.As(err, &fe) {
				return bad(errors.New(fe.Reason()))
			}
			return bad(err)
		}
		l.SetOnError(opts.OnError)
		if err := ls.prepare(l); err != nil {
			return bad(err)
		}
		res, err := ls.scoreFiles(ctx, l, []int{0}, false)
		if err != nil {
			return err
		}
		sum.Files += res.files
		sum.Rows += res.rows
		sum.PeakBytes = max(sum.PeakBytes, res.peak)
		sum.Skipped = append(sum.Skipped, l.Skipped()...)
		return nil
	}
	st, err := lakework.Run(ctx, wopts, handle)
	sum.Worker.Jobs, sum.Worker.BadJobs = st.Jobs, st.Bad
	if err != nil {
		return err
	}
	sum.Seconds = time.Since(t0).Seconds()
	sum.RowsPerSec = float64(sum.Rows) / math.Max(sum.Seconds, 1e-9)
	return writeJSON(ls.env.Stdout, sum)
}

package lakescore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/connectors/lake"
	"github.com/forestd/forestd/internal/lakework"
	"github.com/forestd/forestd/scoring"
)

// WorkerOptions share a lake among processes through a Kafka topic (one
// message per file; the group commits a file once its output is in place;
// internal/lakework).
type WorkerOptions struct {
	Client kafka.ClientOptions
	Topic  string
	// Group is the consumer group of the workers (default forestd-lake).
	Group string
	// Enqueue first publishes one message per file of the lake, then
	// works like the other workers.
	Enqueue bool
	// Partitions of the topic if Enqueue has to create it (default 16:
	// the most workers that can share it).
	Partitions int
	// Logger receives group membership and commit problems (nil: none).
	Logger *slog.Logger
}

// WorkerSummary is the worker part of a Summary.
type WorkerSummary struct {
	Topic    string `json:"topic"`
	Group    string `json:"group"`
	Enqueued int    `json:"enqueued"`
	Jobs     int    `json:"jobs"`
	BadJobs  int    `json:"bad_jobs"`
}

// RunWorker scores, one at a time, the files of the lake under root that
// the consumer group assigns to this process, into out, until the whole
// topic is done or ctx ends. A file delivered again after a crash or a
// rebalance whose output is complete counts as resumed.
func RunWorker(ctx context.Context, m *scoring.Model, root, out string, opts Options, w WorkerOptions) (*Summary, error) {
	sum, err := runWorker(ctx, m, root, out, opts, w)
	return sum, dataFault(err)
}

func runWorker(ctx context.Context, m *scoring.Model, root, out string, opts Options, w WorkerOptions) (*Summary, error) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workers: %s must be the lake's root directory", root)
	}
	if err := lake.CheckOutDir(out, []string{root}); err != nil {
		return nil, &OptionError{"Out", err}
	}
	if len(w.Client.Brokers) == 0 {
		return nil, errors.New("workers: no brokers")
	}
	if opts.DryRun {
		return nil, errors.New("workers: a dry run does not combine with a workers topic")
	}
	if w.Group == "" {
		w.Group = "forestd-lake"
	}
	if w.Partitions == 0 {
		w.Partitions = 16
	}
	t0 := time.Now()
	s, err := newScorer(m, out, opts)
	if err != nil {
		return nil, err
	}
	wopts := lakework.Options{Client: w.Client, Topic: w.Topic, Group: w.Group, Partitions: w.Partitions, Logger: w.Logger}
	sum := &Summary{ModelID: m.ID(), Out: out, MaxMemory: s.opts.MaxMemory, ChunkRows: s.chunk, Probs: string(s.probs),
		Skipped: []lake.Skipped{}, Worker: &WorkerSummary{Topic: w.Topic, Group: w.Group}}
	// the temporary files of workers that died (a live worker sharing out
	// holds its lock and keeps its file; without locks, lake.TempLocks,
	// nothing is removed, since others may be writing)
	if sum.Temps, err = cleanTemps(out, false); err != nil {
		return nil, err
	}
	if w.Enqueue {
		list, err := lake.List([]string{root})
		if err != nil {
			return nil, err
		}
		var rels []string
		for _, f := range list {
			if f.Err != nil { // an unreadable directory: nothing to enqueue
				if opts.OnError == lake.Fail {
					return nil, &lake.FileError{File: f.Path, Err: f.Err}
				}
				sum.Skipped = append(sum.Skipped, lake.Skipped{File: f.Path, Reason: f.Err.Error()})
				continue
			}
			rels = append(rels, f.Rel)
		}
		if err := lakework.Enqueue(ctx, wopts, rels); err != nil {
			return nil, err
		}
		sum.Worker.Enqueued = len(rels)
	}
	failOpts := s.lopts
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
		if err := notInput(lake.OutputPath(out, f), f.Path); err != nil {
			return err // the whole run is misconfigured, not this file
		}
		if s.done(lake.OutputPath(out, f)) {
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
		if err := s.prepare(l); err != nil {
			return bad(err)
		}
		res, err := s.mapper(false).run(ctx, l, []int{0})
		if err != nil {
			return err
		}
		sum.Files += res.files
		sum.Rows += res.rows
		sum.PeakBytes = max(sum.PeakBytes, res.peak)
		sum.OverBudget = append(sum.OverBudget, res.over...)
		sum.Skipped = append(sum.Skipped, l.Skipped()...)
		return nil
	}
	st, err := lakework.Run(ctx, wopts, handle)
	sum.Worker.Jobs, sum.Worker.BadJobs = st.Jobs, st.Bad
	sum.warn(s.lopts.MaxMemory)
	if err != nil {
		return nil, err
	}
	sum.Seconds = time.Since(t0).Seconds()
	sum.RowsPerSec = float64(sum.Rows) / math.Max(sum.Seconds, 1e-9)
	return sum, nil
}

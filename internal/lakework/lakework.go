// Package lakework shares the files of a Parquet lake among worker
// processes through a Kafka topic, so that a lake scales out on an existing
// engine instead of a home-made scheduler (ARCHITECTURE.md, The daemon's promises, "Scale-out uses
// Kafka itself"). It owns the job messages and the work loop, nothing
// else: reading and scoring a file is the caller's handler.
//
// Enqueue publishes one message per file (key and value name the file by
// its path below the lake root). Run joins a consumer group on the topic
// through connectors/kafka's GroupSource, hands each assigned file to the
// handler one at a time, and acknowledges the message only when the handler
// returns nil, i.e. once the file's output has been renamed into place;
// the source commits acknowledged offsets only, so a worker that dies
// leaves its unfinished files to be read again by the group (at least
// once; outputs are whole files under deterministic names, so a file
// scored twice still has one output). Run returns when every partition's
// committed offset has reached its end: the whole topic is done, by this
// worker or others.
package lakework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/pipeline"
)

// Job is one message: a file to process, by its slash-separated path
// below the lake root (the root itself is each worker's own argument, so
// machines may mount the lake in different places).
type Job struct {
	File string `json:"file"`
}

// maxJobBytes bounds a job message.
const maxJobBytes = 64 << 10

// EncodeJob returns the message value of a job.
func EncodeJob(j Job) ([]byte, error) {
	if err := j.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// DecodeJob parses and validates a message value: a JSON object with a
// "file" that is a clean relative path inside the lake (no "..", no
// leading "/", no empty, "." or hidden elements, valid UTF-8, no NUL).
func DecodeJob(value []byte) (Job, error) {
	var j Job
	if len(value) > maxJobBytes {
		return j, fmt.Errorf("lakework: job message of %d bytes (at most %d)", len(value), maxJobBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Job{}, fmt.Errorf("lakework: job message is not {\"file\": PATH}: %w", err)
	}
	if dec.More() {
		return Job{}, errors.New("lakework: trailing data after the job object")
	}
	if err := j.validate(); err != nil {
		return Job{}, err
	}
	return j, nil
}

func (j Job) validate() error {
	f := j.File
	switch {
	case f == "":
		return errors.New("lakework: job without a file")
	case !utf8.ValidString(f) || strings.ContainsRune(f, 0):
		return fmt.Errorf("lakework: job file %q is not valid text", f)
	case strings.HasPrefix(f, "/") || strings.Contains(f, "\\"):
		return fmt.Errorf("lakework: job file %q must be a relative slash-separated path", f)
	case path.Clean(f) != f:
		return fmt.Errorf("lakework: job file %q is not a clean path", f)
	}
	for _, e := range strings.Split(f, "/") {
		if e == ".." || e == "." || strings.HasPrefix(e, ".") {
			return fmt.Errorf("lakework: job file %q leaves the lake or names a hidden file", f)
		}
	}
	return nil
}

// Options configure Enqueue and Run.
type Options struct {
	// Client reaches the brokers. The completion check uses a plain
	// connection: TLS and SASL are not supported here yet.
	Client kafka.ClientOptions
	// Topic carries the jobs.
	Topic string
	// Group is the consumer group of the workers (default "forestd-lake").
	Group string
	// Partitions of the topic when Enqueue creates it (default 16): the
	// most workers that can share it.
	Partitions int
	// Poll is how often Run checks whether the topic is done (default 500 ms).
	Poll time.Duration
	// DrainTimeout bounds the wait for the file in progress when the
	// group rebalances (default 5 min); a file not finished by then is
	// left to the partition's next owner.
	DrainTimeout time.Duration
	// SessionTimeout of the group membership (default 10 s).
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

func (o *Options) resolve() error {
	if err := o.Client.Validate(); err != nil {
		return err
	}
	if o.Client.TLS.Enabled || o.Client.SASL.Mechanism != "" {
		return errors.New("lakework: TLS and SASL are not supported for lake work sharing yet")
	}
	if o.Topic == "" {
		return errors.New("lakework: no topic")
	}
	if o.Group == "" {
		o.Group = "forestd-lake"
	}
	if o.Partitions == 0 {
		o.Partitions = 16
	}
	if o.Poll == 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 5 * time.Minute
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.Partitions < 0 || o.Poll < 0 || o.DrainTimeout < 0 || o.SessionTimeout < 0 {
		return errors.New("lakework: negative option")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Enqueue creates the topic if needed and publishes one job per file.
func Enqueue(ctx context.Context, opts Options, files []string) error {
	if err := opts.resolve(); err != nil {
		return err
	}
	if err := kafka.EnsureTopics(ctx, opts.Client, []kafka.TopicSpec{{Name: opts.Topic, Partitions: opts.Partitions}}); err != nil {
		return err
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: opts.Client, Topics: map[string]string{"jobs": opts.Topic}, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer sink.Close()
	outs := make([]pipeline.Output, 0, len(files))
	for _, f := range files {
		v, err := EncodeJob(Job{File: f})
		if err != nil {
			return err
		}
		outs = append(outs, pipeline.Output{Stream: "jobs", Key: []byte(f), Raw: v})
	}
	for len(outs) > 0 {
		k := min(len(outs), 500)
		if err := sink.Write(ctx, outs[:k]); err != nil {
			return fmt.Errorf("lakework: publishing jobs to %s: %w", opts.Topic, err)
		}
		outs = outs[k:]
	}
	return nil
}

// Handler processes one job. A nil error acknowledges the message (its
// offset may then be committed); ErrBadJob also acknowledges it (the job
// can never succeed, e.g. a malformed message); any other error stops Run,
// leaving the job to the group.
type Handler func(ctx context.Context, job Job) error

// ErrBadJob marks a job that cannot succeed: Run acknowledges it and goes
// on, and counts it in Stats.Bad.
var ErrBadJob = errors.New("bad job")

// Stats reports on a Run.
type Stats struct {
	Jobs int // jobs handled by this worker (acknowledged)
	Bad  int // of which rejected with ErrBadJob (including malformed messages)
}

// Run works on the topic as a member of the consumer group until every
// partition's committed offset reaches its end offset (and the topic has
// at least one message), ctx ends, or the handler fails. Jobs are handled
// one at a time.
func Run(ctx context.Context, opts Options, handle Handler) (Stats, error) {
	var st Stats
	if err := opts.resolve(); err != nil {
		return st, err
	}
	src, err := kafka.NewGroupSource(kafka.SourceOptions{
		Client: opts.Client, Group: opts.Group, Topics: []string{opts.Topic},
		SessionTimeout: opts.SessionTimeout, DrainTimeout: opts.DrainTimeout,
		// One tracked message at a time: the job in progress. Others wait
		// untracked, so ending a generation waits for that job only.
		CommitInterval: 100 * time.Millisecond, MaxUncommitted: 1, QueueCapacity: 4,
		Logger: opts.Logger,
	})
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		sem     = make(chan struct{}, 1) // one job at a time
		failMu  sync.Mutex
		runErr  error
		statsMu sync.Mutex
	)
	runCtx := ctx
	// fail stops the worker after a job failed (or Run's context ended
	// during one): the failed job stays unacknowledged, so the source's
	// drain would wait DrainTimeout for it. Once the jobs acknowledged
	// before it are committed (the commit interval is 100 ms), the
	// generation is revoked and the failed job left to the group.
	fail := func(err error) {
		failMu.Lock()
		if runErr == nil {
			runErr = err
		}
		failMu.Unlock()
		go func() {
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				tr := src.Tracker()
				if tr == nil || len(tr.Committable()) == 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tr := src.Tracker(); tr != nil {
				tr.Revoke()
			}
			cancel()
		}()
	}
	// submit is called by one goroutine per assigned partition. Every
	// message the source hands over has been tracked in the current
	// generation and must be finished, or the generation's drain waits for
	// it until DrainTimeout: so a job runs to the end under Run's context
	// even when the generation ends meanwhile (a rebalance then waits for
	// it, and commits it). With MaxUncommitted 1 there is at most one such
	// job per worker.
	submit := func(_ context.Context, env *pipeline.Envelope) error {
		select {
		case sem <- struct{}{}:
		case <-runCtx.Done():
			return runCtx.Err()
		}
		defer func() { <-sem }()
		job, err := DecodeJob(env.Value)
		if err == nil {
			err = handle(runCtx, job)
		} else {
			opts.Logger.Warn("malformed job message", "source", env.Source(), "err", err)
			err = fmt.Errorf("%w: %w", ErrBadJob, err)
		}
		if err != nil && !errors.Is(err, ErrBadJob) {
			fail(err)
			return err
		}
		statsMu.Lock()
		st.Jobs++
		if err != nil {
			st.Bad++
		}
		statsMu.Unlock()
		if env.Ack != nil {
			env.Ack.Done()
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, submit) }()
	cl := &kafkago.Client{Addr: kafkago.TCP(opts.Client.Brokers...), Timeout: 10 * time.Second}
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			failMu.Lock()
			defer failMu.Unlock()
			if runErr != nil {
				return st, runErr
			}
			if err != nil {
				return st, err
			}
			return st, ctx.Err()
		case <-tick.C:
			finished, err := Finished(ctx, cl, opts.Group, opts.Topic)
			if err != nil {
				opts.Logger.Debug("completion check failed", "err", err)
				continue
			}
			if finished {
				cancel()
				err := <-done
				failMu.Lock()
				defer failMu.Unlock()
				if runErr != nil {
					return st, runErr
				}
				return st, err
			}
		}
	}
}

// Finished reports whether group has committed every message of topic:
// the topic has at least one message and on every partition the committed
// offset is at the end offset.
func Finished(ctx context.Context, cl *kafkago.Client, group, topic string) (bool, error) {
	meta, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false, err
	}
	var parts []int
	for _, t := range meta.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return false, t.Error
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
		}
	}
	if len(parts) == 0 {
		return false, nil
	}
	reqs := make([]kafkago.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafkago.LastOffsetOf(p)
	}
	lo, err := cl.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return false, err
	}
	end := map[int]int64{}
	var total int64
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return false, po.Error
		}
		end[po.Partition] = po.LastOffset
		total += po.LastOffset
	}
	if total == 0 || len(end) != len(parts) {
		return false, nil
	}
	of, err := cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return false, err
	}
	if of.Error != nil {
		return false, of.Error
	}
	committed := map[int]int64{}
	for _, p := range of.Topics[topic] {
		if p.Error != nil {
			return false, p.Error
		}
		committed[p.Partition] = p.CommittedOffset
	}
	for _, p := range parts {
		if end[p] == 0 {
			continue
		}
		if c, ok := committed[p]; !ok || c < end[p] {
			return false, nil
		}
	}
	return true, nil
}

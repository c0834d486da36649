package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Headers and content type of model-topic messages.
const (
	headerModelID         = "forestd-model-id"
	headerModelVersion    = "forestd-model-version"
	headerChunk           = "forestd-chunk" // "i/n"
	headerModelBytes      = "forestd-model-bytes"
	contentTypeModelChunk = "application/vnd.forestd.model-chunk"
)

// Limits on what the model topic may claim, so that a corrupt or hostile
// message cannot make a replica allocate without bound.
const (
	maxModelChunks  = 1 << 14
	maxPartialModel = 4
)

// ModelRef names a model on the model topic.
type ModelRef struct {
	ID      string
	Version int64
}

// Newer reports whether r orders after o: a higher version, or the same
// version and a larger ID (so that two replicas that trained concurrently
// converge on the same model).
func (r ModelRef) Newer(o ModelRef) bool {
	if r.Version != o.Version {
		return r.Version > o.Version
	}
	return r.ID > o.ID
}

func chunkKey(ref ModelRef, i int) string {
	return "model/" + strconv.FormatInt(ref.Version, 10) + "/" + ref.ID + "/" + strconv.Itoa(i)
}

func parseChunkKey(k string) (ModelRef, int, bool) {
	p := strings.Split(k, "/")
	if len(p) != 4 || p[0] != "model" || p[2] == "" {
		return ModelRef{}, 0, false
	}
	v, err1 := strconv.ParseInt(p[1], 10, 64)
	i, err2 := strconv.Atoi(p[3])
	if err1 != nil || err2 != nil || i < 0 {
		return ModelRef{}, 0, false
	}
	return ModelRef{ID: p[2], Version: v}, i, true
}

// modelChunks cuts an encoded model into model-topic messages of at most
// chunkBytes each. Every chunk has its own key (model/<version>/<id>/<i>),
// so compaction keeps all chunks of a model until they are deleted with
// tombstones once a newer model is complete.
func modelChunks(topic string, ref ModelRef, data []byte, chunkBytes int) ([]kafkago.Message, error) {
	if chunkBytes <= 0 {
		return nil, errors.New("kafka: chunk size must be positive")
	}
	if ref.ID == "" || strings.Contains(ref.ID, "/") {
		return nil, fmt.Errorf("kafka: model id %q", ref.ID)
	}
	n := max(1, (len(data)+chunkBytes-1)/chunkBytes)
	if n > maxModelChunks {
		return nil, fmt.Errorf("kafka: model of %d bytes needs %d chunks (at most %d)", len(data), n, maxModelChunks)
	}
	msgs := make([]kafkago.Message, n)
	for i := 0; i < n; i++ {
		lo, hi := i*chunkBytes, min((i+1)*chunkBytes, len(data))
		msgs[i] = kafkago.Message{Topic: topic, Key: []byte(chunkKey(ref, i)), Value: data[lo:hi], Headers: []kafkago.Header{
			{Key: HeaderContentType, Value: []byte(contentTypeModelChunk)},
			{Key: headerModelID, Value: []byte(ref.ID)},
			{Key: headerModelVersion, Value: []byte(strconv.FormatInt(ref.Version, 10))},
			{Key: headerChunk, Value: []byte(strconv.Itoa(i) + "/" + strconv.Itoa(n))},
			{Key: headerModelBytes, Value: []byte(strconv.Itoa(len(data)))},
		}}
	}
	return msgs, nil
}

type partialModel struct {
	ref    ModelRef
	size   int
	chunks [][]byte
	have   int
}

// modelAssembler reassembles models from model-topic messages in any order,
// across interleaved publications, and remembers the chunk keys of complete
// models so that a publisher can delete them once superseded.
type modelAssembler struct {
	mu sync.Mutex
	// MaxModelBytes bounds the size a model may claim (default 1 GiB).
	MaxModelBytes int
	partial       map[string]*partialModel
	complete      map[string]completeModel
}

type completeModel struct {
	ref    ModelRef
	chunks int
}

// newModelAssembler returns an empty assembler.
func newModelAssembler() *modelAssembler {
	return &modelAssembler{MaxModelBytes: 1 << 30, partial: map[string]*partialModel{}, complete: map[string]completeModel{}}
}

func header(hs []kafkago.Header, k string) (string, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == k {
			return string(hs[i].Value), true
		}
	}
	return "", false
}

// Add takes one message. It returns the model's bytes when the message
// completes a model, and an error for a message that is not a valid chunk.
// A tombstone (nil value) forgets its chunk.
func (a *modelAssembler) Add(key, value []byte, hs []kafkago.Header) (ModelRef, []byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ref, idx, ok := parseChunkKey(string(key))
	if !ok {
		return ModelRef{}, nil, fmt.Errorf("model topic: key %q is not model/<version>/<id>/<chunk>", key)
	}
	if value == nil { // tombstone
		if p := a.partial[ref.ID]; p != nil && idx < len(p.chunks) && p.chunks[idx] != nil {
			p.chunks[idx] = nil
			p.have--
			if p.have == 0 {
				delete(a.partial, ref.ID)
			}
		}
		delete(a.complete, ref.ID)
		return ModelRef{}, nil, nil
	}
	id, _ := header(hs, headerModelID)
	vs, _ := header(hs, headerModelVersion)
	cs, _ := header(hs, headerChunk)
	ss, _ := header(hs, headerModelBytes)
	v, err := strconv.ParseInt(vs, 10, 64)
	if id != ref.ID || err != nil || v != ref.Version {
		return ModelRef{}, nil, fmt.Errorf("model topic: key %q disagrees with headers id %q version %q", key, id, vs)
	}
	ci, cn, ok := strings.Cut(cs, "/")
	i, err1 := strconv.Atoi(ci)
	n, err2 := strconv.Atoi(cn)
	if !ok || err1 != nil || err2 != nil || i != idx || n < 1 || n > maxModelChunks || i >= n {
		return ModelRef{}, nil, fmt.Errorf("model topic: chunk header %q for key %q", cs, key)
	}
	size, err := strconv.Atoi(ss)
	if err != nil || size < 0 || size > a.MaxModelBytes || len(value) > size {
		return ModelRef{}, nil, fmt.Errorf("model topic: model size %q (limit %d) for a %d-byte chunk", ss, a.MaxModelBytes, len(value))
	}
	p := a.partial[ref.ID]
	if p == nil {
		if len(a.partial) >= maxPartialModel {
			a.evictOldest()
		}
		p = &partialModel{ref: ref, size: size, chunks: make([][]byte, n)}
		a.partial[ref.ID] = p
	}
	if p.size != size || len(p.chunks) != n {
		return ModelRef{}, nil, fmt.Errorf("model topic: chunk %d of model %s claims %d bytes in %d chunks, earlier chunks %d in %d", i, ref.ID, size, n, p.size, len(p.chunks))
	}
	if p.chunks[i] == nil {
		p.have++
	}
	p.chunks[i] = append([]byte(nil), value...)
	if p.have < n {
		return ModelRef{}, nil, nil
	}
	delete(a.partial, ref.ID)
	total := 0
	for _, c := range p.chunks {
		total += len(c)
	}
	if total != size {
		return ModelRef{}, nil, fmt.Errorf("model topic: model %s has %d bytes in its chunks, headers say %d", ref.ID, total, size)
	}
	data := make([]byte, 0, size)
	for _, c := range p.chunks {
		data = append(data, c...)
	}
	a.complete[ref.ID] = completeModel{ref: ref, chunks: n}
	return ref, data, nil
}

func (a *modelAssembler) evictOldest() {
	var oldest *partialModel
	for _, p := range a.partial {
		if oldest == nil || oldest.ref.Newer(p.ref) {
			oldest = p
		}
	}
	if oldest != nil {
		delete(a.partial, oldest.ref.ID)
	}
}

// Superseded returns the tombstones deleting every complete model older
// than ref (and forgets them).
func (a *modelAssembler) Superseded(topic string, ref ModelRef) []kafkago.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, c := range a.complete {
		if ref.Newer(c.ref) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []kafkago.Message
	for _, id := range ids {
		c := a.complete[id]
		for i := 0; i < c.chunks; i++ {
			out = append(out, kafkago.Message{Topic: topic, Key: []byte(chunkKey(c.ref, i)), Value: nil})
		}
		delete(a.complete, id)
	}
	return out
}

// ModelBusOptions configure the model topic.
type ModelBusOptions struct {
	Client ClientOptions
	Topic  string
	// ChunkBytes bounds one chunk (default 512 KiB, well under Kafka's 1 MiB
	// message limit).
	ChunkBytes int
	Logger     *slog.Logger
}

// ModelBus publishes models on the compacted model topic and follows it,
// so that every replica scores with the newest published model.
type ModelBus struct {
	opts     ModelBusOptions
	c        *client
	w        *kafkago.Writer
	asm      *modelAssembler
	caughtUp atomic.Bool
	caught   chan struct{} // closed when caughtUp turns true
}

// NewModelBus checks the options.
func NewModelBus(opts ModelBusOptions) (*ModelBus, error) {
	c, err := opts.Client.build()
	if err != nil {
		return nil, err
	}
	if opts.Topic == "" {
		return nil, errors.New("kafka: model bus without a topic")
	}
	if opts.ChunkBytes == 0 {
		opts.ChunkBytes = 512 << 10
	}
	if opts.ChunkBytes < 1024 {
		return nil, fmt.Errorf("kafka: model chunk size %d below 1024", opts.ChunkBytes)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(c.brokers...), Balancer: &kafkago.Hash{}, RequiredAcks: kafkago.RequireAll,
		BatchBytes: int64(opts.ChunkBytes) + 64<<10, BatchTimeout: time.Millisecond, Transport: c.transport,
		MaxAttempts: 5, WriteTimeout: 30 * time.Second}
	return &ModelBus{opts: opts, c: c, w: w, asm: newModelAssembler(), caught: make(chan struct{})}, nil
}

// Publish writes the model's chunks (acks=all), then tombstones the models
// it supersedes.
func (b *ModelBus) Publish(ctx context.Context, ref ModelRef, data []byte) error {
	msgs, err := modelChunks(b.opts.Topic, ref, data, b.opts.ChunkBytes)
	if err != nil {
		return err
	}
	for _, m := range msgs { // one at a time: each chunk fills a produce batch
		if err := b.w.WriteMessages(ctx, m); err != nil {
			return fmt.Errorf("kafka: publishing model %s v%d: %w", ref.ID, ref.Version, err)
		}
	}
	if ts := b.asm.Superseded(b.opts.Topic, ref); len(ts) > 0 {
		if err := b.w.WriteMessages(ctx, ts...); err != nil {
			b.opts.Logger.Warn("deleting superseded models from the model topic", "err", err)
		}
	}
	return nil
}

// CaughtUp reports whether Follow has read the model topic up to its end
// at least once.
func (b *ModelBus) CaughtUp() bool { return b.caughtUp.Load() }

// WaitCaughtUp blocks until Follow has read the model topic up to its end
// (and offered the newest models it found there) or ctx is done.
func (b *ModelBus) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-b.caught:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxCatchUpModels bounds the complete models a follower holds while it
// reads the topic up to its end.
const maxCatchUpModels = 8

// Follow reads the model topic from its beginning until ctx is done,
// calling onModel (from one goroutine per partition) with complete models;
// onModel reports whether it adopted the model. While a partition is read
// up to its end, only its newest complete models (by reference, at most
// maxCatchUpModels) are kept; at the end they are offered newest first
// until one is adopted, so that an entry whose reference lies (a key
// claiming a higher version than its content) cannot hide the real newest
// model from a replica that starts. After that every complete model is
// offered as it arrives. Invalid messages are logged and skipped.
func (b *ModelBus) Follow(ctx context.Context, onModel func(ref ModelRef, data []byte) bool) error {
	n, err := Partitions(ctx, b.opts.Client, b.opts.Topic)
	for err != nil {
		if ctx.Err() != nil {
			return nil
		}
		b.opts.Logger.Warn("model topic not readable yet", "topic", b.opts.Topic, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		n, err = Partitions(ctx, b.opts.Client, b.opts.Topic)
	}
	var wg sync.WaitGroup
	var behind atomic.Int32
	behind.Store(int32(n))
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.follow(ctx, p, &behind, onModel)
		}()
	}
	wg.Wait()
	return nil
}

func (b *ModelBus) follow(ctx context.Context, p int, behind *atomic.Int32, onModel func(ModelRef, []byte) bool) {
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: b.c.brokers, Dialer: b.c.dialer, Topic: b.opts.Topic,
		Partition: p, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 8,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second})
	defer r.Close()
	if err := r.SetOffset(kafkago.FirstOffset); err != nil {
		b.opts.Logger.Error("model topic reader", "err", err)
		return
	}
	// While catching up, only the newest complete models are kept and
	// offered once the end of the partition is reached, so that a replica
	// joining late does not load every model still on the topic.
	caught := false
	var pending catchUp
	markCaught := func() {
		if !caught {
			caught = true
			pending.offer(onModel)
			if behind.Add(-1) == 0 && b.caughtUp.CompareAndSwap(false, true) {
				close(b.caught) // once, even if Follow runs again
			}
		}
	}
	for !caught {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lag, err := r.ReadLag(lctx)
		cancel()
		if err == nil {
			if lag == 0 {
				markCaught()
			}
			break
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.opts.Logger.Warn("model topic fetch failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		ref, data, err := b.asm.Add(m.Key, m.Value, m.Headers)
		if err != nil {
			b.opts.Logger.Warn("skipping an invalid model-topic message", "offset", m.Offset, "err", err)
		} else if data != nil {
			if caught {
				onModel(ref, data)
			} else {
				pending.add(ref, data)
			}
		}
		if m.Offset+1 >= m.HighWaterMark {
			markCaught()
		}
	}
}

// catchUp holds the newest complete models seen while catching up.
type catchUp struct {
	refs []ModelRef
	data [][]byte
}

// add keeps the model if it is among the maxCatchUpModels newest (a model
// already held is replaced by its newer copy).
func (c *catchUp) add(ref ModelRef, data []byte) {
	for i, r := range c.refs {
		if r == ref {
			c.data[i] = data
			return
		}
	}
	c.refs, c.data = append(c.refs, ref), append(c.data, data)
	if len(c.refs) > maxCatchUpModels { // drop the oldest
		old := 0
		for i, r := range c.refs {
			if c.refs[old].Newer(r) {
				old = i
			}
		}
		c.refs = append(c.refs[:old], c.refs[old+1:]...)
		c.data = append(c.data[:old], c.data[old+1:]...)
	}
}

// offer hands the held models to onModel newest first until one is
// adopted, and forgets them.
func (c *catchUp) offer(onModel func(ModelRef, []byte) bool) {
	idx := make([]int, len(c.refs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return c.refs[idx[a]].Newer(c.refs[idx[b]]) })
	for _, i := range idx {
		if onModel(c.refs[i], c.data[i]) {
			break
		}
	}
	c.refs, c.data = nil, nil
}

// Close closes the publisher.
func (b *ModelBus) Close() error {
	err := b.w.Close()
	b.c.close()
	return err
}

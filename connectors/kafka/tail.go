package kafka

import (
	"context"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/forestd/forestd/pipeline"
)

// Tail reads every partition of topic from its first offset (outside any
// consumer group, committing nothing) and calls fn for each message, from
// one goroutine per partition, until ctx is done. It is how the demo and
// tools watch an output topic.
func Tail(ctx context.Context, co ClientOptions, topic string, fn func(env *pipeline.Envelope)) error {
	c, err := co.build()
	if err != nil {
		return err
	}
	n, err := Partitions(ctx, co, topic)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.brokers, Dialer: c.dialer, Topic: topic, Partition: p,
				MaxWait: 100 * time.Millisecond, MaxBytes: 16 << 20})
			defer r.Close()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				env := &pipeline.Envelope{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}
				for _, h := range m.Headers {
					env.Headers = append(env.Headers, pipeline.Header{Key: h.Key, Value: h.Value})
				}
				fn(env)
			}
		}()
	}
	wg.Wait()
	return nil
}

package pipeline_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/forestd/forestd/pipeline"
)

// A tracker commits only as far as every earlier message is done: here
// offset 11 finishes first, so nothing is committable until 10 is done,
// and then 12 (one past 11, Kafka's "next offset to read") is.
func ExampleTracker() {
	tp := pipeline.TopicPartition{Topic: "forestd.features", Partition: 0}
	tr := pipeline.NewTracker(1, map[pipeline.TopicPartition]int64{tp: 10}, 100)
	ctx := context.Background()
	a10, _ := tr.Track(ctx, tp, 10)
	a11, _ := tr.Track(ctx, tp, 11)
	a11.Done()
	fmt.Println(tr.Committable())
	a10.Done()
	fmt.Println(tr.Committable())
	// Output:
	// map[]
	// map[forestd.features/0:12]
}

// doubler multiplies every value of its one-column batches by two and
// emits the results on stream "out".
type doubler struct{}

func (doubler) Name() string { return "double" }
func (doubler) Process(ctx context.Context, in *pipeline.Batch) ([]pipeline.Output, *pipeline.Batch, error) {
	var outs []pipeline.Output
	for _, r := range in.Records {
		for _, v := range r.Column(0).(*array.Int64).Int64Values() {
			outs = append(outs, pipeline.Output{Stream: "out", Raw: []byte(strconv.FormatInt(2*v, 10))})
		}
	}
	return outs, nil, nil
}

// collect is a sink that keeps what it is given.
type collect struct {
	mu   sync.Mutex
	outs []string
}

func (c *collect) Write(ctx context.Context, outs []pipeline.Output) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outs {
		line := o.Stream + " " + string(o.Raw)
		for _, h := range o.Headers {
			if h.Key == pipeline.HeaderDLQReason {
				line += " (" + string(h.Value) + ")"
			}
		}
		c.outs = append(c.outs, line)
	}
	return nil
}

// ExampleRuntime runs a whole stream through the runtime: messages of a
// topic are decoded into Arrow batches, passed through a stage, and its
// outputs delivered to a sink; a message the decoder cannot read becomes
// a dead letter naming why, and once everything is delivered the tracker
// may commit past every message. The daemon does this with a Kafka
// source, forestd's operators and a Kafka sink.
func ExampleRuntime() {
	decode := func(env *pipeline.Envelope) (*pipeline.Batch, error) {
		v, err := strconv.ParseInt(string(env.Value), 10, 64)
		if err != nil {
			return nil, pipeline.BadInput(fmt.Errorf("not a number: %q", env.Value))
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.Append(v)
		col := b.NewArray()
		defer col.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return &pipeline.Batch{Env: env, Schema: schema, Records: []arrow.Record{array.NewRecord(schema, []arrow.Array{col}, 1)}}, nil
	}
	sink := &collect{}
	rt, err := pipeline.New(pipeline.Options{Workers: 1}, decode, []pipeline.Route{{Topic: "in", Stages: []pipeline.Stage{doubler{}}}}, sink)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rt.Start(ctx)
	tp := pipeline.TopicPartition{Topic: "in", Partition: 0}
	tr := pipeline.NewTracker(1, map[pipeline.TopicPartition]int64{tp: 0}, 100)
	for i, v := range []string{"20", "x", "21"} {
		ack, _ := tr.Track(ctx, tp, int64(i))
		if err := rt.Submit(ctx, &pipeline.Envelope{Topic: "in", Offset: int64(i), Value: []byte(v), Ack: ack}); err != nil {
			fmt.Println(err)
		}
	}
	rt.Close() // the workers finish and the deliveries end
	sort.Strings(sink.outs)
	for _, o := range sink.outs { // a dead letter carries the message and its reason
		fmt.Println(o)
	}
	fmt.Println(tr.Committable())
	// Output:
	// dlq x (bad input: not a number: "x")
	// out 40
	// out 42
	// map[in/0:3]
}

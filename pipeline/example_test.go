package pipeline_test

import (
	"context"
	"fmt"

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

package lakework_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/internal/broker"
	"github.com/forestd/forestd/internal/lakework"
)

// Publish one job per file of a lake on an embedded broker and work
// through them; Run returns once the group has committed every job.
func Example() {
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := lakework.Options{Client: kafka.ClientOptions{Brokers: []string{b.Addr()}}, Topic: "lake-jobs", Partitions: 2}
	files := []string{"date=2026-11-01/part-0.parquet", "date=2026-11-01/part-1.parquet", "date=2026-11-02/part-0.parquet"}
	if err := lakework.Enqueue(ctx, opts, files); err != nil {
		fmt.Println(err)
		return
	}
	var done []string
	st, err := lakework.Run(ctx, opts, func(ctx context.Context, j lakework.Job) error {
		done = append(done, j.File) // score the file, rename its output into place
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sort.Strings(done)
	fmt.Println(st.Jobs, "jobs:", done)
	// Output:
	// 3 jobs: [date=2026-11-01/part-0.parquet date=2026-11-01/part-1.parquet date=2026-11-02/part-0.parquet]
}

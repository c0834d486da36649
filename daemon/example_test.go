package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/codec"
	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/connectors/kafka"
	"github.com/forestd/forestd/daemon"
	"github.com/forestd/forestd/pipeline"
)

// Run the daemon inside a program on its embedded broker: it scores the
// rows produced to the features topic with a saved model and publishes the
// predictions, until Stop drains, commits and shuts it down.
func Example() {
	cfg := daemon.DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0" // no brokers: the embedded broker, on a free loopback port
	cfg.HTTP = "127.0.0.1:0"
	cfg.Stages = []string{"score"}
	cfg.Model = "../scoring/testdata/iris.model"
	cfg.OutputFormat = kafka.FormatJSON
	cfg.Kafka.SessionTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Stop()

	// three iris rows to the features topic, as one Arrow IPC message
	_, recs, err := files.ReadPaths([]string{"../testdata/iris.parquet"}, files.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rows := recs[0].NewSlice(0, 3)
	defer rows.Release()
	for _, r := range recs {
		r.Release()
	}
	sink, err := kafka.NewSink(kafka.SinkOptions{Client: d.ClientOptions(), Topics: map[string]string{"in": cfg.Topics.Features}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	if err := sink.Write(ctx, []pipeline.Output{{Stream: "in", Record: rows}}); err != nil {
		fmt.Println(err)
		return
	}

	// read the predictions back
	got := make(chan arrow.Record, 1)
	tctx, stopTail := context.WithCancel(ctx)
	go kafka.Tail(tctx, d.ClientOptions(), cfg.Topics.Predictions, func(env *pipeline.Envelope) {
		if rec, err := codec.DecodeJSON(env.Value, memory.DefaultAllocator); err == nil {
			select {
			case got <- rec:
			default:
				rec.Release()
			}
		}
	})
	p := <-got
	stopTail()
	defer p.Release()
	for i := 0; i < int(p.NumRows()); i++ {
		fmt.Println("row", p.Column(3).ValueStr(i), "class", p.Column(4).ValueStr(i), "by model version", p.Column(1).ValueStr(i))
	}
	// Output:
	// row 0 class 0 by model version 1
	// row 1 class 0 by model version 1
	// row 2 class 0 by model version 1
}

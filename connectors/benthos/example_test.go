package benthos_test

import (
	"context"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"

	// Registers forestd_score, forestd_select and forestd_train.
	_ "github.com/forestd/forestd/connectors/benthos"
)

// A whole stream through forestd_score (ARCHITECTURE.md, Embedding): a
// generated array of two iris flowers split into a batch of two JSON
// messages, scored with examples/iris.model, each message printed with the
// predictions appended to its own bytes.
func Example() {
	b := service.NewStreamBuilder()
	if err := b.SetLoggerYAML("level: off"); err != nil {
		fmt.Println(err)
		return
	}
	err := b.AddInputYAML(`
generate:
  count: 1
  interval: ""
  mapping: |
    root = [
      {"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2},
      {"sepal_length_cm": 6.3, "sepal_width_cm": 3.3, "petal_length_cm": 6.0, "petal_width_cm": 2.5},
    ]
processors:
  - unarchive: {format: json_array}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := b.AddProcessorYAML(`forestd_score: {model: examples/iris.model}`); err != nil {
		fmt.Println(err)
		return
	}
	err = b.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		for _, m := range batch {
			body, err := m.AsBytes()
			if err != nil {
				return err
			}
			fmt.Println(string(body))
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	// The generate input ends after one message, and so does the stream.
	if err := stream.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"petal_length_cm":1.4,"petal_width_cm":0.2,"sepal_length_cm":5.1,"sepal_width_cm":3.5,"model_id":"87f8d593bd89d38d31a69d2263317fde28256764d2305be29e1c272b7ad992c1","model_version":1,"prediction":"0","prob_0":1,"prob_1":0,"prob_2":0}
	// {"petal_length_cm":6,"petal_width_cm":2.5,"sepal_length_cm":6.3,"sepal_width_cm":3.3,"model_id":"87f8d593bd89d38d31a69d2263317fde28256764d2305be29e1c272b7ad992c1","model_version":1,"prediction":"2","prob_0":0,"prob_1":0,"prob_2":1}
}

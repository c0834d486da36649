package benthos_test

import (
	"context"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// A whole stream through forestd_drift: 60 generated flowers whose petals
// are longer than any of the iris training data's and whose sepal widths
// are spread evenly over 2.6–3.4 cm, in one batch, tested against
// testdata/iris.parquet on those two features; each window's result is in
// the metadata of its messages.
func Example_drift() {
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
    root = range(0, 60).map_each(i -> {"petal_length_cm": 7 + (i % 5) * 0.2, "sepal_width_cm": 2.6 + (i % 9) * 0.1})
processors:
  - unarchive: {format: json_array}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := b.AddProcessorYAML(`forestd_drift: {reference: ../../testdata/iris.parquet, features: [petal_length_cm, sepal_width_cm]}`); err != nil {
		fmt.Println(err)
		return
	}
	err = b.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		m := batch[0]
		d, _ := m.MetaGet("forestd_drift")
		f, _ := m.MetaGet("forestd_drift_features")
		fmt.Printf("%d messages: drift %s, drifted tests %s\n", len(batch), d, f)
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
	if err := stream.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 60 messages: drift true, drifted tests petal_length_cm,sepal_width_cm,(joint)
}

package broker_test

import (
	"fmt"

	"github.com/forestd/forestd/internal/broker"
)

// Start an embedded broker on a free loopback port with a compacted topic,
// as `forestd serve` does when it has no --brokers.
func ExampleStart() {
	b, err := broker.Start(broker.Options{
		Listen: "127.0.0.1:0",
		Topics: []broker.Topic{{Name: "forestd.models", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fmt.Println(b.Cluster().TopicInfo("forestd.models") != nil)
	// Output: true
}

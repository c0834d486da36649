package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// TopicSpec describes a topic the daemon needs.
type TopicSpec struct {
	Name       string
	Partitions int
	// Compact makes it a compacted topic (cleanup.policy=compact), as the
	// model topic is.
	Compact bool
	// MaxMessageBytes sets the topic's max.message.bytes when positive.
	MaxMessageBytes int
}

// EnsureTopics creates the topics that do not exist yet (with replication
// factor 1 unless the broker has a default) and leaves existing ones alone.
func EnsureTopics(ctx context.Context, co ClientOptions, specs []TopicSpec) error {
	c, err := co.build()
	if err != nil {
		return err
	}
	defer c.close()
	cl := &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.transport, Timeout: 10 * time.Second}
	meta, err := cl.Metadata(ctx, &kafkago.MetadataRequest{})
	if err != nil {
		return fmt.Errorf("kafka: reading metadata from %v: %w", c.brokers, err)
	}
	have := map[string]bool{}
	for _, t := range meta.Topics {
		if t.Error == nil {
			have[t.Name] = true
		}
	}
	var req kafkago.CreateTopicsRequest
	for _, s := range specs {
		if have[s.Name] {
			continue
		}
		if s.Partitions <= 0 {
			return fmt.Errorf("kafka: topic %s: %d partitions", s.Name, s.Partitions)
		}
		tc := kafkago.TopicConfig{Topic: s.Name, NumPartitions: s.Partitions, ReplicationFactor: -1}
		if s.Compact {
			tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
		}
		if s.MaxMessageBytes > 0 {
			tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(s.MaxMessageBytes)})
		}
		req.Topics = append(req.Topics, tc)
		have[s.Name] = true
	}
	if len(req.Topics) == 0 {
		return nil
	}
	resp, err := cl.CreateTopics(ctx, &req)
	if err != nil {
		return fmt.Errorf("kafka: creating topics: %w", err)
	}
	var names []string
	for n := range resp.Errors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if e := resp.Errors[n]; e != nil && !errors.Is(e, kafkago.TopicAlreadyExists) {
			return fmt.Errorf("kafka: creating topic %s: %w", n, e)
		}
	}
	return nil
}

// Partitions returns the number of partitions of topic.
func Partitions(ctx context.Context, co ClientOptions, topic string) (int, error) {
	c, err := co.build()
	if err != nil {
		return 0, err
	}
	defer c.close()
	cl := &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.transport, Timeout: 10 * time.Second}
	meta, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("kafka: metadata for %s: %w", topic, err)
	}
	for _, t := range meta.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return 0, fmt.Errorf("kafka: topic %s: %w", topic, t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("kafka: topic %s not found", topic)
}

// CommittedOffsets returns the offsets the consumer group has committed for
// topic's partitions (partitions without a commit are left out).
func CommittedOffsets(ctx context.Context, co ClientOptions, group, topic string) (map[int32]int64, error) {
	n, err := Partitions(ctx, co, topic)
	if err != nil {
		return nil, err
	}
	c, err := co.build()
	if err != nil {
		return nil, err
	}
	defer c.close()
	cl := &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.transport, Timeout: 10 * time.Second}
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	resp, err := cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("kafka: committed offsets of group %s: %w", group, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("kafka: committed offsets of group %s: %w", group, resp.Error)
	}
	out := map[int32]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error == nil && p.CommittedOffset >= 0 {
			out[int32(p.Partition)] = p.CommittedOffset
		}
	}
	return out, nil
}

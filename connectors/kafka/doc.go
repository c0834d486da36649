// Package kafka is forestd's Kafka connector (ARCHITECTURE.md: Layers, Formats, The daemon's promises), built
// on segmentio/kafka-go: a consumer-group source with explicit commits
// driven by the pipeline's acknowledgement tracker, a producer sink that
// waits for acks=all, the message codecs (Arrow IPC streams and JSON
// objects or JSON lines in; Arrow IPC or JSON lines out), TLS and SASL
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), topic creation, and the model topic
// on which models travel in chunks. It contains no model maths.
//
// # Consumer groups and commits
//
// The source does not use kafka-go's group Reader, whose internal queue and
// commit loop are behind kafka-go issues #1276 (committed offsets running
// ahead of processed messages), #1308 (a member committing an offset for a
// partition it no longer owns) and #1398 (messages fetched before a
// rebalance delivered after it). Instead it takes each generation from
// kafka-go's ConsumerGroup and, for that generation only:
//
//   - opens one partition reader per assigned partition, starting at the
//     offset the group coordinator returned, and closes them all when the
//     generation ends, so no prefetched message outlives its generation;
//   - registers every fetched message with a pipeline.Tracker bound to the
//     generation, which refuses offsets below the start or already seen;
//   - commits, every commit interval, the tracker's committable offsets
//     through Generation.CommitOffsets, which sends the generation ID and
//     member ID with the commit, so a commit from a generation the
//     coordinator has moved past is rejected by the broker;
//   - when the generation ends (a rebalance, or shutdown), stops fetching,
//     waits up to the drain timeout for the messages in flight, commits once
//     more, and revokes the tracker: acknowledgements that arrive later are
//     ignored and their messages are read again by the new owner.
//
// # Message formats
//
// A value's format comes from its content-type header; without one it is
// sniffed from unambiguous markers (Arrow's 0xFFFFFFFF continuation or
// "ARROW1" magic, or a JSON '{'), never guessed: a value that matches none is
// a decode error, and so quarantined. A null value (a tombstone) and an
// empty value are quarantined with their own reasons. See Decode,
// DecodeJSON and NewDecoder.
package kafka

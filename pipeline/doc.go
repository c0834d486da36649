// Package pipeline is a generic at-least-once streaming runtime over Arrow
// record batches (ARCHITECTURE.md, "Layers" and "The daemon's promises"):
// it moves source messages through stages to sinks, bounds the work in
// flight, retries transient failures with backoff, routes bad input to a
// dead-letter stream, tracks acknowledgements so that a source offset is
// committed only after every output derived from it has been acknowledged,
// exposes metrics, and drains on shutdown.
//
// It knows nothing of forests — forestd's daemon (package daemon) supplies
// the stages that score, train and analyse — and contains no network code
// (the Kafka connector implements source-side fetching and the Sink).
//
// # Delivery guarantee
//
// The daemon promises at-least-once delivery with nothing lost. The
// mechanism is the Tracker: a source registers every message it fetches, in
// fetch order per partition, and receives an Ack. The runtime calls Ack.Done
// only after the sink has acknowledged every output derived from the message
// (predictions, or the dead letter that replaces them). The committable offset
// of a partition is one past the highest offset whose message and all earlier
// fetched messages are done (Kafka's convention: the committed offset is the
// next one to read). A message whose outputs failed is never done, so nothing
// after it is committed either, and after a restart it is read again: outputs
// may be duplicated within the uncommitted window, never lost.
//
// A Tracker belongs to one consumer-group generation. When the generation ends
// (a rebalance revokes its partitions) the tracker is revoked: late Done calls
// are ignored and nothing more is committed with that generation, so a slow
// worker can never move a partition's committed offset after another member
// took it over (the failure mode of segmentio/kafka-go issues #1276 and
// #1308), and messages fetched under the old generation that surface later
// are refused by the new generation's tracker (kafka-go issue #1398).
package pipeline

// Package codec turns message values into Arrow records and back, for
// every transport that carries forestd's messages (the Kafka connector,
// the Redpanda Connect processors): Arrow IPC streams, and JSON objects —
// one per value or JSON lines — with content-type names, alias handling
// and sniffing by unambiguous markers (Decode, Sniff); Arrow IPC and JSON
// lines out (EncodeArrow, EncodeJSON). JSONRows decodes the objects of
// many values into the rows of one record, each value all or nothing, so
// that a batch of messages is scored as one record while a bad message is
// rejected alone. It contains no model maths and no transport.
package codec

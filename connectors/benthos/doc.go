// Package benthos brings forestd into Redpanda Connect (Benthos,
// github.com/redpanda-data/benthos/v4) pipelines as three batch processors,
// registered when the package is imported:
//
//   - forestd_score scores each batch with a forestd model file through
//     scoring.Model.Score — the JSON messages of a batch as one Arrow
//     record, its Arrow IPC messages of one schema in one call — and
//     reloads the file
//     atomically when it changes (operators.Current: versions only move
//     forward);
//   - forestd_select reduces and FDM-maps messages with a mapping file of
//     forestd select, through operators.SelectRecords, as forestd select
//     --apply maps files;
//   - forestd_train keeps a bounded window of labelled rows
//     (operators.Trainer), retrains in the background and writes each model
//     to a file atomically (temporary file and rename), which a
//     forestd_score on the same file hot-swaps to.
//
// A message that cannot be used — not JSON or Arrow, a missing feature, a
// value of the wrong kind — is marked with SetError and a one-line reason,
// and the rest of its batch is processed, so Benthos' catch, switch and
// reject_errored route it to a dead letter. JSON messages are one object
// each; they are validated one by one against the columns the model or
// mapping reads (codec.JSONRows), because every error scoring can still
// return after that concerns the batch's schema, not a row.
//
// The package is its own Go module, so forestd's main module does not
// depend on Benthos. cmd/forestd-benthos is the Benthos command line
// (service.RunCLI) with Benthos' core components and these processors.
// Metrics go through the processors' service.Resources, so Benthos serves
// them with its own (ARCHITECTURE.md: connectors/benthos).
package benthos

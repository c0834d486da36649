// Package daemon is forestd's Kafka daemon (forestd serve) as a library:
// a Config (YAML with defaults: ParseConfig, LoadConfig, DefaultConfig,
// Config.Validate) and Start, which runs the daemon inside the calling
// program until its context ends or Stop is called.
//
// The daemon consumes the features topic and scores every batch with the
// live model (scoring.Model.Score), keeps a bounded window of the labelled
// batches on the training topic and retrains on a schedule, publishes each
// model on the compacted model topic (models larger than a message travel
// in chunks) and its importances, and — with the analyze and select stages
// — runs the dependence analysis of the window, publishes its reports and
// forwards the selected and FDM-mapped columns. Models hot-swap atomically
// (operators.Current): a message is scored entirely by the model pinned to
// it when it was fetched, and versions only move forward. With no brokers
// configured it starts the embedded Kafka-protocol broker on loopback
// (internal/broker), so one call shows it working.
//
// The stages run on pipeline's generic runtime over the Kafka source and
// sink of connectors/kafka, which keep the daemon's promises
// (ARCHITECTURE.md, "The daemon's promises"): an offset is committed only
// after every output derived from its message — predictions, or a dead
// letter with the reason in its headers — is acknowledged; bad input is
// quarantined, never fatal; work in flight and training windows are
// bounded; /metrics, /healthz, /readyz and the status page (package status:
// / and /api/status) are served on the ops address;
// the end of the run drains, commits and leaves the group.
//
// Start opens the ops endpoint before anything that needs the brokers:
// while it waits for unreachable brokers to create the topics, the
// daemon is live (/healthz 200) and not ready (/readyz 503 "waiting for
// brokers HOST:PORT: <last error>", which the status page shows too);
// the end of Start's context during the wait returns at once, with the
// ops endpoint closed. Daemon.Ready answers what the start waits for
// until Start returns, then the daemon's readiness.
package daemon

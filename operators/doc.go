// Package operators holds forestd's streaming operators on arrowforest
// (ARCHITECTURE.md, "Layers"): the hot-swap holder of the live model
// (Current: atomic swaps, versions only forward), training on a bounded
// window of labelled rows with a retrain schedule (Trainer), and — on top
// of arrowforest/dependence and arrowforest/fdm — the dependence report
// (Analyzer: analyze) and the feature selection (Analysis.Select). Composed
// behind select, training maps its window with the latest selection and
// pins that mapping in the model (Trainer.TrainMapped, compose.go), so that
// scoring (package scoring) applies each model's own mapping. Operators
// work on Arrow records and frames only: they open no network connection
// and no file, and own no goroutine; the daemon and the Redpanda Connect
// processors run them.
package operators

// Package operators holds forestd's streaming stages built on arrowforest
// (DESIGN.md §1): scoring with the current model (hot-swapped atomically),
// training on a bounded window of labelled rows with a retrain schedule,
// the importances a trained model publishes, and — on top of
// arrowforest/dependence and arrowforest/fdm — the dependence report
// (analyze) and the feature-selection stage (select). Composed behind
// select, training maps its window with the latest selection and pins that
// mapping in the model (Trainer.TrainMapped, compose.go), and scoring
// applies each model's own mapping. Operators work on
// Arrow records and frames only: they open no network connection and no
// file, and own no goroutine; the pipeline runs them.
package operators

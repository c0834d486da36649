// Package arrowforest is the compute library of forestd: columnar frames
// built from Arrow records (frame), projection atoms and their samplers
// (projection), decision trees (tree), forests with out-of-bag estimates and
// importances (forest), model encoding (model) and the papers' simulated
// data sets (synth).
//
// It knows nothing of Kafka, files, configuration or daemon lifecycles; those
// live in connectors, pipeline and cmd.
package arrowforest

// Package e2e holds end-to-end tests and benchmarks against real peers:
// scikit-learn and ranger reference values (arrowforest/forest/testdata,
// with the commands that produced them), files written by DuckDB and
// Arrow JS (testdata), and the side-by-side peer benchmark scripts
// in e2e/bench.
package e2e

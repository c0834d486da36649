// Package report turns forestd's results into pictures a person reads: SVG
// charts (feature-importance bars, MORF importance heatmaps on a grid or
// series layout as in Fig. 5 of the MORF paper, "Manifold Oblique Random
// Forests", line charts, confusion matrices, residual plots, dependence
// p-values and the discovered feature groups as a graph) and self-contained
// HTML reports of a model (ModelHTML) and of a dependence analysis
// (DependenceHTML). The daemon's status page (package status) and
// `forestd report` draw with the same functions.
//
// Everything here is a pure function of its input: the same model,
// evaluation or analysis gives the same bytes (golden files under
// testdata/, regenerated with `go test ./internal/report -update`). Markup is built
// with html/template only, so every string that comes from data — feature
// names, class labels, reasons — is escaped for the context it lands in;
// the SVG output is also well-formed XML (a page may parse it with
// DOMParser as image/svg+xml). No output loads anything from the network.
//
// Dependence reports are read from the table `forestd analyze --out`
// writes and the daemon publishes (schemas.DependenceReport, ReadDependence),
// with the raw p-values and those the analysis adjusted for its family
// (Holm, Benjamini–Hochberg, or the per-test rule; arrowforest/dependence).
package report

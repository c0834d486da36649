// Package schemas owns the Arrow schemas of everything forestd emits —
// predictions now; importances, dependence reports, locality graphs and
// models as the operators that emit them arrive — and builds records that
// follow them, so every producer (command line, daemon, lake writer) emits
// the same columns with the same names and types.
package schemas

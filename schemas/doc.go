// Package schemas owns the Arrow schemas of the records forestd emits —
// predictions (one output or several), importances, dependence reports and
// locality graphs (models have their own format, package model) — and
// builds records that follow them, so every producer (command line, daemon, lake writer) emits
// the same columns with the same names and types.
package schemas

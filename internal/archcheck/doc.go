// Package archcheck holds no code: its test keeps ARCHITECTURE.md true
// ("Layers" table and "File map") by comparing them with `go list` of the
// forestd module and of connectors/benthos.
package archcheck

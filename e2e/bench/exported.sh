#!/bin/sh
# exported.sh: count the exported identifiers (funcs, methods, types, struct
# fields, consts, vars) of the non-test, non-main, non-internal code of both
# modules, as issue 33 point 6 counts them. Run from the repository root:
#   sh e2e/bench/exported.sh [-v]
set -eu
cd "$(dirname "$0")/../.."
exec go run ./internal/exportcount "$@" . connectors/benthos

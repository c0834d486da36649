#!/usr/bin/env bash
# Runs every fuzz target of the module for a while each (default 30s; e.g.
# `bash e2e/fuzz.sh 2m`), one after another, and fails if any target finds
# a failing input (Go writes it to the package's testdata/fuzz/ — keep it:
# it becomes a regression test). The targets are found, not listed, so a
# new Fuzz function is covered without editing this file.
set -uo pipefail
cd "$(dirname "$0")/.."
TIME=${1:-30s}
status=0
while IFS=: read -r file name; do
  dir=$(dirname "$file")
  echo "== $dir $name"
  if ! go test "./$dir" -run '^$' -fuzz "^$name\$" -fuzztime "$TIME" -fuzzminimizetime 30s -parallel 1; then
    status=1
  fi
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' --exclude-dir=benthos . | sed 's|^\./||; s|:func |:|' | sort)
exit $status

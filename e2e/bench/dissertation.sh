#!/usr/bin/env bash
# Reproduces the dissertation's forest experiments (feature-dependence-
# dissertation.md): Table 6.2 (decision tree with FDM), Table 6.3 (RF with
# FDM_RF and RF_FDM), RF_FDM with searched groups on xor4/xor2 against the
# issue's targets, and LFS against RF on digits, satellite and dna beside
# Table 4.5. Prints the tables beside the published numbers and writes them
# to e2e/bench/results/dissertation-<date>[-quick].md.
#
#   bash e2e/bench/dissertation.sh [--quick] [extra flags for the Go program]
#
# Defaults: 100 seeds per Table 6.2/6.3 cell (the dissertation's 100 runs),
# 10 per target cell, 10 random 50/50 splits per LFS cell, 100 trees (a few
# minutes on the 2-core machine; --quick: 5/2/1 seeds, under a minute).
# Flags: go run ./e2e/bench/dissertation -h.
set -euo pipefail
cd "$(dirname "$0")/../.."
ARGS=()
SUFFIX=""
for a in "$@"; do
  if [ "$a" = "--quick" ]; then
    ARGS+=(-seeds 2 -table-seeds 5 -lfs-seeds 1)
    SUFFIX="-quick"
  else
    ARGS+=("$a")
  fi
done
W=$(mktemp -d /tmp/forestd-diss.XXXXXX)
trap 'rm -rf "$W"' EXIT
go build -o "$W/dissertation" ./e2e/bench/dissertation
mkdir -p e2e/bench/results
OUT="e2e/bench/results/dissertation-$(date -u +%Y-%m-%d)${SUFFIX}.md"
"$W/dissertation" -data testdata "${ARGS[@]+"${ARGS[@]}"}" | tee "$W/out.md"
cp "$W/out.md" "$OUT"
echo "written: $OUT" >&2

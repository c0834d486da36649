#!/usr/bin/env bash
# The newcomer's first command for the Kafka daemon: builds forestd and runs
# `forestd serve --demo`, which starts an embedded Kafka-protocol broker on a
# free loopback port, feeds a simulated Trunk stream (labelled rows to
# forestd.training, unlabelled rows to forestd.features, one malformed
# message), trains and hot-swaps models, scores, prints predictions, per-
# version error and metrics, and stops by itself (about 20 s).
#
#   bash e2e/serve-demo.sh [extra serve flags, e.g. --demo-duration 30s]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/forestd
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/forestd
"$bin" serve --demo "$@"

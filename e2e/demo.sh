#!/usr/bin/env bash
# forestd's batch job end to end on built-in data: generate the Trunk data
# set (Randomer paper), train a random forest, evaluate it on fresh data,
# score a file of rows, inspect the model, and then do the same on a real
# data set shipped in testdata (Parquet written by DuckDB).
set -euo pipefail
BIN=${1:-bin/forestd}
cd "$(dirname "$0")/.."
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "forestd gen trunk: 20,000 training rows and 20,000 test rows, p = 20"
$BIN gen trunk --n 20000 --p 20 --seed 1 --out "$W/train.parquet"
$BIN gen trunk --n 20000 --p 20 --seed 2 --out "$W/test.parquet" >/dev/null

step "forestd train: 200 trees (prints the out-of-bag error, strength and correlation)"
$BIN train --in "$W/train.parquet" --label y --trees 200 --out "$W/trunk.model"

step "forestd eval on the held-out rows"
$BIN eval --model "$W/trunk.model" --in "$W/test.parquet" --label y

step "forestd score: predictions with class probabilities, written as Parquet"
$BIN score --model "$W/trunk.model" --in "$W/test.parquet" --out "$W/pred.parquet"

step "forestd inspect: the five most important features"
$BIN inspect --model "$W/trunk.model" | python3 -c 'import json,sys; m=json.load(sys.stdin); print(json.dumps({k: m[k] for k in ("forest","trees","n_features","classes","oob")}, indent=2)); print("top features:", m["top_features"][:5])'

DATA=testdata
if [ -f $DATA/satellite.parquet ]; then
  step "a real data set: Landsat satellite (6 classes), 500 trees, OOB error"
  $BIN train --in $DATA/satellite.parquet --label label --trees 500 --out "$W/sat.model" \
    | python3 -c 'import json,sys; m=json.load(sys.stdin); print(json.dumps({k: m[k] for k in ("rows","features","classes","seconds","oob")}, indent=2))'
fi

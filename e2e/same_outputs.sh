#!/usr/bin/env bash
# Runs the same forestd commands with two builds and checks that they agree
# byte for byte: model files, prediction files (CSV, Parquet lakes) and every
# command's JSON (timing fields dropped). For refactors that must not change
# behaviour: build the old commit and the new one, then
#
#   git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/forestd-old ./cmd/forestd)
#   go build -o /tmp/forestd-new ./cmd/forestd
#   bash e2e/same_outputs.sh /tmp/forestd-old /tmp/forestd-new
#
# It covers every forest kind (rf, sporf, morf, lfs, fdm, drf, multi-output
# rf) on the data sets in testdata/ and forestd gen's simulations, through
# train, eval, score (file and lake), inspect, analyze and select (file and
# lake). Prints one
# line per compared output and exits 1 on the first difference.
# SAME_PARQUET=data accepts Parquet files whose data pages are identical and
# whose footers differ: for a change of the footer alone, such as the schema
# metadata Parquet files carry since 2026-11-26.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 OLD_FORESTD NEW_FORESTD" >&2; exit 2; }
OLD=$(readlink -f "$1"); NEW=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/data" "$W/old" "$W/new"
D=$W/data
"$NEW" gen xor3 --n 600 --seed 4 --out "$D/xor3.parquet" >/dev/null
"$NEW" gen swissroll --n 500 --seed 2 --out "$D/swiss.parquet" >/dev/null
mkdir -p "$D/lake/part=a" "$D/lake/part=b"
cp "$ROOT/testdata/digits.parquet" "$D/lake/part=a/d.parquet"
cp "$ROOT/testdata/digits.parquet" "$D/lake/part=b/d.parquet"
mkdir -p "$D/swisslake"
cp "$D/swiss.parquet" "$D/swisslake/s.parquet"
mkdir -p "$D/xorlake/part=a" "$D/xorlake/part=b"
cp "$D/xor3.parquet" "$D/xorlake/part=a/x.parquet"
cp "$D/xor3.parquet" "$D/xorlake/part=b/x.parquet"
T=$ROOT/testdata

# run NAME ARGS...: the command in both trees; its stdout goes to NAME.json
run() {
  local name=$1; shift
  for side in old new; do
    local bin=$OLD; [ $side = new ] && bin=$NEW
    (cd "$W/$side" && "$bin" "$@" > "$name.json" 2> "$name.err") || {
      echo "$side: forestd $* failed: $(cat "$W/$side/$name.err")" >&2; exit 1; }
  done
  python3 - "$W/old/$name.json" "$W/new/$name.json" "$name" <<'PY'
import json, sys
drop = {"seconds", "rows_per_second", "setup_seconds", "flush_seconds", "peak_batch_bytes"}
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if k not in drop}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
a, b = (clean(json.load(open(p))) for p in sys.argv[1:3])
if a != b:
    print(f"{sys.argv[3]}: JSON differs\n old {json.dumps(a, sort_keys=True)[:2000]}\n new {json.dumps(b, sort_keys=True)[:2000]}")
    sys.exit(1)
print(f"same JSON   {sys.argv[3]}")
PY
}

# same FILE...: the files the commands wrote are identical (with
# SAME_PARQUET=data, a Parquet file whose footer differs passes when its
# data pages, everything before the footer, are identical)
same() {
  for f in "$@"; do
    if cmp -s "$W/old/$f" "$W/new/$f"; then echo "same bytes  $f"; continue; fi
    if [ "${SAME_PARQUET:-}" = data ] && [ "${f%.parquet}" != "$f" ] && python3 - "$W/old/$f" "$W/new/$f" <<'PY'
import struct, sys
def pages(p):
    b = open(p, "rb").read()
    n = struct.unpack("<I", b[-8:-4])[0]  # footer length, before the closing PAR1
    return b[:len(b) - 8 - n]
sys.exit(0 if pages(sys.argv[1]) == pages(sys.argv[2]) else 1)
PY
    then echo "same pages  $f (footer differs)"; continue; fi
    echo "$f differs" >&2; exit 1
  done
}

# sametree DIR: every file below DIR is identical
sametree() {
  (cd "$W/old" && find "$1" -type f | sort) > "$W/old.list"
  (cd "$W/new" && find "$1" -type f | sort) > "$W/new.list"
  cmp -s "$W/old.list" "$W/new.list" || { echo "$1: different files" >&2; exit 1; }
  while read -r f; do same "$f"; done < "$W/old.list"
}

# model KIND NAME DATA LABEL TRAIN-FLAGS...: train, inspect, eval, score and lake-score
model() {
  local kind=$1 name=$2 data=$3 label=$4; shift 4
  run "$name-train" train --in "$data" --label "$label" --forest "$kind" --trees 20 --seed 3 --threads 2 --out "$name.model" "$@"
  same "$name.model"
  run "$name-inspect" inspect --model "$name.model"
  run "$name-eval" eval --model "$name.model" --in "$data" --label "$label"
  run "$name-score" score --model "$name.model" --in "$data" --out "$name.csv" --threads 2
  same "$name.csv"
  run "$name-score-parquet" score --model "$name.model" --in "$data" --out "$name.parquet" --threads 1
  same "$name.parquet"
}

model rf iris "$T/iris.parquet" label
model rf digits "$T/digits.arrows" label --importance permutation
model sporf sporf "$T/digits.parquet" label --mean-diff
model morf morf "$T/digits.parquet" label --grid 8x8 --patch-max 3x3
model lfs lfs "$T/digits.parquet" label --grid 8x8
model fdm fdm "$D/xor3.parquet" y
model rf regression "$T/diabetes.parquet" target
model rf multi "$D/swiss.parquet" y0,y1,y2
model drf drf "$D/swiss.parquet" y0,y1,y2
run digits-keep score --model digits.model --in "$T/digits.csv.gz" --out digits-keep.arrows --keep label
same digits-keep.arrows
run lake score --model digits.model --in "$D/lake" --out lake-out --threads 2
sametree lake-out
run lake-resume score --model digits.model --in "$D/lake" --out lake-out --resume
run lake-multi score --model drf.model --in "$D/swisslake" --out swiss-out --threads 2
sametree swiss-out
run analyze analyze --in "$D/xor3.parquet" --label y --method mdc-bottomup --seed 1
run select select --in "$D/xor3.parquet" --label y --out selected.parquet --mapping mapping.json --seed 1
same selected.parquet mapping.json
run select-lake select --in "$D/xorlake" --label y --out selected-lake --mapping lake-mapping.json --seed 1 --threads 2
sametree selected-lake
same lake-mapping.json
run select-lake-apply select --in "$D/xorlake" --apply lake-mapping.json --out applied-lake
sametree applied-lake
echo "all outputs identical"

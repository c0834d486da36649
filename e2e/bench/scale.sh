#!/usr/bin/env bash
# Training and scoring at scale (issue 31): for Trunk (p = 50) at n rows,
# the training time, peak RSS (GNU time), model bytes and bytes per node,
# and whole-process scoring rows/s (forestd score of the training rows),
# one row per n and per forestd binary, so an old and a new build run
# side by side in one invocation.
#
#   bash e2e/bench/scale.sh [--sizes "10000 100000 1000000"] [--trees T]
#                           [--threads N] [--max-memory SIZE]
#                           [--forestd BIN]... [--dir DIR] [--keep]
#
# Defaults: n in {10k, 100k, 1M}, 100 trees, 2 threads, the forestd built
# from this tree. Give --forestd several times to compare builds (each row
# names its binary). Data is written by `forestd gen trunk` into DIR
# (default a fresh temporary directory, removed unless --keep).
# Prints a markdown table; exit 0 when every step ran.
#
# TODO(issue 31): the peer columns — ranger, scikit-learn and XGBoost's
# random-forest mode (python3-xgboost) at the sizes each can do — and the
# 10M-row lake sample (--sample 10000000) are not measured yet.
set -euo pipefail

SIZES="10000 100000 1000000" TREES=100 THREADS=2 MAXMEM="" BINS=() DIR="" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) SIZES="$2"; shift ;;
    --trees) TREES="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    --max-memory) MAXMEM="$2"; shift ;;
    --forestd) BINS+=("$2"); shift ;;
    --dir) DIR="$2"; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v /usr/bin/time >/dev/null || { echo "scale.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -z "$DIR" ]; then
  DIR="$(mktemp -d /tmp/forestd-scale-XXXXXX)"
  [ "$KEEP" = 1 ] || trap 'rm -rf "$DIR"' EXIT
fi
mkdir -p "$DIR"
if [ ${#BINS[@]} -eq 0 ]; then
  (cd "$ROOT" && go build -o "$DIR/forestd" ./cmd/forestd)
  BINS=("$DIR/forestd")
fi
MEMFLAG=()
[ -n "$MAXMEM" ] && MEMFLAG=(--max-memory "$MAXMEM")

# peak RSS in MiB and wall seconds of a command, from GNU time
measure() {
  local out="$1"; shift
  /usr/bin/time -f '%M %e' -o "$out.time" "$@" >"$out.json" 2>"$out.err" || { cat "$out.err" >&2; return 1; }
}
jfield() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| n | forestd | train s | peak RSS MiB | model MB | nodes | bytes/node | score rows/s | score peak RSS MiB |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for n in $SIZES; do
  data="$DIR/trunk-$n.parquet"
  [ -f "$data" ] || "${BINS[0]}" gen trunk --n "$n" --p 50 --seed 1 --out "$data" >/dev/null
  for bin in "${BINS[@]}"; do
    tag="$DIR/$(basename "$bin")-$n"
    measure "$tag-train" "$bin" train --in "$data" --label y --trees "$TREES" --threads "$THREADS" \
      "${MEMFLAG[@]}" --out "$tag.model"
    read -r rss secs <"$tag-train.time"
    nodes=$(jfield "$tag-train.json" nodes)
    bytes=$(stat -c %s "$tag.model")
    measure "$tag-score" "$bin" score --model "$tag.model" --in "$data" --out "$tag-pred.parquet"
    read -r srss ssecs <"$tag-score.time"
    rm -f "$tag-pred.parquet"
    awk -v n="$n" -v b="$bin" -v s="$secs" -v r="$rss" -v by="$bytes" -v no="$nodes" -v ss="$ssecs" -v sr="$srss" 'BEGIN {
      printf "| %d | %s | %.1f | %.0f | %.1f | %d | %.1f | %.0f | %.0f |\n", n, b, s, r/1024, by/1e6, no, by/no, n/(ss>0?ss:1e-9), sr/1024 }'
  done
done

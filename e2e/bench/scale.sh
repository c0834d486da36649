#!/usr/bin/env bash
# Training and scoring at scale (issue 31): for Trunk (p = 50) at n rows,
# the training time, peak RSS (GNU time), model bytes and bytes per node,
# scoring rows/s and the error on a test set (100,000 rows of another
# seed), one row per n and per tool, so an old and a new forestd build
# run side by side in one invocation, beside ranger, scikit-learn and
# XGBoost's random-forest mode (scale_xgb.py) at the sizes they can do.
#
#   bash e2e/bench/scale.sh [--sizes "10000 100000 1000000"] [--trees T]
#                           [--threads N] [--max-memory SIZE]
#                           [--forestd BIN]... [--dir DIR] [--keep]
#                           [--lake-rows N] [--peers LIST] [--peer-max N]
#
# Defaults: n in {10k, 100k, 1M}, 100 trees, 2 threads, the forestd built
# from this tree. Give --forestd several times to compare builds (each row
# names its binary). Data is written by `forestd gen trunk` into DIR
# (default a fresh temporary directory, removed unless --keep).
# --lake-rows N adds a row for N rows sampled from a lake (N/1M files of a
# million rows each, `forestd train --in DIR --sample N`; forestd only).
# --peers (default "ranger sklearn xgboost", those installed: Debian's
# r-cran-ranger, python3-sklearn, python3-xgboost) run on CSV copies up to
# --peer-max rows (default 1000000); "none" skips them.
# "train CPU s" is user + system CPU seconds: forestd's whole train process
# (GNU time), a peer's fit alone (its own process clock), the measure to
# compare on a loaded machine. forestd's score rows/s is a whole process
# (`forestd score` of the test Parquet, reading and writing included); the
# peers' is their in-memory predict of the test rows. Prints a markdown
# table; exit 0 when every step ran.
set -euo pipefail

SIZES="10000 100000 1000000" TREES=100 THREADS=2 MAXMEM="" BINS=() DIR="" KEEP=0
LAKE_ROWS="" PEERS="ranger sklearn xgboost" PEER_MAX=1000000
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) SIZES="$2"; shift ;;
    --trees) TREES="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    --max-memory) MAXMEM="$2"; shift ;;
    --forestd) BINS+=("$2"); shift ;;
    --dir) DIR="$2"; shift ;;
    --keep) KEEP=1 ;;
    --lake-rows) LAKE_ROWS="$2"; shift ;;
    --peers) PEERS="$2"; shift ;;
    --peer-max) PEER_MAX="$2"; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$PEERS" = none ] && PEERS=""
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
HERE="$ROOT/e2e/bench"
PY=/usr/bin/python3
have_peer() {
  case "$1" in
    ranger) Rscript -e 'suppressPackageStartupMessages(library(ranger))' >/dev/null 2>&1 ;;
    sklearn) "$PY" -c 'import sklearn' >/dev/null 2>&1 ;;
    xgboost) "$PY" -c 'import xgboost' >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}
RUN_PEERS=()
for peer in $PEERS; do
  if have_peer "$peer"; then RUN_PEERS+=("$peer"); else echo "scale.sh: $peer is not installed, skipped" >&2; fi
done
MEMFLAG=()
[ -n "$MAXMEM" ] && MEMFLAG=(--max-memory "$MAXMEM")

# peak RSS in MiB and wall seconds of a command, from GNU time
measure() {
  local out="$1"; shift
  /usr/bin/time -f '%M %e %U %S' -o "$out.time" "$@" >"$out.json" 2>"$out.err" || { cat "$out.err" >&2; return 1; }
}
jfield() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
test="$DIR/trunk-test.parquet"
[ -f "$test" ] || "${BINS[0]}" gen trunk --n 100000 --p 50 --seed 2 --out "$test" >/dev/null
if [ ${#RUN_PEERS[@]} -gt 0 ] && [ ! -f "$DIR/trunk-test.csv" ]; then
  "${BINS[0]}" gen trunk --n 100000 --p 50 --seed 2 --out "$DIR/trunk-test.csv" >/dev/null
fi
echo "| n | tool | train s | train CPU s | peak RSS MiB | model MB | nodes | bytes/node | score rows/s | test error |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"

# forestd_row N TAG BIN TRAIN-ARGS...: train, score the test rows, evaluate
forestd_row() {
  local n="$1" tag="$2" bin="$3"; shift 3
  measure "$tag-train" "$bin" train "$@" --label y --trees "$TREES" --threads "$THREADS" \
    "${MEMFLAG[@]}" --out "$tag.model"
  read -r rss secs usr sys <"$tag-train.time"
  nodes=$(jfield "$tag-train.json" nodes)
  bytes=$(stat -c %s "$tag.model")
  measure "$tag-score" "$bin" score --model "$tag.model" --in "$test" --threads "$THREADS" --out "$tag-pred.parquet"
  read -r srss ssecs <"$tag-score.time"
  rm -f "$tag-pred.parquet"
  "$bin" eval --model "$tag.model" --in "$test" --label y --threads "$THREADS" >"$tag-eval.json"
  err=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('error', 1-d.get('accuracy', 1)))" "$tag-eval.json")
  rm -f "$tag.model"
  awk -v n="$n" -v b="$bin" -v s="$secs" -v r="$rss" -v by="$bytes" -v no="$nodes" -v ss="$ssecs" -v e="$err" -v c="$usr $sys" 'BEGIN {
    split(c, cs, " ")
    printf "| %d | %s | %.1f | %.1f | %.0f | %.1f | %d | %.1f | %.0f | %.4f |\n", n, b, s, cs[1]+cs[2], r/1024, by/1e6, no, by/no, 100000/(ss>0?ss:1e-9), e }'
}

# peer_row N PEER: a peer on the CSV of n rows
peer_row() {
  local n="$1" peer="$2" csv="$DIR/trunk-$1.csv" tag="$DIR/$2-$1"
  [ -f "$csv" ] || "${BINS[0]}" gen trunk --n "$n" --p 50 --seed 1 --out "$csv" >/dev/null
  case "$peer" in
    ranger) /usr/bin/time -f '%M %e' -o "$tag.time" Rscript "$HERE/peers_ranger.R" trunk "$csv" "$DIR/trunk-test.csv" y \
              "$TREES" "$THREADS" 1 "$tag.json" 2>"$tag.err" || { cat "$tag.err" >&2; return 1; } ;;
    sklearn) /usr/bin/time -f '%M %e' -o "$tag.time" "$PY" "$HERE/peers_sklearn.py" trunk --train "$csv" \
              --test "$DIR/trunk-test.csv" --label y --trees "$TREES" --threads "$THREADS" --seed 1 --out "$tag.json" 2>"$tag.err" ||
              { cat "$tag.err" >&2; return 1; } ;;
    xgboost) /usr/bin/time -f '%M %e' -o "$tag.time" "$PY" "$HERE/scale_xgb.py" --train "$csv" --test "$DIR/trunk-test.csv" \
              --label y --trees "$TREES" --threads "$THREADS" --seed 1 --out "$tag.json" 2>"$tag.err" ||
              { cat "$tag.err" >&2; return 1; } ;;
  esac
  read -r rss _ <"$tag.time"
  python3 - "$tag.json" "$n" "$peer" "$rss" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))["trunk"]
print("| %s | %s | %.1f | %.1f | %.0f | | | | %.0f | %.4f |" % (sys.argv[2], sys.argv[3], r["train_seconds"],
      r["train_cpu_seconds"], int(sys.argv[4]) / 1024, r["predict_rows_per_s"], r["error"]))
PYEOF
}

for n in $SIZES; do
  data="$DIR/trunk-$n.parquet"
  [ -f "$data" ] || "${BINS[0]}" gen trunk --n "$n" --p 50 --seed 1 --out "$data" >/dev/null
  for bin in "${BINS[@]}"; do
    forestd_row "$n" "$DIR/$(basename "$bin")-$n" "$bin" --in "$data"
  done
  if [ "$n" -le "$PEER_MAX" ]; then
    for peer in "${RUN_PEERS[@]}"; do peer_row "$n" "$peer"; done
  fi
  rm -f "$DIR/trunk-$n.csv"
done

if [ -n "$LAKE_ROWS" ]; then
  lake="$DIR/lake"
  mkdir -p "$lake"
  files=$(( (LAKE_ROWS + 999999) / 1000000 ))
  for k in $(seq 1 "$files"); do
    [ -f "$lake/part-$k.parquet" ] || "${BINS[0]}" gen trunk --n 1000000 --p 50 --seed $((100 + k)) --out "$lake/part-$k.parquet" >/dev/null
  done
  for bin in "${BINS[@]}"; do
    forestd_row "$LAKE_ROWS" "$DIR/$(basename "$bin")-lake" "$bin" --in "$lake" --sample "$LAKE_ROWS"
  done
  [ "$KEEP" = 1 ] || rm -rf "$lake"
fi

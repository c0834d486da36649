#!/usr/bin/env bash
# Whole-process scoring against scikit-learn (issue 31): `forestd score`
# of N Trunk rows (p = 50) from Parquet to a predictions Parquet file —
# loading the model, reading, scoring and writing, as a user runs it —
# beside scikit-learn's in-memory RandomForestClassifier.predict of the
# same rows (peers_sklearn.py: the fastest of 3 predictions; reading the
# CSV is outside its time), both forests of the same size trained on the
# same training rows, with the ratio of their rows per second, in one
# invocation.
#
#   bash e2e/bench/score_sklearn.sh [--rows N] [--train-rows N] [--trees T]
#                                   [--threads N] [--forestd BIN]...
#                                   [--dir DIR] [--keep] [--no-sklearn]
#
# Defaults: 1,000,000 rows scored, a forest trained on 100,000 rows, 100
# trees, 2 threads, the forestd built from this tree. Give --forestd several
# times to compare builds (each row names its binary; the first trains the
# model they all score). Wall and CPU seconds (user + system, GNU time) and
# peak RSS of each `forestd score`; scikit-learn's wall and CPU seconds of
# predict. The ratios are of rows per wall second and, steadier on a shared
# machine, rows per CPU second. Needs Debian's python3-sklearn and
# python3-pandas.
set -euo pipefail

ROWS=1000000 TRAIN=100000 TREES=100 THREADS=2 BINS=() DIR="" KEEP=0 SK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift ;;
    --train-rows) TRAIN="$2"; shift ;;
    --trees) TREES="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    --forestd) BINS+=("$(readlink -f "$2")"); shift ;;
    --dir) DIR="$2"; shift ;;
    --keep) KEEP=1 ;;
    --no-sklearn) SK=0 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "score_sklearn.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v /usr/bin/time >/dev/null || { echo "score_sklearn.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -z "$DIR" ]; then
  DIR="$(mktemp -d /tmp/forestd-score-sklearn-XXXXXX)"
  [ "$KEEP" = 1 ] || trap 'rm -rf "$DIR"' EXIT
fi
mkdir -p "$DIR"
if [ ${#BINS[@]} -eq 0 ]; then
  (cd "$ROOT" && go build -o "$DIR/forestd" ./cmd/forestd)
  BINS=("$DIR/forestd")
fi
if [ "$SK" = 1 ] && ! /usr/bin/python3 -c 'import sklearn, pandas' 2>/dev/null; then
  echo "score_sklearn.sh: scikit-learn or pandas is missing (apt-get install python3-sklearn python3-pandas)" >&2
  exit 1
fi
B0="${BINS[0]}"
train="$DIR/train-$TRAIN.parquet" test="$DIR/test-$ROWS.parquet" model="$DIR/trunk-$TRAIN-$TREES.model"
[ -f "$train" ] || "$B0" gen trunk --n "$TRAIN" --p 50 --seed 3 --out "$train" >/dev/null
[ -f "$test" ] || "$B0" gen trunk --n "$ROWS" --p 50 --seed 1 --out "$test" >/dev/null
[ -f "$model" ] || "$B0" train --in "$train" --label y --trees "$TREES" --threads "$THREADS" --seed 1 --out "$model" >/dev/null

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Trunk p = 50: $ROWS rows scored, $TREES trees trained on $TRAIN rows, $THREADS threads"
echo
echo "| tool | what is timed | wall s | CPU s | peak RSS MiB | rows/s (wall) |"
echo "|---|---|---:|---:|---:|---:|"
declare -A RPS CPS
for bin in "${BINS[@]}"; do
  out="$DIR/pred.parquet"
  /usr/bin/time -f '%e %U %S %M' -o "$DIR/score.time" "$bin" score --model "$model" --in "$test" \
    --threads "$THREADS" --out "$out" >/dev/null
  read -r wall usr sys rss <"$DIR/score.time"
  rm -f "$out"
  RPS[$bin]=$(awk -v n="$ROWS" -v w="$wall" 'BEGIN { printf "%.0f", n / (w > 0 ? w : 1e-9) }')
  CPS[$bin]=$(awk -v n="$ROWS" -v u="$usr" -v s="$sys" 'BEGIN { printf "%.0f", n / (u + s > 0 ? u + s : 1e-9) }')
  awk -v b="$bin" -v w="$wall" -v u="$usr" -v s="$sys" -v r="$rss" -v rps="${RPS[$bin]}" 'BEGIN {
    printf "| forestd %s | whole process: load, read Parquet, score, write Parquet | %.2f | %.2f | %.0f | %d |\n", b, w, u + s, r / 1024, rps }'
done
if [ "$SK" = 1 ]; then
  [ -f "$DIR/train.csv" ] || "$B0" gen trunk --n "$TRAIN" --p 50 --seed 3 --out "$DIR/train.csv" >/dev/null
  [ -f "$DIR/test.csv" ] || "$B0" gen trunk --n "$ROWS" --p 50 --seed 1 --out "$DIR/test.csv" >/dev/null
  /usr/bin/python3 "$ROOT/e2e/bench/peers_sklearn.py" trunk --train "$DIR/train.csv" --test "$DIR/test.csv" --label y \
    --trees "$TREES" --threads "$THREADS" --seed 1 --out "$DIR/sklearn.json" >/dev/null
  read -r skw skc skrps < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["trunk"]; print(r["predict_seconds"], r["predict_cpu_seconds"], r["predict_rows_per_s"])' "$DIR/sklearn.json")
  awk -v w="$skw" -v c="$skc" -v rps="$skrps" 'BEGIN {
    printf "| scikit-learn | in-memory predict (best of 3) | %.2f | %.2f | | %.0f |\n", w, c, rps }'
  echo
  for bin in "${BINS[@]}"; do
    awk -v b="$bin" -v f="${RPS[$bin]}" -v s="$skrps" -v fc="${CPS[$bin]}" -v n="$ROWS" -v sc="$skc" 'BEGIN {
      printf "forestd %s ÷ scikit-learn: rows/s %.2f×, rows per CPU second %.2f×\n", b, f / s, fc / (n / sc) }'
  done
fi

#!/usr/bin/env bash
# Lake scoring benchmark: rows/s scoring a hive-partitioned Parquet lake of
# >= 2 million rows with a 100-tree forest, side by side in one run with
#   (a) merely reading the same columns with the same reader
#       (forestd score --dry-run: decodes the model's columns, scores nothing)
#   (b) scoring the same rows from memory
#       (forestd score --out FILE reads everything first; its "seconds" time
#        the scoring alone)
# and the peak RSS of the lake run (GNU time) against --max-memory.
#
#   bash e2e/bench/lake.sh [--files F] [--rows-per-file N] [--p P] [--trees T]
#                          [--max-memory SIZE] [--repeat R] [--forestd BIN] [--keep]
#
# Defaults: 8 files x 250,000 rows (Trunk, p = 16, one day partition each),
# 100 trees trained on a 50,000-row reservoir sample of the lake, 512MiB.
# With --repeat R the three measurements alternate R times and the medians
# are reported. Prints a markdown report and writes it to
# e2e/bench/results/lake-<date>.md; exit 0 when every step ran.
set -euo pipefail

main() {
FILES=8 ROWS=250000 P=16 TREES=100 MAXMEM=512MiB REPEAT=1 BIN="" KEEP=0
ORIG_ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --files) FILES="$2"; shift ;;
    --rows-per-file) ROWS="$2"; shift ;;
    --p) P="$2"; shift ;;
    --trees) TREES="$2"; shift ;;
    --max-memory) MAXMEM="$2"; shift ;;
    --repeat) REPEAT="$2"; shift ;;
    --forestd) BIN="$2"; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "lake.sh: unknown argument $1 (try --help)" >&2; exit 1 ;;
  esac
  shift
done
[ -x /usr/bin/time ] || { echo "lake.sh: GNU time (/usr/bin/time) is missing: apt-get install -y time" >&2; exit 1; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP="$(mktemp -d /tmp/forestd-lakebench.XXXXXX)"
if [ "$KEEP" = 0 ]; then trap 'rm -rf "$TMP"' EXIT; fi
log() { printf 'lake.sh: %s\n' "$*" >&2; }
if [ -z "$BIN" ]; then
  log "building forestd"
  (cd "$ROOT" && go build -o "$TMP/forestd" ./cmd/forestd)
  BIN="$TMP/forestd"
fi
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d$2)" "$1"; }

log "generating the lake: $FILES files x $ROWS rows, p = $P"
for i in $(seq 1 "$FILES"); do
  d="$TMP/lake/day=2026-11-$(printf %02d "$i")"
  mkdir -p "$d"
  "$BIN" gen trunk --n "$ROWS" --p "$P" --seed "$i" --out "$d/part-0.parquet" >/dev/null
done
TOTAL=$((FILES * ROWS))
log "training $TREES trees on a 50,000-row sample"
"$BIN" train --in "$TMP/lake" --label y --sample 50000 --trees "$TREES" --seed 1 --out "$TMP/m.model" > "$TMP/train.json"

lake_r=() read_r=() mem_r=() rss_r=()
for r in $(seq 1 "$REPEAT"); do
  log "run $r/$REPEAT: read only"
  "$BIN" score --model "$TMP/m.model" --in "$TMP/lake" --out "$TMP/dry" --dry-run --max-memory "$MAXMEM" > "$TMP/read.json"
  read_r+=("$(json "$TMP/read.json" "['rows_per_second']")")
  log "run $r/$REPEAT: lake scoring"
  rm -rf "$TMP/out"
  /usr/bin/time -v -o "$TMP/time.txt" "$BIN" score --model "$TMP/m.model" --in "$TMP/lake" --out "$TMP/out" \
    --max-memory "$MAXMEM" > "$TMP/lake.json"
  lake_r+=("$(json "$TMP/lake.json" "['rows_per_second']")")
  rss_r+=("$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$TMP/time.txt")")
  [ "$(json "$TMP/lake.json" "['rows']")" = "$TOTAL" ] || { log "lake run scored $(json "$TMP/lake.json" "['rows']") rows, want $TOTAL"; exit 1; }
  log "run $r/$REPEAT: in-memory scoring"
  "$BIN" score --model "$TMP/m.model" --in "$TMP/lake" --out "$TMP/mem.parquet" > "$TMP/mem.json"
  mem_r+=("$(json "$TMP/mem.json" "['rows_per_second']")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
LAKE=$(median "${lake_r[@]}") READ=$(median "${read_r[@]}") MEM=$(median "${mem_r[@]}") RSS=$(median "${rss_r[@]}")
MAXB=$(json "$TMP/lake.json" "['max_memory']")
NODES=$(json "$TMP/train.json" "['nodes']")
REPORT="$HERE/results/lake-$(date +%F).md"
mkdir -p "$HERE/results"
/usr/bin/python3 - "$LAKE" "$READ" "$MEM" "$RSS" "$MAXB" <<EOF | tee "$REPORT"
import sys
lake, read, mem, rss_kb, maxb = map(float, sys.argv[1:])
rss = rss_kb * 1024
print("## Lake scoring: $FILES files, $TOTAL rows, p = $P, $TREES trees ($NODES nodes), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)")
print()
print("| measurement | rows/s | lake ÷ this |")
print("|---|---:|---:|")
print(f"| lake scoring (read + score + write, wall) | {lake:,.0f} | 1.00 |")
print(f"| (a) read the model's columns only | {read:,.0f} | {lake/read:.3f} |")
print(f"| (b) in-memory scoring of the same rows | {mem:,.0f} | {lake/mem:.3f} |")
print()
ok = "met" if lake / mem >= 0.8 else "NOT met"
print(f"target lake ≥ 0.8 × in-memory: {lake/mem:.2f}× → {ok}")
okm = "met" if rss < maxb else "NOT met"
print(f"peak RSS {rss/2**20:.0f} MiB vs --max-memory {maxb/2**20:.0f} MiB → {okm}")
runs = lambda s: ", ".join(f"{float(x):,.0f}" for x in s.split())
print(f"(medians of $REPEAT run(s); rows/s per run: lake {runs('${lake_r[*]}')}; read {runs('${read_r[*]}')}; in-memory {runs('${mem_r[*]}')}; peak RSS KiB {' '.join('${rss_r[*]}'.split())})")
print()
print("Command: bash e2e/bench/lake.sh $ORIG_ARGS")
EOF
}
main "$@"

#!/usr/bin/env bash
# Class-count benchmark: how forestd's and ranger's random-forest training
# time grow with the number of classes K, rows and features held fixed, on
# this machine, in one run, on the same files. See e2e/bench/README.md.
#
#   bash e2e/bench/manyclass.sh [--forestd BIN] [--baseline BIN] [--ks "4 26 100 500"]
#                               [--reps R] [--ranger-reps R] [--no-letter] [--keep]
#
#   --forestd BIN   use this binary instead of building ./cmd/forestd
#   --baseline BIN  also time this forestd binary, run by run alternating with
#                   --forestd (A/B), and report the median new/old ratio
#   --ks LIST       class counts of the synthetic sets (default "4 26 100 500")
#   --reps R        forestd runs per data set (default 3; medians reported)
#   --ranger-reps R ranger runs per data set (default 1; K = 500 takes minutes)
#   --no-letter     skip testdata/letter_recognition (26 classes, 16 features)
#   --keep          keep the scratch directory (printed at the end)
#
# Data: gen_manyclass.py --n 20000 --p 40 --k K --seed 1 (K equally likely
# classes, class means N(0, 0.25 I), unit noise), and letter_recognition.
# forestd: `forestd train --forest rf --task classification --trees 100
# --threads 2 --seed 1` (defaults otherwise: binned search, mtry =
# floor(sqrt(p))); --task classification because under --task auto an
# integer label of more than 32 values is a regression target
# (frame.MaxAutoClasses). Its time is
# the `seconds` of train's JSON (forest.Train: growing and the out-of-bag
# pass, not reading the CSV or writing the model), its CPU the user + sys
# of the whole command. ranger: manyclass_ranger.R, ranger() at 100 trees,
# 2 threads, default mtry, timed around ranger() alone.
#
# Writes e2e/bench/results/manyclass-<date>.{md,tsv} and prints the report.
set -euo pipefail

main() {
FORESTD_BIN="" BASE_BIN="" KS="4 26 100 500" REPS=3 RREPS=1 LETTER=1 KEEP=0
ORIG_ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --forestd) FORESTD_BIN="${2:?--forestd needs a path}"; shift ;;
    --baseline) BASE_BIN="${2:?--baseline needs a path}"; shift ;;
    --ks) KS="${2:?--ks needs a list}"; shift ;;
    --reps) REPS="${2:?--reps needs a number}"; shift ;;
    --ranger-reps) RREPS="${2:?--ranger-reps needs a number}"; shift ;;
    --no-letter) LETTER=0 ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "manyclass.sh: error: unknown argument $1 (try --help)" >&2; exit 1 ;;
  esac
  shift
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
TREES=100 THREADS=2 SEED=1 P=40
N=${MANYCLASS_N:-20000}        # rows of the synthetic sets (smaller only for a smoke test)
log() { printf 'manyclass.sh: %s\n' "$*" >&2; }
die() { printf 'manyclass.sh: error: %s\n' "$*" >&2; exit 1; }

command -v Rscript >/dev/null 2>&1 && Rscript -e 'suppressMessages({library(ranger); library(jsonlite); library(data.table)})' >/dev/null 2>&1 ||
  die "Rscript with ranger, jsonlite and data.table is missing: apt-get install r-cran-ranger r-cran-jsonlite r-cran-data.table"
"$PY" -c 'import numpy' >/dev/null 2>&1 || die "numpy for $PY is missing: apt-get install python3-numpy"
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is missing: apt-get install time"

TMP="$(mktemp -d /tmp/forestd-manyclass.XXXXXX)"
cleanup() { if [ "$KEEP" = 1 ]; then log "scratch kept in $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
if [ -z "$FORESTD_BIN" ]; then
  log "building forestd"
  (cd "$ROOT" && go build -o "$TMP/forestd" ./cmd/forestd) || die "go build ./cmd/forestd failed"
  FORESTD_BIN="$TMP/forestd"
fi
[ -x "$FORESTD_BIN" ] || die "$FORESTD_BIN is not executable"
[ -z "$BASE_BIN" ] || [ -x "$BASE_BIN" ] || die "$BASE_BIN is not executable"

SETS=()
for k in $KS; do
  log "gen_manyclass.py --n $N --p $P --k $k --seed 1"
  "$PY" "$HERE/gen_manyclass.py" --n "$N" --p "$P" --k "$k" --seed 1 --out "$TMP/k$k.csv"
  SETS+=("k$k")
done
if [ "$LETTER" = 1 ]; then
  gzip -dc "$ROOT/testdata/letter_recognition.csv.gz" >"$TMP/letter.csv"
  SETS+=(letter)
fi

RAW="$TMP/runs.tsv"
printf 'set\ttool\trep\ttrain_s\tcpu_s\twall_s\tmodel_bytes\n' >"$RAW"
# forestd_run TAG BIN SET REP: one train; its model is kept as $TMP/TAG_SET.fdm
forestd_run() {
  local out="$TMP/$1_$3.fdm"
  /usr/bin/time -f '%e %U %S' -o "$TMP/time.txt" \
    "$2" train --in "$TMP/$3.csv" --label label --out "$out" --forest rf --task classification \
    --trees "$TREES" --threads "$THREADS" --seed "$SEED" >"$TMP/train.json" || die "forestd train on $3 failed"
  local secs; secs="$("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["task"] == "classification", j["task"]; print(j["seconds"])' "$TMP/train.json")" ||
    die "forestd on $3 did not train a classification forest"
  read -r wall usr sys <"$TMP/time.txt"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$3" "$1" "$4" "$secs" "$(echo "$usr + $sys" | bc)" "$wall" "$(stat -c %s "$out")" >>"$RAW"
}
ranger_run() {
  Rscript "$HERE/manyclass_ranger.R" "$TMP/$1.csv" label "$TREES" "$THREADS" "$SEED" >"$TMP/ranger.json" || die "ranger on $1 failed"
  "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%s\tranger\t%s\t%s\t%s\t\t" % (sys.argv[2], sys.argv[3], j["train_seconds"], j["train_cpu_seconds"]))' \
    "$TMP/ranger.json" "$1" "$2" >>"$RAW"
}

# the tools alternate run by run, so that a change of load on the shared
# machine falls on all of them
for set in "${SETS[@]}"; do
  for rep in $(seq 1 "$REPS"); do
    log "$set: run $rep of $REPS"
    forestd_run new "$FORESTD_BIN" "$set" "$rep"
    if [ -n "$BASE_BIN" ]; then
      forestd_run old "$BASE_BIN" "$set" "$rep"
      cmp -s "$TMP/new_$set.fdm" "$TMP/old_$set.fdm" || die "$set: the two binaries' models differ"
    fi
    [ "$rep" -le "$RREPS" ] && ranger_run "$set" "$rep"
  done
done

DATE="$(date +%Y-%m-%d)"
OUT="$HERE/results/manyclass-$DATE"
cp "$RAW" "$OUT.tsv"
CPU="$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
RV="$(Rscript -e 'cat(as.character(packageVersion("ranger")))')"
"$PY" - "$RAW" "$OUT.md" "$CPU" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$RV" \
  "$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$ORIG_ARGS" "$BASE_BIN" "$N" <<'PYEOF'
import csv, statistics as st, sys
raw, out, cpu, ncpu, load, rv, commit, args, base, nrows = sys.argv[1:11]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
sets = list(dict.fromkeys(r["set"] for r in rows))
def med(s, tool, col):
    v = [float(r[col]) for r in rows if r["set"] == s and r["tool"] == tool and r[col]]
    return st.median(v) if v else float("nan")
def n(s, tool):
    return sum(1 for r in rows if r["set"] == s and r["tool"] == tool)
L = ["# forestd vs ranger: training time against the number of classes", ""]
L.append("Machine: %s, %s cores (shared; load average %s at the end). forestd commit %s, ranger %s." % (cpu, ncpu, load, commit, rv))
L.append("")
L.append("Command: `%sbash e2e/bench/manyclass.sh %s`" % ("" if nrows == "20000" else "MANYCLASS_N=%s " % nrows, args))
L.append("")
L.append("Data: `gen_manyclass.py --n %s --p 40 --k K --seed 1` (K equally likely classes, class means "
         "N(0, 0.25·I), unit Gaussian noise) and letter_recognition (20,000 rows, 16 features, 26 classes). "
         "forestd: `forestd train --forest rf --task classification --trees 100 --threads 2 --seed 1` (binned search, mtry = floor(sqrt(p))); "
         "train s = the `seconds` of its JSON (forest.Train: trees and OOB pass), CPU s = user+sys of the whole command "
         "(reading the CSV and writing the model included). ranger: `ranger(num.trees = 100, num.threads = 2, seed = 1)`, "
         "default mtry, time and CPU of ranger() alone. Medians over the runs; growth = time / time at the smallest K." % nrows)
L.append("")
L.append("| data | K | forestd train s | forestd CPU s | ranger train s | ranger CPU s | forestd/ranger (train s) | forestd/ranger (CPU) | forestd growth (CPU) | ranger growth (CPU) | runs f/r |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
syn = [s for s in sets if s.startswith("k")]
b = syn[0] if syn else None
for s in sets:
    k = s[1:] if s.startswith("k") else "26"
    ft, fc, rt, rc = med(s, "new", "train_s"), med(s, "new", "cpu_s"), med(s, "ranger", "train_s"), med(s, "ranger", "cpu_s")
    gf = gr = ""
    if s in syn:
        gf = "%.2f×" % (fc / med(b, "new", "cpu_s"))
        gr = "%.2f×" % (rc / med(b, "ranger", "cpu_s"))
    L.append("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %s | %s | %d/%d |" % (
        "letter_recognition" if s == "letter" else "gaussian", k, ft, fc, rt, rc, ft / rt, fc / rc, gf, gr, n(s, "new"), n(s, "ranger")))
if base:
    L += ["", "A/B against the baseline binary `%s` (runs alternating, models compared with cmp: identical):" % base, "",
          "| data | old train s | new train s | median new/old (train s) | median new/old (CPU) |", "|---|---:|---:|---:|---:|"]
    for s in sets:
        o = {r["rep"]: r for r in rows if r["set"] == s and r["tool"] == "old"}
        nw = {r["rep"]: r for r in rows if r["set"] == s and r["tool"] == "new"}
        reps = sorted(set(o) & set(nw))
        rt = st.median(float(nw[r]["train_s"]) / float(o[r]["train_s"]) for r in reps)
        rc = st.median(float(nw[r]["cpu_s"]) / float(o[r]["cpu_s"]) for r in reps)
        L.append("| %s | %.2f | %.2f | %.3f | %.3f |" % (s, med(s, "old", "train_s"), med(s, "new", "train_s"), rt, rc))
L += ["", "Raw runs: `%s`." % out.rsplit("/", 1)[-1].replace(".md", ".tsv")]
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
PYEOF
log "wrote $OUT.md and $OUT.tsv"
}
main "$@"

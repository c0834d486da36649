#!/usr/bin/env bash
# Side-by-side peer benchmark: forestd vs ranger (R) vs scikit-learn, on this
# machine, in one run, on the same files. See e2e/bench/README.md.
#
#   bash e2e/bench/peers.sh [--quick] [--peers-only] [--only trunk|cv] [--tune] [--forestd BIN]
#                           [--data DIR] [--keep] [--seed S]
#
#   --quick       Trunk n = 20,000 (train and test) and 2-fold CV: a smoke run
#   --peers-only  skip forestd: Trunk drawn by gen_trunk.py (numpy) instead of
#                 `forestd gen`; only ranger and sklearn run
#   --only PART   run only the Trunk timings (trunk) or only the CV accuracies (cv)
#   --tune        the CV also runs forestd train --tune (out-of-bag choice of
#                 max-features and min-leaf) beside the defaults
#   --forestd BIN use this binary instead of building ./cmd/forestd
#   --data DIR    the shared data sets (default: <repo>/testdata)
#   --keep        keep the scratch directory (printed at the end)
#   --seed S      the forests' seed, every tool (default 1; the folds stay
#                 fixed): runs at several seeds pool with peers_pool.py
#
# Writes e2e/bench/results/peers-<date>[-quick][-peers-only][-trunk|-cv][-tune][-seedS].{md,json} and
# prints the markdown report. Exit status: 0 when every tool ran (targets met
# or not: the report says), 1 when a tool is missing or a step failed.
set -euo pipefail

# The whole script is one function, parsed before it runs, so that editing this
# file while a run is in progress cannot change what the running copy executes.
main() {
QUICK=0 PEERS_ONLY=0 KEEP=0 FORESTD_BIN="" DATA="" ONLY="" TUNE=0 SEED_ARG=""
ORIG_ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --peers-only) PEERS_ONLY=1 ;;
    --keep) KEEP=1 ;;
    --seed) SEED_ARG="${2:?--seed needs a number}"; shift
            case "$SEED_ARG" in ''|*[!0-9]*) echo "peers.sh: error: --seed takes a non-negative integer" >&2; exit 1 ;; esac ;;
    --tune) TUNE=1 ;;
    --forestd) FORESTD_BIN="${2:?--forestd needs a path}"; shift ;;
    --data) DATA="${2:?--data needs a directory}"; shift ;;
    --only) ONLY="${2:?--only needs trunk or cv}"; shift
            case "$ONLY" in trunk|cv) ;; *) echo "peers.sh: error: --only takes trunk or cv" >&2; exit 1 ;; esac ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "peers.sh: error: unknown argument $1 (try --help)" >&2; exit 1 ;;
  esac
  shift
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATA="${DATA:-${FORESTD_DATA:-$ROOT/testdata}}"
PY=/usr/bin/python3          # Debian's python3: the one python3-sklearn installs into
THREADS=2
P=50
TRUNK_TREES=100
CV_TREES=500
SEED=${SEED_ARG:-1}          # forest seed, all tools (--seed)
TRAIN_SEED=1 TEST_SEED=2     # Trunk generator seeds
FOLD_SEED=20240601
CV_SETS=(digits satellite letter_recognition dna)
if [ "$QUICK" = 1 ]; then N=20000; K=2; else N=100000; K=5; fi
TIMEOUT_TRUNK=${PEERS_TIMEOUT_TRUNK:-3600}   # seconds, per tool
TIMEOUT_CV=${PEERS_TIMEOUT_CV:-10800}        # seconds, per tool
export PEERS_TIMEOUT_TRUNK=$TIMEOUT_TRUNK

log() { printf 'peers.sh: %s\n' "$*" >&2; }
die() { printf 'peers.sh: error: %s\n' "$*" >&2; exit 1; }

TMP="$(mktemp -d /tmp/forestd-peers.XXXXXX)"
cleanup() { if [ "$KEEP" = 1 ]; then log "scratch kept in $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
RUN="$TMP/run"; mkdir -p "$RUN"
CMDS=()
note() { CMDS+=("$*"); }
# Timings are only comparable on an idle machine. Before each step (when none
# of ours runs) sample how busy the CPUs are over 2 s: that is other load.
# (The load average lags by minutes and would count our previous step.)
LOADS=()   # "step busy_percent load1"
busy_pct() {
  local a b
  read -r -a a < /proc/stat; sleep 2; read -r -a b < /proc/stat
  awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN { n = split(a, x, " "); split(b, y, " ");
    t = 0; for (i = 2; i <= n; i++) t += y[i] - x[i];
    idle = (y[5] - x[5]) + (y[6] - x[6]);
    printf "%.0f", (t > 0 ? 100 * (t - idle) / t : 0) }'
}
load() {
  local b; b="$(busy_pct)"
  LOADS+=("$1 $b $(cut -d' ' -f1 /proc/loadavg)")
  [ "$b" -gt 10 ] && log "warning: CPUs ${b}% busy with other processes before step $1: timings will be inflated"
  return 0
}
load start

# ---------------------------------------------------------------- 1. tools
have_time()    { [ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1; }
have_sklearn() { [ -x "$PY" ] && "$PY" -c 'import sklearn, pandas, numpy' >/dev/null 2>&1; }
have_ranger()  { command -v Rscript >/dev/null 2>&1 && Rscript -e 'suppressMessages({library(ranger); library(jsonlite)})' >/dev/null 2>&1; }
missing=()
have_time    || missing+=(time)
have_sklearn || missing+=(python3-sklearn python3-pandas)
have_ranger  || missing+=(r-cran-ranger r-cran-jsonlite r-cran-data.table)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    timeout 1800 apt-get install -y "${missing[@]}" >"$TMP/apt.log" 2>&1 ||
      { timeout 900 apt-get update >>"$TMP/apt.log" 2>&1 &&
        timeout 1800 apt-get install -y "${missing[@]}" >>"$TMP/apt.log" 2>&1; } ||
      log "apt-get install failed: $(tail -n 1 "$TMP/apt.log")"
  else
    log "not root or no apt-get: cannot install ${missing[*]}"
  fi
fi
have_time    || die "GNU time (/usr/bin/time) is missing: apt-get install time"
have_sklearn || die "scikit-learn/pandas for $PY are missing: apt-get install python3-sklearn python3-pandas"
have_ranger  || die "R package ranger (or jsonlite) is missing: apt-get install r-base-core r-cran-ranger r-cran-jsonlite"
[ -d "$DATA" ] || die "data directory $DATA not found (use --data DIR)"
for s in "${CV_SETS[@]}"; do [ -f "$DATA/$s.csv.gz" ] || die "$DATA/$s.csv.gz not found"; done

# ---------------------------------------------------------------- 2. forestd
if [ "$PEERS_ONLY" = 0 ]; then
  if [ -z "$FORESTD_BIN" ]; then
    command -v go >/dev/null 2>&1 || die "go is not on PATH (needed to build ./cmd/forestd; or pass --forestd BIN)"
    [ -d "$ROOT/cmd/forestd" ] || die "$ROOT/cmd/forestd does not exist: nothing to build (or use --peers-only)"
    log "building forestd"
    (cd "$ROOT" && go build -o "$TMP/forestd" ./cmd/forestd) || die "go build ./cmd/forestd failed"
    FORESTD_BIN="$TMP/forestd"
    note "go build -o \$TMP/forestd ./cmd/forestd"
  fi
  [ -x "$FORESTD_BIN" ] || die "forestd binary $FORESTD_BIN is not executable"
fi

RUN_TRUNK=1 RUN_CV=1
[ "$ONLY" = trunk ] && RUN_CV=0
[ "$ONLY" = cv ] && RUN_TRUNK=0
FAILED=0

if [ "$RUN_TRUNK" = 1 ]; then
# ---------------------------------------------------------------- 3. Trunk data
TRAIN="$TMP/trunk_train.csv" TEST="$TMP/trunk_test.csv"
if [ "$PEERS_ONLY" = 0 ]; then
  for spec in "$TRAIN_SEED $TRAIN" "$TEST_SEED $TEST"; do
    set -- $spec
    log "forestd gen trunk --n $N --p $P --seed $1"
    "$FORESTD_BIN" gen trunk --n "$N" --p "$P" --seed "$1" --out "$2" >/dev/null ||
      die "forestd gen trunk failed"
    note "forestd gen trunk --n $N --p $P --seed $1 --out $(basename "$2")"
  done
else
  for spec in "$TRAIN_SEED $TRAIN" "$TEST_SEED $TEST"; do
    set -- $spec
    log "gen_trunk.py --n $N --p $P --seed $1"
    "$PY" "$HERE/gen_trunk.py" --n "$N" --p "$P" --seed "$1" --out "$2"
    note "/usr/bin/python3 e2e/bench/gen_trunk.py --n $N --p $P --seed $1 --out $(basename "$2")"
  done
fi
HEADER="$(head -n 1 "$TRAIN")"
case ",$HEADER," in
  *,label,*) LABEL=label ;;
  *,y,*) LABEL=y ;;
  *) LABEL="${HEADER##*,}" ;;
esac
NCOL=$(awk -F, 'NR==1{print NF; exit}' "$TRAIN")
[ "$NCOL" = $((P + 1)) ] || die "$TRAIN has $NCOL columns, expected $((P + 1)) (p=$P + label)"
log "Trunk: $N + $N rows, p=$P, label column '$LABEL'"

# ---------------------------------------------------------------- 4. Trunk runs
log "ranger on Trunk ($TRUNK_TREES trees, $THREADS threads)"
load ranger_trunk
timeout "$TIMEOUT_TRUNK" /usr/bin/time -f '%M %U %S' -o "$RUN/rss_ranger_trunk.txt" \
  Rscript "$HERE/peers_ranger.R" trunk "$TRAIN" "$TEST" "$LABEL" "$TRUNK_TREES" "$THREADS" "$SEED" "$RUN/ranger_trunk.json" ||
  { log "ranger on Trunk FAILED"; FAILED=1; }
note "/usr/bin/time -f '%M %U %S' Rscript e2e/bench/peers_ranger.R trunk trunk_train.csv trunk_test.csv $LABEL $TRUNK_TREES $THREADS $SEED ranger_trunk.json"

log "scikit-learn on Trunk"
load sklearn_trunk
timeout "$TIMEOUT_TRUNK" /usr/bin/time -f '%M %U %S' -o "$RUN/rss_sklearn_trunk.txt" \
  "$PY" "$HERE/peers_sklearn.py" trunk --train "$TRAIN" --test "$TEST" --label "$LABEL" \
  --trees "$TRUNK_TREES" --threads "$THREADS" --seed "$SEED" --out "$RUN/sklearn_trunk.json" ||
  { log "scikit-learn on Trunk FAILED"; FAILED=1; }
note "/usr/bin/time -f '%M %U %S' /usr/bin/python3 e2e/bench/peers_sklearn.py trunk --train trunk_train.csv --test trunk_test.csv --label $LABEL --trees $TRUNK_TREES --threads $THREADS --seed $SEED --out sklearn_trunk.json"

if [ "$PEERS_ONLY" = 0 ]; then
  log "forestd on Trunk (binned, exact)"
  load forestd_trunk
  "$PY" "$HERE/peers_forestd.py" trunk --bin "$FORESTD_BIN" --train "$TRAIN" --test "$TEST" \
    --test-rows "$N" --label "$LABEL" --trees "$TRUNK_TREES" --threads "$THREADS" --seed "$SEED" \
    --splits binned,exact --work "$TMP/forestd_trunk" --out "$RUN/forestd_trunk.json" ||
    { log "forestd driver on Trunk FAILED"; FAILED=1; }
  note "forestd train --in trunk_train.csv --label $LABEL --out M --trees $TRUNK_TREES --threads $THREADS --seed $SEED [--split exact]"
  note "forestd score --model M --in trunk_test.csv --out S.parquet --threads $THREADS; 3 x forestd eval --model M --in trunk_test.csv --label $LABEL --threads $THREADS"
fi

fi  # RUN_TRUNK

# ---------------------------------------------------------------- 5. CV
FOLDS="$TMP/folds"
if [ "$RUN_CV" = 1 ]; then
log "writing $K stratified folds (seed $FOLD_SEED) of ${CV_SETS[*]}"
"$PY" "$HERE/peers_folds.py" --data "$DATA" --out "$FOLDS" --k "$K" --seed "$FOLD_SEED" "${CV_SETS[@]}"
note "/usr/bin/python3 e2e/bench/peers_folds.py --data testdata --out folds --k $K --seed $FOLD_SEED ${CV_SETS[*]}"

log "ranger CV ($CV_TREES trees)"
load ranger_cv
timeout "$TIMEOUT_CV" Rscript "$HERE/peers_ranger.R" cv "$FOLDS" "$CV_TREES" "$THREADS" "$SEED" "$RUN/ranger_cv.json" ||
  { log "ranger CV FAILED"; FAILED=1; }
note "Rscript e2e/bench/peers_ranger.R cv folds $CV_TREES $THREADS $SEED ranger_cv.json"
log "scikit-learn CV ($CV_TREES trees)"
load sklearn_cv
timeout "$TIMEOUT_CV" "$PY" "$HERE/peers_sklearn.py" cv --folds "$FOLDS" --trees "$CV_TREES" \
  --threads "$THREADS" --seed "$SEED" --out "$RUN/sklearn_cv.json" ||
  { log "scikit-learn CV FAILED"; FAILED=1; }
note "/usr/bin/python3 e2e/bench/peers_sklearn.py cv --folds folds --trees $CV_TREES --threads $THREADS --seed $SEED --out sklearn_cv.json"
if [ "$PEERS_ONLY" = 0 ]; then
  SPLITS=binned,exact
  [ "$TUNE" = 1 ] && SPLITS=binned,exact,tune
  log "forestd CV ($CV_TREES trees, ${SPLITS//,/, })"
  load forestd_cv
  timeout "$TIMEOUT_CV" "$PY" "$HERE/peers_forestd.py" cv --bin "$FORESTD_BIN" --folds "$FOLDS" \
    --trees "$CV_TREES" --threads "$THREADS" --seed "$SEED" --splits "$SPLITS" \
    --work "$TMP/forestd_cv" --out "$RUN/forestd_cv.json" ||
    { log "forestd CV driver FAILED"; FAILED=1; }
  note "forestd train --in NAME_fK_train.csv --label COL --out M --trees $CV_TREES --threads $THREADS --seed $SEED --max-features sqrt [--split exact]; forestd eval --model M --in NAME_fK_test.csv --label COL --threads $THREADS"
  [ "$TUNE" = 1 ] && note "forestd train --in NAME_fK_train.csv --label COL --out M --trees $CV_TREES --threads $THREADS --seed $SEED --tune (forestd tune)"
fi
fi  # RUN_CV
for f in "$RUN"/forestd_*.json; do
  [ -f "$f" ] && grep -q '"failed"' "$f" && { log "a forestd step failed (see the report)"; FAILED=1; }
done

# ---------------------------------------------------------------- 6. report
load end
DATE="$(date +%F)"
SUFFIX=""; [ "$QUICK" = 1 ] && SUFFIX="$SUFFIX-quick"; [ "$PEERS_ONLY" = 1 ] && SUFFIX="$SUFFIX-peers-only"
[ -n "$ONLY" ] && SUFFIX="$SUFFIX-$ONLY"
[ "$TUNE" = 1 ] && SUFFIX="$SUFFIX-tune"
[ "$SEED" != 1 ] && SUFFIX="$SUFFIX-seed$SEED"
mkdir -p "$HERE/results"
CPU="$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown)"
VERS="ranger $(Rscript -e 'cat(as.character(packageVersion("ranger")))' 2>/dev/null), $(Rscript -e 'cat(R.version.string)' 2>/dev/null)"
VERS="$VERS; scikit-learn $("$PY" -c 'import sklearn; print(sklearn.__version__)'), Python $("$PY" -c 'import platform; print(platform.python_version())')"
if [ "$PEERS_ONLY" = 0 ]; then
  REV="$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo 'no commit')"
  [ -n "$(cd "$ROOT" && git status --porcelain 2>/dev/null | head -n 1)" ] && REV="$REV (dirty tree)"
  VERS="$VERS; forestd $REV, $(go version 2>/dev/null | awk '{print $3}')"
fi
DATE="$DATE" QUICK="$QUICK" PEERS_ONLY="$PEERS_ONLY" CPU="$CPU" VERS="$VERS" N="$N" P="$P" SEED="$SEED" \
TREES="$TRUNK_TREES" CV_TREES="$CV_TREES" THREADS="$THREADS" K="$K" FOLD_SEED="$FOLD_SEED" \
CV_SETS="${CV_SETS[*]}" FOLDS="$FOLDS" LOADS="$(printf '%s\n' "${LOADS[@]}")" ARGS="$ORIG_ARGS" \
  "$PY" - "${CMDS[@]}" >"$RUN/meta.json" <<'EOF'
import json, os, sys
e = os.environ
mp = os.path.join(e["FOLDS"], "manifest.json")
man = json.load(open(mp)) if os.path.exists(mp) else {"datasets": []}
print(json.dumps({
    "date": e["DATE"], "quick": e["QUICK"] == "1", "peers_only": e["PEERS_ONLY"] == "1",
    "cpu": e["CPU"], "cores": os.cpu_count(), "versions": e["VERS"],
    "n_train": int(e["N"]), "n_test": int(e["N"]), "p": int(e["P"]), "trees": int(e["TREES"]),
    "threads": int(e["THREADS"]), "cv_trees": int(e["CV_TREES"]), "folds": int(e["K"]),
    "fold_seed": int(e["FOLD_SEED"]), "seed": int(e["SEED"]), "cv_datasets": e["CV_SETS"].split(),
    "datasets": [{k: d[k] for k in ("name", "rows", "features", "classes")} for d in man["datasets"]],
    "cpu_busy_before": {l.split()[0]: {"busy_percent": int(l.split()[1]), "load1": float(l.split()[2])}
                        for l in e["LOADS"].splitlines() if l.strip()},
    "args": e["ARGS"], "commands": sys.argv[1:]}, indent=1))
EOF
MD="$HERE/results/peers-$DATE$SUFFIX.md"
"$PY" "$HERE/peers_report.py" --dir "$RUN" --md "$MD" --json "${MD%.md}.json"
log "report written to ${MD#$ROOT/} and ${MD%.md}.json"
[ "$FAILED" = 0 ] || { log "some step failed: see the messages above"; exit 1; }
}

main "$@"

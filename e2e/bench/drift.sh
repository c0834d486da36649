#!/usr/bin/env bash
# Drift tests against R energy (Debian's r-cran-energy), side by side in ONE
# run on this machine (issue 34's speed targets):
#   1. the joint test of 1,500 + 1,500 rows × 10 features: R
#      energy::eqdist.etest(R = 199) against `forestd drift` (every feature
#      and the joint test, one thread) with --perms 199, at the defaults
#      (sequential permutations, Holm), and with --exact-joint --perms 199
#      (eqdist.e permuted on every row, the old joint test); the data have
#      the issue's power case, features 2 and 3 correlated 0.8 in the
#      current sample only. CPU time (user + system): R's of the
#      eqdist.etest call alone, forestd's of the whole process (reading the
#      CSV included); the best of --repeat runs each; the ratio R / forestd
#      (target ≥ 5);
#   2. the issue's power case at 3,000 + 3,000 rows × 10 features: the
#      defaults against --exact-joint on every row (--max-rows 6000), CPU
#      time, peak RSS and whether the joint test alone found it;
#   3. one feature's test at n = 1,000, 10,000 and 100,000 pooled rows with
#      99 permutations (go test -bench BenchmarkEnergyTest, cpu-ns/row):
#      O(n log n) shows as a figure per row that grows no faster than log n.
#
#   bash e2e/bench/drift.sh [--repeat N] [--forestd BIN]
#
# Writes e2e/bench/results/drift-<date>.md and prints it.
set -euo pipefail
REPEAT=3
FORESTD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) REPEAT="$2"; shift 2 ;;
    --forestd) FORESTD="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "drift.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
die() { printf 'drift.sh: error: %s\n' "$*" >&2; exit 1; }
[ -x /usr/bin/time ] || die "GNU time is missing (apt-get install time)"
command -v Rscript >/dev/null || die "Rscript is missing (apt-get install r-base-core r-cran-energy)"
Rscript -e 'suppressMessages(library(energy))' 2>/dev/null || die "R package energy is missing (apt-get install r-cran-energy)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if [ -z "$FORESTD" ]; then
  (cd "$ROOT" && go build -o "$TMP/forestd" ./cmd/forestd)
  FORESTD="$TMP/forestd"
fi

# the data: 10 N(0,1) features; in the current sample x3 = 0.8·x2 + 0.6·e
# (ref.csv, cur.csv: 1,500 rows; ref3000.csv, cur3000.csv: 3,000)
Rscript -e '
set.seed(34)
for (n in c(1500, 3000)) {
  p <- 10
  ref <- matrix(rnorm(n * p), n); cur <- matrix(rnorm(n * p), n)
  cur[, 3] <- 0.8 * cur[, 2] + 0.6 * cur[, 3]
  colnames(ref) <- colnames(cur) <- paste0("x", 1:p)
  sfx <- if (n == 1500) "" else n
  write.csv(ref, file.path(commandArgs(TRUE)[1], paste0("ref", sfx, ".csv")), row.names = FALSE)
  write.csv(cur, file.path(commandArgs(TRUE)[1], paste0("cur", sfx, ".csv")), row.names = FALSE)
}
' "$TMP"

# R: CPU seconds of eqdist.etest(R = 199), best of REPEAT, and its p-value
read -r R_CPU R_P < <(Rscript -e '
suppressMessages(library(energy))
a <- commandArgs(TRUE)
ref <- as.matrix(read.csv(file.path(a[1], "ref.csv"))); cur <- as.matrix(read.csv(file.path(a[1], "cur.csv")))
x <- rbind(ref, cur); best <- Inf
for (i in seq_len(as.integer(a[2]))) {
  t <- system.time(r <- eqdist.etest(x, sizes = c(nrow(ref), nrow(cur)), R = 199))
  best <- min(best, t[["user.self"]] + t[["sys.self"]])
}
cat(sprintf("%.3f %.4f\n", best, r$p.value))
' "$TMP" "$REPEAT")

# forestd: CPU seconds of the whole process, best of REPEAT (and the
# peak RSS of that run, in $TMP/rss); SIZE picks the data
SIZE=""
fd() {
  local best="" out="$1"; shift
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -f '%U %S %M' -o "$TMP/time" "$FORESTD" drift --reference "$TMP/ref$SIZE.csv" --current "$TMP/cur$SIZE.csv" --threads 1 --seed 1 "$@" >"$out"
    local t; t="$(awk '{print $1 + $2}' "$TMP/time")"
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best="$t"; awk '{printf "%.0f", $3 / 1024}' "$TMP/time" >"$TMP/rss"; fi
  done
  echo "$best"
}
joint() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["joint"]; f=[x["name"] for x in json.load(open(sys.argv[1]))["features"] if x["drift"]]; print("%s p=%.4f drift=%s perms=%d, features drifted: %s" % (j["method"], j["p_value"], j["drift"], j["perms"], f or "none"))' "$1"; }
P199="$(fd "$TMP/p199.json" --perms 199)"
DEF="$(fd "$TMP/def.json")"
EXACT="$(fd "$TMP/exact.json" --exact-joint --max-rows 3000 --perms 199)"
SIZE=3000
BIG="$(fd "$TMP/big.json")"; BIG_RSS="$(cat "$TMP/rss")"
BIGX="$(fd "$TMP/bigx.json" --exact-joint --max-rows 6000)"; BIGX_RSS="$(cat "$TMP/rss")"
ratio() { awk -v a="$R_CPU" -v b="$1" 'BEGIN{printf "%.1f", a / b}'; }

BENCH="$(cd "$ROOT" && go test -run '^$' -bench 'BenchmarkEnergyTest$' -benchtime 5x ./arrowforest/dependence | grep -E '^Benchmark')"

DATE="$(date -u +%Y-%m-%d)"
OUT="$HERE/results/drift-$DATE.md"
{
  echo "# drift: forestd against R energy — $DATE"
  echo
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1); load average $(cut -d' ' -f1-3 /proc/loadavg); best of $REPEAT runs; CPU seconds (user + system)."
  echo
  echo "## Joint test, 1,500 + 1,500 rows × 10 features (x2, x3 correlated 0.8 in the current sample)"
  echo
  echo "| run | CPU s | R / forestd | outcome |"
  echo "|---|---:|---:|---|"
  echo "| R eqdist.etest(R = 199), the call alone | $R_CPU | 1 | p = $R_P |"
  echo "| forestd drift --perms 199 (10 features + joint, whole process) | $P199 | $(ratio "$P199") | $(joint "$TMP/p199.json") |"
  echo "| forestd drift (defaults: sequential, Holm) | $DEF | $(ratio "$DEF") | $(joint "$TMP/def.json") |"
  echo "| forestd drift --exact-joint --max-rows 3000 --perms 199 | $EXACT | $(ratio "$EXACT") | $(joint "$TMP/exact.json") |"
  echo
  echo "## The power case, 3,000 + 3,000 rows × 10 features"
  echo
  echo "| run | CPU s | peak RSS MiB | outcome |"
  echo "|---|---:|---:|---|"
  echo "| forestd drift (defaults: projected joint test over every row) | $BIG | $BIG_RSS | $(joint "$TMP/big.json") |"
  echo "| forestd drift --exact-joint --max-rows 6000 (eqdist.e permuted on every row) | $BIGX | $BIGX_RSS | $(joint "$TMP/bigx.json") |"
  echo
  echo "## One feature, 99 permutations, one thread (cpu-ns/row: flat or log n)"
  echo
  echo '```'
  echo "$BENCH"
  echo '```'
} >"$OUT"
cat "$OUT"

#!/usr/bin/env bash
# Dependence-analysis benchmarks, side by side in ONE run on this machine:
#   1. univariate dCor permutation tests, 999 permutations, n = 5,000:
#      R energy::dcor.test against `forestd analyze --stat dcor --perms 999`
#      on the same CSV, with a class label (trunk) and with a regression
#      label (x ~ N(0,1), y = x² + N(0,1)); times and the ratios (target
#      ≥ 100× each);
#   2. marginal gCor screening of 1,000 features × 10,000 rows on 2 threads
#      at the default false-discovery control (Holm at 0.05 over the 1,000
#      tests, sequential permutation counts) and, for comparison, the
#      dissertation's per-test rule (--adjust none, adaptive 100..5,000), on
#      three data sets: 50 informative features (the realistic case), none,
#      and all 1,000 (skipped with --quick);
#   3. peak memory (GNU time -v) of multivariate statistics at n = 20,000:
#      the streamed gCor_n/dCor_n of 3 columns, and a set permutation test
#      (packed float32 distance triangle) with and without --max-rows;
#   4. the reproduction of the dissertation's Table 5.3
#      (go run ./e2e/bench/dependence table53), with the per-test rule and,
#      at n = 1,000, with Holm's control at the defaults (not with --quick),
#      and how often the marginal screen of xor5 takes a noise feature under
#      Holm and under Benjamini–Hochberg (depbench xor5-screen).
#
#   bash e2e/bench/dependence.sh [--quick]
#
# Writes e2e/bench/results/dependence-<date>[-quick].md and prints it.
set -euo pipefail
main() {
QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dependence.sh: unknown argument $a" >&2; exit 1 ;;
  esac
done
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
log() { printf 'dependence.sh: %s\n' "$*" >&2; }
die() { printf 'dependence.sh: error: %s\n' "$*" >&2; exit 1; }
if ! [ -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing GNU time"; DEBIAN_FRONTEND=noninteractive apt-get install -y time >/dev/null 2>&1 || true
  fi
fi
[ -x /usr/bin/time ] || die "GNU time (/usr/bin/time) is missing: apt-get install time"
command -v Rscript >/dev/null || die "Rscript is missing"
Rscript -e 'suppressMessages({library(energy); library(jsonlite)})' >/dev/null 2>&1 || die "R packages energy and jsonlite are needed"
PY=/usr/bin/python3
W="$(mktemp -d /tmp/depbench-run.XXXXXX)"   # (a name other cleanups will not match)
trap 'rm -rf "$W"' EXIT
log "building forestd and the bench helper"
(cd "$ROOT" && go build -o "$W/fdbin" ./cmd/forestd && go build -o "$W/depbench" ./e2e/bench/dependence) || die "go build failed"
F="$W/fdbin"
busy() { # percent of CPU time used by others over 1 s
  local a b; read -r -a a < /proc/stat; sleep 1; read -r -a b < /proc/stat
  awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN{n=split(a,x," ");split(b,y," ");t=0;for(i=2;i<=n;i++)t+=y[i]-x[i];
    idle=(y[5]-x[5])+(y[6]-x[6]); printf "%.0f", (t>0?100*(t-idle)/t:0)}'
}
now() { date +%s.%N; }
jget() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }
mkdir -p "$HERE/results"
DEST="$HERE/results/dependence-$(date -u +%Y-%m-%d)$( [ "$QUICK" = 1 ] && echo -quick || true).md"
OUT="$W/report.md"
save() { cp "$OUT" "$DEST.partial"; }   # progress survives an interrupted run
{
echo "# Dependence benchmarks ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "Commands: see e2e/bench/dependence.sh. forestd threads: 2."
} > "$OUT"

# ---- 1. dCor permutation tests vs energy::dcor.test
dcortest() { # name file task-args...
  local name="$1" file="$2"; shift 2
  local b; b=$(busy)
  Rscript "$HERE/dependence_energy.R" "$file" 999 > "$W/energy_$name.json"
  local t0 t1; t0=$(now)
  "$F" analyze --in "$file" --label y --stat dcor --method marginal --perms 999 --threads 2 "$@" > "$W/ours_$name.json"
  t1=$(now)
  local ew ow oi; ew=$(jget "$W/energy_$name.json" 'd["seconds"]')
  ow=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
  oi=$(jget "$W/ours_$name.json" 'd["seconds"]')
  {
  echo
  echo "### $name label: $(jget "$W/ours_$name.json" 'd["task"]') (others' CPU use before: ${b}%)"
  echo
  echo "| tool | dCor_n | p-value | seconds |"
  echo "|---|---|---|---|"
  echo "| R energy $(jget "$W/energy_$name.json" 'd["energy"]') \`dcor.test(x, y, R = 999)\` (test only) | $(jget "$W/energy_$name.json" '"%.10f" % d["dcor"]') | $(jget "$W/energy_$name.json" '"%.4f" % d["p_value"]') | $ew |"
  echo "| forestd \`analyze --stat dcor --perms 999 $*\` (whole process: read CSV, sort, test, JSON) | $(jget "$W/ours_$name.json" '"%.10f" % d["features"][0]["statistic"]') | $(jget "$W/ours_$name.json" '"%.4f" % d["features"][0]["p_value"]') | $ow |"
  echo "| forestd, the test alone (\`seconds\` in its JSON) | | | $(printf '%.4f' "$oi") |"
  echo
  echo "Ratio energy / forestd: **$(awk -v a="$ew" -v b="$ow" 'BEGIN{printf "%.0f", a/b}')×** for the whole process, $(awk -v a="$ew" -v b="$oi" 'BEGIN{printf "%.0f", a/b}')× for the test alone (target ≥ 100×)."
  } >> "$OUT"
}
log "1. dcor.test vs forestd, n = 5000, 999 permutations (class and regression labels)"
"$F" gen trunk --p 1 --n 5000 --seed 1 --out "$W/uni.csv" >/dev/null
"$W/depbench" reg-data --n 5000 --seed 1 --out "$W/reg.csv"
{
echo
echo "## 1. Univariate dCor permutation tests, n = 5,000, 999 permutations"
echo
echo "The class label is 0/1, so R's |y − y'| is the 0/1 label distance forestd uses; the regression label is y = x² + N(0,1) with x ~ N(0,1)"
echo "(\`depbench reg-data\`, x written at float32 precision, so both tools read the same numbers: dCor_n agrees to the printed digits)."
} >> "$OUT"
dcortest class "$W/uni.csv"
dcortest regression "$W/reg.csv" --task regression

save

# ---- 2. marginal screening
screen() { # name informative control-label [analyze flags...]
  local name="$1" inf="$2" adj="$3"; shift 3
  [ -f "$W/screen_$name.parquet" ] || "$W/depbench" screen-data --out "$W/screen_$name.parquet" --n 10000 --p 1000 --informative "$inf" --seed 1
  local b; b=$(busy)
  local t0 t1; t0=$(now)
  /usr/bin/time -f '%M' -o "$W/rss_$name" "$F" analyze --in "$W/screen_$name.parquet" --label y --method marginal --threads 2 "$@" > "$W/screen_$name.json"
  t1=$(now)
  local wall; wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
  local J="$W/screen_$name.json"
  echo "| $name ($inf informative) | $adj | $(jget "$J" 'len(d["marginal"])') | $(jget "$J" 'len([f for f in d["features"] if f["group"] == -1 and int(f["name"][1:]) >= '"$inf"'])') | $(jget "$J" 'sum(f["N"] for f in d["features"])') | $(jget "$J" 'd["unresolved"]') | $(jget "$J" '"%.2f" % d["seconds"]') | $wall | $(( $(cat "$W/rss_$name") / 1024 )) | ${b}% |" >> "$OUT"
}
log "2. marginal screening 1000 x 10000"
{
echo
echo "## 2. Marginal gCor screening, 1,000 features × 10,000 rows, 2 threads"
echo
echo "| data | control | features in S_m | of them noise (false) | permutations run | unresolved | test seconds | wall seconds (whole process) | peak RSS MiB | others' CPU before |"
echo "|---|---|---|---|---|---|---|---|---|---|"
} >> "$OUT"
screen mixed 50 "holm, α = 0.05 (default)"
screen mixed 50 "none, α = 0.05 per test, 100..5,000" --adjust none --max-perms 5000
screen none 0 "holm, α = 0.05 (default)"
screen none 0 "none, α = 0.05 per test, 100..5,000" --adjust none --max-perms 5000
[ "$QUICK" = 1 ] || screen all 1000 "holm, α = 0.05 (default)"
echo >> "$OUT"
echo "Informative feature j (f0..f49, or all) has class means ±δ_j/2, δ_j from 0.5 down to 0.1 (\`depbench screen-data\`); the rest are N(0,1) noise. Under Holm each test runs sequentially up to ⌈2/t⌉ − 1 permutations, t = 0.05/1,000: a noise feature stops at its second exceedance, an informative one runs 39,999 to reach p ≤ t." >> "$OUT"

save

# ---- 3. memory at n = 20000
log "3. memory of multivariate statistics at n = 20000"
{
echo
echo "## 3. Peak memory of multivariate statistics, n = 20,000 (xor2: 3 columns)"
echo
echo "| what | seconds | peak RSS MiB |"
echo "|---|---|---|"
} >> "$OUT"
for st in gcor dcor; do
  /usr/bin/time -f '%M' -o "$W/rss_stat" "$W/depbench" stat --n 20000 --stat $st > "$W/stat.json"
  echo "| $st statistic (streamed pairs, no matrix) | $(jget "$W/stat.json" 'd["seconds"]') | $(( $(cat "$W/rss_stat") / 1024 )) |" >> "$OUT"
done
"$F" gen xor2 --n 20000 --seed 1 --out "$W/xor2.parquet" >/dev/null
for mr in 0 5000; do
  t0=$(now)
  /usr/bin/time -f '%M' -o "$W/rss_set" "$F" analyze --in "$W/xor2.parquet" --label y --method mdc-topdown --perms 10 --max-rows $mr --threads 2 > "$W/set.json"
  t1=$(now)
  echo "| analyze --method mdc-topdown --perms 10 --max-rows $mr (set tests keep one packed float32 triangle, $( [ $mr = 0 ] && echo '2·n(n−1) bytes = 763 MiB' || echo 'n = 5,000: 48 MiB')) | $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') | $(( $(cat "$W/rss_set") / 1024 )) |" >> "$OUT"
done

save

# ---- 4. Table 5.3
log "4. Table 5.3"
{
echo
echo "## 4. Table 5.3 reproduction"
echo
echo '```'
"$W/depbench" table53 --n 200 --alpha 0.05 --seeds 10
echo
"$W/depbench" table53 --n 1000 --alpha 0.001 --max-perms 1000 --seeds 10
if [ "$QUICK" != 1 ]; then
  echo
  "$W/depbench" table53 --n 1000 --adjust holm --alpha 0.05 --max-perms 0 --seeds 10
fi
echo
"$W/depbench" xor5-screen --n 1000 --seeds 200
echo '```'
} >> "$OUT"

cp "$OUT" "$DEST"
rm -f "$DEST.partial"
cat "$OUT"
log "written: $DEST"
}
main "$@"

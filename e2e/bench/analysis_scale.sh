#!/usr/bin/env bash
# Dependence analysis at pipeline scale (issue 30): time, CPU and peak RSS
# (GNU time -v) of `forestd analyze` at its defaults on the issue's case —
# p features N(0, 1), a binary label from two marginal features (f0, f1)
# and one XOR pair (f2, f3), the rest noise (go run ./e2e/bench/dependence
# scale-data) — for n ∈ {1k, 5k, 50k, 500k} × p ∈ {20, 100, 1,000}, the
# marginal screen (--method marginal) and the default search (mdc-bottomup,
# Holm at 0.05, the χ²₁ approximation, set tests on 2,000 rows; not at
# p = 1,000, whose C(p, 3) triples no search runs), with --all-rows also
# the search with set tests on every row (--max-rows 0: random projections
# from 8,000 rows, arrowforest/dependence/projset.go); whether the report is
# exactly that structure; and, on independent draws (--null), how many
# analyses report anything with the approximation (default) and with
# permutations alone (--exact): the false-finding rate, at most α = 0.05.
# Then R energy beside forestd where it can run (n ≤ 5,000: dcor.test of
# f0 against the label, R = 199, and forestd's permutation test of the
# same column), and the per-test table of each approximation next to
# permutations (TestApproxPowerTable in arrowforest/dependence: false
# findings on null sets, power on weak XOR and linear sets, permutations
# and time per test; --draws draws of each).
#
#   bash e2e/bench/analysis_scale.sh [--quick] [--draws N] [--sizes "1000x20 5000x20 ..."] [--all-rows] [--sizes-only]
#
# --quick: 1k and 5k × 20 only, 4 null draws. --sizes-only: the size table
# alone (no null draws, R or approximation table). Prints a Markdown table and
# writes it to e2e/bench/results/analysis_scale-<date>.md (-2, -3… when one exists). Load from other
# processes inflates wall times: read the CPU seconds beside them.
set -euo pipefail
QUICK=0; DRAWS=10; SIZES="1000x20 5000x20 1000x100 5000x100 50000x20 50000x100 500000x20 1000x1000"; ALLROWS=0; ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; DRAWS=4; SIZES="1000x20 5000x20" ;;
    --draws) DRAWS="$2"; shift ;;
    --sizes) SIZES="$2"; shift ;;
    --all-rows) ALLROWS=1 ;;
    --sizes-only) ONLY=1 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "analysis_scale.sh: unknown argument $1" >&2; exit 1 ;;
  esac
  shift
done
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
[ -x /usr/bin/time ] || { echo "analysis_scale.sh: GNU time (/usr/bin/time) is missing: apt-get install time" >&2; exit 1; }
W="$(mktemp -d /tmp/ascale-run.XXXXXX)"
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && go build -o "$W/fd" ./cmd/forestd && go build -o "$W/depbench" ./e2e/bench/dependence)
CPU="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
OUT="$HERE/results/analysis_scale-$(date +%Y%m%d).md"
# never overwrite an earlier result of the same day
k=2; while [ -e "$OUT" ]; do OUT="$HERE/results/analysis_scale-$(date +%Y%m%d)-$k.md"; k=$((k + 1)); done
mkdir -p "$HERE/results"
# run LABEL ARGS...: one analyze under time -v; prints "wall cpu rss_mb json"
run() {
  local tag="$1"; shift
  /usr/bin/time -v "$W/fd" analyze --progress never --threads 2 "$@" >"$W/$tag.json" 2>"$W/$tag.time" || { echo "FAILED $tag" >&2; cat "$W/$tag.time" >&2; return 1; }
  awk -F': ' '/Elapsed \(wall/{w=$2} /User time/{u=$2} /System time/{s=$2} /Maximum resident/{r=$2}
    END{split(w,a,":"); sec=(length(a)==3)?a[1]*3600+a[2]*60+a[3]:a[1]*60+a[2]; printf "%.1f %.1f %.0f\n", sec, u+s, r/1024}' "$W/$tag.time"
}
# structure FILE: "exact" when the report is S_m = {f0, f1} and one group {f2, f3}
structure() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = sorted(d["marginal"]); g = [sorted(x["features"]) for x in d["groups"]]
ok = m == ["f0", "f1"] and (g == [["f2", "f3"]] or d["method"] == "marginal" and g == [])
print("exact" if ok else "marginal=%s groups=%s" % (m, g))
PY
}
{
echo "# Dependence analysis at scale ($(date +%F), $CPU, 2 threads; load average $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| n | p | method | wall s | CPU s | peak RSS MB | structure |"
echo "|---|---|---|---|---|---|---|"
for s in $SIZES; do
  n="${s%x*}"; p="${s#*x}"
  f="$W/d_${n}_${p}.csv"
  "$W/depbench" scale-data --out "$f" --n "$n" --p "$p" --seed 1
  methods="marginal mdc-bottomup"; [ "$p" -ge 1000 ] && methods=marginal
  for m in $methods; do
    read -r wall cpu rss < <(run "r_${s}_$m" --in "$f" --label label --method "$m")
    echo "| $n | $p | $m | $wall | $cpu | $rss | $(structure "$W/r_${s}_$m.json") |"
  done
  if [ "$ALLROWS" = 1 ] && [ "$p" -lt 1000 ]; then
    read -r wall cpu rss < <(run "r_${s}_all" --in "$f" --label label --max-rows 0)
    echo "| $n | $p | mdc-bottomup, every row | $wall | $cpu | $rss | $(structure "$W/r_${s}_all.json") |"
  fi
done
if [ "$ONLY" = 1 ]; then exit 0; fi
echo
echo "## Independence: $DRAWS draws of 5,000 × 20 (default search), analyses reporting anything"
echo
echo "| p-values | analyses with a finding | total wall s | total CPU s |"
echo "|---|---|---|---|"
for mode in approx exact; do
  found=0; tw=0; tc=0
  for d in $(seq 1 "$DRAWS"); do
    f="$W/null_$d.csv"
    [ -f "$f" ] || "$W/depbench" scale-data --out "$f" --n 5000 --p 20 --null --seed "$((100 + d))"
    extra=(); [ "$mode" = exact ] && extra=(--exact)
    read -r wall cpu rss < <(run "null_${mode}_$d" --in "$f" --label label "${extra[@]}")
    tw=$(python3 -c "print(round($tw + $wall, 1))"); tc=$(python3 -c "print(round($tc + $cpu, 1))")
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['marginal'] or d['groups'] else 1)" "$W/null_${mode}_$d.json"; then
      found=$((found + 1))
    fi
  done
  echo "| $mode | $found / $DRAWS | $tw | $tc |"
done
echo
if Rscript -e 'suppressMessages({library(energy); library(jsonlite)})' >/dev/null 2>&1; then
  echo "## R energy beside forestd: one column (f0) against the label, 199 permutations"
  echo
  echo "| n | energy dcor.test s | energy dCor | forestd test s | forestd dCor |"
  echo "|---|---|---|---|---|"
  for s in $SIZES; do
    n="${s%x*}"
    [ "$n" -le 5000 ] || continue   # dcor.test holds n × n distance matrices
    [ -f "$W/e_$n.csv" ] && continue
    # f0 as the float32 value forestd reads, written in full so that R reads the same number
    python3 -c "import csv,struct,sys; r=csv.DictReader(open(sys.argv[1])); w=csv.writer(open(sys.argv[2],'w')); w.writerow(['x1','y']); [w.writerow([repr(struct.unpack('f',struct.pack('f',float(row['f0'])))[0]),row['label']]) for row in r]" "$W/d_${n}_${s#*x}.csv" "$W/e_$n.csv"
    Rscript "$HERE/dependence_energy.R" "$W/e_$n.csv" 199 >"$W/e_$n.json"
    "$W/fd" analyze --progress never --threads 2 --in "$W/e_$n.csv" --label y --stat dcor --method marginal --perms 199 >"$W/o_$n.json"
    python3 - "$W/e_$n.json" "$W/o_$n.json" "$n" <<'PY'
import json, sys
e = json.load(open(sys.argv[1])); o = json.load(open(sys.argv[2]))
print("| %s | %.3f | %.10f | %.4f | %.10f |" % (sys.argv[3], e["seconds"], e["dcor"], o["seconds"], o["features"][0]["statistic"]))
PY
  done
else
  echo "(R energy is not installed: apt-get install -y r-cran-energy r-cran-jsonlite)"
fi
echo
echo "## Each approximation next to permutations, set tests at n = 400 ($DRAWS draws each, 10× on the null)"
echo
(cd "$ROOT" && FORESTD_APPROX_TABLE="$DRAWS" go test -count=1 -timeout 2h -run TestApproxPowerTable ./arrowforest/dependence -v) | grep '^|'
} | tee "$OUT"

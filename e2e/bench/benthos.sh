#!/usr/bin/env bash
# forestd_score in a Redpanda Connect (Benthos) stream against forestd score,
# on the same rows and model in one run: rows/s of
#   (a) forestd score --in DIR --out FILE  (the reference; wall time of the
#       process: read the Arrow IPC files, score, write one file)
#   (b) bin/forestd-benthos, Arrow IPC: the file input reads one 1,000-row
#       Arrow IPC stream file per message, forestd_score scores it into an
#       Arrow IPC prediction stream, the file output appends them to one file
#   (c) bin/forestd-benthos, JSON: JSON lines of the same rows on stdin,
#       batched 1,000 at a time (batched input), forestd_score merges the
#       predictions into each object, the file output writes JSON lines
#   (d) as (c), the output writing each batch with one write: an output
#       processor `archive: {format: lines}` (the same file, byte for byte;
#       Benthos' file output otherwise makes two write(2) calls a message)
# each as rows / wall time of its process, with its peak RSS (GNU time)
# and its CPU time (user + system).
#
#   bash e2e/bench/benthos.sh [--files F] [--trees T] [--p P] [--train-rows N]
#                             [--repeat R] [--keep] [--old DIR] [--noop]
#
# --old DIR: DIR holds forestd-benthos of another build (e.g. main's), run
# alternately with this build's on (c) and (d), side by side; the two
# builds' JSON outputs must be the same messages byte for byte.
# --noop: also (c) and (d) with Benthos' `noop` processor in place of
# forestd_score (the same input, batching and output: Benthos' own part of
# the pipeline, the ceiling forestd_score can approach), and forestd_score's
# rows/s ÷ noop's beside ÷ forestd score's.
#
# Defaults: F = 500 files of 1,000 Trunk rows (p = 50), a 100-tree forest
# trained on 20,000 other rows, R = 3 alternating runs, medians reported.
# Prints a markdown report and writes it to
# e2e/bench/results/benthos-<date>.md (-run2, -run3… when it exists). Target: (b) ≥ 0.5 × (a).
set -euo pipefail

main() {
FILES=500 TREES=100 P=50 TRAIN=20000 REPEAT=3 KEEP=0 OLD="" NOOP=0
ORIG_ARGS="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --files) FILES="$2"; shift ;;
    --trees) TREES="$2"; shift ;;
    --p) P="$2"; shift ;;
    --train-rows) TRAIN="$2"; shift ;;
    --repeat) REPEAT="$2"; shift ;;
    --keep) KEEP=1 ;;
    --noop) NOOP=1 ;;
    --old) OLD="$(cd "$2" && pwd)"; shift ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "benthos.sh: unknown argument $1 (try --help)" >&2; exit 1 ;;
  esac
  shift
done
[ -x /usr/bin/time ] || { echo "benthos.sh: GNU time (/usr/bin/time) is missing: apt-get install -y time" >&2; exit 1; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP="$(mktemp -d /tmp/forestd-benthosbench.XXXXXX)"
if [ "$KEEP" = 0 ]; then trap 'rm -rf "$TMP"' EXIT; fi
log() { printf 'benthos.sh: %s\n' "$*" >&2; }

log "building forestd and forestd-benthos"
(cd "$ROOT" && go build -o "$TMP/forestd" ./cmd/forestd)
(cd "$ROOT/connectors/benthos" && go build -o "$TMP/forestd-benthos" ./cmd/forestd-benthos)
F="$TMP/forestd" B="$TMP/forestd-benthos"

log "generating $FILES files of 1,000 Trunk rows (p = $P), as Arrow IPC and as JSON lines"
mkdir -p "$TMP/arrows" "$TMP/csv"
for i in $(seq 1 "$FILES"); do
  n=$(printf %05d "$i")
  "$F" gen trunk --n 1000 --p "$P" --seed $((1000 + i)) --out "$TMP/arrows/part-$n.arrows" >/dev/null
  "$F" gen trunk --n 1000 --p "$P" --seed $((1000 + i)) --out "$TMP/csv/part-$n.csv" >/dev/null
done
ROWS=$((FILES * 1000))
# JSON lines of the same rows with their row number as "id", the label left
# out (the CSV's shortest float32 text, so every value reads back as the
# same float32)
/usr/bin/python3 - "$TMP/csv" "$TMP/rows.jsonl" <<'EOF'
import csv, glob, json, sys
with open(sys.argv[2], "w") as out:
    i = 0
    for path in sorted(glob.glob(sys.argv[1] + "/*.csv")):
        with open(path) as fh:
            r = csv.reader(fh)
            head = next(r)
            for row in r:
                out.write(f'{{"id":{i},' + ",".join(f'"{k}":{v}' for k, v in zip(head, row) if k != "y") + "}\n")
                i += 1
EOF
[ "$(wc -l < "$TMP/rows.jsonl")" = "$ROWS" ] || { log "JSON lines: $(wc -l < "$TMP/rows.jsonl") rows, want $ROWS"; exit 1; }
log "training $TREES trees on $TRAIN other rows"
"$F" gen trunk --n "$TRAIN" --p "$P" --seed 1 --out "$TMP/train.arrows" >/dev/null
"$F" train --in "$TMP/train.arrows" --label y --trees "$TREES" --seed 1 --out "$TMP/m.model" > "$TMP/train.json"

cat > "$TMP/arrow.yaml" <<EOF
http: {enabled: false}
logger: {level: warn}
input:
  file:
    paths: ['$TMP/arrows/*.arrows']
    scanner: {to_the_end: {}}
pipeline:
  processors:
    - forestd_score: {model: '$TMP/m.model'}
output:
  file: {path: '$TMP/out-arrow.bin', codec: all-bytes}
EOF
cat > "$TMP/json.yaml" <<EOF
http: {enabled: false}
logger: {level: warn}
input:
  batched:
    child:
      stdin:
        scanner: {lines: {max_buffer_size: 1000000}}
    policy: {count: 1000, period: 1s}
pipeline:
  processors:
    - forestd_score: {model: '$TMP/m.model'}
output:
  file: {path: '$TMP/out-json.jsonl', codec: lines}
EOF
{ cat "$TMP/json.yaml"; echo '  processors: [{archive: {format: lines}}]'; } > "$TMP/json-archive.yaml"
for c in json json-archive; do sed "s|- forestd_score: .*|- noop: {}|" "$TMP/$c.yaml" > "$TMP/$c-noop.yaml"; done
"$B" lint "$TMP/arrow.yaml" "$TMP/json.yaml" "$TMP/json-archive.yaml" "$TMP/json-noop.yaml" "$TMP/json-archive-noop.yaml"
if [ -n "$OLD" ] && [ ! -x "$OLD/forestd-benthos" ]; then log "--old $OLD: no forestd-benthos there"; exit 1; fi

secs() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$1"; }
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }
cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$1"; }
ref_r=() arrow_r=() json_r=() ref_m=() arrow_m=() json_m=() ref_c=() json_c=()
arch_r=() arch_m=() arch_c=() njson_r=() njson_m=() njson_c=() narch_r=() narch_m=() narch_c=() ojson_r=() ojson_m=() ojson_c=() oarch_r=() oarch_m=() oarch_c=()
# jsonrun BIN CONFIG: one JSON run; sets W M C (wall, RSS, CPU)
jsonrun() {
  rm -f "$TMP/out-json.jsonl"
  /usr/bin/time -v -o "$TMP/t.txt" "$1" -c "$2" < "$TMP/rows.jsonl"
  W=$(secs "$TMP/t.txt") M=$(rss "$TMP/t.txt") C=$(cpu "$TMP/t.txt")
  [ "$(wc -l < "$TMP/out-json.jsonl")" = "$ROWS" ] || { log "JSON run wrote $(wc -l < "$TMP/out-json.jsonl") lines, want $ROWS"; exit 1; }
}
for r in $(seq 1 "$REPEAT"); do
  log "run $r/$REPEAT: forestd score"
  rm -f "$TMP/ref.arrows"
  /usr/bin/time -v -o "$TMP/t.txt" "$F" score --model "$TMP/m.model" --in "$TMP/arrows" --out "$TMP/ref.arrows" > "$TMP/score.json"
  ref_r+=("$(secs "$TMP/t.txt")") ref_m+=("$(rss "$TMP/t.txt")") ref_c+=("$(cpu "$TMP/t.txt")")
  log "run $r/$REPEAT: forestd-benthos, Arrow IPC"
  rm -f "$TMP/out-arrow.bin"
  /usr/bin/time -v -o "$TMP/t.txt" "$B" -c "$TMP/arrow.yaml"
  arrow_r+=("$(secs "$TMP/t.txt")") arrow_m+=("$(rss "$TMP/t.txt")")
  if [ -n "$OLD" ]; then
    log "run $r/$REPEAT: forestd-benthos of $OLD, JSON"
    jsonrun "$OLD/forestd-benthos" "$TMP/json.yaml"; ojson_r+=("$W") ojson_m+=("$M") ojson_c+=("$C")
    sort "$TMP/out-json.jsonl" > "$TMP/out-old-sorted.jsonl"
    log "run $r/$REPEAT: forestd-benthos of $OLD, JSON, archived"
    jsonrun "$OLD/forestd-benthos" "$TMP/json-archive.yaml"; oarch_r+=("$W") oarch_m+=("$M") oarch_c+=("$C")
  fi
  if [ "$NOOP" = 1 ]; then
    log "run $r/$REPEAT: forestd-benthos, JSON, noop in place of forestd_score"
    jsonrun "$B" "$TMP/json-noop.yaml"; njson_r+=("$W") njson_m+=("$M") njson_c+=("$C")
    log "run $r/$REPEAT: forestd-benthos, JSON, noop in place of forestd_score, archived"
    jsonrun "$B" "$TMP/json-archive-noop.yaml"; narch_r+=("$W") narch_m+=("$M") narch_c+=("$C")
  fi
  log "run $r/$REPEAT: forestd-benthos, JSON, archived"
  jsonrun "$B" "$TMP/json-archive.yaml"; arch_r+=("$W") arch_m+=("$M") arch_c+=("$C")
  log "run $r/$REPEAT: forestd-benthos, JSON"
  jsonrun "$B" "$TMP/json.yaml"; json_r+=("$W") json_m+=("$M") json_c+=("$C")
done
# the streams' predictions equal forestd score's (last run)
/usr/bin/python3 - "$TMP" "$ROWS" <<'EOF'
import json, sys, subprocess
tmp, rows = sys.argv[1], int(sys.argv[2])
# forestd score's predictions, as CSV through forestd itself
subprocess.run([tmp + "/forestd", "score", "--model", tmp + "/m.model", "--in", tmp + "/arrows", "--out", tmp + "/ref.csv"], check=True, stdout=subprocess.DEVNULL)
ref = [line.rstrip("\n").split(",")[4] for line in open(tmp + "/ref.csv")][1:]
got = {}
for l in open(tmp + "/out-json.jsonl"):  # pipeline threads may reorder batches
    o = json.loads(l)
    got[o["id"]] = o["prediction"]
assert len(ref) == rows and [got.get(i) for i in range(rows)] == ref, "JSON predictions differ from forestd score's"
EOF
# with --old, both builds wrote the same messages byte for byte (sorted:
# pipeline threads may reorder batches)
if [ -n "$OLD" ]; then
  sort "$TMP/out-json.jsonl" | cmp -s - "$TMP/out-old-sorted.jsonl" || { log "the JSON output differs from --old's"; exit 1; }
fi
ARROWOUT=$(stat -c %s "$TMP/out-arrow.bin")
[ "$ARROWOUT" -gt 0 ] || { log "the Arrow run wrote nothing"; exit 1; }

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
med() { if [ $# -gt 0 ]; then median "$@"; else echo 0; fi; }
REF=$(median "${ref_r[@]}") ARW=$(median "${arrow_r[@]}") JSN=$(median "${json_r[@]}") ARC=$(median "${arch_r[@]}")
REFM=$(median "${ref_m[@]}") ARWM=$(median "${arrow_m[@]}") JSNM=$(median "${json_m[@]}") ARCM=$(median "${arch_m[@]}")
REFC=$(median "${ref_c[@]}") JSNC=$(median "${json_c[@]}") ARCC=$(median "${arch_c[@]}")
OJR=$(med "${ojson_r[@]}") OJM=$(med "${ojson_m[@]}") OJC=$(med "${ojson_c[@]}")
OAR=$(med "${oarch_r[@]}") OAM=$(med "${oarch_m[@]}") OAC=$(med "${oarch_c[@]}")
NJR=$(med "${njson_r[@]}") NJM=$(med "${njson_m[@]}") NJC=$(med "${njson_c[@]}")
NAR=$(med "${narch_r[@]}") NAM=$(med "${narch_m[@]}") NAC=$(med "${narch_c[@]}")
NODES=$(/usr/bin/python3 -c "import json; print(json.load(open('$TMP/train.json'))['nodes'])")
CPUNAME=$(lscpu | awk -F': *' '/Model name/ {print $2; exit}')
REPORT="$HERE/results/benthos-$(date +%F).md"
n=2; while [ -e "$REPORT" ]; do REPORT="$HERE/results/benthos-$(date +%F)-run$n.md"; n=$((n + 1)); done # keep the day's earlier reports
mkdir -p "$HERE/results"
/usr/bin/python3 - "$ROWS" "$REF" "$ARW" "$JSN" "$REFM" "$ARWM" "$JSNM" "$ARC" "$ARCM" "$REFC" "$JSNC" "$ARCC" "$OJR" "$OJM" "$OJC" "$OAR" "$OAM" "$OAC" "$NJR" "$NJM" "$NJC" "$NAR" "$NAM" "$NAC" <<EOF | tee "$REPORT"
import sys
rows = int(sys.argv[1])
ref, arw, jsn = map(float, sys.argv[2:5])
refm, arwm, jsnm = (float(x) / 1024 for x in sys.argv[5:8])
arc, arcm = float(sys.argv[8]), float(sys.argv[9]) / 1024
refc, jsnc, arcc = map(float, sys.argv[10:13])
ojr, ojm, ojc, oar, oam, oac = map(float, sys.argv[13:19])
njr, njm, njc, nar, nam, nac = map(float, sys.argv[19:25])
print("## forestd_score in a Benthos stream: $ROWS Trunk rows (p = $P) in 1,000-row batches, $TREES trees ($NODES nodes), $(nproc) CPUs ($CPUNAME), load $(cut -d' ' -f1-3 /proc/loadavg)")
print()
print("| run | seconds | rows/s | ÷ forestd score | peak RSS, MiB | CPU s | ÷ forestd score (CPU) |")
print("|---|---:|---:|---:|---:|---:|---:|")
print(f"| forestd score (Arrow IPC files in, one file out) | {ref:.2f} | {rows/ref:,.0f} | 1.00 | {refm:.0f} | {refc:.2f} | 1.00 |")
print(f"| forestd-benthos, Arrow IPC (file input, forestd_score, file output) | {arw:.2f} | {rows/arw:,.0f} | {ref/arw:.2f} | {arwm:.0f} | | |")
def row(name, w, m, c):
    print(f"| {name} | {w:.2f} | {rows/w:,.0f} | {ref/w:.2f} | {m/1024:.0f} | {c:.2f} | {refc/c:.2f} |")
if ojr:
    row("forestd-benthos --old, JSON (stdin lines, batched 1,000, forestd_score, file output)", ojr, ojm, ojc)
if njr:
    row("forestd-benthos, JSON, noop in place of forestd_score", njr, njm, njc)
row("forestd-benthos, JSON (stdin lines, batched 1,000, forestd_score, file output)", jsn, jsnm * 1024, jsnc)
if oar:
    row("forestd-benthos --old, JSON, output archived per batch", oar, oam, oac)
if nar:
    row("forestd-benthos, JSON, noop in place of forestd_score, archived", nar, nam, nac)
row("forestd-benthos, JSON, output archived per batch", arc, arcm * 1024, arcc)
print()
if njr:
    print(f"forestd_score ÷ noop (rows/s; CPU): JSON {njr/jsn:.2f}; {njc/jsnc:.2f}, archived {nar/arc:.2f}; {nac/arcc:.2f} — noop ÷ forestd score: JSON {ref/njr:.2f}; {refc/njc:.2f}, archived {ref/nar:.2f}; {refc/nac:.2f}")
ok = "met" if ref / arw >= 0.5 else "NOT met"
print(f"target Arrow IPC ≥ 0.5 × forestd score: {ref/arw:.2f}× → {ok}; JSON {ref/jsn:.2f}× ({'met' if ref/jsn >= 0.5 else 'NOT met'} for JSON ≥ 0.5×), archived {ref/arc:.2f}×")
runs = lambda s: ", ".join(f"{float(x):.2f}" for x in s.split())
mib = lambda s: ", ".join(f"{float(x) / 1024:.0f}" for x in s.split())
print(f"Peak RSS per run, MiB (CPU s): JSON {mib('${json_m[*]}')} ({runs('${json_c[*]}')}); --old JSON {mib('${ojson_m[*]}')} ({runs('${ojson_c[*]}')}); noop {mib('${njson_m[*]}')} ({runs('${njson_c[*]}')}); archived {mib('${arch_m[*]}')} ({runs('${arch_c[*]}')}); --old archived {mib('${oarch_m[*]}')} ({runs('${oarch_c[*]}')}); noop archived {mib('${narch_m[*]}')} ({runs('${narch_c[*]}')}); forestd score CPU s {runs('${ref_c[*]}')}")
print()
print(f"(medians of $REPEAT alternating runs; seconds per run: forestd score {runs('${ref_r[*]}')}; Arrow {runs('${arrow_r[*]}')}; JSON {runs('${json_r[*]}')}; archived {runs('${arch_r[*]}')}; --old JSON {runs('${ojson_r[*]}')}; --old archived {runs('${oarch_r[*]}')}; noop {runs('${njson_r[*]}')}; noop archived {runs('${narch_r[*]}')}. Wall time of each process, start-up included; CPU = user + system. The JSON run's predictions were checked equal to forestd score's{', its messages byte for byte equal to those of --old' if '$OLD' else ''}.)")
print()
print("Command: bash e2e/bench/benthos.sh $ORIG_ARGS")
EOF
}
main "$@"

#!/usr/bin/env bash
# Reproduces the dRF paper's experiments (distance-rf-manifold-responses.txt
# §3.1 swiss roll, §3.2.1 digit completion; issue 7) with forestd, beside
# scikit-learn, in ONE run on this machine:
#
#   1. Swiss roll: `forestd gen`-equivalent data (synth.SwissRoll, one draw
#      of 11,000 rows split 1,000 train / 10,000 test), 150 trees,
#      3 candidate features, Isomap k = 7 (§3.1; the paper gives no
#      embedding dimension for it: forestd's default, 24). forestd drf five
#      ways: the default (weighted prediction, centred backscoring map, σ_G
#      and γ_G by the out-of-bag error of the training rows), the same with
#      m chosen out of bag too (--embed-dim 0), with σ_G and γ_G by
#      leave-one-out of the map (--backscore-select loo), Algorithm 1 with
#      the default's selection, and the paper as
#      printed (Algorithm 1, σ_G = 100, γ_G = 200, eq. 7 without offset);
#      against forestd's plain RF regression (`--label y0,y1,y2`: one
#      multi-output forest, same trees and candidate features, fully grown:
#      --min-split 2), forestd RF with one forest per output, and
#      scikit-learn's RandomForestRegressor (multi-output, mtry 3 and 6; one
#      forest per output, mtry 3) and 5-NN: test MSE, mean distance to the
#      noise-free surface, training and prediction times; the paper's
#      Fig. 2 as a PNG.
#   2. Digits: the lower 8×4 half from the upper half, 800 train / 200 test
#      digits (100 per class of testdata digits), 300 trees,
#      5 candidate features, Isomap k = 5, embedding dimension 25
#      (§3.2.1), repeated over 5 folds so that each of the 1000 digits is
#      tested once (the paper makes one split; one split of 200 digits
#      cannot tell methods a few digits apart): 1-NN, forestd RF (one
#      multi-output forest, one forest per pixel, and SPORF), scikit-learn
#      RF and dRF five ways (the swiss roll's four with the paper's
#      σ_G = 3, γ_G = 20, and sparse oblique atoms); MSE and the share of
#      completed digits that a 500-tree forest trained on whole digits
#      misclassifies, pooled over the folds, with McNemar's paired test;
#      the last fold's reconstructions as a PNG.
#
#   Every dRF parameter not given by the paper (σ_G, γ_G) is chosen on the
#   training rows alone (out of bag, or leave-one-out) and printed in the
#   report.
#
#   bash e2e/bench/drf.sh [--quick] [--seed S] [--forestd BIN] [--keep]
#
# --quick uses 2,000 swiss test rows, a third of the trees and 2 digit
# folds. --seed draws another swiss roll (default 1; the digit folds are
# fixed), to check that the outcome is not one draw's luck. Writes
# e2e/bench/results/drf-<date>[-quick][-seedS].md and the two PNGs beside
# it, and prints the report.
set -euo pipefail
cd "$(dirname "$0")/../.."
QUICK=0; BIN=""; KEEP=0; SEED=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --forestd) BIN="$2"; shift ;;
    --keep) KEEP=1 ;;
    --seed) SEED="$2"; shift ;;
    -h|--help) sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "drf.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
"$PY" -c 'import sklearn, pandas' 2>/dev/null || { echo "drf.sh: $PY needs scikit-learn and pandas (apt-get install python3-sklearn python3-pandas)" >&2; exit 1; }
DATA=${FORESTD_DATA:-testdata}
W=$(mktemp -d /tmp/forestd-drf.XXXXXX)
if [ $KEEP = 0 ]; then trap 'rm -rf "$W"' EXIT; else echo "scratch: $W" >&2; fi
if [ -z "$BIN" ]; then
  go build -o "$W/forestd" ./cmd/forestd
  BIN="$W/forestd"
fi
go build -o "$W/drfbench" ./e2e/bench/drf
THREADS=2
NTEST=10000; TS=150; TD=300; FOLDS=5
if [ $QUICK = 1 ]; then NTEST=2000; TS=50; TD=100; FOLDS=2; fi
"$W/drfbench" prepare -dir "$W" -data "$DATA" -seed "$SEED" -ntrain 1000 -ntest "$NTEST" >&2
TIM="$W/timings.jsonl"
PAR="$W/drf_params.jsonl"
: > "$TIM"
: > "$PAR"

# seconds JSON_TEXT: the "seconds" field of a forestd report
seconds() { "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'; }
# drfseconds TOOL [FOLD]: the "seconds" of a `train --forest drf` report,
# and its backscoring parameters appended to $PAR
drfseconds() {
  "$PY" -c 'import json,sys; r=json.load(sys.stdin); d=r["drf"]
print(json.dumps({"tool": sys.argv[1], "fold": int(sys.argv[3]), "sigma_g": d["sigma_g"], "gamma_g": d["gamma_g"], "selected_by": d["sigma_gamma_selected_by"],
  "select_mse": d["select_mse"], "center": d["backscore_center"], "predict": d["predict"], "embed_dim": d["embed_dim"]}), file=open(sys.argv[2], "a"))
print(r["seconds"])' "$1" "$PAR" "${2:-0}"
}
# record TASK TOOL TRAIN_S PREDICT_S
record() { printf '{"task":"%s","tool":"%s","train_s":%s,"predict_s":%s}\n' "$1" "$2" "$3" "$4" >> "$TIM"; }
sum() { "$PY" -c 'import sys; print(sum(float(x) for x in sys.argv[1:]))' "$@"; }

# ---- 1. swiss roll -------------------------------------------------------
echo "swiss roll: forestd drf" >&2
swiss_drf() { # OUTPUT_BASENAME TOOL extra flags...
  local base=$1 tool=$2; shift 2
  local tr sc
  tr=$("$BIN" train --in "$W/swiss_train.csv" --label y0,y1,y2 --forest drf --trees "$TS" --max-features 3 \
       --isomap-k 7 --threads "$THREADS" --seed 1 --out "$W/$base.arrows" "$@" | drfseconds "swiss $tool")
  sc=$("$BIN" score --model "$W/$base.arrows" --in "$W/swiss_test.csv" --out "$W/$base.csv" --threads "$THREADS" | seconds)
  record swiss "$tool" "$tr" "$sc"
}
swiss_drf drf_swiss "forestd drf"
swiss_drf drf_swiss_moob "forestd drf m oob" --embed-dim 0
swiss_drf drf_swiss_loo "forestd drf loo" --backscore-select loo
swiss_drf drf_swiss_alg1 "forestd drf algorithm1" --drf-predict algorithm1
swiss_drf drf_swiss_paper "forestd drf paper" --drf-predict algorithm1 --sigma-g 100 --gamma-g 200 --backscore-center=false

# the engine's plain RF regression with the same trees and candidate
# features: one multi-output forest over y0,y1,y2 (as scikit-learn's
# RandomForestRegressor with a 2-D y), fully grown
echo "swiss roll: forestd rf (one multi-output forest)" >&2
tr=$("$BIN" train --in "$W/swiss_train.csv" --label y0,y1,y2 --trees "$TS" --max-features 3 --min-split 2 \
     --threads "$THREADS" --seed 1 --out "$W/rf_swiss.arrows" | seconds)
sc=$("$BIN" score --model "$W/rf_swiss.arrows" --in "$W/swiss_test.csv" --out "$W/rf_swiss.csv" --threads "$THREADS" | seconds)
record swiss "forestd rf" "$tr" "$sc"
echo "swiss roll: forestd rf (one forest per output)" >&2
TR=(); SC=()
for k in 0 1 2; do
  ex=$(printf 'y0,y1,y2' | tr ',' '\n' | grep -v "^y$k\$" | paste -sd,)
  TR+=("$("$BIN" train --in "$W/swiss_train.csv" --label "y$k" --exclude "$ex" --trees "$TS" --max-features 3 \
        --min-split 2 --threads "$THREADS" --seed 1 --out "$W/rf_y$k.arrows" | seconds)")
  SC+=("$("$BIN" score --model "$W/rf_y$k.arrows" --in "$W/swiss_test.csv" --out "$W/rf_swiss_y$k.csv" --threads "$THREADS" | seconds)")
done
record swiss "forestd rf (3 forests)" "$(sum "${TR[@]}")" "$(sum "${SC[@]}")"

echo "swiss roll: scikit-learn" >&2
"$PY" e2e/bench/drf_sklearn.py swiss "$W" "$THREADS" >> "$TIM"

# ---- 2. digits -----------------------------------------------------------
LO=$(for r in 4 5 6 7; do for c in 0 1 2 3 4 5 6 7; do printf 'pixel_%d_%d\n' $r $c; done; done | paste -sd,)
UP=$(for r in 0 1 2 3; do for c in 0 1 2 3 4 5 6 7; do printf 'pixel_%d_%d\n' $r $c; done; done | paste -sd,)
digits_drf() { # OUTPUT_BASENAME TOOL extra flags...
  local base=$1 tool=$2; shift 2
  local tr sc
  tr=$("$BIN" train --in "$FD/digits_train.csv" --label "$LO" --features "$UP" --forest drf --trees "$TD" \
       --max-features 5 --isomap-k 5 --embed-dim 25 --threads "$THREADS" --seed 1 --out "$FD/$base.arrows" "$@" | drfseconds "digits $tool" "$K")
  sc=$("$BIN" score --model "$FD/$base.arrows" --in "$FD/digits_test.csv" --out "$FD/$base.csv" --threads "$THREADS" | seconds)
  record digits "$tool" "$tr" "$sc"
}
# digits_rf OUTPUT_BASENAME TOOL extra flags...: the engine's multi-output forest
digits_rf() {
  local base=$1 tool=$2; shift 2
  local tr sc
  tr=$("$BIN" train --in "$FD/digits_train.csv" --label "$LO" --features "$UP" --trees "$TD" \
       --max-features 5 --min-split 2 --threads "$THREADS" --seed 1 --out "$FD/$base.arrows" "$@" | seconds)
  sc=$("$BIN" score --model "$FD/$base.arrows" --in "$FD/digits_test.csv" --out "$FD/$base.csv" --threads "$THREADS" | seconds)
  record digits "$tool" "$tr" "$sc"
}
for K in $(seq 1 "$FOLDS"); do
  FD="$W/digits-f$K"
  echo "digits fold $K of $FOLDS: forestd drf" >&2
  digits_drf drf_digits "forestd drf"
  digits_drf drf_digits_loo "forestd drf loo" --backscore-select loo
  digits_drf drf_digits_alg1 "forestd drf algorithm1" --drf-predict algorithm1
  digits_drf drf_digits_paper "forestd drf paper" --drf-predict algorithm1 --sigma-g 3 --gamma-g 20 --backscore-center=false
  digits_drf drf_digits_sparse "forestd drf sparse" --projection sparse
  echo "digits fold $K of $FOLDS: forestd rf and sporf (one multi-output forest)" >&2
  digits_rf rf_digits "forestd rf"
  digits_rf sporf_digits "forestd sporf" --forest sporf
  echo "digits fold $K of $FOLDS: forestd rf (one forest per pixel)" >&2
  TR=(); SC=()
  for p in ${LO//,/ }; do
    TR+=("$("$BIN" train --in "$FD/digits_train.csv" --label "$p" --features "$UP" --task regression --trees "$TD" \
          --max-features 5 --min-split 2 --threads "$THREADS" --seed 1 --out "$FD/rf_$p.arrows" | seconds)")
    SC+=("$("$BIN" score --model "$FD/rf_$p.arrows" --in "$FD/digits_test.csv" --out "$FD/rf_digits_$p.csv" --threads "$THREADS" | seconds)")
  done
  record digits "forestd rf (32 forests)" "$(sum "${TR[@]}")" "$(sum "${SC[@]}")"
  echo "digits fold $K of $FOLDS: scikit-learn" >&2
  "$PY" e2e/bench/drf_sklearn.py digits "$FD" "$THREADS" >> "$TIM"
done

# ---- report --------------------------------------------------------------
DATE=$(date +%Y-%m-%d)
SUFFIX=""; [ $QUICK = 1 ] && SUFFIX="-quick"; [ "$SEED" != 1 ] && SUFFIX="$SUFFIX-seed$SEED"
RES=e2e/bench/results
mkdir -p "$RES"
MD="$RES/drf-$DATE$SUFFIX.md"
{
  echo "# dRF reproduction ($DATE$SUFFIX)"
  echo
  echo "Command: \`bash e2e/bench/drf.sh$( [ $QUICK = 1 ] && echo ' --quick')$( [ "$SEED" != 1 ] && echo " --seed $SEED")\` on $(nproc) cores ($(uname -m)), $THREADS threads for every tool;"
  echo "forestd at $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (plus working-tree changes), $("$PY" -c 'import sklearn; print("scikit-learn", sklearn.__version__)')."
  echo
  "$W/drfbench" report -dir "$W" -png "$RES" -threads "$THREADS" -swiss-trees "$TS" -digits-trees "$TD" -digits-folds "$FOLDS"
} > "$MD.tmp"
for f in drf-fig2-swissroll drf-fig3-digits; do mv "$RES/$f.png" "$RES/$f-$DATE$SUFFIX.png"; done
sed -e "s#$RES/drf-fig2-swissroll.png#drf-fig2-swissroll-$DATE$SUFFIX.png#; s#$RES/drf-fig3-digits.png#drf-fig3-digits-$DATE$SUFFIX.png#" "$MD.tmp" > "$MD"
rm -f "$MD.tmp"
cat "$MD"

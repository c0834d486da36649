#!/usr/bin/env bash
# MORF on digits (MORF paper §5.3 setting, scaled to the 8x8 UCI digits):
# test error of forestd MORF and RF against ranger on the same three seeded
# 80/20 splits, 500 trees; then the importance maps of 3-vs-5 for MORF and RF
# (the paper's Fig. 5) with the total variation of each normalised map — a
# smoother map has a smaller total variation.
#
#   bash e2e/bench/digits.sh [--forestd BIN] [--data DIR]
#
# Needs /usr/bin/python3 with pandas and Rscript with ranger (peers.sh
# installs both). Writes e2e/bench/results/digits-3v5-{morf,rf}.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=""; DATA="${FORESTD_DATA:-testdata}"
while [ $# -gt 0 ]; do
  case "$1" in
    --forestd) BIN="$2"; shift ;;
    --data) DATA="$2"; shift ;;
    *) echo "digits.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
W=$(mktemp -d /tmp/forestd-digits.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$BIN" ]; then go build -o "$W/forestd" ./cmd/forestd; BIN="$W/forestd"; fi
TREES=500; SEEDS="0 1 2"
# MORF patches: the paper's MNIST setting (Appendix C Table 2: 2x2..2x5, mtry auto).
MORF=(--forest morf --grid 8x8 --patch-min 2x2 --patch-max 2x5)

/usr/bin/python3 - "$DATA/digits.csv.gz" "$W" $SEEDS <<'PY'
import sys, numpy as np, pandas as pd
d = pd.read_csv(sys.argv[1]); w = sys.argv[2]
for s in sys.argv[3:]:
    idx = np.random.RandomState(int(s)).permutation(len(d)); k = int(0.8 * len(d))
    d.iloc[idx[:k]].to_csv(f"{w}/tr{s}.csv", index=False)
    d.iloc[idx[k:]].to_csv(f"{w}/te{s}.csv", index=False)
d[d.label.isin([3, 5])].to_csv(f"{w}/d35.csv", index=False)
PY

err() { python3 -c 'import json,sys; print(json.load(sys.stdin)["error"])'; }
: > "$W/res.tsv"
for s in $SEEDS; do
  "$BIN" train --in "$W/tr$s.csv" --label label --out "$W/m" --trees $TREES --seed "$s" "${MORF[@]}" >/dev/null
  printf 'morf\t%s\n' "$("$BIN" eval --model "$W/m" --in "$W/te$s.csv" --label label | err)" >> "$W/res.tsv"
  "$BIN" train --in "$W/tr$s.csv" --label label --out "$W/m" --trees $TREES --seed "$s" >/dev/null
  printf 'rf\t%s\n' "$("$BIN" eval --model "$W/m" --in "$W/te$s.csv" --label label | err)" >> "$W/res.tsv"
  Rscript -e 'suppressMessages(library(ranger)); a <- commandArgs(TRUE)
    tr <- read.csv(a[1]); te <- read.csv(a[2]); tr$label <- factor(tr$label); te$label <- factor(te$label, levels(tr$label))
    m <- ranger(label ~ ., tr, num.trees = 500, seed = as.integer(a[3]), num.threads = 2)
    cat(mean(predict(m, te)$predictions != te$label), "\n")' "$W/tr$s.csv" "$W/te$s.csv" "$s" |
    awk '{print "ranger\t" $1}' >> "$W/res.tsv"
done

mkdir -p e2e/bench/results
tv() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["importance_total_variation"][sys.argv[1]])' "$1"; }
"$BIN" train --in "$W/d35.csv" --label label --out "$W/m35" --trees $TREES "${MORF[@]}" >/dev/null
"$BIN" train --in "$W/d35.csv" --label label --out "$W/r35" --trees $TREES >/dev/null
morf_tv=$("$BIN" inspect --model "$W/m35" --png e2e/bench/results/digits-3v5-morf.png | tv impurity)
rf_tv=$("$BIN" inspect --model "$W/r35" --png e2e/bench/results/digits-3v5-rf.png --grid 8x8 | tv impurity)

python3 - "$W/res.tsv" "$morf_tv" "$rf_tv" <<'PY'
import sys, collections
e = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split(); e[k].append(float(v))
m = {k: sum(v) / len(v) for k, v in e.items()}
print("digits (1,797 rows, 8x8), three seeded 80/20 splits, 500 trees: mean test error\n")
print("| forest | test error | vs ranger |")
print("|---|---:|---:|")
for k, name in (("morf", "forestd MORF (patches 2x2..2x5)"), ("rf", "forestd RF"), ("ranger", "ranger 500 trees")):
    print(f"| {name} | {m[k]:.4f} | {m[k] - m['ranger']:+.4f} |")
print(f"\nMORF at least as accurate as ranger: {'yes' if m['morf'] <= m['ranger'] else 'NO'}")
print(f"\n3-vs-5 impurity-importance maps (e2e/bench/results/digits-3v5-*.png):")
print(f"total variation of the normalised map: MORF {float(sys.argv[2]):.3f}, RF {float(sys.argv[3]):.3f} "
      f"(ratio {float(sys.argv[2]) / float(sys.argv[3]):.2f}; smaller is smoother)")
PY

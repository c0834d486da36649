#!/usr/bin/python3
"""XGBoost random-forest mode for scale.sh (run with Debian's /usr/bin/python3).

  scale_xgb.py --train F.csv --test F.csv [--label y] [--trees 100]
               [--threads 2] [--seed 1] --out RESULT.json

Model: XGBRFClassifier(n_estimators=trees, tree_method="hist",
grow_policy="lossguide", max_depth=0 (unlimited), max_leaves=0,
min_child_weight=1, subsample=0.632 (XGBoost draws without
replacement), colsample_bynode=floor(sqrt(p))/p, n_jobs=threads,
random_state=seed): the nearest XGBoost has to Breiman's forest of fully
grown trees. Times cover fit() and predict() only (predict: the fastest
of 3); peak memory is measured by the caller (/usr/bin/time).
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import pandas as pd
import xgboost


def load(path, label):
    df = pd.read_csv(path)
    y = df[label].to_numpy()
    x = df.drop(columns=[label]).to_numpy(dtype=np.float32)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--label", default="y")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    xtr, ytr = load(a.train, a.label)
    xte, yte = load(a.test, a.label)
    classes = np.unique(ytr)
    ytr_i = np.searchsorted(classes, ytr)
    p = xtr.shape[1]
    m = xgboost.XGBRFClassifier(
        n_estimators=a.trees, tree_method="hist", grow_policy="lossguide",
        max_depth=0, max_leaves=0, min_child_weight=1, subsample=0.632,
        colsample_bynode=max(1, int(math.sqrt(p))) / p, n_jobs=a.threads,
        random_state=a.seed)
    c0, t0 = time.process_time(), time.perf_counter()
    m.fit(xtr, ytr_i)
    c1, t1 = time.process_time(), time.perf_counter()
    best = math.inf
    for _ in range(3):
        t2 = time.perf_counter()
        pred = m.predict(xte)
        best = min(best, time.perf_counter() - t2)
    err = float(np.mean(classes[pred] != yte))
    out = {"tool": "xgboost-rf", "version": xgboost.__version__,
           "trunk": {"train_seconds": t1 - t0, "train_cpu_seconds": c1 - c0,
                     "predict_seconds": best,
                     "predict_rows_per_s": len(yte) / best, "error": err,
                     "train_rows": int(len(ytr))}}
    print("xgboost-rf: train %.2fs, predict %.0f rows/s, error %.4f" % (
        t1 - t0, len(yte) / best, err), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

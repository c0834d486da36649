#!/usr/bin/python3
"""scikit-learn half of the peer benchmark (run with Debian's /usr/bin/python3).

  peers_sklearn.py trunk --train F --test F [--label COL] [--trees 100]
                         [--threads 2] [--seed 1] --out RESULT.json
  peers_sklearn.py cv --folds DIR [--trees 500] [--threads 2] [--seed 1]
                      --out RESULT.json

Model: RandomForestClassifier(n_estimators=trees, max_features="sqrt",
n_jobs=threads, random_state=seed), everything else at its default
(bootstrap, Gini, min_samples_leaf=1, unlimited depth).

Times (wall, and CPU of all threads of the process) cover fit() and
predict() only (predict: the fastest of 3 runs); reading the CSV (pandas) is outside
them. Peak memory is measured by the caller (/usr/bin/time around this
process).
"""
import argparse
import json
import platform
import sys
import time

import numpy as np
import pandas as pd
import sklearn
from sklearn.ensemble import RandomForestClassifier

PREDICT_REPS = 3   # prediction is timed this many times; the fastest counts


def load(path, label):
    df = pd.read_csv(path, dtype={label: str})
    if label not in df.columns:
        sys.exit("peers_sklearn.py: %s has no column %r" % (path, label))
    y = df[label].to_numpy()
    x = df.drop(columns=[label]).to_numpy(dtype=np.float32)
    return x, y


def fit_predict(xtr, ytr, xte, yte, trees, threads, seed):
    rf = RandomForestClassifier(n_estimators=trees, max_features="sqrt",
                                n_jobs=threads, random_state=seed)
    c0, t0 = time.process_time(), time.perf_counter()
    rf.fit(xtr, ytr)
    c1, t1 = time.process_time(), time.perf_counter()
    reps = []   # best of PREDICT_REPS predictions of the whole test set
    for _ in range(PREDICT_REPS):
        c2, t2 = time.process_time(), time.perf_counter()
        pred = rf.predict(xte)
        reps.append((time.perf_counter() - t2, time.process_time() - c2))
    best = min(reps)
    err = float(np.mean(pred != yte))
    return {"train_seconds": t1 - t0, "predict_seconds": best[0],
            "predict_seconds_all": [r[0] for r in reps],
            "train_cpu_seconds": c1 - c0, "predict_cpu_seconds": best[1],
            "train_rows": int(len(ytr)), "test_rows": int(len(yte)),
            "features": int(xtr.shape[1]),
            "mtry": int(max(1, int(np.sqrt(xtr.shape[1])))),
            "predict_rows_per_s": len(yte) / best[0],
            "error": err, "accuracy": 1.0 - err}


def header(a):
    return {"tool": "sklearn", "version": sklearn.__version__,
            "python": platform.python_version(), "numpy": np.__version__,
            "model": "RandomForestClassifier(n_estimators=%d, max_features='sqrt', "
                     "n_jobs=%d, random_state=%d)" % (a.trees, a.threads, a.seed),
            "command": " ".join(sys.argv)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["trunk", "cv"])
    ap.add_argument("--train")
    ap.add_argument("--test")
    ap.add_argument("--folds")
    ap.add_argument("--label", default="label")
    ap.add_argument("--trees", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = header(a)
    if a.mode == "trunk":
        a.trees = a.trees or 100
        out = header(a)
        xtr, ytr = load(a.train, a.label)
        xte, yte = load(a.test, a.label)
        out["trunk"] = fit_predict(xtr, ytr, xte, yte, a.trees, a.threads, a.seed)
        r = out["trunk"]
        print("sklearn trunk: train %.2fs, predict %.0f rows/s, error %.4f" % (
            r["train_seconds"], r["predict_rows_per_s"], r["error"]), file=sys.stderr)
    else:
        a.trees = a.trees or 500
        out = header(a)
        man = json.load(open(a.folds + "/manifest.json"))
        out["cv"] = {}
        for ds in man["datasets"]:
            folds = []
            for f in ds["folds"]:
                xtr, ytr = load(f["train"], ds["label"])
                xte, yte = load(f["test"], ds["label"])
                r = fit_predict(xtr, ytr, xte, yte, a.trees, a.threads, a.seed)
                r["fold"] = f["fold"]
                folds.append(r)
            acc = [r["accuracy"] for r in folds]
            out["cv"][ds["name"]] = {"mean_accuracy": float(np.mean(acc)),
                                     "fold_accuracy": acc,
                                     "train_seconds": sum(r["train_seconds"] for r in folds),
                                     "folds": folds}
            print("sklearn cv %s: mean accuracy %.4f (%s)" % (
                ds["name"], np.mean(acc), " ".join("%.4f" % v for v in acc)), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

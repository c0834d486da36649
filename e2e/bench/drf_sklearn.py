#!/usr/bin/python3
"""scikit-learn peers of e2e/bench/drf.sh (dRF paper §3.1 and §3.2.1).

    /usr/bin/python3 e2e/bench/drf_sklearn.py swiss  DIR THREADS
    /usr/bin/python3 e2e/bench/drf_sklearn.py digits DIR THREADS

swiss: RandomForestRegressor (multi-output, 150 trees, max_features 3 and
all 6, bootstrap, fully grown as the paper's "no pruning"), the same with
one forest per output (max_features 3, as forestd's RF) and 5-NN
regression (the paper's kNN with k = 5) on DIR/swiss_train.csv, predicting
DIR/swiss_test.csv; writes DIR/sk_swiss_m3.csv, sk_swiss_m6.csv,
sk_swiss_per_output_m3.csv and knn5_swiss.csv (columns y0, y1, y2).

digits: 1-NN regression of the lower 8x4 half on the upper half and a
multi-output RandomForestRegressor (300 trees, 5 candidate features, as
the paper's §3.2.1) on DIR/digits_train.csv, predicting DIR/digits_test.csv;
writes DIR/knn1_digits.csv and sk_rf_digits.csv (the 32 lower pixels).

Prints one JSON object per model on stdout: task, tool, train_s, predict_s
(wall-clock seconds of fit and predict alone, file reading excluded).
"""
import json
import sys
import time

import numpy as np
import pandas as pd
import sklearn
from sklearn.ensemble import RandomForestRegressor
from sklearn.neighbors import KNeighborsRegressor


def timed(task, tool, model, xtr, ytr, xte, out_path, cols):
    t0 = time.perf_counter()
    model.fit(xtr, ytr)
    t1 = time.perf_counter()
    pred = model.predict(xte)
    t2 = time.perf_counter()
    pd.DataFrame(pred, columns=cols).to_csv(out_path, index=False, float_format="%.17g")
    print(json.dumps({"task": task, "tool": tool, "train_s": t1 - t0, "predict_s": t2 - t1,
                      "version": "scikit-learn " + sklearn.__version__}), flush=True)


def main():
    task, d, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if task == "swiss":
        tr = pd.read_csv(d + "/swiss_train.csv")
        te = pd.read_csv(d + "/swiss_test.csv")
        xs = ["x%d" % i for i in range(1, 7)]
        ys = ["y0", "y1", "y2"]
        for m in (3, 6):
            rf = RandomForestRegressor(n_estimators=150, max_features=m, n_jobs=threads, random_state=1)
            timed("swiss", "sklearn rf mtry=%d" % m, rf, tr[xs].values, tr[ys].values, te[xs].values,
                  d + "/sk_swiss_m%d.csv" % m, ys)
        t0 = time.perf_counter()
        forests = [RandomForestRegressor(n_estimators=150, max_features=3, n_jobs=threads, random_state=1)
                   .fit(tr[xs].values, tr[y].values) for y in ys]
        t1 = time.perf_counter()
        pred = np.column_stack([f.predict(te[xs].values) for f in forests])
        t2 = time.perf_counter()
        pd.DataFrame(pred, columns=ys).to_csv(d + "/sk_swiss_per_output_m3.csv", index=False, float_format="%.17g")
        print(json.dumps({"task": "swiss", "tool": "sklearn rf per-output mtry=3 (3 forests)", "train_s": t1 - t0,
                          "predict_s": t2 - t1, "version": "scikit-learn " + sklearn.__version__}), flush=True)
        timed("swiss", "sklearn 5-nn", KNeighborsRegressor(n_neighbors=5), tr[xs].values, tr[ys].values,
              te[xs].values, d + "/knn5_swiss.csv", ys)
    elif task == "digits":
        tr = pd.read_csv(d + "/digits_train.csv")
        te = pd.read_csv(d + "/digits_test.csv")
        up = ["pixel_%d_%d" % (r, c) for r in range(4) for c in range(8)]
        lo = ["pixel_%d_%d" % (r, c) for r in range(4, 8) for c in range(8)]
        timed("digits", "sklearn 1-nn", KNeighborsRegressor(n_neighbors=1), tr[up].values, tr[lo].values,
              te[up].values, d + "/knn1_digits.csv", lo)
        rf = RandomForestRegressor(n_estimators=300, max_features=5, n_jobs=threads, random_state=1)
        timed("digits", "sklearn rf", rf, tr[up].values, tr[lo].values, te[up].values,
              d + "/sk_rf_digits.csv", lo)
    else:
        sys.exit("drf_sklearn.py: unknown task %r" % task)


if __name__ == "__main__":
    main()

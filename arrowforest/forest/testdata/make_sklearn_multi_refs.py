#!/usr/bin/python3
"""Reference multi-output regression tree from scikit-learn for the Go engine.

Run from the repository root with Debian's Python (python3-sklearn):

    /usr/bin/python3 arrowforest/forest/testdata/make_sklearn_multi_refs.py [DATA_DIR]

DATA_DIR defaults to testdata. On diabetes.csv.gz it fits

    DecisionTreeRegressor(max_depth=5, criterion="squared_error",
                          max_features=None, random_state=0)

to the three outputs s1, s2, s6 (a 2-D y: one multi-output tree, whose
impurity is the mean over the outputs of the within-node variance) from the
other eight columns, and writes sklearn_multi_tree_diabetes_d5.json next to
this script. Deterministic: the same inputs give byte-identical files.

Values are parsed as float64 (correctly rounded) and the features cast to
float32, as scikit-learn's tree and forestd's frame both do.

For every internal node the script recomputes, in numpy, the impurity
decrease of every candidate split of every feature (positions between
consecutive distinct float32 values, skipping gaps within 1e-7 as sklearn's
FEATURE_THRESHOLD does), exits with an error if sklearn's split is not the
best, and records whether it is the unique best ("unique": no split that
sends different rows left comes within the tie tolerance). Below a tie an
engine may legitimately grow another subtree; the Go test compares every
node whose ancestors are all unique, and the predictions of the rows whose
path passes unique nodes only ("comparable_rows").

JSON: "nodes" in preorder (sklearn's ids are preorder): feature (name, null
for a leaf), threshold (float64; go left iff float64(x) <= threshold),
threshold_lo/threshold_hi (the largest left and smallest right float32
value of the feature at the node), left, right, n_node_samples, value (the
node's q output means), and for internal nodes "decrease" and "gap" (to the
best alternative with another partition), "unique" (gap above the tie
tolerance), "same_partition_features" (other features with a threshold
that sends exactly the same rows left: an engine may split on any of
them), "comparable" (every ancestor unique); "predictions" (training rows × q), "training_mse" (mean
over rows and outputs), "feature_importances" by name.
"""
import hashlib
import json
import os
import platform
import sys

import numpy as np
import pandas as pd
import sklearn
from sklearn.tree import DecisionTreeRegressor

DATASET = "diabetes"
OUTPUTS = ["s1", "s2", "s6"]
DEPTH = 6
FEATURE_THRESHOLD = 1e-7
TIE_ABS = 1e-12
TIE_REL = 1e-9

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def impurity(Y):
    """Mean over outputs of the population variance (sklearn's multi-output MSE)."""
    return float(np.mean(np.var(Y, axis=0)))


def candidates(x, Y):
    """(thresholds, decreases, left masks source) of one feature at a node."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order].astype(np.float64)
    ys = Y[order]
    n = len(xs)
    pos = np.nonzero(xs[1:] > xs[:-1])[0] + 1
    pos = pos[xs[pos] > xs[pos - 1] + FEATURE_THRESHOLD]
    if len(pos) == 0:
        return np.zeros(0), np.zeros(0)
    yc = ys - ys.mean(axis=0)
    s1 = np.cumsum(yc, axis=0)
    s2 = np.cumsum(yc * yc, axis=0)
    nl = pos.astype(np.float64)[:, None]
    nr = n - nl
    sl1, sl2 = s1[pos - 1], s2[pos - 1]
    sr1, sr2 = s1[-1] - sl1, s2[-1] - sl2
    wl = sl2 - sl1 * sl1 / nl
    wr = sr2 - sr1 * sr1 / nr
    parent = s2[-1] - s1[-1] ** 2 / n
    dec = np.mean((parent - wl - wr) / n, axis=1)
    thr = (xs[pos - 1] + xs[pos]) / 2.0
    bad = (thr == xs[pos]) | np.isinf(thr)
    return np.where(bad, xs[pos - 1], thr), dec


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    data_dir = os.path.normpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "testdata"))
    path = os.path.join(data_dir, DATASET + ".csv.gz")
    df = pd.read_csv(path, float_precision="round_trip")
    features = [c for c in df.columns if c not in OUTPUTS]
    X = df[features].to_numpy(dtype=np.float64).astype(np.float32)
    Y = df[OUTPUTS].to_numpy(dtype=np.float64)
    N, p = X.shape
    est = DecisionTreeRegressor(max_depth=DEPTH, criterion="squared_error", max_features=None, random_state=0)
    est.fit(X, Y)
    t = est.tree_
    ind = est.decision_path(X).tocsc()
    if not np.isclose(impurity(Y), t.impurity[0], rtol=1e-12):
        sys.exit("root impurity %r != sklearn's %r" % (impurity(Y), t.impurity[0]))
    nodes = []

    def visit(node, comparable):
        rows = ind[:, node].nonzero()[0]
        left, right = int(t.children_left[node]), int(t.children_right[node])
        rec = {"id": int(node), "feature": None, "threshold": None, "left": left, "right": right,
               "n_node_samples": int(t.n_node_samples[node]),
               "value": [float(v) for v in t.value[node][:, 0]], "comparable": comparable}
        if not np.allclose(rec["value"], Y[rows].mean(axis=0), rtol=1e-12):
            sys.exit("node %d: value %r is not the mean of its rows" % (node, rec["value"]))
        if left != -1:
            j = int(t.feature[node])
            xs, ys = X[rows], Y[rows]
            sk_left = xs[:, j] <= t.threshold[node]
            best_dec, alt, same = None, -np.inf, set()
            for f in range(p):
                thr, dec = candidates(xs[:, f], ys)
                for th, d in zip(thr, dec):
                    if f == j and th == t.threshold[node]:
                        best_dec = d
                    elif not np.array_equal(xs[:, f] <= th, sk_left):
                        alt = max(alt, d)
                    elif f != j:
                        same.add(features[f])
            if best_dec is None:
                sys.exit("node %d: sklearn's threshold is not a candidate" % node)
            tol = TIE_ABS + TIE_REL * abs(best_dec)
            if best_dec < alt - tol:
                sys.exit("node %d: sklearn's split (decrease %r) is not the best (%r)" % (node, best_dec, alt))
            rec.update(unique=bool(best_dec - alt > tol), feature=features[j], threshold=float(t.threshold[node]),
                       threshold_lo=float(np.max(xs[:, j][sk_left])),
                       threshold_hi=float(np.min(xs[:, j][~sk_left])),
                       decrease=float(best_dec), gap=float(best_dec - alt),
                       same_partition_features=sorted(same))
        nodes.append(rec)
        if left != -1:
            below = comparable and rec["unique"]
            visit(left, below)
            visit(right, below)

    visit(0, True)
    paths = est.decision_path(X)
    unique = np.array([nd.get("unique", True) and nd["comparable"] for nd in nodes])
    comparable_rows = [i for i in range(N) if unique[paths[i].indices].all()]
    assert [nd["id"] for nd in nodes] == list(range(t.node_count)), "sklearn ids are not preorder"
    pred = est.predict(X)
    command = "cd <repo root> && /usr/bin/python3 arrowforest/forest/testdata/make_sklearn_multi_refs.py"
    if len(sys.argv) > 1:
        command += " " + " ".join(sys.argv[1:])
    out = {
        "dataset": DATASET,
        "source": os.path.relpath(path, ROOT),
        "source_sha256": sha256(path),
        "features": features,
        "outputs": OUTPUTS,
        "max_depth": DEPTH,
        "estimator": "DecisionTreeRegressor(max_depth=%d, criterion='squared_error', max_features=None, "
                     "random_state=0).fit(X[features], y[outputs])" % DEPTH,
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "pandas_version": pd.__version__,
        "python_version": platform.python_version(),
        "command": command,
        "n_samples": int(N),
        "node_count": int(t.node_count),
        "nodes": nodes,
        "comparable_nodes": int(sum(nd["comparable"] for nd in nodes)),
        "comparable_rows": comparable_rows,
        "predictions": [[float(v) for v in row] for row in pred],
        "training_mse": float(np.mean((pred - Y) ** 2)),
        "feature_importances": {f: float(v) for f, v in zip(features, est.feature_importances_)},
    }
    fn = os.path.join(HERE, "sklearn_multi_tree_%s_d%d.json" % (DATASET, DEPTH))
    with open(fn, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("%s: %d nodes (%d comparable), %d of %d rows comparable, training mse %.6g" % (
        os.path.relpath(fn, ROOT), t.node_count, out["comparable_nodes"], len(comparable_rows), N,
        out["training_mse"]))


if __name__ == "__main__":
    main()
